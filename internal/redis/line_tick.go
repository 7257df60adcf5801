package redis

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The admission tick of a sharded line: line_heads reads every shard's head, line_admit admits in seq
// order on the concert's slot, line_pop takes the admitted out of their shards (line.go).

// admitted is what line_admit did.
type admitted struct {
	res  ticketrush.TickResult
	left []lineFan // the candidates that left the line (admitted, dropped, or admitted already)
	// tokens: user -> the token their shard keeps (ShardKeys.Token) of each fan this round admitted
	tokens map[string]string
}

// admitLine runs line_admit over the candidates (in seq order) and then line_pop in the shards of
// those that left the line.
// shown is each shard's marks of fans shown up there (line_heads): the round takes them off the no-show
// watch, and the pops clear them. The pops keep the admitted fans' tokens in their shards (line_pop).
func (s *Line) admitLine(ctx context.Context, l shardedLine, now time.Time, batch int, waiting int64, mode string, shown map[int][]string, candidates []lineFan) (admitted, error) {
	c := l.k
	var marks []string
	for _, m := range shown {
		marks = append(marks, m...)
	}
	keys, args := c.lineAdmit(now, batch, waiting, mode, marks, candidates)
	msg, err := s.exec(ctx, s.lineAdmit, keys, args)
	if err != nil {
		return admitted{}, err
	}
	a, err := admitReply(msg, candidates)
	if err != nil {
		return a, err
	}
	byShard := map[int][]lineFan{}
	for _, f := range a.left {
		byShard[f.shard] = append(byShard[f.shard], f)
	}
	for shard := range shown { // a shard with marks to clear and nobody to pop
		if _, ok := byShard[shard]; !ok {
			byShard[shard] = nil
		}
	}
	calls := make([]call, 0, len(byShard))
	for shard, fans := range byShard {
		calls = append(calls, built(c.Shard(shard).linePop(fans, a.tokens, shown[shard])))
	}
	if _, err := s.execMulti(ctx, s.linePop, calls); err != nil {
		// Admitted already; the next tick finds them at their shards' heads and pops them then.
		return a, fmt.Errorf("pop: %w", err)
	}
	return a, nil
}

// admitReply reads line_admit's {admitted, lapsed, waiting, active, abandoned, noshows, {user, seq, ...}}.
func admitReply(msg rueidis.RedisMessage, candidates []lineFan) (admitted, error) {
	r, err := reply(msg, 8)
	if err != nil {
		return admitted{}, err
	}
	a := admitted{res: ticketrush.TickResult{Admitted: int(r.int(0)), Lapsed: int(r.int(1)), Waiting: r.int(2),
		Active: r.int(3), Abandoned: int(r.int(4)), NoShows: int(r.int(5))}}
	if r.err != nil {
		return a, r.err
	}
	left, err := r.items[6].AsStrSlice()
	if err != nil || len(left)%2 != 0 {
		return a, fmt.Errorf("line_admit reply: the fans who left: %v (%d items)", err, len(left))
	}
	shardOf := make(map[string]int, len(candidates))
	for _, f := range candidates {
		shardOf[f.user] = f.shard
	}
	for i := 0; i < len(left); i += 2 {
		seq, err := strconv.ParseUint(left[i+1], 10, 64)
		shard, ok := shardOf[left[i]]
		if err != nil || !ok {
			return a, fmt.Errorf("line_admit reply: %q %q is not a candidate", left[i], left[i+1])
		}
		a.left = append(a.left, lineFan{user: left[i], seq: seq, shard: shard})
	}
	took, err := r.items[7].AsStrSlice()
	if err != nil || len(took) < 2 || len(took)%2 != 0 {
		return a, fmt.Errorf("line_admit reply: the fans admitted: %v (%d items)", err, len(took))
	}
	a.tokens = make(map[string]string, len(took)/2-1)
	for i := 2; i < len(took); i += 2 {
		a.tokens[took[i]] = took[i+1] + ":" + took[0] + ":" + took[1]
	}
	return a, nil
}

