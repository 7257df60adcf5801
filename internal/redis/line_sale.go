package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// A sale on a line spread over shards: each entrant is in the pre-queue of their shard (line_enter
// with seq 0), so pre-queue joins spread like the line's. At the opening the draw is sealed in two
// steps, each shard's pre-queue closed and counted (line_seal), then the entrants' seqs reserved on the
// concert's slot with the sum (draw_seal); the draw reads every shard's entrants (Entrants, whose pages
// hold while placing rescores them; the draw's result does not depend on their order), and each batch
// is placed in the entrants' shards (line_place, which marks an entrant placed so that a batch sent
// again places nobody twice) before the concert's cursor moves (draw_place). Nobody is admitted before
// the draw's drawnAt, which the last batch writes.

// sealLine seals the draw of a line of n shards: every shard's pre-queue, then the concert's draw with
// the sum of their entrants. The caller has seen the opening pass; a seal done already changes nothing.
func (s *Line) sealLine(ctx context.Context, l shardedLine, now time.Time) (ticketrush.DrawState, error) {
	n, c := l.n, l.k
	calls := make([]call, n)
	for i := range n {
		calls[i] = built(c.Shard(i).lineSeal())
	}
	msgs, err := s.execMulti(ctx, s.lineSeal, calls)
	if err != nil {
		return ticketrush.DrawState{}, err
	}
	var entrants int64
	for i, msg := range msgs {
		count, err := msg.AsInt64()
		if err != nil {
			return ticketrush.DrawState{}, fmt.Errorf("shard %d: %w", i, err)
		}
		entrants += count
	}
	keys, args := c.drawSeal(entrants, now)
	msg, err := s.exec(ctx, s.drawSeal, keys, args)
	if err != nil {
		return ticketrush.DrawState{}, err
	}
	return sealReply(msg)
}

// opened reports whether a concert's sale has opened at now (its cfg opens), for the seal of a line of
// shards, which draw_seal cannot time alone.
func (s *Line) opened(ctx context.Context, concertID string, now time.Time) (bool, error) {
	v, err := s.client.Do(ctx, s.client.B().Hget().Key(s.keys.Concert(concertID).Cfg()).Field("opens").Build()).AsInt64()
	if isNil(err) {
		return false, ticketrush.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("sale opening %s: %w", concertID, unavailable(err))
	}
	return now.UnixMilli() >= v, nil
}

// placeLine places a batch of the draw of a line of n shards in the entrants' shards; base is the
// draw's base seq, from its place before the batch.
func (s *Line) placeLine(ctx context.Context, l shardedLine, base, from int64, batch []draw.Entrant) error {
	n, c := l.n, l.k
	byShard := map[int][]lineFan{}
	for i, e := range batch {
		sh := LineShard(e.User, n)
		byShard[sh] = append(byShard[sh], lineFan{user: e.User, seq: uint64(base + from + int64(i) + 1), shard: sh})
	}
	calls := make([]call, 0, len(byShard))
	for sh, fans := range byShard {
		calls = append(calls, built(c.Shard(sh).linePlace(fans)))
	}
	_, err := s.execMulti(ctx, s.linePlace, calls)
	return err
}

// prequeueStatusLine is the state of a pre-queue token of a line of n shards: from the entrant's shard
// (entered, placed at -seq, waiting) and the concert's slot (ACTIVE, drawn, the head and the leaves).
func (s *Line) prequeueStatusLine(ctx context.Context, l shardedLine, userID string, now time.Time) (ticketrush.TokenState, uint64, error) {
	concertID, n, c := l.id, l.n, l.k
	sh := c.Shard(LineShard(userID, n))
	res := s.client.DoMulti(ctx,
		s.client.B().Zscore().Key(sh.Prequeue()).Member(userID).Build(),
		s.client.B().Hget().Key(sh.Places()).Field(userID).Build(),
		s.client.B().Hget().Key(c.ActiveSeq()).Field(userID).Build(),
		s.client.B().Zscore().Key(c.Active()).Member(userID).Build(),
		s.client.B().Hexists().Key(c.Draw()).Field("drawnAt").Build(),
		s.client.B().Get().Key(c.Head()).Build())
	for _, r := range res {
		if err := r.Error(); err != nil && !isNil(err) {
			return ticketrush.TokenState{}, 0, fmt.Errorf("pre-queue status %s: %w", concertID, unavailable(err))
		}
	}
	entered, err := res[0].AsFloat64()
	if err != nil {
		return ticketrush.TokenState{Status: ticketrush.StatusExpired}, 0, nil // not an entrant
	}
	if waiting, err := res[1].AsInt64(); err == nil {
		head, _ := res[5].AsInt64()
		gone, err := s.leavesBetween(ctx, c, head, waiting)
		if err != nil {
			return ticketrush.TokenState{}, 0, fmt.Errorf("pre-queue status %s: %w", concertID, err)
		}
		return ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: max(1, waiting-head-gone)}, uint64(waiting), nil
	}
	if live, err := res[2].AsUint64(); err == nil {
		if till, err := res[3].AsInt64(); err == nil && till > now.UnixMilli() {
			return ticketrush.TokenState{Status: ticketrush.StatusActive, ActiveUntil: fromMillis(till)}, live, nil
		}
	}
	if drawn, _ := res[4].AsBool(); !drawn && entered >= 0 {
		return ticketrush.TokenState{Status: ticketrush.StatusPrequeue}, 0, nil
	}
	return ticketrush.TokenState{Status: ticketrush.StatusExpired}, 0, nil
}
