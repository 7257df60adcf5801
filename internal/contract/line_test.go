package contract

import (
	"testing"
	"time"
)

// inventory checks docs/api.md "Inventory, abandonment and no-shows": the line knows when seats run out.
func inventory(t *testing.T, s *server) {
	const (
		perSeat = "Inventory: with activePerSeat > 0 the admission tick admits nobody while it would make the ACTIVE count exceed activePerSeat × the AVAILABLE seats"
		reoffer = "Inventory: when a hold lapses or is cancelled, its seat is AVAILABLE again and the head of the line is admitted, even after every seat was once held"
		soldOut = "Inventory: when every seat of every schedule is SOLD, within a second every PREQUEUE and WAITING token reads SOLD_OUT"
	)
	c := s.createConcert(t, concertSpec{Seats: 2, Price: 1000, Queue: map[string]any{"activePerSeat": 1}})
	sc := c.Schedules[0].ID
	a, b, cc, d := s.newFan(t), s.newFan(t), s.newFan(t), s.newFan(t)
	at, bt := s.admitted(t, a, c.ID), s.admitted(t, b, c.ID)
	ct, dt := s.mustJoin(t, cc, c.ID), s.mustJoin(t, d, c.ID)
	promise(t, perSeat+" (2 seats, activePerSeat 1: the third fan waits)", ct.Status == "WAITING" && ct.Position == 1, "third fan %+v", ct)
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if tk := s.mustPoll(t, cc, ct.Token); !promise(t, perSeat, tk.Status == "WAITING", "third fan with 2 ACTIVE and 2 seats: %+v", tk) {
			break
		}
	}

	// Every seat held; a buys hers (DONE), b leaves the line and then cancels his hold: with nobody ACTIVE
	// and one seat AVAILABLE again, the head of the line is admitted.
	ra := s.mustHold(t, a, at, sc, "R-1")
	rb := s.mustHold(t, b, bt, sc, "R-2")
	promiseNow(t, "Points: POST /v1/points/charges → 201", s.charge(t, a, 1000).status == 201, "charge")
	expectStatus(t, "Payments: POST /v1/payments → 201", s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": ra.ID}, a.h("")...), 201)
	expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, b.h(bt)...), 204)
	tk := s.mustPoll(t, cc, ct.Token)
	promise(t, perSeat+" (no seat AVAILABLE: nobody admitted)", tk.Status == "WAITING", "head of the line with every seat held or sold: %+v", tk)
	expectStatus(t, "Reservations: DELETE /v1/reservations/{id} → 204", s.do(t, "DELETE", "/v1/reservations/"+rb.ID, nil, b.h("")...), 204)
	s.waitStatus(t, reoffer, cc, ct.Token, 20*time.Second, "ACTIVE")
	s.waitPlace(t, perSeat+" (1 seat, 1 ACTIVE: the next waits, first in line)", d, dt.Token, "WAITING", 1)

	// The last seat is sold: the waiting fan's token reads SOLD_OUT, its stream ends, a join is refused.
	stream := s.openEvents(t, d, dt.Token)
	promiseNow(t, "Queue: GET /v1/queue/events → 200", stream.status == 200, "%d %s", stream.status, stream.body)
	rc := s.mustHold(t, cc, ct.Token, sc, "R-2")
	promiseNow(t, "Points: POST /v1/points/charges → 201", s.charge(t, cc, 1000).status == 201, "charge")
	expectStatus(t, "Payments: POST /v1/payments → 201", s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": rc.ID}, cc.h("")...), 201)
	s.waitStatus(t, soldOut, d, dt.Token, 10*time.Second, "SOLD_OUT")
	r := s.join(t, s.newFan(t), c.ID, nil)
	expectProblem(t, "Inventory: sold out: a join is 409 SOLD_OUT", r, 409, "SOLD_OUT")
	q, qr := s.queueState(t, c.ID)
	promise(t, "Admin: GET .../queue: soldOut; seats {available, held, sold}", q.SoldOut && q.Seats.Sold == 2 && q.Seats.Available == 0, "%s", qr)

	last := ""
	deadline := time.Now().Add(20 * time.Second)
	ended := false
	for !ended && time.Now().Before(deadline) {
		ev, open, late := stream.next(time.Until(deadline))
		switch {
		case late:
		case !open:
			ended = true
		default:
			last = ticketOf(t, ev).Status
		}
	}
	promise(t, "Queue: the event stream ends after a final status (SOLD_OUT)", ended && last == "SOLD_OUT",
		"stream ended %v, last status %q", ended, last)
}

