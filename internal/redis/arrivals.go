package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The joins to a line over shards take their arrival seqs on the concert's own slot (line_arrive), in
// batches (batch.go): each join is decided in the batch as if alone, in the batch's order, so a join
// answered before another was sent has the lower seq.

// maxArrivals is the most joins one line_arrive call carries (a few hundred microseconds of Redis).
const maxArrivals = 256

// arrivalsWait bounds a line_arrive call: no one request's deadline is the batch's.
const arrivalsWait = 3 * time.Second

// arrivalJoin is what line_arrive needs of one join, and its time.
type arrivalJoin struct {
	joinArgs
	now time.Time
}

// newArrivals is the store's batches of line_arrive calls. A join whose request ended before its batch
// was sent is dropped (it takes no seq); an arrival the batch took for a join whose request ended while
// the call was in flight is logged as a gap in the line (logGap), so that positions stay exact.
func (s *Line) newArrivals() *batches[arrivalJoin, arrival] {
	return &batches[arrivalJoin, arrival]{max: maxArrivals, wait: arrivalsWait, send: s.sendArrivals,
		gone: func(ctx context.Context, concertID string, j arrivalJoin, a arrival) {
			if a.status == "ARRIVE" {
				_ = s.logGap(ctx, s.keys.Concert(concertID), j.user, a.seq, j.now)
			}
		}}
}

// arrive is line_arrive for one join of concertID, sent in a batch with the joins of the same concert
// that arrive meanwhile. A join whose ctx ends first returns its error.
func (s *Line) arrive(ctx context.Context, concertID, userID, code string, now time.Time) (arrival, error) {
	return s.arrivals.do(ctx, concertID, arrivalJoin{joinArgs: joinArgs{user: userID, code: code}, now: now})
}

// sendArrivals is one line_arrive call for a batch of joins of concertID, at the latest of their times.
func (s *Line) sendArrivals(ctx context.Context, concertID string, batch []arrivalJoin) ([]batchResult[arrival], error) {
	joins := make([]joinArgs, len(batch))
	var now time.Time
	for i, j := range batch {
		joins[i] = j.joinArgs
		if j.now.After(now) {
			now = j.now
		}
	}
	keys, args := s.keys.Concert(concertID).lineArrive(joins, now)
	msg, err := s.exec(ctx, s.lineArrive, keys, args)
	if err != nil {
		return nil, err
	}
	return arrivalsReply(msg, len(batch))
}

// arrivalsReply reads line_arrive's reply of n joins: {pow, codereq, status, first, room, k, then k
// triples (index, seq, activeUntil) of the joins given their ACTIVE token back, then pairs (index, code)
// of the joins whose access code was checked}. Every other join has the batch's status; the arrivals take
// the seqs from first on in the batch's order.
func arrivalsReply(msg rueidis.RedisMessage, n int) ([]batchResult[arrival], error) {
	items, err := msg.ToArray()
	if err != nil {
		return nil, fmt.Errorf("line_arrive reply: %w", err)
	}
	if len(items) < 6 {
		return nil, fmt.Errorf("line_arrive reply: %d items", len(items))
	}
	r := &replyArray{items: items}
	pow, codeRequired := int(r.int(0)), r.flag(1)
	status := r.status(2, "ARRIVE", ticketrush.StatusPrequeue, "SEAL", "SOLD_OUT", "SALE_NOT_OPEN")
	first, room, k := uint64(r.int(3)), r.flag(4), int(r.int(5))
	if rest := len(items) - 6 - 3*k; r.err != nil || k < 0 || k > n || rest < 0 || rest%2 != 0 || rest/2 > n {
		return nil, fmt.Errorf("line_arrive reply: %d items for %d joins, %d of them ACTIVE (%v)", len(items), n, k, r.err)
	}
	index := func(at int) int {
		i := int(r.int(at)) - 1
		if i < 0 || i >= n {
			r.fail(at, fmt.Errorf("join %d of %d", i+1, n))
			return 0
		}
		return i
	}
	out := make([]batchResult[arrival], n)
	for i := range out {
		out[i].res = arrival{status: status, pow: pow, codeRequired: codeRequired}
	}
	for at := 6; at < 6+3*k; at += 3 {
		out[index(at)].res = arrival{status: ticketrush.StatusActive, seq: uint64(r.int(at + 1)), till: r.int(at + 2),
			pow: pow, codeRequired: codeRequired}
	}
	for at := 6 + 3*k; at < len(items); at += 2 {
		out[index(at)].res.code = r.str(at + 1)
	}
	next := first
	for i := range out {
		a := &out[i].res
		if a.status == "ARRIVE" {
			a.seq, a.room, next = next, room, next+1
		}
		if e, ok := ticketrush.ErrorOf(ticketrush.Code(a.status)); ok { // SOLD_OUT, SALE_NOT_OPEN: this join's refusal
			out[i] = batchResult[arrival]{err: e}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}
