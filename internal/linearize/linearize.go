// Package linearize checks what clients saw under faults against two small models, with a
// linearizability checker (github.com/anishathalye/porcupine) rather than by hand:
//
//   - a seat (docs/api.md, Reservations and Payments): AVAILABLE, HELD by one fan under one
//     reservation, or SOLD; a hold succeeds only on an AVAILABLE seat, a cancel or a payment only on
//     the fan's own hold. Every seat's history is checked alone (porcupine's partitions).
//   - a concert's line (docs/api.md, Waiting room): never more than activeCapacity fans ACTIVE at
//     once; admission in arrival order; a leave is final; a WAITING fan's position never grows.
//   - a fan's holds in a concert: never more than maxHoldsPerUser open at once.
//
// Load drivers log every operation in a Recorder as they make it, with its call and return times: what
// the client saw, not what the server says happened (docs/tests.md). An operation
// whose answer never came (no answer, a timeout, a 5xx) may or may not have happened: its return time
// is infinite, as Jepsen treats indeterminate results, and the models accept it either way. Check
// asks porcupine whether some order of the operations, each at one instant between its call and its
// return, fits the model.
package linearize

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Options tunes Check.
type Options struct {
	// Timeout bounds each model's check (0: none); past it the result is porcupine.Unknown.
	Timeout time.Duration
	// VisualizeDir, when set, receives porcupine's visualization (an HTML page) of the seats or lines
	// whose histories are not linearizable: seats.html, lines.html (the directory is made then). The
	// explanation names the files.
	VisualizeDir string
}

// Check checks every seat's history against the seat model and every line's against the line model.
// It returns porcupine's result (Illegal when either is not linearizable, Unknown when a check timed
// out) and a readable explanation: counts when it is Ok, else the first seats or lines found that have
// no order that fits, the longest order that does, and the operations left out of it.
func (r *Recorder) Check(o Options) (porcupine.CheckResult, string) {
	seats, lines := r.history()
	r.mu.Lock()
	holds := fanHolds(seats, r.queues)
	rules := lineRules(lines, r.stalePoll.Nanoseconds(), r.failovers)
	waits, late := 0, 0 // WAITING answers, and those given after a failover's kill
	for _, op := range lines {
		if in := op.Input.(lineInput); in.op == opWait || in.op == opJoin && op.Output == Waiting {
			waits++
			if slices.ContainsFunc(r.failovers, func(f failover) bool { return f.from <= op.Return }) {
				late++
			}
		}
	}
	r.mu.Unlock()
	var b strings.Builder
	result := porcupine.Ok
	recorded := len(seats)
	if seats = dropRepeats(seats); len(seats) < recorded {
		fmt.Fprintf(&b, "(%d repeats of unanswered requests set aside: see dropRepeats)\n", recorded-len(seats))
	}
	// A WAITING answer changes nothing of the ACTIVE set: lineRules alone reads it.
	lines = slices.DeleteFunc(lines, func(op porcupine.Operation) bool { return op.Input.(lineInput).op == opWait })
	lines, canonical := canonicalLine(lines)
	if !canonical {
		fmt.Fprintf(&b, "(a fan with two admissions, or an out called before the fan was seen ACTIVE: "+
			"the line is checked on its recorded intervals, which may not finish)\n")
	}
	for _, c := range []struct {
		name, unit, file string // unit: what one partition is
		model            porcupine.Model
		ops              []porcupine.Operation
		rules            []string // breaches found on the recorded intervals
	}{
		{"seat", "seat", "seats.html", seatModel, seats, nil},
		{"line", "line", "lines.html", lineModel, lines, rules},
		{"hold limit", "fan", "holds.html", holdModel, holds, nil},
	} {
		start := time.Now()
		// Not verbose: the check stops at the first partition that does not fit.
		res := porcupine.CheckOperationsTimeout(c.model, c.ops, o.Timeout)
		parts := c.model.Partition(c.ops)
		verdict := res
		if len(c.rules) > 0 {
			verdict = porcupine.Illegal
		}
		fmt.Fprintf(&b, "%s model: %s, %d operations (%d without an answer) over %d %s, checked in %s\n",
			c.name, verdict, len(c.ops), unanswered(c.ops), len(parts), plural(len(parts), c.unit), time.Since(start).Round(time.Millisecond))
		if c.name == "line" && waits > 0 {
			fmt.Fprintf(&b, "  and %d WAITING answers for its rules (%d given after a failover's kill set aside)\n", waits, late)
		}
		for i, why := range c.rules {
			if i == explainOps {
				fmt.Fprintf(&b, "  … %d more\n", len(c.rules)-i)
				break
			}
			fmt.Fprintf(&b, "  %s\n", why)
		}
		if verdict == porcupine.Illegal {
			result = porcupine.Illegal
		}
		switch res {
		case porcupine.Illegal:
			explainIllegal(&b, c.unit, c.file, c.model, parts, o)
		case porcupine.Unknown:
			if result == porcupine.Ok {
				result = porcupine.Unknown
			}
			fmt.Fprintf(&b, "  the check did not finish within %s\n", o.Timeout)
		}
	}
	return result, b.String()
}

