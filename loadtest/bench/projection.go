package main

import (
	"fmt"
	"io"
	"math"
)

// One concert's capacity as the cluster grows: what the busiest master's one thread spends on each
// operation on 1, 3 and 6 masters (capacity.go), and from those, how many joins a second one concert could
// take on N masters. The model: the busiest master's µs per join is b(N) = a + c/N, a the part that stays
// on one master whatever N (the concert's own slot, a hot shard), c the part that spreads evenly; a and c
// by least squares over the clusters measured (a single Redis is not in cluster mode, where every command
// costs more: its row is shown, not fitted).

// mastersRow is one cluster size's figures: the busiest master's Redis µs per join, hold and payment
// (medians of the runs) and its share of each phase's Redis time.
type mastersRow struct {
	masters                                     int
	join, hold, cancel, pay                     float64
	joinShare, holdShare, cancelShare, payShare float64
	// joinSlot is the Redis µs per join of the concert's own slot (line_arrive) in the opening's joins
	// (capacityOpeningWorkers at once): its master's time less the shards placed beside it, each shard
	// costing what the others cost on average; joinShards the line's shards' together; floor the µs of
	// an EVALSHA of floorScript on these masters; calls the opening's script calls a join (its batches: line_arrive
	// and line_enter each carry many)
	joinSlot, joinShards, floor, calls float64
	na                                 string // why there is no figure
}

// mastersRows are the rows of 1, 3 and 6 masters from the runs.
func mastersRows(r capacityRuns, clusterNA string) []mastersRow {
	row := func(n int, runs []concertCapacity, errs []error, na string) mastersRow {
		if len(runs) == 0 {
			if len(errs) > 0 {
				na = errs[len(errs)-1].Error()
			}
			if na == "" {
				na = "not measured"
			}
			return mastersRow{masters: n, na: na}
		}
		us := func(p func(concertCapacity) phaseCost) float64 {
			return medianOf(runs, func(c concertCapacity) float64 { return p(c).busiestUs() })
		}
		share := func(p func(concertCapacity) phaseCost) float64 {
			return medianOf(runs, func(c concertCapacity) float64 { return p(c).busiest() })
		}
		join := func(c concertCapacity) phaseCost { return c.join }
		hold := func(c concertCapacity) phaseCost { return c.hold }
		cancel := func(c concertCapacity) phaseCost { return c.cancel }
		return mastersRow{masters: n, join: us(join), hold: us(hold), cancel: us(cancel), pay: us(concertCapacity.payment),
			joinShare: share(join), holdShare: share(hold), cancelShare: share(cancel), payShare: share(concertCapacity.payment),
			joinSlot: medianOf(runs, joinSlot), joinShards: medianOf(runs, func(c concertCapacity) float64 { return c.opening.usPerOp() - joinSlot(c) }),
			floor: medianOf(runs, func(c concertCapacity) float64 { return c.floor.usPerOp() }), calls: medianOf(runs, func(c concertCapacity) float64 { return float64(c.opening.scripts) / float64(c.opening.ops) })}
	}
	return []mastersRow{
		row(1, r.single, r.singleErr, ""),
		row(3, r.cluster, r.clusterErr, clusterNA),
		row(6, r.six, r.sixErr, r.sixNA),
	}
}

// joinSlot is the Redis µs per join of the opening's joins on the concert's own slot: its master's
// time less that of the shards beside it, each costing the average of the shards elsewhere (0 where
// every shard is beside it: one Redis).
func joinSlot(c concertCapacity) float64 {
	p := c.opening
	if c.shards <= c.shardsBeside || len(p.usec) <= c.concertMaster {
		return 0
	}
	own := p.usec[c.concertMaster]
	elsewhere := (p.total() - own) / float64(c.shards-c.shardsBeside)
	return math.Max(0, own-elsewhere*float64(c.shardsBeside)) / float64(p.ops)
}

// fitMasters fits b(N) = a + c/N to the (N, b) points by least squares in 1/N; ok is false with fewer
// than two sizes. Neither part may be below zero: with a < 0 all of it spreads (b = c/N), with c < 0
// none of it does (b = a, their mean).
func fitMasters(points [][2]float64) (a, c float64, ok bool) {
	if len(points) < 2 {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for _, p := range points {
		x := 1 / p[0]
		sx, sy, sxx, sxy = sx+x, sy+p[1], sxx+x*x, sxy+x*p[1]
	}
	n := float64(len(points))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, 0, false
	}
	c = (n*sxy - sx*sy) / den
	a = (sy - c*sx) / n
	switch {
	case a < 0: // all of it spreads: b(N) = c'/N through the points
		a, c = 0, sxy/sxx
	case c < 0: // the busiest master's share grew with the cluster: nothing spreads
		a, c = sy/n, 0
	}
	return a, c, true
}

// mastersFor is the fewest masters at which b(N) = a + c/N lets one concert take rate operations a
// second, or 0 when no number does (a alone is too much).
func mastersFor(a, c, rate float64) int {
	per := 1e6 / rate // µs the busiest master may spend on one operation
	if a >= per {
		return 0
	}
	return max(1, int(math.Ceil(c/(per-a))))
}

