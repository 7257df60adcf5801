package http

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHelloWorld is the floor BenchmarkPoll is read against on the same machine and run: a bare
// net/http handler writing a small JSON body through the same recorder, so that a poll's cost can be
// given as a ratio to it (the in-process counterpart of make bench's hello-world ratio).
//
//	go test -run '^$' -bench 'BenchmarkPoll|BenchmarkHelloWorld' -count 5 ./internal/http/
func BenchmarkHelloWorld(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"WAITING","position":101}`))
	})
	r := httptest.NewRequest("GET", "/v1/queue", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