// explainIllegal finds the first explainPartitions partitions that do not fit the model, checking each
// alone within o.Timeout in all, explains them and writes their visualization.
func explainIllegal(b *strings.Builder, name, file string, model porcupine.Model, parts [][]porcupine.Operation, o Options) {
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(o.Timeout)
	}
	var illegal []porcupine.Operation
	found, undecided, more := 0, 0, false
	for _, part := range parts {
		if found == explainPartitions {
			more = true
			break
		}
		var left time.Duration
		if !deadline.IsZero() {
			if left = time.Until(deadline); left <= 0 {
				break
			}
		}
		switch porcupine.CheckOperationsTimeout(model, part, left) {
		case porcupine.Illegal:
			found++
			illegal = append(illegal, part...)
		case porcupine.Unknown:
			undecided++
		}
	}
	if undecided > 0 {
		fmt.Fprintf(b, "  (%d %s not decided within %s)\n", undecided, plural(undecided, name), o.Timeout)
	}
	if found == 0 {
		fmt.Fprintf(b, "  (no %s found alone within %s that does not fit)\n", name, o.Timeout)
		return
	}
	_, info := porcupine.CheckOperationsVerbose(model, illegal, o.Timeout)
	explain(b, name, model, model.Partition(illegal), info.PartialLinearizationsOperations())
	if more {
		fmt.Fprintf(b, "  (the first %d %ss found that do not fit; there may be more)\n", found, name)
	}
	if o.VisualizeDir == "" {
		return
	}
	path := filepath.Join(o.VisualizeDir, file)
	err := os.MkdirAll(o.VisualizeDir, 0o755)
	if err == nil {
		err = porcupine.VisualizePath(model, info, path)
	}
	if err != nil {
		fmt.Fprintf(b, "  (visualization not written: %v)\n", err)
		return
	}
	fmt.Fprintf(b, "  visualization of these: %s\n", path)
}

// history returns the recorded operations, each seat refusal widened by the staleness allowed and a
// failover operation in each seat it concerns.
func (r *Recorder) history() (seats, lines []porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seats = slices.Clone(r.seats)
	known := map[Seat]bool{}
	for i, op := range seats {
		in := op.Input.(seatInput)
		known[in.seat] = true
		if in.op == opHold && op.Output.(seatOutput).result == Refused {
			seats[i].Call -= r.stale.Nanoseconds()
		}
	}
	for _, f := range r.failovers {
		for seat := range known {
			if f.on(seat) {
				seats = append(seats, porcupine.Operation{ClientId: r.client("(failover)"),
					Input: seatInput{seat: seat, op: opFailover}, Output: seatOutput{result: Ok}, Call: f.from, Return: f.to})
			}
		}
	}
	return seats, placeTold(r.lines, r.queues, r.failovers)
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// unanswered counts the operations whose answer never came.
func unanswered(ops []porcupine.Operation) int {
	n := 0
	for _, op := range ops {
		if out, ok := op.Output.(seatOutput); ok && out.result == Unknown || op.Output == Unknown {
			n++
		}
	}
	return n
}

// partition groups a history by key, in the order of the keys (so that a check's partitions are
// always the same ones in the same order).
func partition(history []porcupine.Operation, key func(porcupine.Operation) string) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	for _, op := range history {
		by[key(op)] = append(by[key(op)], op)
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		out[i] = by[k]
	}
	return out
}

