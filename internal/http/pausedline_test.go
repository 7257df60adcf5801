package http

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// newPausedLine is the fixture of the poll, rate-limit and event-stream benchmarks and tests: the real
// queue service over miniredis with one concert whose line is paused, so that every fan who joins stays
// WAITING and polls are answered from the view. It returns the concert, the secret its queue tokens and
// JWTs are signed with, a quiet logger and the service.
func newPausedLine(tb testing.TB, concertID string) (ticketrush.Concert, []byte, *slog.Logger, *queue.Service) {
	tb.Helper()
	client, _ := dbtest.MiniRedis(tb)
	store := redis.NewStore(client, "tr", prometheus.NewRegistry())
	q := ticketrush.DefaultQueueSettings()
	q.Paused = true
	c := ticketrush.Concert{ID: concertID, Title: "T", Venue: "V", Queue: q,
		Sections: []ticketrush.Section{{Name: "R", Price: 1, Seats: 1}}, Schedules: []ticketrush.Schedule{{ID: "s1"}}}
	if _, err := store.LoadConcert(context.Background(), c, time.Now()); err != nil {
		tb.Fatal(err)
	}
	secret := []byte(strings.Repeat("s", 32))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return c, secret, log, queue.NewService(store.Line, auth.NewQueueTokens(secret), time.Now, log, prometheus.NewRegistry())
}
