package contract

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"
)

// queueSection checks docs/api.md "Waiting room" (the event stream has a section of its own: eventStream).
func queueSection(t *testing.T, s *server) {
	t.Run("JoinPollLeave", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Seats: 7, Queue: map[string]any{"activeCapacity": 1}})
		a, b, d := s.newFan(t), s.newFan(t), s.newFan(t)

		r := s.join(t, a, c.ID, nil)
		expectStatus(t, "Queue: POST /v1/concerts/{concertId}/queue → 201 new token", r, 201)
		at := asTicket(t, r)
		promise(t, "Queue: a join finds the user ACTIVE at once when nobody waits and there is room", at.Status == "ACTIVE", "first fan: %s", r)
		promise(t, "Queue: position: 0 otherwise (not WAITING)", at.Position == 0, "ACTIVE fan: %s", r)
		promise(t, "Queue: activeUntil: when an ACTIVE token lapses", at.ActiveUntil != nil && at.ActiveUntil.After(time.Now()), "ACTIVE fan: %s", r)
		promise(t, "Queue: opensAt: null unless the concert has a sale still ahead", at.OpensAt == nil, "%s", r)
		promise(t, "Queue: drawKey: null unless the pre-queue the fan joined has been drawn", at.DrawKey == nil, "%s", r)
		promise(t, "Queue: the queue body's concertId", at.ConcertID == c.ID, "%s", r)

		again := s.join(t, a, c.ID, nil)
		expectStatus(t, "Queue: POST .../queue → 200 the caller's existing PREQUEUE/WAITING/ACTIVE token", again, 200)
		promise(t, "Queue: one live token per (user, concert)", asTicket(t, again).Token == at.Token, "first %s, again %s", r, again)

		bt, dt := s.mustJoin(t, b, c.ID), s.mustJoin(t, d, c.ID)
		promise(t, "Queue: position: 1-based place in line while WAITING (1 = next to be admitted)",
			bt.Status == "WAITING" && bt.Position == 1 && dt.Status == "WAITING" && dt.Position == 2,
			"second fan %+v, third fan %+v", bt, dt)
		promise(t, "Queue: activeUntil: null unless ACTIVE", bt.ActiveUntil == nil, "WAITING fan: %+v", bt)
		promise(t, "Queue: pollAfterSeconds tells the client when to poll", bt.PollAfterSeconds > 0, "WAITING fan: %+v", bt)
		promise(t, "Queue: seatsAvailable: seats of the concert that are AVAILABLE now", bt.SeatsAvailable == 7, "WAITING fan: %+v (7 seats, none held)", bt)

		bAgain := s.join(t, b, c.ID, nil)
		expectStatus(t, "Queue: POST .../queue → 200 the caller's existing WAITING token", bAgain, 200)
		promise(t, "Queue: one live token per (user, concert); a rejoin keeps the place",
			asTicket(t, bAgain).Token == bt.Token && asTicket(t, bAgain).Position == 1, "rejoin %s", bAgain)

		// Leaving gives back the active slot: the next in line, b, is admitted, then d behind b.
		r = s.do(t, "DELETE", "/v1/queue", nil, a.h(at.Token)...)
		expectStatus(t, "Queue: DELETE /v1/queue (X-Queue-Token) → 204: gives back the active slot", r, 204)
		s.waitStatus(t, "Queue: DELETE gives back the active slot: the next in line is admitted (FIFO by arrival)", b, bt.Token, 20*time.Second, "ACTIVE")
		s.waitPlace(t, "Queue: admission is FIFO by arrival (the third fan is next once the second is admitted)", d, dt.Token, "WAITING", 1)

		gone := s.mustPoll(t, a, at.Token)
		promise(t, "Queue: GET /v1/queue → 200 for any genuine token, whatever its status (a token that left is final)",
			gone.Status == "EXPIRED" || gone.Status == "DONE", "the token that left reads %+v", gone)

		// d leaves the line while WAITING; b's slot stays taken.
		r = s.do(t, "DELETE", "/v1/queue", nil, d.h(dt.Token)...)
		expectStatus(t, "Queue: DELETE /v1/queue → 204: leaves the line", r, 204)
		dGone := s.mustPoll(t, d, dt.Token)
		promise(t, "Queue: DELETE leaves the line (the token is no longer WAITING)", dGone.Status == "EXPIRED" || dGone.Status == "DONE", "%+v", dGone)

		// After EXPIRED/DONE a new token goes to the back: a is behind nobody but b holds the slot.
		r = s.join(t, a, c.ID, nil)
		expectStatus(t, "Queue: after EXPIRED/DONE a join is a new token (201)", r, 201)
		back := asTicket(t, r)
		promise(t, "Queue: after EXPIRED/DONE a new one goes to the back", back.Token != at.Token && back.Status == "WAITING", "rejoin after leaving: %s", r)
		s.waitPlace(t, "Queue: after EXPIRED/DONE a new one goes to the back (behind nobody: the line is empty, the slot taken)", a, back.Token, "WAITING", 1)
	})

	t.Run("LeaveIsFinalAcrossShards", func(t *testing.T) {
		t.Parallel()
		leaveIsFinalAcrossShards(t, s)
	})

	t.Run("ActiveLapses", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"activeCapacity": 1, "activeTtlSeconds": 2}})
		a, b := s.newFan(t), s.newFan(t)
		at := s.mustJoin(t, a, c.ID)
		promiseNow(t, "Queue: a join finds the user ACTIVE at once when nobody waits and there is room", at.Status == "ACTIVE", "%+v", at)
		promise(t, "Queue: activeUntil: when an ACTIVE token lapses (activeTtlSeconds after admission)",
			at.ActiveUntil != nil && at.ActiveUntil.Before(time.Now().Add(3*time.Second)), "activeTtlSeconds 2: %+v", at)
		bt := s.mustJoin(t, b, c.ID)
		s.waitStatus(t, "Queue: an ACTIVE token lapses activeTtlSeconds after admission (EXPIRED)", a, at.Token, 20*time.Second, "EXPIRED")
		s.waitStatus(t, "Queue: an EXPIRED token frees the slot for the next in line", b, bt.Token, 20*time.Second, "ACTIVE")
		r := s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules", nil, a.h(at.Token)...)
		expectProblem(t, "Conventions: a gated call with an EXPIRED token: 410 QUEUE_TOKEN_EXPIRED", r, 410, "QUEUE_TOKEN_EXPIRED")
	})

	t.Run("StatusOfAnyGenuineToken", func(t *testing.T) {
		t.Parallel()
		f := s.newFan(t)
		r := s.poll(t, f, "not-a-token")
		expectProblem(t, "Conventions: a forged token: 401 QUEUE_TOKEN_INVALID (GET /v1/queue)", r, 401, "QUEUE_TOKEN_INVALID")
		r = s.do(t, "DELETE", "/v1/queue", nil, f.h("not-a-token")...)
		expectProblem(t, "Conventions: a forged token: 401 QUEUE_TOKEN_INVALID (DELETE /v1/queue)", r, 401, "QUEUE_TOKEN_INVALID")
		r = s.join(t, f, "no-such-concert", nil)
		expectProblem(t, "Queue: a join of an unknown concert: 404 NOT_FOUND", r, 404, "NOT_FOUND")
	})
}

