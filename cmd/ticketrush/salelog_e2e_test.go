package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logLines returns the service's log lines with the message msg, decoded.
func (s *service) logLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(s.logs.String()) {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// TestSaleLog: the service's log tells the sale as it happens, in figures per concert every few
// seconds and a line per operator action, never a line per request: a fan joins, holds, pays and then
// polls 200 times; the log's sale lines add up to that join, hold and payment, and the polls add no
// line of their own.
func TestSaleLog(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcertOf(t, 5, nil)
	created := s.logLines(t, "operator created a concert")
	require.Len(t, created, 1, "the create is an operator action")
	assert.Equal(t, concertID, created[0]["concert"])

	f := buyer(t, "logged")
	token := s.admitted(t, f, concertID)
	h := s.hold(t, f, token, scheduleID, "R-1")
	require.Equal(t, http.StatusCreated, h.status, "%s", h.body)
	var r reservation
	require.NoError(t, json.Unmarshal(h.body, &r))
	require.Equal(t, http.StatusCreated, s.charge(t, f, 1000, "").status)
	require.Equal(t, http.StatusCreated, s.pay(t, f, r.ID, "").status)

	sums := func() map[string]float64 {
		out := map[string]float64{}
		for _, l := range s.logLines(t, "sale") {
			if l["concert"] == concertID {
				for _, k := range []string{"joined", "admitted", "held", "paid"} {
					n, _ := l[k].(float64)
					out[k] += n
				}
			}
		}
		return out
	}
	var (
		mu  sync.Mutex
		got map[string]float64
	)
	if !assert.Eventually(t, func() bool {
		now := sums()
		mu.Lock()
		got = now
		mu.Unlock()
		return now["joined"] == 1 && now["held"] == 1 && now["paid"] == 1
	}, 4*saleLogEvery+30*time.Second, 100*time.Millisecond) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the sale lines never added up to the join, hold and payment: %v", got)
	}

	lines := strings.Count(s.logs.String(), "\n")
	for range 200 {
		s.poll(t, f, token)
	}
	res := s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concertID + "/queue", headers: admin(), body: map[string]any{"paused": true}})
	require.Equal(t, http.StatusOK, res.status)
	changed := s.logLines(t, "operator changed a queue")
	require.Len(t, changed, 1, "the pause is an operator action")
	assert.Equal(t, true, changed[0]["paused"])
	assert.Less(t, strings.Count(s.logs.String(), "\n")-lines, 20, "200 polls and a pause wrote a line per request:\n%s", s.logs.String())
}
