package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Some calls run for every fan on a slot many fans share: the joins' arrival seqs on the concert's own
// slot (line_arrive), and on a line shard the joins' entries (line_enter) and the gate of the holds, of
// the steps of reservations and of the gated reads (gate_apply). An instance sends each kind in batches, without waiting for
// one to fill: a call that finds no call of its kind and concert in flight is sent at once, alone; the
// calls that arrive while one is in flight go together in the next, sent when it returns. An idle
// concert costs no added wait; a storm pays the concert's slot one script call a batch, not one a fan
// (docs/scaleout.md, "Calls that share a slot"). The script decides each in the batch as
// if alone, in the batch's order: a call answered before another was sent was decided first.

// batchItem is one call waiting for its batch: its arguments and its answer.
type batchItem[A, R any] struct {
	arg   A
	done  chan struct{}
	res   R
	err   error
	state atomic.Int32 // itemWaiting, itemSent (in a batch's call), then itemAnswered or itemGone (its request ended first)
}

const (
	itemWaiting int32 = iota
	itemSent
	itemAnswered
	itemGone
)

// batchQueue is one concert's calls waiting for a batch, and whether one is in flight.
type batchQueue[A, R any] struct {
	busy    bool
	waiting []*batchItem[A, R]
}

// batchResult is one call's answer in a batch's reply: its result, or its refusal.
type batchResult[R any] struct {
	res R
	err error
}

// batches sends one kind of call in batches per concert.
type batches[A, R any] struct {
	max  int           // the most calls one batch carries
	wait time.Duration // bounds a batch's call: no one request's deadline is the batch's
	// send runs one batch of concertID and returns an answer for each of args, in order, or the error of
	// them all.
	send func(ctx context.Context, concertID string, args []A) ([]batchResult[R], error)
	// keep says which calls are sent though their request ended before their batch was (nil: none);
	// the others are dropped then, never reaching Redis.
	keep func(arg A) bool
	// gone, when set, is called once a batch is answered with each call sent whose request ended before
	// its answer came, and that answer (ctx: the batch's).
	gone func(ctx context.Context, concertID string, arg A, res R)

	mu sync.Mutex
	of map[string]*batchQueue[A, R]
}

// do is the call arg of concertID, sent in a batch with the calls of the same concert that arrive
// meanwhile. A call whose ctx ends first returns its error, whether or not it led the batch (a batch
// runs for up to wait, longer than a request may); what the batch then does for it is gone's.
func (b *batches[A, R]) do(ctx context.Context, concertID string, arg A) (R, error) {
	it := &batchItem[A, R]{arg: arg, done: make(chan struct{})}
	b.mu.Lock()
	if b.of == nil {
		b.of = map[string]*batchQueue[A, R]{}
	}
	q := b.of[concertID]
	if q == nil {
		q = &batchQueue[A, R]{}
		b.of[concertID] = q
	}
	q.waiting = append(q.waiting, it)
	lead := !q.busy
	q.busy = true
	b.mu.Unlock()
	if lead { // sent from a goroutine of its own: the batch may run for wait, past this call's deadline
		go b.flush(context.WithoutCancel(ctx), concertID, q)
	}
	select {
	case <-it.done:
	case <-ctx.Done():
		if it.state.CompareAndSwap(itemWaiting, itemGone) || it.state.CompareAndSwap(itemSent, itemGone) {
			var zero R
			return zero, ctx.Err()
		}
		<-it.done // answered meanwhile
	}
	return it.res, it.err
}

// flush sends the calls waiting in q, up to max, in one batch (but those whose request ended meanwhile
// and that keep does not keep), answers each, and hands the queue on: to a goroutine that sends the next
// batch when calls arrived meanwhile, else idle. The batch runs for wait at most, whatever becomes of
// ctx: it answers other calls too.
func (b *batches[A, R]) flush(ctx context.Context, concertID string, q *batchQueue[A, R]) {
	b.mu.Lock()
	waiting := q.waiting[:min(len(q.waiting), b.max)]
	q.waiting = q.waiting[len(waiting):]
	b.mu.Unlock()

	var batch []*batchItem[A, R]
	var args []A
	for _, it := range waiting {
		if it.state.CompareAndSwap(itemWaiting, itemSent) || b.keep != nil && b.keep(it.arg) {
			batch, args = append(batch, it), append(args, it.arg)
		} else {
			close(it.done) // gone before it was sent: nothing of it reaches Redis
		}
	}
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.wait)
	defer cancel()
	var res []batchResult[R]
	var err error
	if len(batch) > 0 {
		res, err = b.send(call, concertID, args)
	}
	var gone []*batchItem[A, R] // whose request ended first, told to b.gone once the others are answered
	for i, it := range batch {
		if err != nil {
			it.err = err
		} else {
			it.res, it.err = res[i].res, res[i].err
		}
		if !it.state.CompareAndSwap(itemSent, itemAnswered) && it.err == nil {
			gone = append(gone, it)
		}
		close(it.done)
	}
	for _, it := range gone {
		if b.gone != nil {
			b.gone(call, concertID, it.arg, it.res)
		}
	}

	b.mu.Lock()
	more := len(q.waiting) > 0
	if !more {
		q.busy = false
		delete(b.of, concertID)
	}
	b.mu.Unlock()
	if more {
		go b.flush(context.WithoutCancel(ctx), concertID, q)
	}
}
