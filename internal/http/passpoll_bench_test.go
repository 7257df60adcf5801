package http

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkActivePoll prices a poll of an ACTIVE token through the real handler, services and Redis,
// with the pass it carries signed afresh and without a pass, in one run (docs/pass.md, "Cost"):
//
//	go test -run '^$' -bench BenchmarkActivePoll -count 5 ./internal/http/
func BenchmarkActivePoll(b *testing.B) {
	w := realWorld(b)
	for _, tt := range []struct {
		name string
		pass bool
	}{{"with_pass", true}, {"without_pass", false}} {
		b.Run(tt.name, func(b *testing.B) {
			d := w.deps
			d.Registry = prometheus.NewRegistry()
			if !tt.pass {
				d.Passes = nil
			}
			s := NewServer(d)
			conn, hangUp := context.WithCancel(context.Background())
			defer hangUp()
			r := httptest.NewRequestWithContext(conn, "GET", "/v1/queue", nil)
			r.Header.Set("Authorization", bearerOf(userAlice))
			r.Header.Set("X-Queue-Token", w.ids[qtAliceActive])
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					b.Fatalf("poll: %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
