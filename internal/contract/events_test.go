package contract

import (
	"testing"
	"time"
)

// requestDeadline is the server's request deadline: config.RequestTimeout (2 s), which
// bounds every request's calls to Redis and Postgres. It is restated here, not imported, so that the suite
// holds streams past whatever the server's deadline is meant to be; a stream is held for at least three of
// them (docs/api.md "Waiting room": a stream ends after a final status, when the client leaves, the server
// stops or a write is not taken within 10 s).
const requestDeadline = 2 * time.Second

// holdStream is how long a WAITING fan's stream is held open: more than 3 request deadlines.
const holdStream = 3*requestDeadline + time.Second

// heartbeatSlack is how late a heartbeat may be on a busy machine.
const heartbeatSlack = 2 * time.Second

// eventStream checks docs/api.md "Waiting room", GET /v1/queue/events, sentence by sentence, on a WAITING
// fan held past every server deadline, then admitted, then leaving.
func eventStream(t *testing.T, s *server) {
	const (
		atOnce    = "Queue: GET /v1/queue/events (Accept: text/event-stream): the same body as GET /v1/queue as Server-Sent Events (event: status), sent at once"
		heartbeat = "Queue: the event stream sends the status at least every pollAfterSeconds while WAITING"
		noEnd     = "Queue: a stream has no deadline of its own (v3): it lasts until a final status, the client leaving, the server stopping, or a write the client does not take in time"
		onChange  = "Queue: the event stream sends the status on every change of status"
		final     = "Queue: the event stream ends after a final status (EXPIRED, DONE, SOLD_OUT)"
	)
	// The fan ahead is ACTIVE for the whole hold and leaves; the fan is then ACTIVE until the token
	// lapses activeTtlSeconds after admission, a final status that must end the stream.
	const activeTTL = 15 * time.Second
	c := s.createConcert(t, concertSpec{Queue: map[string]any{"activeCapacity": 1, "activeTtlSeconds": int(activeTTL / time.Second)}})
	ahead, w := s.newFan(t), s.newFan(t)
	aheadTok := s.admitted(t, ahead, c.ID)
	wt := s.mustJoin(t, w, c.ID)
	promiseNow(t, "Queue: admission is FIFO by arrival (capacity 1 taken: the next fan waits)", wt.Status == "WAITING", "%+v", wt)

	st := s.openEvents(t, w, wt.Token)
	promiseNow(t, atOnce+" (200)", st.status == 200, "got %d %s", st.status, st.body)
	promise(t, atOnce+" (Content-Type text/event-stream)", st.header.Get("Content-Type") == "text/event-stream",
		"Content-Type %q", st.header.Get("Content-Type"))
	ev, open, late := st.next(5 * time.Second)
	promiseNow(t, atOnce, open && !late, "no first event within 5 s (stream ended: %v)", !open)
	first := ticketOf(t, ev)
	promise(t, atOnce+" (the fan's WAITING status and place)", first.Status == "WAITING" && first.Position == 1 && first.Token != "",
		"first event %s", ev.data)
	promiseNow(t, "Queue: pollAfterSeconds > 0 while WAITING", first.PollAfterSeconds > 0, "first event %s", ev.data)

	// Hold the stream open past 3 request deadlines: every gap at most pollAfterSeconds (plus slack),
	// and no end while the fan is WAITING.
	pollAfter := time.Duration(first.PollAfterSeconds) * time.Second
	last := ev.at
	beats := 0
	for time.Since(st.opened) < holdStream {
		wait := min(time.Until(last.Add(pollAfter+heartbeatSlack)), time.Until(st.opened.Add(holdStream)))
		ev, open, late := st.next(max(wait, 0))
		if !open {
			promiseNow(t, noEnd, false, "the stream of a WAITING fan ended %.2f s after it opened (read error: %v); want it open for %v at least",
				st.end.Sub(st.opened).Seconds(), st.err, holdStream)
		}
		if late {
			if time.Since(st.opened) >= holdStream {
				break
			}
			promiseNow(t, heartbeat, false, "no event for %.1f s (pollAfterSeconds %d) while WAITING",
				time.Since(last).Seconds(), int(pollAfter/time.Second))
		}
		tk := ticketOf(t, ev)
		promise(t, heartbeat+" (a WAITING fan with the fan ahead still ACTIVE)", tk.Status == "WAITING", "event %s", ev.data)
		last, beats = ev.at, beats+1
		if tk.PollAfterSeconds > 0 {
			pollAfter = time.Duration(tk.PollAfterSeconds) * time.Second
		}
	}
	t.Logf("held a WAITING fan's stream %.1f s (pollAfterSeconds %d): %d heartbeats after the first event",
		time.Since(st.opened).Seconds(), first.PollAfterSeconds, beats)
	promise(t, heartbeat, beats >= int(holdStream/(time.Duration(first.PollAfterSeconds)*time.Second+heartbeatSlack)),
		"%d heartbeats in %v with pollAfterSeconds %d", beats, holdStream, first.PollAfterSeconds)

	// A change of status arrives: the fan ahead leaves, so the fan is admitted.
	r := s.do(t, "DELETE", "/v1/queue", nil, ahead.h(aheadTok)...)
	expectStatus(t, "Queue: DELETE /v1/queue → 204", r, 204)
	deadline := time.Now().Add(20 * time.Second)
	admitted := false
	for !admitted && time.Now().Before(deadline) {
		ev, open, late := st.next(time.Until(deadline))
		if !open {
			promiseNow(t, noEnd, false, "the stream ended %.2f s after it opened, before the fan was admitted", st.end.Sub(st.opened).Seconds())
		}
		if late {
			break
		}
		tk := ticketOf(t, ev)
		admitted = tk.Status == "ACTIVE"
		promiseNow(t, onChange, admitted || tk.Status == "WAITING", "event %s while waiting to be admitted", ev.data)
	}
	promiseNow(t, onChange, admitted, "no ACTIVE event within 20 s of the fan ahead leaving")

	// A final status ends the stream: the fan's ACTIVE token lapses (EXPIRED).
	deadline = time.Now().Add(activeTTL + 20*time.Second)
	finalStatus := lastStatus(t, st, deadline)
	promise(t, onChange+" (the ACTIVE token lapses: EXPIRED)", finalStatus == "EXPIRED", "last event before the stream ended: %q", finalStatus)
	_, open, _ = st.next(time.Until(deadline))
	promise(t, final, !open && !st.end.IsZero(), "the stream is still open %v after admission (activeTtlSeconds %d; last status %q)",
		activeTTL+20*time.Second, int(activeTTL/time.Second), finalStatus)
}