// headsPerShard is how many fans a tick reads from each shard's head: twice what the last tick took
// per shard, at least 8 and at most batch (and 256). Any count keeps the order: the tick admits only
// up to the lowest last seq of a shard that returned a full read.
func (s *Line) headsPerShard(concertID string, n, batch int) int {
	s.lines.mu.Lock()
	last := s.lines.last[concertID]
	s.lines.mu.Unlock()
	return max(1, min(batch, 256, max(8, 2*last/n+8)))
}

// tickLine is one admission round of a line of n shards.
func (s *Line) tickLine(ctx context.Context, l shardedLine, now time.Time, batch int) (ticketrush.TickResult, error) {
	concertID, n, c := l.id, l.n, l.k
	k := s.headsPerShard(concertID, n, batch)
	// The newest arrival before the heads are read: the shards are read one after another, so a fan who
	// entered one after its read but took a seq before this one may be missing from the heads; past this
	// seq a later arrival could pass them.
	tail, err := s.client.Do(ctx, s.client.B().Get().Key(c.Seq()).Build()).AsUint64()
	if isNil(err) {
		tail, err = 0, nil
	}
	if err != nil {
		return ticketrush.TickResult{}, fmt.Errorf("line tail: %w", unavailable(err))
	}
	calls := make([]call, n)
	for i := range n {
		calls[i] = built(c.Shard(i).lineHeads(k))
	}
	msgs, err := s.execMulti(ctx, s.lineHeads, calls)
	if err != nil {
		return ticketrush.TickResult{}, err
	}
	var waiting int64
	var fans []lineFan
	shown := map[int][]string{}
	cut := tail // and the lowest last seq of a full read: past it a shard may hold fans not read
	for i, msg := range msgs {
		shard, err := headsReply(msg, i)
		if err != nil {
			return ticketrush.TickResult{}, err
		}
		waiting += shard.waiting
		if len(shard.shown) > 0 {
			shown[i] = shard.shown
		}
		if len(shard.fans) == k && shard.fans[k-1].seq < cut {
			cut = shard.fans[k-1].seq
		}
		if shard.bound > 0 && shard.bound < cut { // a read that stopped among stale entries
			cut = shard.bound
		}
		fans = append(fans, shard.fans...)
	}
	slices.SortFunc(fans, func(a, b lineFan) int { return cmp.Compare(a.seq, b.seq) })
	fans = slices.DeleteFunc(fans, func(f lineFan) bool { return f.seq > cut })
	a, err := s.admitLine(ctx, l, now, batch, waiting, "tick", shown, fans)
	s.lines.mu.Lock()
	s.lines.last[concertID] = len(a.left)
	s.lines.mu.Unlock()
	return a.res, err
}

// shardHeads is line_heads's reply: bound, when not 0, is the last seq the read reached before it
// stopped on its budget, past which the shard may hold fans it did not return.
type shardHeads struct {
	waiting int64
	bound   uint64
	shown   []string // marks of fans shown up in the shard ('<user>:<seq>')
	fans    []lineFan
}

// headsReply reads line_heads's {waiting, bound, shown, user, seq, seen, ...} of shard.
func headsReply(msg rueidis.RedisMessage, shard int) (shardHeads, error) {
	items, err := msg.ToArray()
	if err != nil || len(items)%3 != 0 {
		return shardHeads{}, fmt.Errorf("line_heads reply of shard %d: %v (%d items)", shard, err, len(items))
	}
	r := &replyArray{items: items}
	h := shardHeads{waiting: r.int(0), bound: uint64(r.int(1))}
	if h.shown, err = items[2].AsStrSlice(); err != nil {
		return shardHeads{}, fmt.Errorf("line_heads reply of shard %d: shown: %w", shard, err)
	}
	for i := 3; i < len(items); i += 3 {
		h.fans = append(h.fans, lineFan{user: r.str(i), seq: uint64(r.int(i + 1)), seen: r.int(i + 2), shard: shard})
	}
	return h, r.err
}
