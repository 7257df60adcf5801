package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// A concert's line spread over several slots (queue.lineShards > 1, docs/scaleout.md): each waiting
// fan is in the shard of their user id (LineShard), where a join, a rejoin, a leave and their liveness
// write touch only that shard's slot. What must be counted across the line lives on the concert's slot:
// the arrival seq (one INCR per join, line_arrive), the active set, the capacity and the rate budget,
// the head and the leaves that place a fan. The tick reads every shard's head (line_heads), admits in
// seq order on the concert's slot (line_admit) and then takes the admitted out of their shards
// (line_pop): each step idempotent, so that a crash between two leaves what the next tick completes.
// A line of one shard keeps every key in the concert's slot and runs the scripts of queue.go.

// lines keeps each concert's last tick's admissions, which size the next tick's read of the heads.
type lines struct {
	mu   sync.Mutex
	last map[string]int
}

// LineShards is the number of slots concertID's line is spread over (1 for a concert created before
// lineShards existed); read once per concert from its settings in Redis (layout).
func (s *Store) LineShards(ctx context.Context, concertID string) (int, error) {
	w, err := s.ways(ctx, concertID)
	return w.layout.Shards, err
}

// ShardsPerMaster is the default number of line shards per master of a cluster: with the shards' slots
// spread at random over the masters, 8 per master keeps the busiest master's share of one line near
// its even share (docs/scaleout.md).
const ShardsPerMaster = 8

// DefaultLineShards is the lineShards of a concert that does not ask: 1 on a single Redis, and on a
// Redis Cluster ShardsPerMaster per master serving slots (cluster_size), at most MaxLineShards.
func (s *Store) DefaultLineShards(ctx context.Context) (int, error) {
	if s.client.Mode() != rueidis.ClientModeCluster {
		return 1, nil
	}
	info, err := s.client.Do(ctx, s.client.B().ClusterInfo().Build()).ToString()
	if err != nil {
		return 0, fmt.Errorf("default line shards: %w", unavailable(err))
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_size:"); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return min(ticketrush.MaxLineShards, ShardsPerMaster*n), nil
			}
		}
	}
	return 0, fmt.Errorf("default line shards: no cluster_size in CLUSTER INFO")
}

