package queue

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestActiveStreamHearsTheFansOwnLeave: the event stream of an ACTIVE token hears of a leave made
// through the same instance at once, not at its next check of Redis. The check is set an hour apart,
// so only the news of the leave can wake the stream within the test's wait.
func TestActiveStreamHearsTheFansOwnLeave(t *testing.T) {
	svc, _, tk := activeFan(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	events, ended := make(chan ticketrush.Ticket, 10), make(chan error, 1)
	go func() {
		ended <- svc.Watch(ctx, 2*time.Second, "fan", tk.Token, func(t ticketrush.Ticket) error { events <- t; return nil })
	}()
	next := func() ticketrush.Ticket {
		select {
		case e := <-events:
			return e
		case <-time.After(30 * time.Second):
			require.FailNow(t, "no event within 30 s: the stream did not hear of the leave")
		}
		return ticketrush.Ticket{}
	}
	require.Equal(t, ticketrush.StatusActive, next().Status)
	require.NoError(t, svc.Leave(ctx, "fan", tk.Token))
	assert.Equal(t, ticketrush.StatusExpired, next().Status, "the leave's new status, on the stream")
	require.NoError(t, <-ended, "the stream ends after the final status")
	svc.news.mu.Lock()
	assert.Empty(t, svc.news.watching, "a stream that ended watches nothing")
	svc.news.mu.Unlock()
}

// TestActiveStreamOutlivesARedisOutage: a stream has no deadline of its own (docs/api.md), and a
// dependency that does not answer for a while is not among what ends it. An ACTIVE token's stream
// reads Redis at every recheck; while Redis fails those reads (counted), the stream sends nothing and
// stays open, and once Redis answers again it still carries the fan's leave.
func TestActiveStreamOutlivesARedisOutage(t *testing.T) {
	svc, mr, tk := activeFan(t, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	events, ended := make(chan ticketrush.Ticket, 100), make(chan error, 1)
	go func() {
		ended <- svc.Watch(ctx, 2*time.Second, "fan", tk.Token, func(t ticketrush.Ticket) error { events <- t; return nil })
	}()
	require.Equal(t, ticketrush.StatusActive, (<-events).Status)

	mr.SetError("ERR an outage")
	for deadline := time.Now().Add(30 * time.Second); counted(svc.metrics.streamReadFailures) < 3; {
		select {
		case err := <-ended:
			require.FailNow(t, "the stream ended during the outage", "%v", err)
		case <-time.After(time.Millisecond): // the count is polled: nothing tells of a failed read
		}
		require.True(t, time.Now().Before(deadline), "the stream's rechecks did not meet the outage within 30 s")
	}
	mr.SetError("")

	require.NoError(t, svc.Leave(ctx, "fan", tk.Token))
	for {
		select {
		case e := <-events:
			if e.Status == ticketrush.StatusActive {
				continue // a heartbeat from between the outage and the leave
			}
			assert.Equal(t, ticketrush.StatusExpired, e.Status, "the leave's new status, on the stream")
			require.NoError(t, <-ended, "the stream ends after the final status")
			return
		case err := <-ended:
			// The stream sends the final status, then ends: both may be ready when the select runs, and
			// it may take either.
			for {
				select {
				case e := <-events:
					if e.Status == ticketrush.StatusActive {
						continue
					}
					assert.Equal(t, ticketrush.StatusExpired, e.Status, "the leave's new status, on the stream")
					require.NoError(t, err, "the stream ends after the final status")
					return
				default:
					require.FailNow(t, "the stream ended without the leave's status", "%v", err)
				}
			}
		case <-time.After(30 * time.Second):
			require.FailNow(t, "no event within 30 s of the leave")
		}
	}
}

// counted reads a counter.
func counted(c prometheus.Counter) float64 {
	var m dto.Metric
	if c.Write(&m) != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// activeFan is a service on a miniredis whose ACTIVE streams check Redis every recheck, and the token
// of a fan it admitted at once.
func activeFan(t *testing.T, recheck time.Duration) (*Service, *miniredis.Miniredis, ticketrush.Ticket) {
	client, mr := dbtest.MiniRedis(t)
	store := redis.NewStore(client, "tr", prometheus.NewRegistry())
	c := ticketrush.Concert{ID: "streamactive", Title: "T", Venue: "V", Queue: ticketrush.DefaultQueueSettings(),
		Sections: []ticketrush.Section{{Name: "R", Price: 1, Seats: 1}}, Schedules: []ticketrush.Schedule{{ID: "s1"}}}
	_, err := store.LoadConcert(context.Background(), c, time.Now())
	require.NoError(t, err)
	svc := NewService(store.Line, auth.NewQueueTokens([]byte("stream-test-secret-0123456789abcdef0123")), time.Now,
		slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	svc.activeRecheck = recheck
	tk, _, err := svc.Join(context.Background(), "fan", c.ID)
	require.NoError(t, err)
	require.Equal(t, ticketrush.StatusActive, tk.Status)
	return svc, mr, tk
}
