package queue_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// series returns the value of the counter series of reg named name whose labels are exactly labels, and
// whether that series exists.
func series(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// TestConcertCountersStartAtZero: once the scheduler has seen a concert, every per-concert counter a
// dashboard panel adds or divides by exists at 0, before any fan joined, left or lapsed (a panel over
// a missing series shows no data); and both poll sources exist from the start.
func TestConcertCountersStartAtZero(t *testing.T) {
	c, prefix := dbtest.Redis(t)
	in := newInstance(t, c, prefix)
	concert := loadConcert(t, in.store, ticketrush.DefaultQueueSettings())

	for _, source := range []string{"view", "redis"} {
		v, ok := series(t, in.reg, "ticketrush_queue_polls_total", map[string]string{"source": source})
		assert.True(t, ok, "polls from %s exist before the first poll", source)
		assert.Zero(t, v)
	}

	want := []struct {
		name   string
		labels map[string]string
	}{
		{"ticketrush_queue_joined_total", map[string]string{"concert": concert}},
		{"ticketrush_queue_admitted_total", map[string]string{"concert": concert}},
		{"ticketrush_queue_lapsed_total", map[string]string{"concert": concert}},
		{"ticketrush_queue_left_total", map[string]string{"concert": concert, "from": "WAITING"}},
		{"ticketrush_queue_left_total", map[string]string{"concert": concert, "from": "ACTIVE"}},
	}
	for _, w := range want {
		_, ok := series(t, in.reg, w.name, w.labels)
		require.False(t, ok, "%s %v before the scheduler saw the concert", w.name, w.labels)
	}

	sched := in.svc.NewScheduler(in.store.Line, func() []string { return []string{concert} })
	require.NoError(t, sched.Tick(context.Background()))
	for _, w := range want {
		v, ok := series(t, in.reg, w.name, w.labels)
		assert.True(t, ok, "%s %v exists once the concert is loaded", w.name, w.labels)
		assert.Zero(t, v, "%s %v", w.name, w.labels)
	}
}
