package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

const queueSecret = "queue-test-secret-0123456789abcdef0123456789"

// instance is one service instance's waiting room over a Redis: its own store, metrics and views.
type instance struct {
	store *redis.Store
	svc   *queue.Service
	reg   *prometheus.Registry // the service's metrics (the store's are apart: a gather of them pings Redis)
}

func newInstance(t testing.TB, c rueidis.Client, prefix string) instance {
	store := redis.NewStore(c, prefix, prometheus.NewRegistry())
	return newInstanceOver(t, store, store.Line)
}

// newInstanceOver builds the waiting room over qs, which may wrap store.
func newInstanceOver(t testing.TB, store *redis.Store, qs queue.Store) instance {
	reg := prometheus.NewRegistry()
	log := dbtest.Log(t)
	return instance{store: store, reg: reg,
		svc: queue.NewService(qs, auth.NewQueueTokens([]byte(queueSecret)), time.Now, log, reg)}
}

// loadConcert loads a fresh concert into Redis and returns its id.
func loadConcert(t *testing.T, store *redis.Store, q ticketrush.QueueSettings) string {
	t.Helper()
	c := ticketrush.Concert{ID: ticketrush.NewID(), Title: "T", Venue: "V", Queue: q,
		Sections:  []ticketrush.Section{{Name: "R", Price: 1000, Seats: 10}},
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID(), StartsAt: time.Now().Add(24 * time.Hour)}}}
	loaded, err := store.LoadConcert(context.Background(), c, time.Now())
	require.NoError(t, err)
	require.True(t, loaded)
	return c.ID
}

func settings(mod func(*ticketrush.QueueSettings)) ticketrush.QueueSettings {
	q := ticketrush.DefaultQueueSettings()
	mod(&q)
	return q
}

// counter reads a counter of reg: the sum over the series whose labels include every pair of labels.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestCheck covers the gate of the gated calls: which tokens pass without a Redis call. Whether a
// passing token is ACTIVE is the purchase path's gated read (internal/booking, internal/redis).
func TestCheck(t *testing.T) {
	c, prefix := dbtest.Redis(t)
	in := newInstance(t, c, prefix)
	ctx := context.Background()
	concert := loadConcert(t, in.store, settings(func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }))
	other := loadConcert(t, in.store, settings(func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }))

	active, created, err := in.svc.Join(ctx, "alice", concert)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, ticketrush.StatusActive, active.Status)

	tests := []struct {
		name    string
		user    string
		concert string
		token   string
		want    error
	}{
		{"genuine", "alice", concert, active.Token, nil},
		{"genuine, any concert of the token's", "alice", "", active.Token, nil},
		{"another concert's token", "alice", other, active.Token, ticketrush.ErrQueueTokenInvalid},
		{"another user's token", "bob", concert, active.Token, ticketrush.ErrQueueTokenInvalid},
		{"forged", "alice", concert, "x" + active.Token, ticketrush.ErrQueueTokenInvalid},
		{"missing", "alice", concert, "", ticketrush.ErrQueueTokenInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims, err := in.svc.Verify(context.Background(), tt.user, tt.concert, tt.token)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Equal(t, concert, claims.ConcertID)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}
