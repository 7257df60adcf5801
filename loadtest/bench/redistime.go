package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Redis time per call (docs/performance.md): each script's µs per call under the HTTP storm (SLOWLOG medians,
// storm.go) and pipelined on one Redis (INFO commandstats, the capacity phases), beside the floor of the
// same run.

// labelTick is the row of the tick, priced per admitted fan, not per call.
const labelTick = "tick per admitted fan"

// callRow is a row of the section: a SLOWLOG label (a script, payment_remember by step), its capacity
// phase, and its goals.
type callRow struct {
	label string
	pipe  func(concertCapacity) phaseCost // nil: not priced pipelined
	// baseline is the row's reference figure under an HTTP storm (µs of Redis a call); the goal is a
	// third of it. 0: none, the goal is a third of the first figure measured.
	baseline float64
	pipeGoal float64 // µs pipelined; 0: none
}

// callRows are the section's rows in order, the floor's last; a script the storm saw that is not among
// them gets a row of its own after them.
var callRows = []callRow{
	{label: "queue_join", pipe: func(c concertCapacity) phaseCost { return c.join }, baseline: 55, pipeGoal: 10},
	{label: "seat_hold", pipe: func(c concertCapacity) phaseCost { return c.hold }, baseline: 58, pipeGoal: 12},
	{label: "hold_cancel", pipe: func(c concertCapacity) phaseCost { return c.cancel }, baseline: 39},
	{label: "points_charge", pipe: func(c concertCapacity) phaseCost { return c.charge }},
	{label: "payment_remember reserve", pipe: func(c concertCapacity) phaseCost { return c.reserve }},
	{label: "payment_claim", pipe: func(c concertCapacity) phaseCost { return c.claim }},
	{label: "wallet_debit", pipe: func(c concertCapacity) phaseCost { return c.debit }},
	{label: "seat_sell", pipe: func(c concertCapacity) phaseCost { return c.complete }},
	{label: "payment_remember finish", pipe: func(c concertCapacity) phaseCost { return c.finish }},
	{label: labelTick, pipe: func(c concertCapacity) phaseCost { return c.admit }},
}

var floorRows = []callRow{
	{label: labelFloorEval, pipe: func(c concertCapacity) phaseCost { return c.floor }},
	{label: labelFloorHSET, pipe: func(c concertCapacity) phaseCost { return c.hset }},
}

// loadFigure is a row's figure under the storm: the median µs per call and the calls seen, or for the
// tick the µs per admitted fan and the fans.
func (s *stormResult) loadFigure(label string) (us float64, n int64, ok bool) {
	if label == labelTick {
		if s.tickNA != "" || s.admitted <= 0 {
			return 0, 0, false
		}
		return float64(s.tally.tickUs) / float64(s.admitted), s.admitted, true
	}
	v := s.tally.micros[label]
	return medianMicros(v), int64(len(v)), len(v) > 0
}

// printRedisTime writes the section: under load from b.storm (with load; make capacity has none),
// pipelined from the capacity runs on one Redis.
func (b *bench) printRedisTime(w io.Writer, withLoad bool) {
	fmt.Fprintln(w, "\nRedis time per call (µs of Redis's thread): under an HTTP storm (SLOWLOG median), and pipelined on one Redis (INFO commandstats)")
	fmt.Fprintf(w, "%-26s %10s %8s %8s %10s %8s  %s\n", "call", "under load", "calls", "× floor", "pipelined", "× floor", "goal")
	fmt.Fprintln(w, strings.Repeat("-", 120))
	s := b.storm
	if !withLoad {
		s = nil
	}
	pipe := func(r callRow) (float64, bool) {
		if r.pipe == nil || len(b.pipelined) == 0 {
			return 0, false
		}
		return medianOf(b.pipelined, func(c concertCapacity) float64 { return r.pipe(c).usPerOp() }), true
	}
	loadFloor, pipeFloor := 0.0, 0.0
	if s != nil {
		loadFloor, _, _ = s.loadFigure(labelFloorEval)
	}
	pipeFloor, _ = pipe(floorRows[0])
	rows := slices.Clone(callRows)
	if s != nil {
		for _, l := range slices.Sorted(maps.Keys(s.tally.micros)) {
			known := slices.ContainsFunc(append(slices.Clone(callRows), floorRows...), func(r callRow) bool { return r.label == l })
			if !known {
				rows = append(rows, callRow{label: l})
			}
		}
	}
	for _, r := range append(rows, floorRows...) {
		load, calls, times, pipeUs, pipeTimes := "n/a", "", "", "n/a", ""
		var lu float64
		var lok bool
		if s != nil {
			var n int64
			if lu, n, lok = s.loadFigure(r.label); lok {
				load, calls = fmt.Sprintf("%.1f", lu), thousands(float64(n))
				if loadFloor > 0 && !isFloor(r.label) {
					times = fmt.Sprintf("%.1f×", lu/loadFloor)
				}
			}
		}
		pu, pok := pipe(r)
		if pok {
			pipeUs = fmt.Sprintf("%.2f", pu)
			if pipeFloor > 0 && !isFloor(r.label) {
				pipeTimes = fmt.Sprintf("%.1f×", pu/pipeFloor)
			}
		} else if r.pipe == nil {
			pipeUs = ""
		}
		fmt.Fprintf(w, "%-26s %10s %8s %8s %10s %8s  %s\n", r.label, load, calls, times, pipeUs, pipeTimes,
			callGoal(r, lu, lok && withLoad, pu, pok))
	}
	fmt.Fprintln(w, strings.Repeat("-", 120))
	for _, n := range b.redisTimeNotes(withLoad) {
		fmt.Fprintln(w, "  "+n)
	}
}

