package writebehind

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// groupInfo is one consumer group of one stream, from XINFO GROUPS.
type groupInfo struct {
	name          string
	pending       int64
	lastDelivered string
	lag           int64 // entries not yet delivered; -1 when Redis cannot tell
}

func parseGroups(msg rueidis.RedisMessage) ([]groupInfo, error) {
	items, err := msg.ToArray()
	if err != nil {
		return nil, err
	}
	out := make([]groupInfo, 0, len(items))
	for _, it := range items {
		m, err := it.AsMap()
		if err != nil {
			return nil, err
		}
		g := groupInfo{lag: -1}
		if v, ok := m["name"]; ok {
			g.name, _ = v.ToString()
		}
		if v, ok := m["pending"]; ok {
			g.pending, _ = v.AsInt64()
		}
		if v, ok := m["last-delivered-id"]; ok {
			g.lastDelivered, _ = v.ToString()
		}
		if v, ok := m["lag"]; ok && !v.IsNil() {
			g.lag, _ = v.AsInt64()
		}
		out = append(out, g)
	}
	return out, nil
}

// after is the smallest entry id after id ("ms-seq").
func after(id string) string {
	ev, err := ticketrush.ParseEventID("", id)
	if err != nil {
		return "0-1"
	}
	return strconv.FormatInt(ev.Ms, 10) + "-" + strconv.FormatInt(ev.Seq+1, 10)
}

// streamState is what the group has yet to do on one stream.
type streamState struct {
	groups      []groupInfo
	ours        *groupInfo
	pendingMins map[string]string // oldest pending entry of each group, by group name
}

// inspect reads the groups of every stream and, for groups with pending entries, their oldest one.
func inspect(ctx context.Context, rdb rueidis.Client, group string, streams []string) (map[string]*streamState, error) {
	cmds := make(rueidis.Commands, len(streams))
	for i, s := range streams {
		cmds[i] = rdb.B().XinfoGroups().Key(s).Build()
	}
	out := map[string]*streamState{}
	type pendingQuery struct{ stream, group string }
	var queries []pendingQuery
	var pcmds rueidis.Commands
	for i, res := range rdb.DoMulti(ctx, cmds...) {
		msg, err := res.ToMessage()
		if err != nil {
			if rerr, ok := rueidis.IsRedisErr(err); ok && !rerr.IsNil() {
				continue // no such stream
			}
			return nil, err
		}
		groups, err := parseGroups(msg)
		if err != nil {
			return nil, fmt.Errorf("xinfo groups %s: %w", streams[i], err)
		}
		st := &streamState{groups: groups, pendingMins: map[string]string{}}
		for gi := range groups {
			g := &groups[gi]
			if g.name == group {
				st.ours = g
			}
			if g.pending > 0 {
				queries = append(queries, pendingQuery{streams[i], g.name})
				pcmds = append(pcmds, rdb.B().Xpending().Key(streams[i]).Group(g.name).Build())
			}
		}
		out[streams[i]] = st
	}
	for i, res := range rdb.DoMulti(ctx, pcmds...) {
		parts, err := res.ToArray()
		if err != nil {
			return nil, err
		}
		if len(parts) >= 2 {
			if id, err := parts[1].ToString(); err == nil {
				out[queries[i].stream].pendingMins[queries[i].group] = id
			}
		}
	}
	return out, nil
}

// trim removes from every stream the entries every group has acknowledged: below the oldest pending
// entry of each group and below the first entry it has not been delivered yet. Streams without a group
// are left alone.
// The states may be a little old: acknowledgements only ever move forward, so an older state trims
// less, never more.
func (w *Worker) trim(ctx context.Context, streams []string, states map[string]*streamState) {
	var cmds rueidis.Commands
	for _, s := range streams {
		st := states[s]
		if st == nil || len(st.groups) == 0 {
			continue
		}
		var minID ticketrush.EventID
		first := true
		for _, g := range st.groups {
			cut := after(g.lastDelivered)
			if p, ok := st.pendingMins[g.name]; ok {
				cut = p
			} else if g.pending > 0 {
				cut = "0-0" // pending entries of unknown age: keep everything
			}
			id, err := ticketrush.ParseEventID(s, cut)
			if err != nil {
				id = ticketrush.EventID{}
			}
			if first || id.Before(minID) {
				minID, first = id, false
			}
		}
		if minID.Ms == 0 && minID.Seq <= 1 {
			continue
		}
		cmds = append(cmds, w.rdb.B().Xtrim().Key(s).Minid().Almost().Threshold(minID.Entry()).Build())
	}
	for _, res := range w.rdb.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil && ctx.Err() == nil {
			w.log.Warn("writebehind: trim", "err", err)
		}
	}
}

