package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// A concert's layout (Layout) decides which scripts and keys each call uses: its line in the concert's
// slot or over shards, and where each schedule's seat slot is: in the concert's own slot, where a hold
// and each step of a reservation are one call, or elsewhere, where they are short chains of calls
// (docs/scaleout.md).
// waysOf is the one place that looks at it: it builds the concert's line and seats once per layout
// read, and the Store's methods call them without asking which they are.

// concertWays is a concert's layout and the line and seats built from it.
type concertWays struct {
	layout Layout
	line   lineWay
	seats  seatWay
	// carried: the line's tick carries the seat slots' counts in its own call (a line of one shard
	// with every seat slot in the concert's slot), so the tick makes no call of its own for them.
	carried bool
}

// waysOf builds the line and the seats of concertID's layout l.
func (s *core) waysOf(concertID string, l Layout) concertWays {
	k := s.keys.Concert(concertID).Placed(l.ShardAt)
	seats := newSeatSlots(s.seats, k, concertID, l.Schedules)
	if l.Shards > 1 {
		seats.shards, seats.holdMS, seats.maxHolds = l.Shards, l.hold, l.maxHolds
		return concertWays{layout: l, line: shardedLine{s: s.line, k: k, id: concertID, n: l.Shards, gate: seats.fanGate}, seats: seats}
	}
	stock := seats.stock()
	return concertWays{layout: l, line: slotLine{s: s.line, k: k, stock: stock}, seats: seats, carried: len(stock) > 0}
}

// lineWay is how a concert's line is reached: slotLine (the concert's slot) or shardedLine.
type lineWay interface {
	join(ctx context.Context, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error)
	leave(ctx context.Context, userID string, seq uint64, now time.Time) (ticketrush.QueueStatus, error)
	status(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error)
	// gated checks a gated call's token, the fan shown up, and runs the reads alongside (Store.gated).
	gated(ctx context.Context, c ticketrush.QueueClaims, now time.Time, reads ...func() rueidis.Completed) (ticketrush.TokenState, []rueidis.RedisResult, error)
	// expired is the state of a token the concert's slot read EXPIRED: a fan of a sharded line may still
	// wait in their shard.
	expired(ctx context.Context, c ticketrush.QueueClaims, st ticketrush.TokenState, now time.Time) (ticketrush.TokenState, error)
	tick(ctx context.Context, now time.Time, batch int) (ticketrush.TickResult, error)
	markAlive(ctx context.Context, seen []ticketrush.Arrival, now time.Time) error
	seal(ctx context.Context, now time.Time) (ticketrush.DrawState, error)
	// place puts a batch of the draw in the line before draw_place moves the concert's cursor; done
	// when another drawer placed it already (placed is then the cursor).
	place(ctx context.Context, from int64, batch []draw.Entrant) (placed int64, done bool, err error)
	drawPlace(from int64, batch []draw.Entrant, digest string, now time.Time) (keys, args []string)
	prequeueStatus(ctx context.Context, userID string, now time.Time) (ticketrush.TokenState, uint64, error)
	prequeueLeave(userID string, now time.Time) (keys, args []string)
	// migrations are the line_migrate calls that move a line kept as a sorted set (LegacyWait) into
	// places and order (MigrateLayout).
	migrations() []call
	// shards is how many pre-queues the line has; prequeue names the one of shard n.
	shards() int
	prequeue(n int) string
}

// slotLine is a line in the concert's slot: one script a call. stock is the count and HELD set of each
// seat slot when all are in the concert's own slot (seatSlots.stock), which the tick carries and the
// join counts activePerSeat's seats from.
type slotLine struct {
	s     *Line
	k     ConcertKeys
	stock []string
}

func (l slotLine) join(ctx context.Context, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error) {
	keys, args := l.k.queueJoin(userID, pass, l.s.limit, now, l.stock...)
	msg, err := l.s.exec(ctx, l.s.join, keys, args)
	if err != nil {
		return ticketrush.JoinResult{}, err
	}
	return joinReply(msg)
}

func (l slotLine) leave(ctx context.Context, userID string, seq uint64, now time.Time) (ticketrush.QueueStatus, error) {
	keys, args := l.k.queueLeave(userID, seq, now)
	msg, err := l.s.exec(ctx, l.s.leave, keys, args)
	if err != nil {
		return "", err
	}
	return leaveReply(msg)
}

func (l slotLine) gated(ctx context.Context, c ticketrush.QueueClaims, now time.Time, reads ...func() rueidis.Completed) (ticketrush.TokenState, []rueidis.RedisResult, error) {
	return l.s.gatedOnConcert(ctx, c, now, reads...)
}

func (l slotLine) status(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	keys, args := l.k.queueStatus(c, now)
	msg, err := l.s.exec(ctx, l.s.status, keys, args)
	if err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", err)
	}
	return tokenState(msg)
}

func (slotLine) expired(_ context.Context, _ ticketrush.QueueClaims, st ticketrush.TokenState, _ time.Time) (ticketrush.TokenState, error) {
	return st, nil
}

func (l slotLine) tick(ctx context.Context, now time.Time, batch int) (ticketrush.TickResult, error) {
	keys, args := l.k.queueTick(now, batch, l.stock...)
	msg, err := l.s.exec(ctx, l.s.tick, keys, args)
	if err != nil {
		return ticketrush.TickResult{}, err
	}
	return tickReply(msg)
}

// markAlive writes queue_seen calls of at most liveChunk arrivals each, in order of seq (so that a
// call's arrivals are neighbours), one after the other.
func (l slotLine) markAlive(ctx context.Context, seen []ticketrush.Arrival, now time.Time) error {
	seqs := make([]uint64, len(seen))
	for i, a := range seen {
		seqs[i] = a.Seq
	}
	slices.Sort(seqs)
	for chunk := range slices.Chunk(slices.Compact(seqs), l.s.liveChunk) {
		keys, args := l.k.queueSeen(chunk, now)
		if _, err := l.s.exec(ctx, l.s.seen, keys, args); err != nil {
			return err
		}
	}
	return nil
}

