package postgres

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

func TestCollectorReportsPoolStats(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, dbtest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(db.Close)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(db.Collector()))

	conn, err := db.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()

	got := gather(t, reg)
	tests := []struct {
		give string
		want func(v float64) bool
	}{
		{"ticketrush_postgres_up", func(v float64) bool { return v == 1 }},
		{"ticketrush_postgres_pool_acquired_conns", func(v float64) bool { return v == 1 }},
		{"ticketrush_postgres_pool_total_conns", func(v float64) bool { return v >= 1 }},
		{"ticketrush_postgres_pool_max_conns", func(v float64) bool { return v >= 1 }},
		{"ticketrush_postgres_pool_idle_conns", func(v float64) bool { return v >= 0 }},
		{"ticketrush_postgres_pool_acquire_count_total", func(v float64) bool { return v >= 1 }},
		{"ticketrush_postgres_pool_acquire_wait_seconds_total", func(v float64) bool { return v >= 0 }},
		{"ticketrush_postgres_pool_new_conns_total", func(v float64) bool { return v >= 1 }},
	}
	for _, tt := range tests {
		v, ok := got[tt.give]
		if assert.True(t, ok, "%s is exported", tt.give) {
			assert.True(t, tt.want(v), "%s = %v", tt.give, v)
		}
	}
}

func TestCollectorReportsPostgresDown(t *testing.T) {
	db, err := Open(context.Background(), dbtest.Postgres(t))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(db.Collector()))
	db.Close()

	got := gather(t, reg)
	assert.Equal(t, 0.0, got["ticketrush_postgres_up"])
	assert.Equal(t, 0.0, got["ticketrush_postgres_pool_total_conns"])
}

// gather returns the value of every unlabelled gauge and counter of reg by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return got
}