// eventStreamDone checks that a DONE ends a stream (docs/api.md "Waiting room": DONE is "the fan paid for
// their last held seat"; the stream "ends after EXPIRED, DONE or SOLD_OUT"): an ACTIVE fan's stream, open
// while the fan holds a seat and pays for it.
func eventStreamDone(t *testing.T, s *server) {
	const (
		done  = "Queue: a user whose last hold is paid is DONE"
		final = "Queue: the event stream ends after a final status (DONE)"
	)
	c := s.createConcert(t, concertSpec{Seats: 2, Price: 1000})
	f := s.newFan(t)
	tok := s.admitted(t, f, c.ID)
	st := s.openEvents(t, f, tok)
	promiseNow(t, "Queue: GET /v1/queue/events → 200", st.status == 200, "got %d %s", st.status, st.body)
	ev, open, late := st.next(5 * time.Second)
	promiseNow(t, "Queue: GET /v1/queue/events: the status sent at once", open && !late, "no first event within 5 s")
	promiseNow(t, "Queue: the ACTIVE fan's stream says ACTIVE", ticketOf(t, ev).Status == "ACTIVE", "first event %s", ev.data)

	ch := s.charge(t, f, 1000)
	promiseNow(t, "Points: POST /v1/points/charges → 201", ch.status == 201, "%s", ch)
	res := s.mustHold(t, f, tok, c.Schedules[0].ID, "R-1")
	r := s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": res.ID}, f.h("")...)
	expectStatus(t, "Payments: POST /v1/payments → 201", r, 201)

	deadline := time.Now().Add(20 * time.Second) // an ACTIVE stream reads its state every few seconds at most
	last := lastStatus(t, st, deadline)
	promise(t, done+" (on the stream)", last == "DONE", "last event before the stream ended: %q", last)
	_, open, _ = st.next(time.Until(deadline))
	promise(t, final, !open && !st.end.IsZero(), "the stream is still open 20 s after the payment (last status %q)", last)
}

// lastStatus reads the stream's events until it ends or deadline passes, and returns the last status.
func lastStatus(t *testing.T, st *events, deadline time.Time) string {
	last := ""
	for time.Now().Before(deadline) {
		ev, open, late := st.next(time.Until(deadline))
		if !open || late {
			break
		}
		last = ticketOf(t, ev).Status
	}
	return last
}
