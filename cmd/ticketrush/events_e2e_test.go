package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// stream opens GET /v1/queue/events for the fan's token and returns its events as they come; the
// channel closes when the server ends the stream.
func (s *service) stream(t *testing.T, f fan, token string) <-chan ticket {
	t.Helper()
	r, err := http.NewRequest("GET", s.url+"/v1/queue/events", nil)
	require.NoError(t, err)
	for h := f.auth(token); len(h) > 1; h = h[2:] {
		r.Header.Set(h[0], h[1])
	}
	r.Header.Set("Accept", "text/event-stream")
	// No overall client timeout: a stream is long-lived, and every read of it is bounded by next.
	res, err := (&http.Client{Transport: s.client.Transport}).Do(r)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	out := make(chan ticket, 100)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "status":
				var tk ticket
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &tk); err != nil {
					tk.Status = fmt.Sprintf("bad event data %q: %v", line, err)
				}
				out <- tk
			}
		}
	}()
	return out
}

// next waits for the stream's next event.
func next(t *testing.T, events <-chan ticket, within time.Duration) (ticket, bool) {
	t.Helper()
	select {
	case tk, ok := <-events:
		return tk, ok
	case <-time.After(within):
		require.FailNow(t, "no event", "none within %v", within)
	}
	return ticket{}, false
}

// TestEventStream: a waiting fan's stream says WAITING at once and ACTIVE when the fan ahead leaves;
// a fan waiting behind a buyer of the last seat has a stream that ends on SOLD_OUT. Real HTTP client,
// real server.
func TestEventStream(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcertOf(t, 1, map[string]any{"activeCapacity": 1})
	alice, bob, carol := buyer(t, "alice"), buyer(t, "bob"), buyer(t, "carol")
	aliceTok := s.admitted(t, alice, concertID)
	_, bt := s.join(t, bob, concertID)
	require.Equal(t, "WAITING", bt.Status)

	bobEvents := s.stream(t, bob, bt.Token)
	first, ok := next(t, bobEvents, 5*time.Second)
	require.True(t, ok)
	assert.Equal(t, "WAITING", first.Status, "the status at once")
	assert.Equal(t, int64(1), first.Position)

	s.leave(t, alice, aliceTok)
	left := time.Now()
	var got ticket
	for got.Status != "ACTIVE" {
		got, ok = next(t, bobEvents, 10*time.Second)
		require.True(t, ok, "the stream ended before ACTIVE")
		require.Contains(t, []string{"WAITING", "ACTIVE"}, got.Status)
	}
	t.Logf("ACTIVE on the stream %v after the fan ahead left", time.Since(left))
	require.NotNil(t, got.ActiveUntil)

	_, ct := s.join(t, carol, concertID)
	require.Equal(t, "WAITING", ct.Status)
	carolEvents := s.stream(t, carol, ct.Token)
	first, ok = next(t, carolEvents, 5*time.Second)
	require.True(t, ok)
	require.Equal(t, "WAITING", first.Status)

	require.Equal(t, http.StatusCreated, s.charge(t, bob, 1000, "").status)
	h := s.hold(t, bob, got.Token, scheduleID, "R-1")
	require.Equal(t, http.StatusCreated, h.status, "hold: %s", h.body)
	var r reservation
	require.NoError(t, json.Unmarshal(h.body, &r))
	require.Equal(t, http.StatusCreated, s.pay(t, bob, r.ID, "").status)

	var statuses []string
	for {
		tk, ok := next(t, carolEvents, 10*time.Second)
		if !ok {
			break
		}
		statuses = append(statuses, tk.Status)
	}
	require.NotEmpty(t, statuses)
	assert.Equal(t, "SOLD_OUT", statuses[len(statuses)-1], "the stream ends on SOLD_OUT: %v", statuses)
	for _, st := range statuses[:len(statuses)-1] {
		assert.Equal(t, "WAITING", st, "carol is never admitted: %v", statuses)
	}
}