// leaveIsFinalAcrossShards checks, on a line of 8 shards, that positions count the fans ahead across
// every shard after leaves, and that a leave answered 204 is final when it lands as the fan reaches the
// head, racing the tick that admits them.
func leaveIsFinalAcrossShards(t *testing.T, s *server) {
	const (
		positions = "Queue (v3): with lineShards > 1, position counts the fans ahead across every shard (after leaves)"
		final     = "Queue (v4): DELETE /v1/queue → 204 is final: the token is never ACTIVE again and does not count against activeCapacity, whatever the line was doing"
	)
	c := s.createConcert(t, concertSpec{Queue: map[string]any{"lineShards": 8, "activeCapacity": 1, "admitPerSecond": 1000}})
	cur := s.newFan(t)
	curToken := s.admitted(t, cur, c.ID)
	type waiter struct {
		f     fan
		token string
	}
	var line []waiter
	for i := range 24 {
		f := s.newFan(t)
		tk := s.mustJoin(t, f, c.ID)
		promise(t, positions+" (at the join)", tk.Status == "WAITING" && tk.Position == int64(i+1), "fan %d: %+v", i, tk)
		line = append(line, waiter{f, tk.Token})
	}
	kept := line[:0:0]
	for i, w := range line {
		if i%5 == 4 { // four leavers spread over the line, and so over its shards
			expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, w.f.h(w.token)...), 204)
			continue
		}
		kept = append(kept, w)
	}
	for i, w := range kept {
		if !s.waitPlace(t, positions, w.f, w.token, "WAITING", int64(i+1)) {
			return
		}
	}

	// A storm of leaves at the head: the line admits two fans a tick, and every fan leaves once they reach
	// the first two places, at a random moment of the tick that admits them (or gives back the slot if
	// admitted first). When every fan has left, nobody counts against the capacity.
	r := s.do(t, "PATCH", "/admin/v1/concerts/"+c.ID+"/queue", map[string]any{"activeCapacity": 1000, "admitPerSecond": 20}, s.admin()...)
	expectStatus(t, "Admin: PATCH /admin/v1/concerts/{concertId}/queue → 200", r, http.StatusOK)
	expectStatus(t, "Queue: DELETE /v1/queue → 204: gives back the active slot", s.do(t, "DELETE", "/v1/queue", nil, cur.h(curToken)...), http.StatusNoContent)
	for range 40 {
		f := s.newFan(t)
		kept = append(kept, waiter{f, s.mustJoin(t, f, c.ID).Token})
	}
	var wg sync.WaitGroup
	for _, w := range kept {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(75 * time.Millisecond) {
				r, err := s.try("GET", "/v1/queue", nil, w.f.h(w.token)...)
				if err != nil || r.status != http.StatusOK {
					continue
				}
				tk := asTicket(t, r)
				if tk.Status == "WAITING" && tk.Position > 2 {
					continue
				}
				// at some moment of the tick that is admitting the first places (10 a second: 100 ms apart)
				time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
				left := s.do(t, "DELETE", "/v1/queue", nil, w.f.h(w.token)...)
				if !expectStatus(t, "Queue: DELETE /v1/queue → 204", left, http.StatusNoContent) {
					return
				}
				after := s.mustPoll(t, w.f, w.token)
				promise(t, final, after.Status != "ACTIVE", "a fan who left at %s position %d (204) then read %+v", tk.Status, tk.Position, after)
				return
			}
			promise(t, "Queue: the line admits its head (every fan reaches the first places within 30 s)", false, "fan never near the head")
		}()
	}
	wg.Wait()
	eventually(t, final+" (the ACTIVE count once every fan left)", 5*time.Second, 250*time.Millisecond, func() (bool, string) {
		q, qr := s.queueState(t, c.ID)
		return q.Active == 0, qr.String()
	})
}