// abandonment checks docs/api.md "Inventory, abandonment and no-shows": the silent fan and the no-show.
func abandonment(t *testing.T, s *server) {
	t.Run("Abandoned", func(t *testing.T) {
		t.Parallel()
		const (
			abandon = "Abandonment: a WAITING fan who has neither polled nor rejoined for abandonAfterSeconds is not admitted when their turn comes: their token reads EXPIRED and the next fan takes the place"
			stream  = "Queue: holding the event stream open counts as polling (a fan with an open stream is not abandoned)"
		)
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"activeCapacity": 1, "abandonAfterSeconds": 2}})
		a, silent, poller, streamer := s.newFan(t), s.newFan(t), s.newFan(t), s.newFan(t)
		at := s.admitted(t, a, c.ID)
		st := s.mustJoin(t, silent, c.ID)
		joined := time.Now()
		pt, wt := s.mustJoin(t, poller, c.ID), s.mustJoin(t, streamer, c.ID)
		promiseNow(t, "Queue: admission is FIFO by arrival", st.Position == 1 && pt.Position == 2 && wt.Position == 3, "%+v %+v %+v", st, pt, wt)
		events := s.openEvents(t, streamer, wt.Token)
		promiseNow(t, "Queue: GET /v1/queue/events → 200", events.status == 200, "%d %s", events.status, events.body)

		// The poller polls every half second until the silent fan has been silent for twice
		// abandonAfterSeconds; then the ACTIVE fan leaves and the silent fan's turn comes.
		for time.Since(joined) < 4*time.Second {
			s.mustPoll(t, poller, pt.Token)
			time.Sleep(500 * time.Millisecond)
		}
		expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, a.h(at)...), 204)
		s.waitStatus(t, abandon+" (the next fan, who polled, is admitted)", poller, pt.Token, 20*time.Second, "ACTIVE")
		tk := s.mustPoll(t, silent, st.Token)
		promise(t, abandon+" (the silent fan reads EXPIRED)", tk.Status == "EXPIRED", "silent fan %+v", tk)
		q, qr := s.queueState(t, c.ID)
		promise(t, "Abandonment: counted in the admin figures (abandoned)", q.Abandoned >= 1, "%s", qr)
		r := s.join(t, silent, c.ID, nil)
		back := asTicket(t, r)
		promise(t, "Abandonment: rejoining gives a new token at the back", r.status == 201 && back.Token != st.Token && back.Status == "WAITING", "%s", r)
		s.waitPlace(t, "Abandonment: rejoining gives a new token at the back (behind the fan still waiting)", silent, back.Token, "WAITING", 2)

		// The fan who only held the stream open is next: admitted, not abandoned.
		expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, poller.h(pt.Token)...), 204)
		got, _ := s.waitStatus(t, stream, streamer, wt.Token, 20*time.Second, "ACTIVE", "EXPIRED")
		promise(t, stream, got.Status == "ACTIVE", "the fan who held the stream open reads %+v after %.1f s", got, time.Since(joined).Seconds())
	})

	t.Run("NoShow", func(t *testing.T) {
		t.Parallel()
		const noShow = "Abandonment: an ACTIVE fan who makes no gated call within noShowSeconds of admission is EXPIRED, freeing the slot"
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"noShowSeconds": 2}})
		idle, shows := s.newFan(t), s.newFan(t)
		it := s.admitted(t, idle, c.ID)
		showTok := s.admitted(t, shows, c.ID)
		expectStatus(t, "Catalog (gated): GET .../schedules → 200", s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules", nil, shows.h(showTok)...), 200)
		s.waitStatus(t, noShow, idle, it, 20*time.Second, "EXPIRED")
		tk := s.mustPoll(t, shows, showTok)
		promise(t, noShow+" (a fan who made a gated call stays ACTIVE)", tk.Status == "ACTIVE", "%+v", tk)
		q, qr := s.queueState(t, c.ID)
		promise(t, "Abandonment: no-shows are counted in the admin figures (abandoned)", q.Abandoned >= 1, "%s", qr)
	})
}
