package writebehind

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"
)

// read takes the new entries of every stream, in one pipeline: up to each stream's count, which
// doubles (up to MaxReadCount) while the stream fills its reads and halves back (down to ReadCount)
// once it does not. What the streams read beyond ReadCount each is bounded per round (growthBudget
// MaxReadCounts), so that a backlog in every stream (Postgres back after an outage) reads no more per
// round than ReadCount a stream and a few hot streams' worth. On a single Redis the streams read at
// ReadCount (every stream of an idle service) share one XREADGROUP; on a cluster each stream is a
// slot of its own, and each is read by a command of its own.
func (w *Worker) read(ctx context.Context) []entry {
	cmds := make(rueidis.Commands, 0, len(w.order))
	covers := make([][]*source, 0, len(w.order)) // the streams each command reads
	var srcs, shared []*source
	budget := growthBudget * w.cfg.MaxReadCount
	together := w.rdb.Mode() != rueidis.ClientModeCluster
	for _, s := range w.order {
		if !w.grouped[s.Stream] {
			continue
		}
		extra := min(max(s.count, w.cfg.ReadCount), w.cfg.MaxReadCount) - w.cfg.ReadCount
		extra = min(extra, budget)
		budget -= extra
		s.count = w.cfg.ReadCount + extra
		srcs = append(srcs, s)
		if together && extra == 0 {
			shared = append(shared, s)
			continue
		}
		cmds = append(cmds, w.rdb.B().Xreadgroup().Group(w.cfg.Group, w.cfg.Consumer).Count(int64(s.count)).
			Streams().Key(s.Stream).Id(">").Build())
		covers = append(covers, []*source{s})
	}
	if len(shared) > 0 {
		keys, ids := make([]string, len(shared)), make([]string, len(shared))
		for i, s := range shared {
			keys[i], ids[i] = s.Stream, ">"
		}
		cmds = append(cmds, w.rdb.B().Xreadgroup().Group(w.cfg.Group, w.cfg.Consumer).Count(int64(w.cfg.ReadCount)).
			Streams().Key(keys...).Id(ids...).Build())
		covers = append(covers, shared)
	}
	var out []entry
	read := map[*source][]entry{}
	for i, res := range w.rdb.DoMulti(ctx, cmds...) {
		streams, err := res.AsXRead()
		for _, s := range covers[i] {
			if err != nil && !rueidis.IsRedisNil(err) { // nil: nothing new
				w.readFailed(ctx, s, err) // a shared read's NOGROUP makes every group of it again
				continue
			}
			w.took(s, streams[s.Stream], read)
		}
	}
	withheld := map[*source]bool{}
	if w.cfg.ReplicaWait > 0 { // every stream's wait at once
		var mu sync.Mutex
		var wg sync.WaitGroup
		for s, es := range read {
			wg.Go(func() {
				if !w.replicated(ctx, s, es) {
					mu.Lock()
					withheld[s] = true // pending: claimed after ClaimIdle, by then on a replica or on a master without one
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	for _, s := range srcs { // in the order read
		if !withheld[s] {
			out = append(out, read[s]...)
		}
	}
	return out
}

// took notes what a read of s got (its count for the next round follows) and adds it to read.
func (w *Worker) took(s *source, got []rueidis.XRangeEntry, read map[*source][]entry) {
	s.drained, s.readAt = len(got) == 0, w.now()
	if !s.drained {
		s.yielded = w.now()
	}
	switch {
	case len(got) >= s.count:
		s.count *= 2
	case len(got) < s.count/2:
		s.count /= 2
	}
	for _, xe := range got {
		read[s] = append(read[s], entry{src: s, id: xe.ID, fields: xe.FieldValues})
	}
}

// replicated reports whether a replica of the stream's master has entries just read: an XCLAIM JUSTID
// of them (a write after theirs on that master) and WAIT 1 in one round trip on one connection, so
// that WAIT covers them. An event is written to Postgres only once a failover can no longer take it
// back from Redis (the step that wrote it waited for the replica too, but the worker may read it
// first).
func (w *Worker) replicated(ctx context.Context, s *source, es []entry) bool {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.id
	}
	res := w.rdb.DoMulti(ctx,
		w.rdb.B().Xclaim().Key(s.Stream).Group(w.cfg.Group).Consumer(w.cfg.Consumer).MinIdleTime("0").Id(ids...).Justid().Build(),
		w.rdb.B().Wait().Numreplicas(1).Timeout(max(1, w.cfg.ReplicaWait.Milliseconds())).Build())
	n, err := res[1].AsInt64()
	if err != nil && ctx.Err() == nil {
		w.warnings.warn(warnReadStream, "stream", s.Stream, "err", err)
	}
	return err == nil && n >= 1
}

// readFailed handles a stream that could not be read: a missing group (Redis lost it) is made again.
func (w *Worker) readFailed(ctx context.Context, s *source, err error) {
	if rerr, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(rerr.Error(), "NOGROUP") {
		delete(w.grouped, s.Stream)
		return
	}
	if ctx.Err() == nil {
		w.warnings.warn(warnReadStream, "stream", s.Stream, "err", err)
	}
}

// claim takes over entries other consumers left pending for ClaimIdle (crashed, or gone). An entry
// delivered MaxDeliveries times already goes to the dead-letter stream.
func (w *Worker) claim(ctx context.Context) []entry {
	var out []entry
	cursors := map[*source]string{}
	for _, s := range w.order {
		if w.grouped[s.Stream] {
			cursors[s] = "0-0"
		}
	}
	minIdle := strconv.FormatInt(w.cfg.ClaimIdle.Milliseconds(), 10)
	for round := 0; round < 10 && len(cursors) > 0; round++ {
		srcs := make([]*source, 0, len(cursors))
		cmds := make(rueidis.Commands, 0, len(cursors))
		for s, start := range cursors {
			srcs = append(srcs, s)
			cmds = append(cmds, w.rdb.B().Xautoclaim().Key(s.Stream).Group(w.cfg.Group).Consumer(w.cfg.Consumer).
				MinIdleTime(minIdle).Start(start).Count(int64(w.cfg.ReadCount)).Build())
		}
		for i, res := range w.rdb.DoMulti(ctx, cmds...) {
			s := srcs[i]
			delete(cursors, s)
			parts, err := res.ToArray()
			if err != nil || len(parts) < 2 {
				if err != nil {
					w.readFailed(ctx, s, err)
				}
				continue
			}
			entries, err := parts[1].AsXRange()
			if err != nil {
				continue
			}
			if next, _ := parts[0].ToString(); next != "0-0" && next != "" && len(entries) > 0 {
				cursors[s] = next // a page of entries all in flight here still leads to the next page
			}
			entries = slices.DeleteFunc(entries, func(x rueidis.XRangeEntry) bool { return w.flying(s.Stream, x.ID) })
			out = append(out, w.dropOverdelivered(ctx, s, entries)...)
		}
	}
	if len(out) > 0 {
		w.log.Info("writebehind: claimed pending entries", "entries", len(out))
	}
	return out
}

func (w *Worker) dropOverdelivered(ctx context.Context, s *source, xs []rueidis.XRangeEntry) []entry {
	out := make([]entry, 0, len(xs))
	if len(xs) == 0 {
		return out
	}
	deliveries := map[string]int64{}
	pend, err := w.rdb.Do(ctx, w.rdb.B().Xpending().Key(s.Stream).Group(w.cfg.Group).Start(xs[0].ID).End(xs[len(xs)-1].ID).
		Count(int64(len(xs))).Consumer(w.cfg.Consumer).Build()).ToArray()
	if err == nil {
		for _, p := range pend {
			if row, err := p.ToArray(); err == nil && len(row) == 4 {
				id, _ := row[0].ToString()
				n, _ := row[3].AsInt64()
				deliveries[id] = n
			}
		}
	}
	for _, x := range xs {
		e := entry{src: s, id: x.ID, fields: x.FieldValues}
		if x.FieldValues == nil {
			continue // deleted from the stream meanwhile: XAUTOCLAIM dropped it from the pending list
		}
		if n := deliveries[x.ID]; n > int64(w.cfg.MaxDeliveries) {
			w.deadLetter(ctx, e, fmt.Sprintf("delivered %d times without being written", n))
			continue
		}
		out = append(out, e)
	}
	return out
}
