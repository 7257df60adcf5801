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
	groups      []redis.StreamGroup
	ours        *redis.StreamGroup
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
		groups, err := redis.ParseStreamGroups(msg)
		if err != nil {
			return nil, fmt.Errorf("xinfo groups %s: %w", streams[i], err)
		}
		st := &streamState{groups: groups, pendingMins: map[string]string{}}
		for gi := range groups {
			g := &groups[gi]
			if g.Name == group {
				st.ours = g
			}
			if g.Pending > 0 {
				queries = append(queries, pendingQuery{streams[i], g.Name})
				pcmds = append(pcmds, rdb.B().Xpending().Key(streams[i]).Group(g.Name).Build())
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
			cut := after(g.LastDelivered)
			if p, ok := st.pendingMins[g.Name]; ok {
				cut = p
			} else if g.Pending > 0 {
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
			w.warnings.warn(warnTrim, "err", err)
		}
	}
}

func (w *Worker) groupedStreams() []string {
	out := make([]string, 0, len(w.order))
	for _, s := range w.order {
		if w.grouped[s.Stream] {
			out = append(out, s.Stream)
		}
	}
	return out
}

// runStats measures backlog and lag every StatsEvery (every QuietEvery while quiet), and trims every
// TrimEvery from the same reading.
func (w *Worker) runStats(ctx context.Context) {
	t := time.NewTicker(w.cfg.StatsEvery)
	defer t.Stop()
	var lastTrim, lastMeasure time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		streams, quiet := w.streams, w.quiet
		w.busy = false // a round that reads from now on ends the quiet this measure may start
		w.mu.Unlock()
		if quiet && w.now().Sub(lastMeasure) < w.cfg.QuietEvery {
			continue
		}
		lastMeasure = w.now()
		states, err := inspect(ctx, w.rdb, w.cfg.Group, streams)
		if err != nil {
			if ctx.Err() == nil {
				w.warnings.warn(warnMeasure, "err", err)
			}
			w.mu.Lock()
			w.quiet = false
			w.mu.Unlock()
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
		w.quiet = backlog == 0 && !w.busy
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
	streams, err := redis.NewKeys(prefix).AllEventStreams(ctx, rdb, concertIDs)
	if err != nil {
		return 0, time.Time{}, err
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

// exactCount is the most entries measureStates reads to count a stream's undelivered entries when
// Redis's own figure (XINFO GROUPS lag) cannot be trusted.
const exactCount = 1000

// measureStates counts, over every stream, the entries the group has not acknowledged: its pending
// entries and the entries after its last-delivered id, and finds the oldest of them (Unix ms).
//
// XINFO GROUPS' lag is a hint, not the count: after a Redis restart it can report entries (55, 109) on
// a stream that is empty, its last-delivered id the last one generated. So the count comes from the
// stream itself: nothing after the last-delivered id is 0 whatever lag says; otherwise lag is taken when
// it is possible (at most the entries the stream holds beyond the pending ones), else the entries are
// counted (up to exactCount; beyond, the stream's bound stands for them).
func measureStates(ctx context.Context, rdb rueidis.Client, streams []string, states map[string]*streamState) (backlog, oldest int64) {
	consider := func(id string) {
		if ev, err := ticketrush.ParseEventID("", id); err == nil && (oldest == 0 || ev.Ms < oldest) {
			oldest = ev.Ms
		}
	}
	type undelivered struct {
		stream, from string
		lag, pending int64
	}
	var (
		todo []undelivered
		cmds rueidis.Commands // per todo: the first entry after from, and the stream's length
	)
	for _, s := range streams {
		st := states[s]
		if st == nil {
			continue // no stream
		}
		u := undelivered{stream: s, from: "-", lag: -1}
		if g := st.ours; g != nil {
			backlog += g.Pending
			if p, ok := st.pendingMins[g.Name]; ok {
				consider(p)
			}
			u = undelivered{stream: s, from: "(" + g.LastDelivered, lag: g.Lag, pending: g.Pending}
		}
		todo = append(todo, u)
		cmds = append(cmds, rdb.B().Xrange().Key(s).Start(u.from).End("+").Count(1).Build(), rdb.B().Xlen().Key(s).Build())
	}
	var (
		counts rueidis.Commands // per stream whose lag is not possible: its entries after the last-delivered id
		bounds []int64
	)
	res := rdb.DoMulti(ctx, cmds...)
	for i, u := range todo {
		xs, err := res[2*i].AsXRange()
		if err != nil || len(xs) == 0 {
			continue // nothing after the last-delivered id
		}
		consider(xs[0].ID)
		n, err := res[2*i+1].AsInt64()
		if err != nil {
			backlog++ // at least this one
			continue
		}
		bound := max(n-u.pending, 1) // pending entries are at or before the last-delivered id
		if u.from == "-" {
			backlog += n // no group yet: every entry waits
			continue
		}
		if u.lag >= 1 && u.lag <= bound {
			backlog += u.lag
			continue
		}
		bounds = append(bounds, bound)
		counts = append(counts, rdb.B().Xrange().Key(u.stream).Start(u.from).End("+").Count(exactCount).Build())
	}
	for i, res := range rdb.DoMulti(ctx, counts...) {
		xs, err := res.AsXRange()
		switch {
		case err != nil:
			backlog++ // at least the one seen
		case len(xs) == exactCount:
			backlog += max(bounds[i], exactCount)
		default:
			backlog += int64(len(xs))
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
