package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSoldOutEndToEnd: 30 fans wait for 5 seats with activePerSeat 1. The fans ACTIVE never exceed
// the seats AVAILABLE; each admitted fan buys a seat; when the 5th seat is paid, every waiting token
// reads SOLD_OUT within a view refresh or two, a new join is 409 SOLD_OUT, and the admin figures say so.
func TestSoldOutEndToEnd(t *testing.T) {
	s := startService(t, nil)
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": "Sold out " + t.Name(), "venue": "Small Hall",
		"schedules": []string{"2026-12-24T10:00:00Z"},
		"sections":  []map[string]any{{"name": "R", "price": 1000, "seats": 5}},
		"queue":     map[string]any{"activePerSeat": 1, "admitPerSecond": 100},
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var c struct {
		ID        string `json:"id"`
		Schedules []struct {
			ID string `json:"id"`
		} `json:"schedules"`
		Queue struct {
			ActivePerSeat int `json:"activePerSeat"`
		} `json:"queue"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	require.Equal(t, 1, c.Queue.ActivePerSeat)
	concertID, scheduleID := c.ID, c.Schedules[0].ID

	type entry struct {
		fan   fan
		token string
	}
	var fans []entry
	for i := range 30 {
		f := buyer(t, fmt.Sprintf("fan%02d", i))
		_, tk := s.join(t, f, concertID)
		assert.Equal(t, int64(5), tk.SeatsAvailable, "fan %d: nothing held yet", i)
		fans = append(fans, entry{f, tk.Token})
	}

	// The admitted fans buy a seat each; the line moves only as far as there are seats for it.
	var admitted []entry
	bought := 0
	for round := 0; bought < 5; round++ {
		require.Less(t, round, 50, "the sale stalled with %d seats bought", bought)
		var now []entry
		for _, e := range fans {
			if st := s.poll(t, e.fan, e.token); st.Status == "ACTIVE" {
				now = append(now, e)
			}
		}
		q := s.queueState(t, concertID)
		require.LessOrEqual(t, int64(len(now)), q.Seats.Available, "more fans ACTIVE than seats AVAILABLE: %+v", q)
		if len(now) == 0 {
			require.Eventually(t, func() bool { return s.queueState(t, concertID).Active > 0 }, 5*time.Second, 20*time.Millisecond,
				"somebody is admitted while seats are left")
			continue
		}
		for _, e := range now {
			admitted = append(admitted, e)
			bought++
			seat := fmt.Sprintf("R-%d", bought)
			require.Equal(t, http.StatusCreated, s.charge(t, e.fan, 1000, "").status)
			h := s.hold(t, e.fan, e.token, scheduleID, seat)
			require.Equal(t, http.StatusCreated, h.status, "hold %s: %s", seat, h.body)
			var r reservation
			require.NoError(t, json.Unmarshal(h.body, &r))
			p := s.pay(t, e.fan, r.ID, "")
			require.Equal(t, http.StatusCreated, p.status, "pay %s: %s", seat, p.body)
		}
	}
	require.Len(t, admitted, 5, "one fan admitted per seat, no more")
	soldAt := time.Now()

	inLine := func(e entry) bool {
		for _, a := range admitted {
			if a.token == e.token {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool {
		for _, e := range fans {
			if inLine(e) && s.status(e.fan, e.token) != "SOLD_OUT" {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every waiting token reads SOLD_OUT")
	t.Logf("every waiting token read SOLD_OUT %v after the 5th payment", time.Since(soldAt))
	for _, e := range fans {
		if inLine(e) {
			tk := s.poll(t, e.fan, e.token)
			assert.Zero(t, tk.Position)
			assert.Zero(t, tk.SeatsAvailable)
		}
	}

	late := s.do(t, req{method: "POST", path: "/v1/concerts/" + concertID + "/queue", headers: buyer(t, "late").auth("")})
	requireProblem(t, late, http.StatusConflict, "SOLD_OUT")
	q := s.queueState(t, concertID)
	assert.True(t, q.SoldOut)
	assert.Equal(t, int64(5), q.Seats.Sold)
	assert.Zero(t, q.Seats.Available)
}
