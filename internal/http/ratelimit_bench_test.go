package http

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
)

// BenchmarkLimited prices a request past the user's limit (429, nothing done) beside a served poll of a
// WAITING token, in-process and over HTTP on loopback, through the real handler, JWT check and limiter:
//
//	go test -run '^$' -bench BenchmarkLimited -count 5 ./internal/http/
func BenchmarkLimited(b *testing.B) {
	c, secret, log, waiting := newPausedLine(b, "benchconcert")
	ctx := context.Background()
	if _, _, err := waiting.Join(ctx, "ahead", c.ID); err != nil {
		b.Fatal(err)
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
		name  string
		limit *Limiter
		want  int
	}{
		{"poll_served", NewLimiter(1_000_000_000, 1_000_000, time.Now), http.StatusOK},
		{"poll_limited", NewLimiter(1, 1, func() time.Time { return time.Unix(1_800_000_000, 0) }), http.StatusTooManyRequests},
	} {
		s := NewServer(Deps{API: true, Queue: waiting, Users: auth.NewUsers(secret), Registry: prometheus.NewRegistry(),
			Log: log, Limiter: tt.limit})
		b.Run(tt.name+"/in_process", func(b *testing.B) {
			r := httptest.NewRequest("GET", "/v1/queue", nil)
			r.Header.Set("Authorization", "Bearer "+jwt)
			r.Header.Set("X-Queue-Token", ticket.Token)
			s.ServeHTTP(httptest.NewRecorder(), r) // takes the one token of the limited case
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				if w.Code != tt.want {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
		b.Run(tt.name+"/http", func(b *testing.B) {
			ts := httptest.NewServer(s)
			defer ts.Close()
			hc := ts.Client()
			r, _ := http.NewRequest("GET", ts.URL+"/v1/queue", nil)
			r.Header.Set("Authorization", "Bearer "+jwt)
			r.Header.Set("X-Queue-Token", ticket.Token)
			b.ReportAllocs()
			for b.Loop() {
				res, err := hc.Do(r)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != tt.want {
					b.Fatalf("%d", res.StatusCode)
				}
			}
		})
	}
}
