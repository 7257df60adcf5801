package writebehind

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two workers at once over a sale: every event lands in Postgres once, the record agrees with what
// the clients were told, and reconcile finds nothing.
func TestTwoWorkersWriteEveryEventOnce(t *testing.T) {
	t.Parallel()
	s := sharedSale(t)
	reg := prometheus.NewRegistry()
	run(t, s.worker(Config{Consumer: "a"}, reg))
	run(t, s.worker(Config{Consumer: "b"}, prometheus.NewRegistry()))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s.load(ctx, 8)
	s.drain(30 * time.Second)

	s.checkExactlyOnce()
	s.checkClients()
	s.reconcile()
	assert.Positive(t, metric(t, reg, "ticketrush_writebehind_events_total"))
}

// metric returns the value of an unlabelled counter or gauge, or the sample count of a histogram.
func metric(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			m := f.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
