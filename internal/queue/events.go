package queue

import (
	"context"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Final reports whether a token in status st can no longer change: its event stream ends there.
func Final(st ticketrush.QueueStatus) bool {
	return st == ticketrush.StatusExpired || st == ticketrush.StatusDone || st == ticketrush.StatusSoldOut
}

// Watch sends the token's state to emit at once, on every change of status (or of the line's pause),
// and at least every pollAfter (the heartbeat, which carries the moving position and seat count), until
// the status is final, emit fails or ctx ends. It is served from the instance's view like a poll: a
// WAITING token wakes when a view refresh moves the head, a leave, the pause or sold out, and is
// answered without a Redis round trip; no Redis channel exists per fan. An ACTIVE token,
// which the view cannot place, is checked in Redis at its heartbeat and at its activeUntil.
//
// The stream itself has no deadline (ctx should carry none): each read it makes is bounded by
// callTimeout on its own, so that a stream lasts as long as the fan waits while a dependency that does
// not answer still ends it.
func (s *Service) Watch(ctx context.Context, callTimeout time.Duration, userID, token string, emit func(ticketrush.Ticket) error) error {
	status := func() (ticketrush.Ticket, error) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return s.Status(cctx, userID, token)
	}
	t, err := status()
	if err != nil {
		return err
	}
	claims, err := s.claims(userID, token)
	if err != nil {
		return err
	}
	vctx, cancel := context.WithTimeout(ctx, callTimeout)
	v, err := s.view(vctx, claims.ConcertID)
	cancel()
	if err != nil {
		return err
	}
	// Holding the stream open counts as polling: every liveness flush includes it.
	s.streaming(claims.ConcertID, claims.Seq, 1)
	defer s.streaming(claims.ConcertID, claims.Seq, -1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := emit(t); err != nil {
			return err
		}
		if Final(t.Status) {
			return nil
		}
		last, deadline := t, time.Now().Add(heartbeat(t, s.now()))
		for {
			changed := v.watch()
			if last.Status == ticketrush.StatusActive {
				changed = nil // the view cannot tell an ACTIVE token's end; the heartbeat checks it
			}
			timer.Reset(max(time.Until(deadline), time.Millisecond))
			beat := false
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
			case <-timer.C:
				beat = true
			}
			if t, err = status(); err != nil {
				return err
			}
			if beat || t.Status != last.Status || t.Paused != last.Paused {
				break // a new status (or pause), or the heartbeat, which carries the new position and seats
			}
		}
	}
}

// heartbeat is how long a stream waits without news before sending the state again: pollAfter, and
// for an ACTIVE token no later than its activeUntil.
func heartbeat(t ticketrush.Ticket, now time.Time) time.Duration {
	d := max(t.PollAfter, time.Second)
	if t.Status == ticketrush.StatusActive && !t.ActiveUntil.IsZero() {
		d = min(d, max(t.ActiveUntil.Sub(now)+10*time.Millisecond, 10*time.Millisecond))
	}
	return d
}
