package http

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
)

// BenchmarkPoll prices a poll of a WAITING token through the real handler, queue service and token
// checks (answered from the view, no Redis round trip), with and without the HTTP metrics, in one run:
//
//	go test -run '^$' -bench BenchmarkPoll -count 5 ./internal/http/
func BenchmarkPoll(b *testing.B) {
	c, secret, log, waiting := newPausedLine(b, "benchconcert")
	ctx := context.Background()
	for i := 0; i < 100; i++ { // a line to stand in
		if _, _, err := waiting.Join(ctx, "ahead-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), c.ID); err != nil {
			b.Fatal(err)
		}
	}
	ticket, _, err := waiting.Join(ctx, "fan-1", c.ID)
	if err != nil {
		b.Fatal(err)
	}
	jwt, err := auth.Mint(secret, "fan-1", time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		metrics bool
	}{{"with_metrics", true}, {"without_metrics", false}} {
		b.Run(tt.name, func(b *testing.B) {
			s := NewServer(Deps{API: true, Queue: waiting, Catalog: nil, Users: auth.NewUsers(secret),
				Registry: prometheus.NewRegistry(), Log: log})
			if !tt.metrics {
				// instrument takes a route's series when the route is added: nil the metrics, then
				// add the route again on a fresh router, or the poll is still counted.
				s.metrics = nil
				s.router = httprouter.New()
				s.handle("GET", "/v1/queue", s.queueStatus)
			}
			// net/http serves a request with a context it can cancel (the connection's): a deadline
			// made on it registers with it, so the benchmark's request has one too.
			conn, hangUp := context.WithCancel(ctx)
			defer hangUp()
			r := httptest.NewRequestWithContext(conn, "GET", "/v1/queue", nil)
			r.Header.Set("Authorization", "Bearer "+jwt)
			r.Header.Set("X-Queue-Token", ticket.Token)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("poll: %d %s", w.Code, w.Body)
				}
			}
		})
	}
}
