package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// goal is what the issues hold a figure to: a share of its ceiling row (ceilingOf), or a rate.
type goal struct {
	ofCeiling float64
	perSec    float64
}

// goals: docs/performance.md's "make bench" table, for polls, holds spread and contended, and the seat
// maps.
var goals = map[string]goal{
	rowPolls:     {ofCeiling: 0.78},
	rowJoins:     {perSec: 10_000},
	rowSpread:    {ofCeiling: 0.40},
	rowContended: {ofCeiling: 0.70},
	rowPayments:  {perSec: 3_000},
	rowSeatMap:   {ofCeiling: 0.70},
	rowSeatMapGz: {ofCeiling: 0.70},
}

// printIdle writes the idle cost's lines.
func printIdle(w io.Writer, i *idleResult) {
	fmt.Fprintf(w, "idle: %d concerts (one schedule of 100 seats each, created in %.1f s) on a fresh service, Redis and database, nobody buying:\n",
		i.concerts, i.created.Seconds())
	fmt.Fprintf(w, "  from %s after the creations, over %s: Redis %s commands/s; CPU, share of one core: service %.1f%%  %s, Redis %.1f%%  %s\n",
		i.settle, i.settled.window, thousands(i.settled.commandsPerSec), 100*i.settled.serviceCPU, verdict(i.settled.serviceCPU < idleGoal, "< 1%"),
		100*i.settled.redisCPU, verdict(i.settled.redisCPU < idleGoal, "< 1%"))
	if i.top != "" {
		fmt.Fprintf(w, "  most called then: %s\n", i.top)
	}
	fmt.Fprintf(w, "  (the first %s after the creations: Redis %s commands/s, service %.1f%%, Redis %.1f%% of a core)\n",
		i.first.window, thousands(i.first.commandsPerSec), 100*i.first.serviceCPU, 100*i.first.redisCPU)
}

// idleGoal is the share of a core the service and Redis may each use with concerts and nobody buying.
const idleGoal = 0.01

// goalText is the goal column of row at rate m against its ceiling c (nil when not measured).
func goalText(row string, m measure, c *measure) string {
	gl, ok := goals[row]
	switch {
	case !ok:
		return ""
	case gl.ofCeiling > 0:
		of := "hello"
		if ceilingOf(row) != rowHello {
			of = "same bytes"
		}
		want := fmt.Sprintf("≥ %.0f%% of %s", gl.ofCeiling*100, of)
		if c == nil || c.rate <= 0 {
			return want + " (no ceiling measured)"
		}
		return verdict(m.rate >= gl.ofCeiling*c.rate, want)
	default:
		return verdict(m.rate >= gl.perSec, fmt.Sprintf("≥ %s/s", thousands(gl.perSec)))
	}
}