// execMulti runs sc once per call in one round trip (the calls may be on different slots), and again
// one by one where Redis did not know the script yet.
func (s *core) execMulti(ctx context.Context, sc *script, calls []call) ([]rueidis.RedisMessage, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	start := time.Now()
	cmds := make(rueidis.Commands, len(calls))
	for i, c := range calls {
		cmds[i] = s.evalsha(sc, c.keys, c.args)
	}
	res := s.client.DoMulti(ctx, cmds...)
	out := make([]rueidis.RedisMessage, len(calls))
	var errs []error
	for i, r := range res {
		sc.observe(start)
		msg, err := r.ToMessage()
		if isNoScript(err) {
			msg, err = s.execPlain(ctx, sc, calls[i].keys, calls[i].args)
		} else if err != nil {
			err = s.scriptError(sc, err)
		}
		out[i] = msg
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// joinLine is a join to a line of n shards: line_arrive on the concert's slot, then line_enter in the
// fan's shard. A seq the join did not take (a rejoin, or a refusal in the shard) is logged as a gap
// (line_left). When nobody waited and the active set had room, the fan is admitted at once if nobody is
// ahead of them in any shard (line_admit, first mode), as a join to a line of one shard is.
func (s *Line) joinLine(ctx context.Context, l shardedLine, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error) {
	concertID, n, c := l.id, l.n, l.k
	shard := LineShard(userID, n)
	sh := c.Shard(shard)
	for range 2 { // a join that finds the opening passed and the draw not sealed seals it, then arrives
		a, err := s.arrive(ctx, concertID, userID, pass.CodeHash, now)
		if err != nil {
			return ticketrush.JoinResult{}, err
		}
		switch a.status {
		case ticketrush.StatusActive:
			return ticketrush.JoinResult{Status: ticketrush.StatusActive, Seq: a.seq, ActiveUntil: fromMillis(a.till)}, nil
		case "SEAL":
			if _, err := s.sealLine(ctx, l, now); err != nil {
				return ticketrush.JoinResult{}, err
			}
			continue
		}
		var e entered
		err = s.crashAt("enter") // tests: the step's answer lost before it was sent
		if err == nil {
			e, err = s.enters.do(ctx, sh.Places(), enterJoin{sh: sh, user: userID, a: a, pass: pass, l: s.limit, now: now})
		}
		res, sealed := e.res, e.sealed
		if sealed { // the pre-queue closed under this join: the opening has passed for a sealer
			if _, err := s.sealLine(ctx, l, now); err != nil {
				return ticketrush.JoinResult{}, err
			}
			continue
		}
		// A seq the shard answered without taking it, or that never reached the shard (its connection
		// could not be dialled), is a gap to log, whatever is left of the request's time. One whose answer
		// was lost (the shard may have taken it) is settled: asked again past the request's deadline, in
		// a goroutine of its own, so that the request still answers at its deadline.
		if a.seq > 0 && lost(err) {
			s.settling.Add(1)
			go func() {
				defer s.settling.Done()
				s.settleEnter(ctx, c, sh, userID, a, pass, now)
			}()
		}
		if a.seq > 0 && !lost(err) && (err != nil || res.Status != ticketrush.StatusWaiting || !res.Created) {
			if gapErr := s.logGap(ctx, c, userID, a.seq, now); gapErr != nil && err == nil {
				err = gapErr
			}
			res.Skipped = a.seq
		}
		if err != nil || !res.Created || !a.room {
			return res, err
		}
		r, err := s.admitLine(ctx, l, now, 1, 0, "first", nil, []lineFan{{user: userID, seq: res.Seq, seen: now.UnixMilli(), shard: shard}})
		if err != nil || len(r.left) == 0 {
			return res, nil // waits for the next tick, which admits in order
		}
		till, err := s.client.Do(ctx, s.client.B().Zscore().Key(c.Active()).Member(userID).Build()).AsInt64()
		if err != nil {
			return res, nil
		}
		return ticketrush.JoinResult{Status: ticketrush.StatusActive, Seq: res.Seq, ActiveUntil: fromMillis(till), Created: true}, nil
	}
	return ticketrush.JoinResult{}, fmt.Errorf("join %s: the draw's seal did not hold", concertID)
}

// settleEnter settles seq a.seq of a join whose line_enter's answer was lost: the same step sent again,
// for gapWait whatever is left of the request's time and past the user's rate (it is the same join). The
// fan found waiting at a.seq took it, or takes it now (their retry finds their place); found waiting at
// another seq, or refused, a.seq is a gap to log. Where it cannot be asked, the seq is left alone: the
// fan behind it reads one place too many until the head passes it, where logging it could make a fan
// in line read EXPIRED.
func (s *Line) settleEnter(ctx context.Context, c ConcertKeys, sh ShardKeys, userID string, a arrival, pass ticketrush.JoinPass, now time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gapWait)
	defer cancel()
	keys, args := sh.lineEnter(userID, a, pass, UserLimit{}, now)
	msg, err := s.exec(ctx, s.lineEnter, keys, args)
	var res ticketrush.JoinResult
	if err == nil {
		res, _, err = enterReply(msg)
	}
	if lost(err) || res.Status == ticketrush.StatusWaiting && res.Seq == a.seq {
		return
	}
	_ = s.logGap(ctx, c, userID, a.seq, now)
}

// entered is line_enter's answer to one join: its result, and sealed when the shard's pre-queue was
// closed under a pre-queue join.
type entered struct {
	res    ticketrush.JoinResult
	sealed bool
}

// enterReply reads line_enter's reply to one join alone: {status, seq, activeUntil, created}, the status
// the code of the join's refusal where it was refused.
func enterReply(msg rueidis.RedisMessage) (ticketrush.JoinResult, bool, error) {
	rs, err := entersReply(msg, 1)
	if err != nil {
		return ticketrush.JoinResult{}, false, err
	}
	return rs[0].res.res, rs[0].res.sealed, rs[0].err
}

// entersReply reads line_enter's reply to n joins: four items each.
func entersReply(msg rueidis.RedisMessage, n int) ([]batchResult[entered], error) {
	r, err := reply(msg, 4*n)
	if err != nil {
		return nil, err
	}
	out := make([]batchResult[entered], n)
	for i := range out {
		at := 4 * i
		if e, ok := ticketrush.ErrorOf(ticketrush.Code(r.str(at))); ok {
			out[i].err = e
			continue
		}
		st := r.status(at, ticketrush.StatusWaiting, ticketrush.StatusPrequeue, "SEALED")
		out[i].res = entered{res: ticketrush.JoinResult{Status: st, Seq: uint64(r.int(at + 1)), Created: r.flag(at + 3)}, sealed: st == "SEALED"}
		r.int(at + 2)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// The joins of one shard go to it in batches (batch.go), keyed by the shard: line_enter decides each as
// if alone, in the batch's order. A join whose request ended before its batch was sent is dropped, and
// one whose answer it did not wait for is settled (settleEnter), as a lost answer is.
const (
	maxEnters = 256
	enterWait = 3 * time.Second // bounds a line_enter call: no one request's deadline is the batch's
)

func (s *Line) newEnters() *batches[enterJoin, entered] {
	return &batches[enterJoin, entered]{max: maxEnters, wait: enterWait, send: s.sendEnters}
}

// sendEnters is one line_enter call for a batch of joins of one shard.
func (s *Line) sendEnters(ctx context.Context, _ string, joins []enterJoin) ([]batchResult[entered], error) {
	keys, args := lineEnters(joins)
	msg, err := s.exec(ctx, s.lineEnter, keys, args)
	if err != nil {
		return nil, err
	}
	out, err := entersReply(msg, len(joins))
	for _, o := range out {
		if o.err != nil {
			s.metrics.errors.WithLabelValues(s.lineEnter.name, string(ticketrush.ErrorCode(o.err))).Inc()
		}
	}
	return out, err
}

// gapWait bounds the log of a gap once its join has failed: the request's own time may be spent.
const gapWait = 2 * time.Second

// logGap logs seq, which userID's join took and did not use, as a gap in the line (line_left, from
// SKIP), so that positions stay exact.
func (s *Line) logGap(ctx context.Context, c ConcertKeys, userID string, seq uint64, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gapWait)
	defer cancel()
	_, err := s.lineLeft(ctx, c, userID, seq, "SKIP", now)
	return err
}

// lineLeft logs seq of userID as not, or no longer, in the line (from 'LEAVE' or 'SKIP') on the
// concert's slot, and returns line_left's 'ACTIVE', 'LOGGED' or 'NONE'.
func (s *Line) lineLeft(ctx context.Context, c ConcertKeys, userID string, seq uint64, from string, now time.Time) (string, error) {
	keys, args := c.lineLeft(userID, seq, from, now)
	msg, err := s.exec(ctx, s.lineLeftSc, keys, args)
	if err != nil {
		return "", err
	}
	return msg.ToString()
}

// leaveLine is a leave from a line of n shards, decided on the concert's slot where admission is
// (line_left: the ACTIVE slot given back, or the seq quit so that no round admits it, whatever heads
// it read before), then taken out of the fan's shard (line_leave). A leave answered is final; one that
// fails after its first step was not answered, and a retry completes it.
func (s *Line) leaveLine(ctx context.Context, l shardedLine, userID string, seq uint64, now time.Time) (ticketrush.QueueStatus, error) {
	n, c := l.n, l.k
	decided, err := s.lineLeft(ctx, c, userID, seq, "LEAVE", now)
	if err != nil {
		return "", err
	}
	keys, args := c.Shard(LineShard(userID, n)).lineLeave(userID, seq)
	msg, err := s.exec(ctx, s.lineLeave, keys, args)
	if err != nil {
		return "", err
	}
	from, err := leaveReply(msg)
	if err != nil || decided != string(ticketrush.StatusActive) {
		return from, err
	}
	return ticketrush.StatusActive, nil // admitted by a round whose pop had not run yet
}

// statusLine is the exact state of a token of a line of n shards: ACTIVE, DONE or gone on the
// concert's slot, else WAITING if the fan's shard has them, placed by the head and the leaves logged
// on the concert's slot, else what the concert's slot says when read again after the shard.
func (s *Line) statusLine(ctx context.Context, l shardedLine, claims ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	st, err := s.concertStatus(ctx, claims, now)
	if err != nil || st.Status != ticketrush.StatusExpired {
		return st, err
	}
	return s.shardStatus(ctx, l, claims, now)
}

// concertStatus is queue_status on the concert's slot.
func (s *Line) concertStatus(ctx context.Context, claims ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	keys, args := s.keys.Concert(claims.ConcertID).queueStatus(claims, now)
	msg, err := s.exec(ctx, s.status, keys, args)
	if err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", err)
	}
	return tokenState(msg)
}

// shardStatus is the state of a token that the concert's slot did not know as ACTIVE or DONE: WAITING
// in the fan's shard, else what the concert's slot says when read again.
func (s *Line) shardStatus(ctx context.Context, l shardedLine, claims ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	n, c := l.n, l.k
	seq := utoa(claims.Seq)
	res := s.client.DoMulti(ctx,
		s.client.B().Hget().Key(c.Shard(LineShard(claims.UserID, n)).Places()).Field(claims.UserID).Build(),
		s.client.B().Get().Key(c.Head()).Build(),
		s.client.B().Zcount().Key(c.Left()).Min("-inf").Max(seq).Build(),
		s.client.B().Hget().Key(c.Inventory()).Field("soldout").Build())
	for _, r := range res {
		if err := r.Error(); err != nil && !isNil(err) {
			return ticketrush.TokenState{}, fmt.Errorf("token status: %w", unavailable(err))
		}
	}
	if score, err := res[0].AsInt64(); err != nil || uint64(score) != claims.Seq {
		// Not in the shard. A round may have admitted the fan between the two reads: line_admit makes
		// them ACTIVE on the concert's slot before line_pop takes them out of the shard, so the concert's
		// slot, read again after the shard, has them ACTIVE. Read once, a fan admitted in that moment
		// (as wide as a slow link to the shard's master) would read EXPIRED.
		return s.concertStatus(ctx, claims, now)
	}
	if sold, _ := res[3].ToString(); sold == "1" {
		return ticketrush.TokenState{Status: ticketrush.StatusSoldOut}, nil
	}
	head, _ := res[1].AsInt64()
	gone, _ := res[2].AsInt64()
	if gone > 0 && head > 0 { // some may be at or behind the head
		var err error
		if gone, err = s.leavesBetween(ctx, c, head, int64(claims.Seq)); err != nil {
			return ticketrush.TokenState{}, fmt.Errorf("token status: %w", err)
		}
	}
	return ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: max(1, int64(claims.Seq)-head-gone)}, nil
}

