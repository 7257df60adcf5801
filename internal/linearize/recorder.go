package linearize

import (
	"math"
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