// An explanation shows the first explainPartitions partitions found that do not fit, and of each the
// last explainOps operations of its longest order that fits and the first explainOps left out of it.
const (
	explainPartitions = 3
	explainOps        = 40
)

// explain writes, for each partition that has no linearization, the longest order of its operations
// that fits the model (its end, with the state after each operation), and the operations left out of it.
func explain(b *strings.Builder, name string, model porcupine.Model, parts [][]porcupine.Operation, partials [][][]porcupine.Operation) {
	shown := 0
	for i, part := range parts {
		var longest []porcupine.Operation
		if i < len(partials) {
			for _, p := range partials[i] { // the longest, and of those the one that calls earliest first
				if len(p) > len(longest) || len(p) == len(longest) && slices.CompareFunc(p, longest, byCall) < 0 {
					longest = p
				}
			}
		}
		if len(longest) == len(part) {
			continue
		}
		if shown++; shown > explainPartitions {
			return
		}
		fmt.Fprintf(b, "  %s %s: no order of its %d operations fits the model; the longest that does (%d):\n",
			name, partitionName(part[0]), len(part), len(longest))
		state := model.Init()
		for j, op := range longest { // the last explainOps of it, where it got stuck
			_, state = model.Step(state, op.Input, op.Output)
			if skip := len(longest) - explainOps; j == 0 && skip > 0 {
				fmt.Fprintf(b, "    … %d before\n", skip)
			}
			if j >= len(longest)-explainOps {
				fmt.Fprintf(b, "    %s  %s  ⇒ %s\n", interval(op), model.DescribeOperation(op.Input, op.Output), model.DescribeState(state))
			}
		}
		fmt.Fprintf(b, "  and left out of it, by call:\n")
		left := slices.DeleteFunc(slices.Clone(part), func(op porcupine.Operation) bool {
			return slices.ContainsFunc(longest, func(l porcupine.Operation) bool { return sameOp(l, op) })
		})
		slices.SortStableFunc(left, byCall)
		for j, op := range left {
			if j == explainOps {
				fmt.Fprintf(b, "    … %d more\n", len(left)-j)
				break
			}
			fmt.Fprintf(b, "    %s  %s\n", interval(op), model.DescribeOperation(op.Input, op.Output))
		}
	}
}

func byCall(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) }

func sameOp(a, b porcupine.Operation) bool {
	return a.ClientId == b.ClientId && a.Call == b.Call && a.Return == b.Return && a.Input == b.Input && a.Output == b.Output
}

func partitionName(op porcupine.Operation) string {
	switch in := op.Input.(type) {
	case seatInput:
		return in.seat.String()
	case lineInput:
		return fmt.Sprintf("%s (capacity %d)", in.concert, in.capacity)
	case holdInput:
		return fmt.Sprintf("%s in concert %s (maxHoldsPerUser %d)", in.fan, in.concert, in.limit)
	}
	return "?"
}

// interval is an operation's [call, return] in milliseconds of the recorder's clock.
func interval(op porcupine.Operation) string {
	ret := "∞"
	if op.Return != math.MaxInt64 {
		ret = fmt.Sprintf("%.3f ms", float64(op.Return)/1e6)
	}
	return fmt.Sprintf("[%.3f ms, %s]", float64(op.Call)/1e6, ret)
}

// WriteHistory writes the recorded operations, one a line in call order, to path: for reading a
// failure next to its visualization.
func (r *Recorder) WriteHistory(path string) error {
	seats, lines := r.history()
	var b strings.Builder
	for _, c := range []struct {
		model porcupine.Model
		ops   []porcupine.Operation
	}{{seatModel, seats}, {lineModel, lines}} {
		ops := slices.Clone(c.ops)
		slices.SortStableFunc(ops, byCall)
		for _, op := range ops {
			fmt.Fprintf(&b, "%s  %s  %s\n", interval(op), partitionName(op), c.model.DescribeOperation(op.Input, op.Output))
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