// leavesBetween counts the leaves logged on concert c's slot between the head and seq: a round trims at
// most its batch of the leaves its head passed, so those at or behind it may still be there.
func (s *Line) leavesBetween(ctx context.Context, c ConcertKeys, head, seq int64) (int64, error) {
	n, err := s.client.Do(ctx, s.client.B().Zcount().Key(c.Left()).Min("("+i64toa(head)).Max(i64toa(seq)).Build()).AsInt64()
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// markAliveLine writes the liveness of a line of n shards: an HSET per shard the fans are in and
// seenChunk of them, in one round trip (a command of at most seenChunk fields is short).
func (s *Line) markAliveLine(ctx context.Context, l shardedLine, seen []ticketrush.Arrival, now time.Time) error {
	n, c := l.n, l.k
	at := millis(now)
	byShard := map[int][]uint64{}
	for _, a := range seen {
		sh := LineShard(a.UserID, n)
		byShard[sh] = append(byShard[sh], a.Seq)
	}
	cmds := make(rueidis.Commands, 0, len(byShard))
	for sh, seqs := range byShard {
		slices.Sort(seqs)
		for chunk := range slices.Chunk(slices.Compact(seqs), s.liveChunk) {
			cmd := s.client.B().Hset().Key(c.Shard(sh).Alive()).FieldValue()
			for _, seq := range chunk {
				cmd = cmd.FieldValue(utoa(seq), at)
			}
			cmds = append(cmds, cmd.Build())
		}
	}
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return unavailable(err)
		}
	}
	return nil
}
