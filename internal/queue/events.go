package queue

import (
	"context"
	"errors"
	"sync"
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
// answered without a Redis round trip; no Redis channel exists per fan. An ACTIVE token, which the view
// cannot place, is checked in Redis every activeRecheck and at its activeUntil, and at once when the
// fan leaves or pays through this instance (tokenNews).
//
// The stream watches the fan's news before each read of the token, so that news told between a read
// and the wait that follows it is not lost. The stream itself has no deadline (ctx should carry none),
// and lasts until a final status, the client leaving (ctx ends), the server stopping or emit failing
// (docs/api.md). Each read it makes is bounded by callTimeout on its own; a read that fails because a
// dependency did not answer (Redis failing over, say) sends nothing and leaves the stream open: it reads
// again within streamRetry (or its heartbeat, if sooner) until an answer comes. Only the first read,
// before anything is sent, answers the request with the failure.
func (s *Service) Watch(ctx context.Context, callTimeout time.Duration, userID, token string, emit func(ticketrush.Ticket) error) error {
	claims, err := s.claims(userID, token)
	if err != nil {
		return err
	}
	news, unwatch := s.news.watch(claims.ConcertID, userID)
	defer func() { unwatch() }()
	status := func() (ticketrush.Ticket, error) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return s.Status(cctx, userID, token)
	}
	t, err := status()
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
	s.streaming(claims.ConcertID, claims.UserID, claims.Seq, 1)
	defer s.streaming(claims.ConcertID, claims.UserID, claims.Seq, -1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := emit(t); err != nil {
			return err
		}
		if Final(t.Status) {
			return nil
		}
		last, deadline := t, time.Now().Add(heartbeat(t, s.now(), s.activeRecheck))
		for {
			changed := v.watch()
			if last.Status == ticketrush.StatusActive {
				changed = nil // the view cannot tell an ACTIVE token's end: its news or the heartbeat does
			}
			timer.Reset(max(time.Until(deadline), time.Millisecond))
			beat := false
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
			case <-news:
				unwatch() // told: watch for the next news before reading what this one changed
				news, unwatch = s.news.watch(claims.ConcertID, userID)
			case <-timer.C:
				beat = true
			}
			if t, err = status(); err != nil {
				if ctx.Err() != nil || !errors.Is(err, ticketrush.ErrUnavailable) {
					return err
				}
				s.metrics.streamReadFailures.Inc()
				deadline = time.Now().Add(min(heartbeat(last, s.now(), s.activeRecheck), streamRetry))
				continue
			}
			if beat || t.Status != last.Status || t.Paused != last.Paused {
				break // a new status (or pause), or the heartbeat, which carries the new position and seats
			}
		}
	}
}

// heartbeat is how long a stream waits without news before sending the state again: pollAfter for a
// WAITING token; for an ACTIVE one activeRecheck (a leave or a payment made through another instance
// reaches the stream within it), and no later than its activeUntil.
func heartbeat(t ticketrush.Ticket, now time.Time, recheck time.Duration) time.Duration {
	if t.Status != ticketrush.StatusActive {
		return max(t.PollAfter, time.Second)
	}
	d := recheck
	if !t.ActiveUntil.IsZero() {
		d = min(d, max(t.ActiveUntil.Sub(now)+10*time.Millisecond, 10*time.Millisecond))
	}
	return d
}

// streamRetry is the longest a stream waits to read its token again after a read failed.
const streamRetry = time.Second

// activeRecheck is how often an ACTIVE token's stream asks Redis for its state. It costs one Redis call
// per streaming ACTIVE fan per period: at most activeCapacity/5 a second per concert.
const activeRecheck = 5 * time.Second

// tokenNews wakes the streams of a fan whose token a call on this instance changed. Every stream
// watches its (concert, user) from before its first read; tell closes the watched channel, and the
// stream watches again before it reads what changed.
type tokenNews struct {
	mu       sync.Mutex
	watching map[string]*newsEntry
}

type newsEntry struct {
	ch      chan struct{}
	readers int
}

func newsKey(concertID, userID string) string { return concertID + "\x00" + userID }

// watch returns a channel closed by the next tell of (concertID, userID), and done, which the watcher
// calls when it stops watching.
func (n *tokenNews) watch(concertID, userID string) (<-chan struct{}, func()) {
	k := newsKey(concertID, userID)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watching == nil {
		n.watching = map[string]*newsEntry{}
	}
	e := n.watching[k]
	if e == nil {
		e = &newsEntry{ch: make(chan struct{})}
		n.watching[k] = e
	}
	e.readers++
	return e.ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		e.readers--
		if e.readers == 0 && n.watching[k] == e {
			delete(n.watching, k)
		}
	}
}

// tell wakes every watcher of (concertID, userID); later watchers wait for the next tell.
func (n *tokenNews) tell(concertID, userID string) {
	k := newsKey(concertID, userID)
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.watching[k]; e != nil {
		close(e.ch)
		delete(n.watching, k)
	}
}
