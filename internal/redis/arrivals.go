package redis

import (
	"context"
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
func (s *Store) newArrivals() *batches[arrivalJoin, arrival] {
	return &batches[arrivalJoin, arrival]{max: maxArrivals, wait: arrivalsWait, send: s.sendArrivals,
		gone: func(ctx context.Context, concertID string, j arrivalJoin, a arrival) {
			if a.status == "ARRIVE" {
				_ = s.logGap(ctx, s.keys.Concert(concertID), j.user, a.seq, j.now)
			}
		}}
}

// arrive is line_arrive for one join of concertID, sent in a batch with the joins of the same concert
// that arrive meanwhile. A join whose ctx ends first returns its error.
func (s *Store) arrive(ctx context.Context, concertID, userID, code string, now time.Time) (arrival, error) {
	return s.arrivals.do(ctx, concertID, arrivalJoin{joinArgs: joinArgs{user: userID, code: code}, now: now})
}

// sendArrivals is one line_arrive call for a batch of joins of concertID, at the latest of their times.
func (s *Store) sendArrivals(ctx context.Context, concertID string, batch []arrivalJoin) ([]batchResult[arrival], error) {
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

// arrivalsReply reads line_arrive's reply of n joins: {pow, codereq, then status, seq, activeUntil, code,
// room of each}.
func arrivalsReply(msg rueidis.RedisMessage, n int) ([]batchResult[arrival], error) {
	r, err := reply(msg, 2+5*n)
	if err != nil {
		return nil, err
	}
	pow, codeRequired := int(r.int(0)), r.flag(1)
	out := make([]batchResult[arrival], n)
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
			out[i].res = a
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}