func (w *Worker) groupedStreams() []string {
	out := make([]string, 0, len(w.order))
	for _, s := range w.order {
		if w.grouped[s.stream] {
			out = append(out, s.stream)
		}
	}
	return out
}

// runStats measures backlog and lag every StatsEvery, and trims every TrimEvery from the same reading.
func (w *Worker) runStats(ctx context.Context) {
	t := time.NewTicker(w.cfg.StatsEvery)
	defer t.Stop()
	var lastTrim time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		streams := w.streams
		w.mu.Unlock()
		states, err := inspect(ctx, w.rdb, w.cfg.Group, streams)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("writebehind: measure backlog", "err", err)
			}
			continue
		}
		backlog, oldest := measureStates(ctx, w.rdb, streams, states)
		now := w.now()
		w.metrics.backlog.Set(float64(backlog))
		lag := 0.0
		if backlog > 0 && oldest > 0 {
			lag = max(0, now.Sub(time.UnixMilli(oldest)).Seconds())
		}
		w.metrics.lag.Set(lag)
		w.mu.Lock()
		w.backlog = backlog
		if backlog == 0 {
			w.lastAdvance = now
		}
		w.mu.Unlock()
		if now.Sub(lastTrim) >= w.cfg.TrimEvery {
			lastTrim = now
			w.trim(ctx, streams, states)
		}
	}
}

// Backlog returns the events the group has not acknowledged yet over every stream of the keys under
// prefix (the wallet shards and the given concerts), and the time of the oldest (zero without any).
func Backlog(ctx context.Context, rdb rueidis.Client, prefix, group string, concertIDs []string) (int64, time.Time, error) {
	if group == "" {
		group = DefaultConfig().Group
	}
	keys := redis.NewKeys(prefix)
	var streams []string
	for i := range redis.WalletShards {
		streams = append(streams, keys.WalletShard(i).Events())
	}
	for _, id := range concertIDs {
		streams = append(streams, keys.Concert(id).Events())
	}
	n, oldest, err := measure(ctx, rdb, group, streams)
	if err != nil || oldest == 0 {
		return n, time.Time{}, err
	}
	return n, time.UnixMilli(oldest), nil
}

// measure returns the events of group not yet acknowledged over every stream, and the time (Unix ms)
// of the oldest of them.
func measure(ctx context.Context, rdb rueidis.Client, group string, streams []string) (backlog, oldest int64, err error) {
	states, err := inspect(ctx, rdb, group, streams)
	if err != nil {
		return 0, 0, err
	}
	backlog, oldest = measureStates(ctx, rdb, streams, states)
	return backlog, oldest, nil
}

func measureStates(ctx context.Context, rdb rueidis.Client, streams []string, states map[string]*streamState) (backlog, oldest int64) {
	var firsts, lengths rueidis.Commands
	var unknown []bool // per command of firsts: Redis could not count the entries left to deliver
	consider := func(id string) {
		if ev, err := ticketrush.ParseEventID("", id); err == nil && (oldest == 0 || ev.Ms < oldest) {
			oldest = ev.Ms
		}
	}
	for _, s := range streams {
		st := states[s]
		if st == nil {
			continue // no stream
		}
		if st.ours == nil { // no group yet: every entry waits
			firsts = append(firsts, rdb.B().Xrange().Key(s).Start("-").End("+").Count(1).Build())
			unknown = append(unknown, false)
			lengths = append(lengths, rdb.B().Xlen().Key(s).Build())
			continue
		}
		g := st.ours
		backlog += g.pending
		if p, ok := st.pendingMins[g.name]; ok {
			consider(p)
		}
		if g.lag != 0 {
			firsts = append(firsts, rdb.B().Xrange().Key(s).Start("("+g.lastDelivered).End("+").Count(1).Build())
			unknown = append(unknown, g.lag < 0)
			backlog += max(g.lag, 0)
		}
	}
	for i, res := range rdb.DoMulti(ctx, firsts...) {
		xs, err := res.AsXRange()
		if err != nil || len(xs) == 0 {
			continue
		}
		consider(xs[0].ID)
		if unknown[i] {
			backlog++ // at least this one
		}
	}
	for _, res := range rdb.DoMulti(ctx, lengths...) {
		n, err := res.AsInt64()
		if err == nil {
			backlog += n
		}
	}
	return backlog, oldest
}

// Check is the readiness check of a worker: it fails when there is a backlog and this worker has
// acknowledged nothing for StuckAfter.
func (w *Worker) Check(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if idle := w.now().Sub(w.lastAdvance); w.backlog > 0 && idle > w.cfg.StuckAfter {
		return fmt.Errorf("write-behind has not advanced for %s with %d events waiting", idle.Round(time.Second), w.backlog)
	}
	return nil
}
