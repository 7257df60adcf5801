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
// the client saw, not what the server says happened (STYLE.md, "Histories and models"). An operation
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result is what a client was told.
type Result uint8

const (
	// Unknown: no answer, a timeout, a 5xx. The operation may have happened, at any time after its call.
	Unknown Result = iota
	// Ok: done (201, 200, 204).
	Ok
	// Refused: the state said no (SEAT_UNAVAILABLE; RESERVATION_NOT_HELD, RESERVATION_EXPIRED,
	// NOT_FOUND for a cancel or a payment): nothing changed.
	Refused
	// Kept: a payment refused for want of points (INSUFFICIENT_BALANCE): the hold stays.
	Kept
	// Waiting: a join answered WAITING.
	Waiting
	// Active: a join answered ACTIVE (admitted at once).
	Active
	// Limited: a hold refused HOLD_LIMIT_REACHED: nothing changed.
	Limited
)

func (r Result) String() string {
	return [...]string{"unknown", "ok", "refused", "refused, hold kept", "WAITING", "ACTIVE", "refused, hold limit reached"}[r]
}

// Recorder logs operations from any number of goroutines. Times are read from the monotonic clock
// and kept as nanoseconds since the recorder was made.
type Recorder struct {
	start time.Time

	mu        sync.Mutex
	seats     []porcupine.Operation
	lines     []porcupine.Operation
	queues    map[string]Queue
	clients   map[string]int // fan -> porcupine client id (for the visualization)
	stale     time.Duration
	stalePoll time.Duration
	failovers []failover
}

// failover is a master's death between from and to: the seats on it (on) get a failover operation.
type failover struct {
	from, to int64
	on       func(Seat) bool
}

// NewRecorder returns an empty recorder whose clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now(), queues: map[string]Queue{}, clients: map[string]int{}}
}

// since is t on the recorder's clock.
func (r *Recorder) since(t time.Time) int64 { return t.Sub(r.start).Nanoseconds() }

// client is the fan's porcupine client id (callers hold r.mu).
func (r *Recorder) client(fan string) int {
	id, ok := r.clients[fan]
	if !ok {
		id = len(r.clients)
		r.clients[fan] = id
	}
	return id
}

// StaleRefusals says that a hold refused SEAT_UNAVAILABLE may have read the seat as it was up to d
// before its call: an api instance refuses from its seat view a seat that another instance freed
// since the view's last read (docs/design.md, "The seat view"). Check widens each such refusal by d
// towards the past.
func (r *Recorder) StaleRefusals(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stale = d
}

// StalePolls says that a poll answered WAITING may have read the line as it was up to d before its
// call: an api instance answers it from its view of the line, refreshed every 200 ms (docs/design.md,
// "How the waiting room works"). The line's rules widen each such answer by d towards the past.
func (r *Recorder) StalePolls(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stalePoll = d
}

// Failover records that the master holding the seats for which on is true died between from and to
// (a SIGKILL sent, then seen to have killed) and that a replica took over: each of those seats gets a
// failover operation then, which leaves the seat as the replica had last copied it (see seatState:
// what no replica confirmed may be lost). A concert's line is spread over every master (or lives on
// one the recorder cannot tell), so every line may lose its joins, leaves and admissions of before the
// kill (docs/durability.md): the line's rules excuse what a failover could explain.
func (r *Recorder) Failover(from, to time.Time, on func(Seat) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failovers = append(r.failovers, failover{r.since(from), r.since(to), on})
}

// Queue is what the models need of a concert's queue settings (docs/api.md, Admin).
type Queue struct {
	Capacity  int           // activeCapacity
	ActiveTTL time.Duration // activeTtlSeconds: an ACTIVE token lapses this long after its admission (0: not within the history)
	NoShow    time.Duration // noShowSeconds: an ACTIVE fan may be dropped this long after admission (0: off)
	MaxHolds  int           // maxHoldsPerUser (0: not checked)
	HoldTTL   time.Duration // holdTtlSeconds: a hold lapses this long after it was taken (0: not within the history)
}

// Line declares a concert's line and its queue settings, before any operation on it.
func (r *Recorder) Line(concert string, q Queue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues[concert] = q
}

// Call is one operation in flight: End it (or Held, or Drop) once the client has its answer.
type Call struct {
	r     *Recorder
	at    time.Time
	input any
	line  bool
	ended atomic.Bool
	ret   time.Time // once ended
}

// Started is the operation's call time.
func (c *Call) Started() time.Time { return c.at }

// Returned is the operation's return time, once it has ended (Unknown: when the client gave up).
func (c *Call) Returned() time.Time { return c.ret }

func (r *Recorder) begin(input any, line bool, at time.Time) *Call {
	return &Call{r: r, at: at, input: input, line: line}
}

// Hold starts a hold of seat by fan.
func (r *Recorder) Hold(seat Seat, fan string) *Call {
	return r.begin(seatInput{seat: seat, op: opHold, fan: fan}, false, time.Now())
}