func (b *bench) print(w io.Writer, r report) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "\nticketrush bench at commit %s: median of %d repetitions, %s timed runs, %d clients, one machine (%s, %d CPUs, %s), took %s\n\n",
		b.commit, b.cfg.reps, b.cfg.duration, b.cfg.workers, host, runtime.NumCPU(), runtime.Version(), r.took.Round(time.Second))
	notes := b.table(w, rows)
	fmt.Fprintln(w, "÷ ceiling: of hello-world in the same repetition; a seat map's, of the same bytes from memory just above it")
	b.printCPU(w, rows)
	b.printRedisTime(w, true)
	fmt.Fprintln(w)
	if mem := r.mem; mem != nil {
		line := fmt.Sprintf("Redis bytes per waiting fan at %s fans (user ids of %d chars): %.0f B with the untrimmed event stream",
			thousands(float64(mem.fans)), mem.idLen, mem.perFan)
		if int(mem.perFan+0.5) != int(mem.lineOnly+0.5) {
			line += fmt.Sprintf(", %.0f B the line alone (stream trimmed)", mem.lineOnly)
		}
		fmt.Fprintf(w, "%s  %s\n", line, verdict(mem.lineOnly <= 100, "≤ 100 B"))
		fmt.Fprintf(w, "  MEMORY USAGE: line's places (hash) %s B and order (list) %s B, liveness (6 B an arrival) %s B, event stream %s B (%d entries)\n",
			thousands(float64(mem.placesBytes)), thousands(float64(mem.orderBytes)), thousands(float64(mem.aliveBytes)), thousands(float64(mem.evBytes)), mem.streamLen)
	} else {
		fmt.Fprintf(w, "Redis bytes per waiting fan: n/a, %s\n", r.memNA)
	}
	if r.idle != nil {
		printIdle(w, r.idle)
	} else {
		fmt.Fprintf(w, "idle cost: n/a, %s\n", r.idleNA)
	}
	var lag []string
	if r.lag != nil {
		lag = r.lag.lines()
	}
	if len(lag) > 0 {
		fmt.Fprintln(w, "write-behind over every HTTP run until its backlog was empty again (goal: lag < 1 s, no event lost), from /metrics:")
		for _, l := range lag {
			fmt.Fprintln(w, "  "+l)
		}
	} else {
		fmt.Fprintln(w, "write-behind lag: n/a, /metrics has no ticketrush_*lag*/*backlog* series (goal < 1 s)")
	}
	if r.durable != nil {
		for _, l := range r.durable.lines() {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
	fmt.Fprintln(w, "\nEverything runs on this machine at once: the generator, the service, Redis and Postgres share its CPUs.")
}

// table writes the table's head and the rows names, each the median of its repetitions (n/a with the
// reason where it was not measured), and returns the notes of those rows.
func (b *bench) table(w io.Writer, names []string) (notes []string) {
	fmt.Fprintf(w, "%-42s %12s %9s %9s %10s %9s  %s\n", "figure", "per second", "p50", "p99", "÷ ceiling", "÷ redis", "goal")
	fmt.Fprintln(w, strings.Repeat("-", 120))
	med := map[string]measure{}
	for name, ms := range b.results {
		if len(ms) > 0 {
			med[name] = median(ms)
		}
	}
	redisM, hasRedis := med[rowRedis]
	for _, name := range names {
		m, ok := med[name]
		if !ok {
			why := b.na[name]
			if why == "" {
				why = "not measured"
			}
			g := ""
			if _, has := goals[name]; has {
				g = "n/a"
			}
			fmt.Fprintf(w, "%-42s %12s %9s %9s %10s %9s  %s\n", name, "n/a", "", "", "", "", g)
			notes = append(notes, fmt.Sprintf("%s: n/a, %s", strings.Join(strings.Fields(name), " "), why))
			continue
		}
		ratio, ratioRedis := "", ""
		var ceiling *measure
		if cn := ceilingOf(name); cn != "" {
			if c, ok := med[cn]; ok && c.rate > 0 {
				ceiling = &c
				ratio = fmt.Sprintf("%.0f%%", 100*m.rate/c.rate)
			}
		}
		if hasRedis && (name == rowSpread || name == rowContended) && redisM.rate > 0 {
			ratioRedis = fmt.Sprintf("%.0f%%", 100*m.rate/redisM.rate)
		}
		fmt.Fprintf(w, "%-42s %12s %9s %9s %10s %9s  %s\n", name, thousands(m.rate), ms(m.p50), ms(m.p99), ratio, ratioRedis,
			goalText(name, m, ceiling))
		if m.failed > 0 {
			notes = append(notes, fmt.Sprintf("%s: %.2f%% of requests failed (see the log above)", strings.Join(strings.Fields(name), " "), 100*m.failed))
		}
		if m.usPerCall > 0 {
			m.note += fmt.Sprintf("; Redis spends %.1f µs per call (INFO commandstats), a bound of %s/s on one Redis thread",
				m.usPerCall, thousands(1e6/m.usPerCall))
		}
		if n := b.notes[name]; n != "" {
			m.note = strings.TrimSuffix(n+": "+m.note, ": ")
		}
		if m.note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", strings.Join(strings.Fields(name), " "), m.note))
		}
	}
	fmt.Fprintln(w, strings.Repeat("-", 120))
	return notes
}

func verdict(ok bool, g string) string {
	if ok {
		return g + " ok"
	}
	return g + " MISSED"
}

func ms(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	}
}

// thousands formats v rounded, with commas.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// printCapacity writes the capacity rows alone (make capacity).
func (b *bench) printCapacity(w io.Writer, took time.Duration) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "\nticketrush capacity of one concert at commit %s: median of %d repetitions, one machine (%s, %d CPUs, %s), took %s\n\n",
		b.commit, b.cfg.reps, host, runtime.NumCPU(), runtime.Version(), took.Round(time.Second))
	notes := b.table(w, capacityRows)
	fmt.Fprintln(w, "\nnotes:")
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	b.printRedisTime(w, false)
	floor := 0.0
	if len(b.masters.single) > 0 {
		floor = medianOf(b.masters.single, func(c concertCapacity) float64 { return c.floor.usPerOp() })
	}
	rows := mastersRows(b.masters, b.na[rowCapJoins3])
	printMasters(w, rows, floor)
	if rows[0].na == "" {
		if note := writeBehindNote(b.masters.single, 1e6/rows[0].join); note != "" {
			fmt.Fprintln(w, "  "+note)
		}
	}
}