func isFloor(label string) bool { return label == labelFloorEval || label == labelFloorHSET }

// callGoal is the goal column of r: under load a third of the row's figure (baseline), or of the first
// figure measured where it has none; pipelined its µs.
func callGoal(r callRow, load float64, loadOK bool, pipe float64, pipeOK bool) string {
	if isFloor(r.label) {
		return "(the floor)"
	}
	var parts []string
	switch {
	case r.baseline > 0 && loadOK:
		parts = append(parts, verdict(load <= r.baseline/3, fmt.Sprintf("load ≤ %.1f (%.0f ÷ 3)", r.baseline/3, r.baseline)))
	case r.baseline > 0:
		parts = append(parts, fmt.Sprintf("load ≤ %.1f (%.0f ÷ 3)", r.baseline/3, r.baseline))
	case r.pipe != nil:
		parts = append(parts, "load: a third of the first figure measured")
	}
	if r.pipeGoal > 0 {
		g := fmt.Sprintf("pipelined ≤ %.0f", r.pipeGoal)
		if pipeOK {
			g = verdict(pipe <= r.pipeGoal, g)
		}
		parts = append(parts, g)
	}
	return strings.Join(parts, "; ")
}

// redisTimeNotes say how the section's figures were taken, and what of them cannot be trusted.
func (b *bench) redisTimeNotes(withLoad bool) []string {
	var out []string
	s := b.storm
	switch {
	case !withLoad:
		out = append(out, "under load: make bench's storm only")
	case s == nil:
		out = append(out, "under load: n/a, "+b.stormNA)
	default:
		t := s.tally
		out = append(out, fmt.Sprintf("under load: %d fans over %.1f s from %d clients against the service (each: two new fans join a line admitting %d/s, "+
			"and an admitted fan charges, holds two seats, cancels one and pays the other with an Idempotency-Key), a side client's EVALSHA of '%s' "+
			"and HSET every %s; SLOWLOG at 0 µs, %s entries read; only script calls by clients and the side client's floor calls count "+
			"(SLOWLOG's µs are whole, so a median under a few µs is coarse)",
			s.fans, s.took.Seconds(), stormWorkers, stormAdmitRate, floorScript, stormFloorEvery, thousands(float64(s.entries))))
		if s.tickNA != "" {
			out = append(out, "tick per admitted fan under load: n/a, "+s.tickNA)
		} else {
			out = append(out, fmt.Sprintf("the tick under load: %d ticks of the storm's line, %s µs in all, for %d fans the tick admitted (%d more joins were admitted at once; "+
				"admissions from the line's counter, read with the slow log in one transaction); %d ticks of other concerts left out",
				t.ticks, thousands(float64(t.tickUs)), s.admitted, s.atOnce, t.otherTick))
		}
		var failed []string
		for _, step := range slices.Sorted(maps.Keys(s.failed)) {
			failed = append(failed, fmt.Sprintf("%s %d", step, s.failed[step]))
		}
		if len(failed) > 0 {
			out = append(out, fmt.Sprintf("storm requests failed: %s; the first: %v", strings.Join(failed, ", "), s.firstErr))
		}
		if t.evals > 0 || t.unknown > 0 {
			out = append(out, fmt.Sprintf("not counted: %d EVAL calls (a script not loaded), %d EVALSHA of a script not in lua/ (a binary built from another tree?)", t.evals, t.unknown))
		}
	}
	if len(b.pipelined) == 0 {
		out = append(out, "pipelined: n/a, "+b.na[rowCapJoins1])
	} else {
		out = append(out, fmt.Sprintf("pipelined: make capacity's phases on a Redis of their own, median of %d: %s fans from %d goroutines through the store; "+
			"µs per call of the phase's commands from INFO commandstats (a payment step's phase is that step's store call for every fan)",
			len(b.pipelined), thousands(float64(b.cfg.capacityFans)), capacityWorkers))
	}
	return out
}
