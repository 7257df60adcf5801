package queue

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	client, _ := dbtest.MiniRedis(t)
	store := redis.NewStore(client, "tr", prometheus.NewRegistry())
	c := ticketrush.Concert{ID: "streamactive", Title: "T", Venue: "V", Queue: ticketrush.DefaultQueueSettings(),
		Sections: []ticketrush.Section{{Name: "R", Price: 1, Seats: 1}}, Schedules: []ticketrush.Schedule{{ID: "s1"}}}
	_, err := store.LoadConcert(context.Background(), c, time.Now())
	require.NoError(t, err)
	svc := NewService(store, auth.NewQueueTokens([]byte("stream-test-secret-0123456789abcdef0123")), time.Now,
		slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	svc.activeRecheck = time.Hour

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tk, _, err := svc.Join(ctx, "fan", c.ID)
	require.NoError(t, err)
	require.Equal(t, ticketrush.StatusActive, tk.Status)

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