// saleConcertOf creates a concert of one schedule with R-1..seats at 1,000.
func (s *service) saleConcertOf(t *testing.T, seats int, queue map[string]any) (concertID, scheduleID string) {
	t.Helper()
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": "Stream " + t.Name(), "venue": "Hall", "schedules": []string{"2026-12-24T10:00:00Z"},
		"sections": []map[string]any{{"name": "R", "price": 1000, "seats": seats}}, "queue": queue,
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var c struct {
		ID        string `json:"id"`
		Schedules []struct {
			ID string `json:"id"`
		} `json:"schedules"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	return c.ID, c.Schedules[0].ID
}

// TestEventStreamOutlivesEveryDeadline: a WAITING fan's stream, served by `run` with the production
// server settings, stays open past every deadline the server has (the request deadline, the read and
// the write timeouts), with a heartbeat at least every pollAfterSeconds, and still carries the turn
// when it comes.
func TestEventStreamOutlivesEveryDeadline(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	concertID, _ := s.saleConcertOf(t, 10, map[string]any{"activeCapacity": 1})
	alice, bob := buyer(t, "alice"), buyer(t, "bob")
	aliceTok := s.admitted(t, alice, concertID)
	_, bt := s.join(t, bob, concertID)
	require.Equal(t, "WAITING", bt.Status)

	longest := max(config.RequestTimeout, config.Server.Read, config.Server.Write)
	hold := longest + 2*time.Second
	require.GreaterOrEqual(t, hold, 3*config.RequestTimeout)

	events := s.stream(t, bob, bt.Token)
	first, ok := next(t, events, 10*time.Second)
	require.True(t, ok)
	require.Equal(t, "WAITING", first.Status)
	require.Positive(t, first.PollAfterSeconds)
	beat := time.Duration(first.PollAfterSeconds) * time.Second
	opened, last, beats := time.Now(), time.Now(), 0
	for time.Since(opened) < hold {
		tk, ok := next(t, events, beat+5*time.Second) // a heartbeat at pollAfterSeconds, with slack for a slow machine
		require.True(t, ok, "the stream of a WAITING fan ended %v after it opened (server deadlines: request %v, read %v, write %v)",
			time.Since(opened).Round(time.Millisecond), config.RequestTimeout, config.Server.Read, config.Server.Write)
		require.Equal(t, "WAITING", tk.Status)
		beats++
		last = time.Now()
	}
	t.Logf("%d heartbeats over %v (pollAfterSeconds %d)", beats, last.Sub(opened).Round(time.Millisecond), first.PollAfterSeconds)
	// At least one a pollAfterSeconds, with a second of slack each for a slow machine (each gap is held to
	// pollAfterSeconds plus slack above already).
	require.GreaterOrEqual(t, beats, int(hold/(beat+time.Second)), "a heartbeat at least every pollAfterSeconds")

	s.leave(t, alice, aliceTok)
	for {
		tk, ok := next(t, events, 10*time.Second)
		require.True(t, ok, "the stream ended before the turn")
		if tk.Status == "ACTIVE" {
			break
		}
		require.Equal(t, "WAITING", tk.Status)
	}
}

// TestEventStreamOutlivesARedisOutage: what ends a stream is a final status, the client leaving, the
// server stopping or a write the client does not take in time (docs/api.md, "Waiting room", the event
// stream), not a dependency that does not answer for a while. An ACTIVE fan's stream, served by `run` with
// the production settings, reads Redis at its recheck; Redis hangs (SIGSTOP) until such a read has failed,
// and the stream is still open when Redis answers again and carries the fan's leave.
func TestEventStreamOutlivesARedisOutage(t *testing.T) {
	t.Parallel()
	rs := dbtest.StartRedisServer(t, "everysec")
	s := startService(t, map[string]string{"REDIS_URL": rs.URL})
	concertID, _ := s.saleConcertOf(t, 10, map[string]any{"activeCapacity": 1})
	alice := buyer(t, "alice")
	tok := s.admitted(t, alice, concertID)

	events := s.stream(t, alice, tok)
	first, ok := next(t, events, 10*time.Second)
	require.True(t, ok)
	require.Equal(t, "ACTIVE", first.Status)

	failed := func() float64 {
		lines, err := s.tryMetricLines("ticketrush_queue_stream_read_failures_total")
		if err != nil || len(lines) != 1 {
			return 0
		}
		v, _ := strconv.ParseFloat(lines[0][strings.LastIndexByte(lines[0], ' ')+1:], 64)
		return v
	}
	rs.Pause()
	paused := time.Now()
	// The stream's recheck (every few seconds for an ACTIVE token) meets the hung Redis and gives up
	// on that read after its call timeout; the count of such reads tells when.
	for failed() < 1 {
		select {
		case tk, ok := <-events:
			require.True(t, ok, "the stream ended %v into the outage", time.Since(paused).Round(time.Millisecond))
			require.Equal(t, "ACTIVE", tk.Status, "a heartbeat before the first failed read")
		default:
		}
		require.Less(t, time.Since(paused), time.Minute, "no read of the stream failed within a minute of the outage")
	}
	t.Logf("a read of the stream failed %v into the outage", time.Since(paused).Round(time.Millisecond))
	rs.Resume()

	// Redis answers again: the leave (retried while the service reconnects) reaches the open stream.
	require.Eventually(t, func() bool {
		res, err := s.send(req{method: "DELETE", path: "/v1/queue", headers: alice.auth(tok)})
		return err == nil && res.status == http.StatusNoContent
	}, time.Minute, 50*time.Millisecond, "the leave after the outage")
	for {
		tk, ok := next(t, events, 30*time.Second)
		require.True(t, ok, "the stream ended without the leave's status")
		if tk.Status != "ACTIVE" {
			require.Equal(t, "EXPIRED", tk.Status, "the leave's status, on the stream opened before the outage")
			break
		}
	}
	_, ok = next(t, events, 10*time.Second)
	require.False(t, ok, "the stream ends after the final status")
}