// Cancel starts fan's cancel of their reservation res of seat.
func (r *Recorder) Cancel(seat Seat, fan, res string) *Call {
	return r.begin(seatInput{seat: seat, op: opCancel, fan: fan, res: res}, false, time.Now())
}

// Pay starts fan's payment of their reservation res of seat.
func (r *Recorder) Pay(seat Seat, fan, res string) *Call {
	return r.begin(seatInput{seat: seat, op: opPay, fan: fan, res: res}, false, time.Now())
}

// Join starts fan's join of concert's line; end it Waiting (with the position it was told), End it
// Active or Unknown. A join answered PREQUEUE is not one: a sale's draw orders its entrants.
func (r *Recorder) Join(concert, fan string) *Call {
	return r.begin(r.lineInput(concert, opJoin, fan, ""), true, time.Now())
}

// Waiting ends a join answered WAITING at position.
func (c *Call) Waiting(position int64) {
	in := c.input.(lineInput)
	in.position = position
	c.input = in
	c.End(Waiting)
}

// Waited records that a poll of fan's token (or the event stream) sent at call was answered just now
// WAITING at position.
func (r *Recorder) Waited(concert, fan string, position int64, call time.Time) {
	in := r.lineInput(concert, opWait, fan, "")
	in.position = position
	r.begin(in, true, call).End(Ok)
}

// Admitted records that fan was seen ACTIVE just now, by an answer to a request sent at call (a poll,
// or the event stream): the admission happened between since (the call of the fan's first join) and
// now, which it returns.
func (r *Recorder) Admitted(concert, fan string, since, call time.Time) time.Time {
	in := r.lineInput(concert, opAdmit, fan, "")
	in.asked = r.since(call)
	c := r.begin(in, true, since)
	c.End(Ok)
	return c.ret
}

// Leave starts fan's leave (DELETE /v1/queue): End it Ok on 204, Unknown without an answer. It gives
// the fan's slot back, and once answered the fan is never WAITING or ACTIVE again.
func (r *Recorder) Leave(concert, fan string) *Call {
	in := r.lineInput(concert, opOut, fan, "leave")
	in.leave = true
	return r.begin(in, true, time.Now())
}

// Expired records that fan, seen ACTIVE at seen (admitted after since, the call of their join), was
// told just now that their token is not ACTIVE any more (QUEUE_TOKEN_EXPIRED, QUEUE_NOT_ACTIVE). What
// gave the slot back is nothing the fan saw: their active time lapsing (activeTtlSeconds), a no-show
// drop (noShowSeconds), or a failover that lost their admission. Check counts the fan ACTIVE until the
// earliest of these that could have happened, never only until seen: an over-admission whose extra
// fans are told EXPIRED later is still one.
func (r *Recorder) Expired(concert, fan string, since, seen time.Time) {
	in := r.lineInput(concert, opOut, fan, "told not ACTIVE")
	in.told, in.asked = true, r.since(since)
	r.begin(in, true, seen).End(Ok)
}

// Out starts fan's giving back of their ACTIVE slot, for the reason why, as of since: the payment of
// their last hold (since is the call of the payment's first try). End it Ok when it is known to have
// happened by now, Unknown when not. A leave is Leave; being told the token is not ACTIVE, Expired.
func (r *Recorder) Out(concert, fan, why string, since time.Time) *Call {
	return r.begin(r.lineInput(concert, opOut, fan, why), true, since)
}

func (r *Recorder) lineInput(concert string, op lineOp, fan, why string) lineInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	q, ok := r.queues[concert]
	if !ok {
		panic("linearize: no Line for concert " + concert)
	}
	return lineInput{concert: concert, op: op, fan: fan, capacity: q.Capacity, why: why}
}

// Held ends a hold that succeeded with the reservation res.
func (c *Call) Held(res string) { c.endAt(Ok, res, time.Now()) }

// End ends the operation with what the client was told.
func (c *Call) End(result Result) { c.endAt(result, "", time.Now()) }

// Drop ends an operation whose answer says nothing of the seat or the line (rate limited, a token
// refused before the seat was looked at): it is not recorded.
func (c *Call) Drop() { c.ended.Store(true) }

// endAt ends the operation at ret.
func (c *Call) endAt(result Result, res string, ret time.Time) {
	if c.ended.Swap(true) {
		panic("linearize: an operation ended twice")
	}
	c.ret = ret
	op := porcupine.Operation{Input: c.input, Call: c.r.since(c.at), Return: c.r.since(ret)}
	if result == Unknown {
		op.Return = math.MaxInt64 // it may take effect at any time after its call (porcupine: never returns)
	}
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	if c.line {
		in := c.input.(lineInput)
		op.ClientId, op.Output = c.r.client(in.fan), result
		c.r.lines = append(c.r.lines, op)
		return
	}
	in := c.input.(seatInput)
	if result == Ok && in.op == opHold && res == "" {
		panic("linearize: a hold that succeeded without its reservation (use Held)")
	}
	op.ClientId, op.Output = c.r.client(in.fan), seatOutput{result: result, res: res}
	c.r.seats = append(c.r.seats, op)
}

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
