package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The joins to a line over shards take their arrival seqs on the concert's own slot (line_arrive), the one
// step of a join the cluster's size does not spread. An instance sends them in batches, without waiting
// for one to fill: a join that finds no call of its concert in flight sends it at once, alone; the joins
// that arrive while a call is in flight go together in the next, sent when it returns. An idle line costs
// no added wait; a storm pays the concert's slot one call for each batch, not each join (docs/scaleout.md,
// "Joins share the concert's slot's calls"). Each join is decided in the batch as if alone, in the
// batch's order: a join answered before another was sent has the lower seq.

// maxArrivals is the most joins one line_arrive call carries (a few hundred microseconds of Redis).
const maxArrivals = 256

// arrivalsWait bounds a line_arrive call: no one request's deadline is the batch's.
const arrivalsWait = 3 * time.Second

// arrivalJoin is one join waiting for its arrival: what line_arrive needs of it, and its answer.
type arrivalJoin struct {
	user, code string
	now        time.Time
	done       chan struct{}
	res        arrival
	err        error
	state      atomic.Int32 // joinWaiting, then joinAnswered (by the call) or joinGone (its request ended first)
}

const (
	joinWaiting int32 = iota
	joinAnswered
	joinGone
)

// arrivalQueue is one concert's joins waiting for a line_arrive call, and whether one is in flight.
type arrivalQueue struct {
	busy    bool
	waiting []*arrivalJoin
}

// arrivals are every concert's queues.
type arrivals struct {
	mu sync.Mutex
	of map[string]*arrivalQueue
}

// arrive is line_arrive for one join of concertID, sent in a batch with the joins of the same concert
// that arrive meanwhile. A join whose ctx ends first returns its error; an arrival the call then takes
// for it is logged as a gap in the line (logGap), so that positions stay exact.
func (s *Store) arrive(ctx context.Context, concertID, userID, code string, now time.Time) (arrival, error) {
	j := &arrivalJoin{user: userID, code: code, now: now, done: make(chan struct{})}
	s.arrivals.mu.Lock()
	if s.arrivals.of == nil {
		s.arrivals.of = map[string]*arrivalQueue{}
	}
	q := s.arrivals.of[concertID]
	if q == nil {
		q = &arrivalQueue{}
		s.arrivals.of[concertID] = q
	}
	q.waiting = append(q.waiting, j)
	lead := !q.busy
	q.busy = true
	s.arrivals.mu.Unlock()
	if lead {
		s.sendArrivals(ctx, concertID, q)
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		if j.state.CompareAndSwap(joinWaiting, joinGone) {
			return arrival{}, ctx.Err()
		}
		<-j.done // answered meanwhile
	}
	return j.res, j.err
}

// sendArrivals sends the joins waiting in q, up to maxArrivals, in one call at the latest of their
// times, answers each, and hands the queue on: to a goroutine that sends the next batch when joins
// arrived meanwhile, else idle. The call runs for arrivalsWait at most, whatever becomes of ctx: it
// answers other joins too.
func (s *Store) sendArrivals(ctx context.Context, concertID string, q *arrivalQueue) {
	s.arrivals.mu.Lock()
	batch := q.waiting[:min(len(q.waiting), maxArrivals)]
	q.waiting = q.waiting[len(batch):]
	s.arrivals.mu.Unlock()

	joins := make([]joinArgs, len(batch))
	var now time.Time
	for i, j := range batch {
		joins[i] = joinArgs{user: j.user, code: j.code}
		if j.now.After(now) {
			now = j.now
		}
	}
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), arrivalsWait)
	defer cancel()
	c := s.keys.Concert(concertID)
	keys, args := c.lineArrive(joins, now)
	msg, err := s.exec(call, s.lineArrive, keys, args)
	var res []arrivalResult
	if err == nil {
		res, err = arrivalsReply(msg, len(batch))
	}
	var gone []*arrivalJoin // whose request ended first: a seq nobody takes, logged once the others are answered
	for i, j := range batch {
		if err != nil {
			j.err = err
		} else {
			j.res, j.err = res[i].a, res[i].err
		}
		if !j.state.CompareAndSwap(joinWaiting, joinAnswered) && j.err == nil && j.res.status == "ARRIVE" {
			gone = append(gone, j)
		}
		close(j.done)
	}
	for _, j := range gone {
		_ = s.logGap(call, c, j.user, j.res.seq, now)
	}

	s.arrivals.mu.Lock()
	more := len(q.waiting) > 0
	if !more {
		q.busy = false
		delete(s.arrivals.of, concertID)
	}
	s.arrivals.mu.Unlock()
	if more {
		go s.sendArrivals(context.WithoutCancel(ctx), concertID, q)
	}
}

// arrivalResult is one join's answer in a line_arrive reply: its arrival, or its refusal.
type arrivalResult struct {
	a   arrival
	err error
}

// arrivalsReply reads line_arrive's reply of n joins: {pow, codereq, then status, seq, activeUntil, code,
// room of each}.
func arrivalsReply(msg rueidis.RedisMessage, n int) ([]arrivalResult, error) {
	r, err := reply(msg, 2+5*n)
	if err != nil {
		return nil, err
	}
	pow, codeRequired := int(r.int(0)), r.flag(1)
	out := make([]arrivalResult, n)
	for i := range out {
		at := 2 + 5*i
		a := arrival{
			status: r.status(at, ticketrush.StatusActive, "ARRIVE", ticketrush.StatusPrequeue, "SEAL", "SOLD_OUT", "SALE_NOT_OPEN"),
			seq:    uint64(r.int(at + 1)), till: r.int(at + 2), code: r.str(at + 3), room: r.flag(at + 4),
			pow: pow, codeRequired: codeRequired,
		}
		if e, ok := ticketrush.ErrorOf(ticketrush.Code(a.status)); ok { // SOLD_OUT, SALE_NOT_OPEN: this join's refusal
			out[i].err = e
		} else {
			out[i].a = a
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}
