package writebehind

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// down is a record that never answers.
type down struct{}

func (down) WriteRecords(context.Context, ticketrush.RecordBatch) error {
	return errors.New("dial tcp: connection refused")
}

// A worker that cannot write while events wait fails its readiness check once StuckAfter has passed
// without an acknowledgement, and keeps the entries: nothing is dead-lettered for Postgres' sake.
func TestStuckWorkerIsNotReady(t *testing.T) {
	t.Parallel()
	s := sharedSale(t)
	reg := prometheus.NewRegistry()
	w := New(s.rdb, down{}, s.prefix, s.cat.IDs, Config{StuckAfter: 300 * time.Millisecond, StatsEvery: 50 * time.Millisecond,
		RetryMax: 50 * time.Millisecond}, time.Now, s.log, reg)
	require.NoError(t, w.Check(context.Background()), "ready before it starts")
	run(t, w)
	_, _, err := s.booking.Charge(context.Background(), "alice", 100, "")
	require.NoError(t, err)
	eventually(t, 10*time.Second, "the worker reports itself stuck", func() bool { return w.Check(context.Background()) != nil })
	assert.Contains(t, w.Check(context.Background()).Error(), "not advanced")
	assert.Positive(t, metric(t, reg, "ticketrush_writebehind_backlog_events"))
	assert.Positive(t, metric(t, reg, "ticketrush_writebehind_lag_seconds"))
	assert.Zero(t, metric(t, reg, "ticketrush_writebehind_dead_letters_total"))
}
