package http

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
)

// TestEventStreamOutlivesWriteTimeout serves a WAITING token's stream from a server whose WriteTimeout
// is 200 ms: the heartbeat a second later still arrives, because each write moves the connection's
// deadline, and stopping the streams ends it.
func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	c, secret, log, svc := newPausedLine(t, "streamconcert")
	ctx := context.Background()
	tk, _, err := svc.Join(ctx, "fan-1", c.ID)
	require.NoError(t, err)
	jwt, err := auth.Mint(secret, "fan-1", time.Hour, time.Now())
	require.NoError(t, err)

	s := NewServer(Deps{API: true, Queue: svc, Users: auth.NewUsers(secret), Registry: prometheus.NewRegistry(), Log: log})
	srv := httptest.NewUnstartedServer(s)
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Config.RegisterOnShutdown(s.StopStreams)
	srv.Start()
	defer srv.Close()

	r, err := http.NewRequest("GET", srv.URL+"/v1/queue/events", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Bearer "+jwt)
	r.Header.Set("X-Queue-Token", tk.Token)
	res, err := srv.Client().Do(r)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))

	events := make(chan string, 10)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				events <- line
			}
		}
	}()
	start := time.Now()
	for i := range 2 {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the stream ended after %d events, %v in", i, time.Since(start))
			assert.Contains(t, ev, `"status":"WAITING"`)
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no event", "event %d", i)
		}
	}
	assert.Greater(t, time.Since(start), 200*time.Millisecond, "the heartbeat came after the WriteTimeout")

	s.StopStreams()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return // the stream ended
			}
		case <-deadline:
			require.FailNow(t, "the stream did not end when the streams were stopped")
		}
	}
}