func (l slotLine) seal(ctx context.Context, now time.Time) (ticketrush.DrawState, error) {
	keys, args := l.k.drawSeal(-1, now)
	msg, err := l.s.exec(ctx, l.s.drawSeal, keys, args)
	if err != nil {
		return ticketrush.DrawState{}, err
	}
	return sealReply(msg)
}

// place has nothing to do: draw_place places a line of the concert's slot itself.
func (slotLine) place(context.Context, int64, []draw.Entrant) (int64, bool, error) {
	return 0, false, nil
}

func (l slotLine) drawPlace(from int64, batch []draw.Entrant, digest string, now time.Time) (keys, args []string) {
	return l.k.drawPlace(from, batch, digest, true, now)
}

func (l slotLine) prequeueStatus(ctx context.Context, userID string, now time.Time) (ticketrush.TokenState, uint64, error) {
	keys, args := l.k.drawStatus(userID, now)
	msg, err := l.s.exec(ctx, l.s.drawStatus, keys, args)
	if err != nil {
		return ticketrush.TokenState{}, 0, err
	}
	return prequeueStatusReply(msg)
}

func (l slotLine) prequeueLeave(userID string, now time.Time) (keys, args []string) {
	return l.k.prequeueLeave(userID, now)
}

func (l slotLine) migrations() []call {
	return []call{built(lineMigrate(l.k.LegacyWait(), l.k.Places(), l.k.Order(), migrateBatch))}
}

func (slotLine) shards() int           { return 1 }
func (l slotLine) prequeue(int) string { return l.k.Prequeue() }

// shardedLine is a line over n shards (line.go, line_sale.go).
type shardedLine struct {
	s    *Line
	k    ConcertKeys
	id   string
	n    int
	gate func(userID string) gateAt // the fan's gate, on their shard (seatSlots.fanGate)
}

func (l shardedLine) gated(ctx context.Context, c ticketrush.QueueClaims, now time.Time, reads ...func() rueidis.Completed) (ticketrush.TokenState, []rueidis.RedisResult, error) {
	return l.s.gatedOnShard(ctx, l.gate(c.UserID), c, now, reads...)
}

func (l shardedLine) join(ctx context.Context, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error) {
	return l.s.joinLine(ctx, l, userID, pass, now)
}

func (l shardedLine) leave(ctx context.Context, userID string, seq uint64, now time.Time) (ticketrush.QueueStatus, error) {
	return l.s.leaveLine(ctx, l, userID, seq, now)
}

func (l shardedLine) status(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	return l.s.statusLine(ctx, l, c, now)
}

func (l shardedLine) expired(ctx context.Context, c ticketrush.QueueClaims, _ ticketrush.TokenState, now time.Time) (ticketrush.TokenState, error) {
	return l.s.statusLine(ctx, l, c, now)
}

func (l shardedLine) tick(ctx context.Context, now time.Time, batch int) (ticketrush.TickResult, error) {
	return l.s.tickLine(ctx, l, now, batch)
}

func (l shardedLine) markAlive(ctx context.Context, seen []ticketrush.Arrival, now time.Time) error {
	return l.s.markAliveLine(ctx, l, seen, now)
}

// seal seals the draw once the opening has passed, which draw_seal cannot time alone over shards.
func (l shardedLine) seal(ctx context.Context, now time.Time) (ticketrush.DrawState, error) {
	if open, err := l.s.opened(ctx, l.id, now); err != nil || !open {
		return ticketrush.DrawState{}, err
	}
	return l.s.sealLine(ctx, l, now)
}

func (l shardedLine) place(ctx context.Context, from int64, batch []draw.Entrant) (int64, bool, error) {
	if len(batch) == 0 {
		return 0, false, nil
	}
	st, err := l.s.draws.DrawState(ctx, l.id)
	if err != nil {
		return 0, false, err
	}
	if !st.Sealed {
		return 0, false, ticketrush.ErrDrawNotReady
	}
	if st.Placed != from {
		return st.Placed, true, nil // another drawer placed this batch
	}
	return 0, false, l.s.placeLine(ctx, l, st.Base, from, batch)
}

func (l shardedLine) drawPlace(from int64, batch []draw.Entrant, digest string, now time.Time) (keys, args []string) {
	return l.k.drawPlace(from, batch, digest, false, now)
}

func (l shardedLine) prequeueStatus(ctx context.Context, userID string, now time.Time) (ticketrush.TokenState, uint64, error) {
	return l.s.prequeueStatusLine(ctx, l, userID, now)
}

func (l shardedLine) prequeueLeave(userID string, now time.Time) (keys, args []string) {
	return l.k.Shard(LineShard(userID, l.n)).prequeueLeave(userID, now)
}

func (l shardedLine) migrations() []call {
	calls := make([]call, l.n)
	for n := range l.n {
		sh := l.k.Shard(n)
		calls[n] = built(lineMigrate(sh.LegacyWait(), sh.Places(), sh.Order(), migrateBatch))
	}
	return calls
}

func (l shardedLine) shards() int           { return l.n }
func (l shardedLine) prequeue(n int) string { return l.k.Shard(n).Prequeue() }

// errNotTogether is a seat slot elsewhere than the concert's of a line of one shard, whose gate is the
// concert's slot: placement never makes one (SlotsTogether), and no gate runs for it.
var errNotTogether = errors.New("a line of one shard keeps its seat slots in the concert's slot")