// printMasters prints the busiest master's figures on 1, 3 and 6 masters and the projection of joins.
func printMasters(w io.Writer, rows []mastersRow, floor float64) {
	fmt.Fprintln(w, "\none concert of one date as the cluster grows: the busiest master's Redis µs per operation (its share of the phase's Redis time), and per second what its one thread can take")
	fmt.Fprintf(w, "  %-8s %-16s %-16s %-16s %-16s %10s %10s %11s\n", "masters", "join", "hold", "cancel", "payment", "joins/s", "holds/s", "payments/s")
	var points [][2]float64
	for _, r := range rows {
		if r.na != "" {
			fmt.Fprintf(w, "  %-8d n/a: %s\n", r.masters, r.na)
			continue
		}
		if r.masters > 1 {
			points = append(points, [2]float64{float64(r.masters), r.join})
		}
		cell := func(us, share float64) string { return fmt.Sprintf("%.1f (%.0f%%)", us, 100*share) }
		fmt.Fprintf(w, "  %-8d %-16s %-16s %-16s %-16s %10s %10s %11s\n", r.masters, cell(r.join, r.joinShare), cell(r.hold, r.holdShare),
			cell(r.cancel, r.cancelShare), cell(r.pay, r.payShare), thousands(1e6/r.join), thousands(1e6/r.hold), thousands(1e6/r.pay))
	}
	if floor > 0 {
		fmt.Fprintf(w, "  floor: %.2f µs per EVALSHA of '%s' on one master in the same run (%s calls a second)\n", floor, floorScript, thousands(1e6/floor))
	}
	a, c, ok := fitMasters(points)
	if !ok {
		fmt.Fprintln(w, "  projection: n/a (fewer than two cluster sizes measured)")
		return
	}
	fmt.Fprintf(w, "  projection: the busiest master's µs per join ≈ %.2f + %.2f/N (fit over the %d clusters: %.2f µs stay on one master, %.2f spread)\n",
		a, c, len(points), a, c)
	fmt.Fprint(w, "  joins/s of one concert at N masters:")
	for _, n := range []int{6, 12, 32, 64} {
		fmt.Fprintf(w, " %d: %s;", n, thousands(1e6/(a+c/float64(n))))
	}
	if n := mastersFor(a, c, 1e6); n > 0 {
		fmt.Fprintf(w, " 1,000,000 a second at %d masters\n", n)
	} else {
		fmt.Fprintf(w, " 1,000,000 a second at no size: the %.2f µs that stay on one master allow %s at most\n", a, thousands(1e6/a))
	}
	printSplit(w, rows, floor)
}

// printSplit prints the projection from the largest cluster measured, split where the work is: the
// concert's own slot keeps its µs per join on one master whatever the size, and the line's shards spread
// over every master, so that a master carries at least (slot + shards)/N a join (the placement fills the
// concert's master with fewer shards). The same again with each figure scaled by the floor of one Redis
// over the floor of the cluster's masters (the clusters' redis-servers share the machine's cores; on a
// machine with a core a master the floor is the one Redis's).
func printSplit(w io.Writer, rows []mastersRow, floor float64) {
	var r *mastersRow
	for i := range rows {
		if rows[i].na == "" && rows[i].masters > 1 && rows[i].floor > 0 {
			r = &rows[i]
		}
	}
	if r == nil {
		return
	}
	line := func(what string, scale float64) {
		slot, shards := r.joinSlot*scale, r.joinShards*scale
		fmt.Fprintf(w, "  %s: %.2f µs a join on the concert's slot, %.2f in the line's shards; joins/s at N masters:", what, slot, shards)
		for _, n := range []int{6, 12, 32, 64} {
			fmt.Fprintf(w, " %d: %s;", n, thousands(1e6/math.Max(slot, (slot+shards)/float64(n))))
		}
		if n := splitMastersFor(slot, shards, 1e6); n > 0 {
			fmt.Fprintf(w, " 1,000,000 a second at %d masters\n", n)
		} else {
			fmt.Fprintf(w, " 1,000,000 a second at no size: the concert's slot allows %s at most\n", thousands(1e6/slot))
		}
	}
	line(fmt.Sprintf("split, from %d masters (the opening's joins from %d goroutines, %.2f script calls a join)", r.masters,
		capacityOpeningWorkers, r.calls), 1)
	if floor > 0 {
		line(fmt.Sprintf("the same at one Redis's floor (%.2f against %.2f µs)", floor, r.floor), floor/r.floor)
	}
}

// splitMastersFor is the fewest masters at which max(slot, (slot+shards)/N) lets one concert take rate
// operations a second, or 0 when no number does.
func splitMastersFor(slot, shards, rate float64) int {
	per := 1e6 / rate
	if slot > per {
		return 0
	}
	return max(1, int(math.Ceil((slot+shards)/per)))
}
