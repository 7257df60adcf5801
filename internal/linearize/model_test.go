package linearize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// never is the return time of an operation whose answer never came.
const never = math.MaxInt64

// op is one hand-made operation: call and return in milliseconds of the recorder's clock.
type op struct {
	call, ret int64
	do        func(r *Recorder, at time.Time) *Call
	result    Result
	res       string // a hold's reservation, when it succeeded
}

var seat = Seat{Concert: "c", Schedule: "s", ID: "R-1"}

func hold(fan string, call, ret int64, result Result, res string) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		return r.begin(seatInput{seat: seat, op: opHold, fan: fan}, false, at)
	}, result, res}
}

func cancel(fan, res string, call, ret int64, result Result) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		return r.begin(seatInput{seat: seat, op: opCancel, fan: fan, res: res}, false, at)
	}, result, ""}
}

func pay(fan, res string, call, ret int64, result Result) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		return r.begin(seatInput{seat: seat, op: opPay, fan: fan, res: res}, false, at)
	}, result, ""}
}

func join(fan string, call, ret int64, result Result) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call { return r.begin(r.lineInput("c", opJoin, fan, ""), true, at) }, result, ""}
}

func admitted(fan string, call, ret int64) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call { return r.begin(r.lineInput("c", opAdmit, fan, ""), true, at) }, Ok, ""}
}

func out(fan string, call, ret int64, result Result) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		return r.begin(r.lineInput("c", opOut, fan, "leave"), true, at)
	}, result, ""}
}

func holdOf(id, fan string, call, ret int64, result Result, res string) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		return r.begin(seatInput{seat: Seat{Concert: "c", Schedule: "s", ID: id}, op: opHold, fan: fan}, false, at)
	}, result, res}
}

func cancelOf(id, fan, res string, call, ret int64, result Result) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		return r.begin(seatInput{seat: Seat{Concert: "c", Schedule: "s", ID: id}, op: opCancel, fan: fan, res: res}, false, at)
	}, result, ""}
}

func payOf(id, fan, res string, call, ret int64, result Result) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		return r.begin(seatInput{seat: Seat{Concert: "c", Schedule: "s", ID: id}, op: opPay, fan: fan, res: res}, false, at)
	}, result, ""}
}

// waits is a join answered WAITING at position.
func waits(fan string, call, ret, position int64) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		in := r.lineInput("c", opJoin, fan, "")
		in.position = position
		return r.begin(in, true, at)
	}, Waiting, ""}
}

// polled is a poll sent at call and answered WAITING at position at ret.
func polled(fan string, call, ret, position int64) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		in := r.lineInput("c", opWait, fan, "")
		in.position = position
		return r.begin(in, true, at)
	}, Ok, ""}
}

// seenActive is an answer ACTIVE to a poll sent at asked and answered at ret, the fan's join called at since.
func seenActive(fan string, since, asked, ret int64) op {
	return op{since, ret, func(r *Recorder, at time.Time) *Call {
		in := r.lineInput("c", opAdmit, fan, "")
		in.asked = (time.Duration(asked) * time.Millisecond).Nanoseconds()
		return r.begin(in, true, at)
	}, Ok, ""}
}

func leaves(fan string, call, ret int64, result Result) op {
	return op{call, ret, func(r *Recorder, at time.Time) *Call {
		in := r.lineInput("c", opOut, fan, "leave")
		in.leave = true
		return r.begin(in, true, at)
	}, result, ""}
}

// expired is a fan seen ACTIVE at seen (their join called at since) and told at told that their token
// is not ACTIVE any more.
func expired(fan string, since, seen, told int64) op {
	return op{seen, told, func(r *Recorder, at time.Time) *Call {
		in := r.lineInput("c", opOut, fan, "told not ACTIVE")
		in.told, in.asked = true, (time.Duration(since) * time.Millisecond).Nanoseconds()
		return r.begin(in, true, at)
	}, Ok, ""}
}

// record makes a recorder holding ops, concert c's line at capacity.
func record(capacity int, ops ...op) *Recorder {
	return recordQueue(Queue{Capacity: capacity}, ops...)
}

// recordQueue makes a recorder holding ops, concert c's queue settings q.
func recordQueue(q Queue, ops ...op) *Recorder {
	r := NewRecorder()
	r.Line("c", q)
	ms := func(v int64) time.Time { return r.start.Add(time.Duration(v) * time.Millisecond) }
	for _, o := range ops {
		c := o.do(r, ms(o.call))
		ret := ms(o.ret)
		if o.ret == never {
			ret = ms(o.call) // an Unknown result makes the return infinite whatever its time
		}
		c.endAt(o.result, o.res, ret)
	}
	return r
}

func TestSeatModel(t *testing.T) {
	tests := []struct {
		name     string
		give     []op
		failover int64 // > 0: the seat's master fails over at this millisecond
		stale    time.Duration
		want     porcupine.CheckResult
	}{
		{name: "a hold, a refusal during it, a cancel, another fan's hold and payment", give: []op{
			hold("f1", 0, 10, Ok, "r1"), hold("f2", 5, 15, Refused, ""),
			cancel("f1", "r1", 20, 30, Ok), hold("f2", 40, 50, Ok, "r2"), pay("f2", "r2", 60, 70, Ok),
			hold("f3", 80, 90, Refused, ""), pay("f2", "r2", 100, 110, Ok), // the same payment again: 200
		}, want: porcupine.Ok},
		{name: "two fans hold the seat at once", give: []op{
			hold("f1", 0, 10, Ok, "r1"), hold("f2", 5, 15, Ok, "r2"),
		}, want: porcupine.Illegal},
		{name: "a second hold after the first, without a cancel", give: []op{
			hold("f1", 0, 10, Ok, "r1"), hold("f2", 20, 30, Ok, "r2"),
		}, want: porcupine.Illegal},
		{name: "the seat sold twice", give: []op{
			hold("f1", 0, 10, Ok, "r1"), pay("f1", "r1", 20, 30, Ok),
			hold("f2", 40, 50, Ok, "r2"), pay("f2", "r2", 60, 70, Ok),
		}, want: porcupine.Illegal},
		{name: "a payment of a reservation only a hold without an answer could have made", give: []op{
			hold("f1", 0, 10, Ok, "r1"), hold("f2", 5, never, Unknown, ""),
			pay("f1", "r1", 20, 30, Ok), pay("f2", "r2", 40, 50, Ok),
		}, want: porcupine.Illegal},
		{name: "a refusal of a free seat", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, 30, Ok), hold("f2", 40, 50, Refused, ""),
		}, want: porcupine.Illegal},
		{name: "a refusal a moment after a cancel, read from a seat view as stale as allowed", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, 30, Ok), hold("f2", 40, 50, Refused, ""),
		}, stale: 25 * time.Millisecond, want: porcupine.Ok},
		{name: "a refusal staler than allowed", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, 30, Ok), hold("f2", 60, 70, Refused, ""),
		}, stale: 25 * time.Millisecond, want: porcupine.Illegal},
		{name: "a hold without an answer explains the refusals after it", give: []op{
			hold("f1", 0, never, Unknown, ""), hold("f2", 10, 20, Refused, ""), hold("f3", 30, 40, Refused, ""),
		}, want: porcupine.Ok},
		{name: "a hold without an answer that did not happen", give: []op{
			hold("f1", 0, never, Unknown, ""), hold("f2", 10, 20, Ok, "r2"), pay("f2", "r2", 30, 40, Ok),
		}, want: porcupine.Ok},
		{name: "a cancel without an answer may have freed the seat", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, never, Unknown), hold("f2", 30, 40, Ok, "r2"),
		}, want: porcupine.Ok},
		{name: "a cancel refused while the fan holds the seat", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, 30, Refused),
		}, want: porcupine.Illegal},
		{name: "another fan's cancel of the hold", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f2", "r1", 20, 30, Ok),
		}, want: porcupine.Illegal},
		{name: "a payment refused for points keeps the hold", give: []op{
			hold("f1", 0, 10, Ok, "r1"), pay("f1", "r1", 20, 30, Kept), hold("f2", 40, 50, Refused, ""),
			pay("f1", "r1", 60, 70, Ok),
		}, want: porcupine.Ok},
		{name: "a payment refused as not held while held", give: []op{
			hold("f1", 0, 10, Ok, "r1"), pay("f1", "r1", 20, 30, Refused),
		}, want: porcupine.Illegal},
		{name: "a payment without an answer, then its retry", give: []op{
			hold("f1", 0, 10, Ok, "r1"), pay("f1", "r1", 20, never, Unknown), pay("f1", "r1", 30, 40, Ok),
			hold("f2", 50, 60, Refused, ""),
		}, want: porcupine.Ok},
		{name: "a failover cannot take back a cancel (cancels wait for a replica)", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, 30, Ok), hold("f2", 50, 60, Refused, ""),
		}, failover: 40, want: porcupine.Illegal},
		{name: "a cancel without an answer, taken back by the failover", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, never, Unknown), hold("f2", 50, 60, Refused, ""),
		}, failover: 40, want: porcupine.Ok},
		{name: "a failover cannot take back a hold a replica confirmed", give: []op{
			hold("f1", 0, 10, Ok, "r1"), hold("f2", 30, 40, Ok, "r2"),
		}, failover: 20, want: porcupine.Illegal},
		{name: "not a hold paid after its cancel, across a failover", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, 30, Ok), pay("f1", "r1", 50, 60, Ok),
		}, failover: 40, want: porcupine.Illegal},
		{name: "not a cancel before a hold a replica confirmed", give: []op{
			hold("f1", 0, 10, Ok, "r1"), cancel("f1", "r1", 20, 30, Ok), hold("f2", 40, 50, Ok, "r2"),
			cancel("f2", "r2", 60, 70, Ok), pay("f1", "r1", 90, 100, Ok),
		}, failover: 80, want: porcupine.Illegal},
		{name: "a hold without an answer, seen by a refusal, then lost in the failover", give: []op{
			hold("f1", 0, never, Unknown, ""), hold("f2", 5, 8, Refused, ""), hold("f3", 20, 30, Ok, "r3"),
		}, failover: 10, want: porcupine.Ok},
		{name: "the same without a failover", give: []op{
			hold("f1", 0, never, Unknown, ""), hold("f2", 5, 8, Refused, ""), hold("f3", 20, 30, Ok, "r3"),
		}, want: porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := record(1, tt.give...)
			r.StaleRefusals(tt.stale)
			if tt.failover > 0 {
				at := r.start.Add(time.Duration(tt.failover) * time.Millisecond)
				r.Failover(at, at, func(s Seat) bool { return s == seat })
			}
			got, why := r.Check(Options{Timeout: 10 * time.Second})
			assert.Equal(t, tt.want, got, why)
			if tt.want == porcupine.Illegal {
				assert.Contains(t, why, "seat c/s/R-1: no order of its")
			}
		})
	}
}

func TestLineModel(t *testing.T) {
	tests := []struct {
		name string
		give []op
		want porcupine.CheckResult
	}{
		{name: "two in at a time, the third admitted once the first paid", give: []op{
			join("f1", 0, 1, Active), join("f2", 0, 2, Waiting), join("f3", 0, 2, Waiting),
			out("f1", 5, 6, Ok), admitted("f2", 0, 8), admitted("f3", 0, 9),
		}, want: porcupine.Ok},
		{name: "three ACTIVE at once at capacity 2", give: []op{
			join("f1", 0, 1, Active), join("f2", 0, 2, Waiting), join("f3", 0, 2, Waiting),
			admitted("f2", 0, 3), admitted("f3", 0, 4), out("f1", 10, 11, Ok),
		}, want: porcupine.Illegal},
		{name: "three joins answered ACTIVE at capacity 2", give: []op{
			join("f1", 0, 1, Active), join("f2", 0, 1, Active), join("f3", 0, 1, Active),
		}, want: porcupine.Illegal},
		{name: "a leave without an answer may have freed the slot", give: []op{
			join("f1", 0, 1, Active), join("f2", 0, 1, Active), out("f1", 5, never, Unknown), admitted("f3", 0, 10),
		}, want: porcupine.Ok},
		{name: "a fan seen ACTIVE twice counts once", give: []op{
			join("f1", 0, 1, Active), admitted("f1", 0, 3), join("f2", 0, 1, Waiting), admitted("f2", 0, 5),
		}, want: porcupine.Ok},
		{name: "a leave of a fan never admitted frees nothing", give: []op{
			join("f1", 0, 1, Active), join("f2", 0, 1, Active), out("f9", 2, 3, Ok), admitted("f3", 0, 10),
			out("f1", 20, 21, Ok),
		}, want: porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := record(2, tt.give...).Check(Options{Timeout: 10 * time.Second})
			assert.Equal(t, tt.want, got, why)
			if tt.want == porcupine.Illegal {
				assert.Contains(t, why, "line c (capacity 2): no order of its")
			}
		})
	}
}

// TestLineRules: each rule of the line a fan can see breached (lineRules, placeTold), each breach next
// to the legal history closest to it.
func TestLineRules(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		q        Queue
		give     []op
		stale    time.Duration
		failover int64 // > 0: a master fails over at this millisecond
		want     porcupine.CheckResult
		because  string // in the explanation of an Illegal verdict
	}{
		{name: "a leave undone by a tick: left (204), then ACTIVE", give: []op{
			waits("f1", 0, 1, 1), leaves("f1", 5, 6, Ok), seenActive("f1", 0, 10, 11),
		}, want: porcupine.Illegal, because: "f1 left (204 at 6.000 ms) and was seen ACTIVE after it [10.000 ms, 11.000 ms]"},
		{name: "admitted while the leave was in flight", give: []op{
			waits("f1", 0, 1, 1), leaves("f1", 5, 6, Ok), seenActive("f1", 0, 4, 11),
		}, want: porcupine.Ok},
		{name: "a leave a failover took back", give: []op{
			waits("f1", 0, 1, 1), leaves("f1", 5, 6, Ok), seenActive("f1", 0, 10, 11),
		}, failover: 8, want: porcupine.Ok},
		{name: "a leave without an answer need not have happened", give: []op{
			waits("f1", 0, 1, 1), leaves("f1", 5, never, Unknown), seenActive("f1", 0, 10, 11),
		}, want: porcupine.Ok},
		{name: "a later joiner admitted first", give: []op{
			waits("f1", 0, 1, 1), waits("f2", 2, 3, 2), seenActive("f2", 2, 10, 11), polled("f1", 20, 21, 1),
		}, want: porcupine.Illegal, because: "f1, whose join was answered at 1.000 ms before f2's was sent at 2.000 ms, was still WAITING after f2 was seen ACTIVE at 11.000 ms"},
		{name: "two joins in flight at once: either may be first", give: []op{
			waits("f1", 0, 3, 1), waits("f2", 2, 4, 1), seenActive("f2", 2, 10, 11), polled("f1", 20, 21, 1),
		}, want: porcupine.Ok},
		{name: "a poll answered from a view as stale as allowed", give: []op{
			waits("f1", 0, 1, 1), waits("f2", 2, 3, 2), seenActive("f2", 2, 10, 11), polled("f1", 20, 21, 1),
		}, stale: 15 * ms, want: porcupine.Ok},
		{name: "the earlier joiner may have been admitted first, unseen", give: []op{
			waits("f1", 0, 1, 1), waits("f2", 2, 3, 2), polled("f1", 5, 6, 1), seenActive("f2", 2, 10, 11),
			seenActive("f1", 0, 20, 21),
		}, want: porcupine.Ok},
		{name: "a join sent again after no answer keeps the first one's place", give: []op{
			join("f2", 0, never, Unknown), waits("f1", 1, 2, 2), waits("f2", 3, 4, 1), seenActive("f2", 0, 10, 11),
			polled("f1", 20, 21, 1),
		}, want: porcupine.Ok},
		{name: "a join a failover lost", give: []op{
			waits("f1", 0, 1, 1), waits("f2", 2, 3, 2), seenActive("f2", 2, 10, 11), polled("f1", 20, 21, 1),
		}, failover: 5, want: porcupine.Ok},
		{name: "an over-admission whose extra fan is told EXPIRED later", q: Queue{ActiveTTL: time.Hour}, give: []op{
			waits("f3", 0, 1, 1), waits("f1", 0, 1, 2), waits("f2", 0, 1, 3),
			seenActive("f3", 0, 4, 5), seenActive("f1", 0, 5, 6), seenActive("f2", 0, 6, 7), expired("f3", 0, 5, 20),
		}, want: porcupine.Illegal, because: "line c (capacity 2): no order of its"},
		{name: "the extra fan's active time lapsed before the third admission", q: Queue{ActiveTTL: 3 * ms}, give: []op{
			waits("f3", 0, 1, 1), waits("f1", 0, 1, 2), waits("f2", 0, 1, 3),
			seenActive("f3", 0, 4, 5), seenActive("f1", 0, 5, 6), seenActive("f2", 0, 6, 7), expired("f3", 0, 5, 20),
		}, want: porcupine.Ok},
		{name: "a failover lost the extra fan's admission", q: Queue{ActiveTTL: time.Hour}, give: []op{
			waits("f3", 0, 1, 1), waits("f1", 0, 1, 2), waits("f2", 0, 1, 3),
			seenActive("f3", 0, 4, 5), seenActive("f1", 0, 5, 6), seenActive("f2", 0, 6, 7), expired("f3", 0, 5, 20),
		}, failover: 6, want: porcupine.Ok},
		{name: "a position that grows", give: []op{
			waits("f1", 0, 1, 5), polled("f1", 10, 11, 3), polled("f1", 20, 21, 4),
		}, want: porcupine.Illegal, because: "f1 WAITING at position 3 [10.000 ms, 11.000 ms], then at position 4 [20.000 ms, 21.000 ms]"},
		{name: "a position that shrinks", give: []op{
			waits("f1", 0, 1, 5), polled("f1", 10, 11, 4), polled("f1", 20, 21, 4), polled("f1", 30, 31, 1),
		}, want: porcupine.Ok},
		{name: "a position read from a view as stale as allowed", give: []op{
			waits("f1", 0, 1, 5), polled("f1", 10, 11, 3), polled("f1", 20, 21, 4),
		}, stale: 15 * ms, want: porcupine.Ok},
		{name: "a position read after a failover", give: []op{
			waits("f1", 0, 1, 5), polled("f1", 10, 11, 3), polled("f1", 20, 21, 4),
		}, failover: 15, want: porcupine.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.Capacity = 2
			r := recordQueue(tt.q, tt.give...)
			r.StalePolls(tt.stale)
			if tt.failover > 0 {
				at := r.start.Add(time.Duration(tt.failover) * ms)
				r.Failover(at, at.Add(ms), func(Seat) bool { return false })
			}
			got, why := r.Check(Options{Timeout: 10 * time.Second})
			assert.Equal(t, tt.want, got, why)
			if tt.want == porcupine.Illegal {
				assert.Contains(t, why, "line model: Illegal")
				assert.Contains(t, why, tt.because)
			}
		})
	}
}

// TestHoldLimit: a fan never holds more than maxHoldsPerUser seats of a concert at once.
func TestHoldLimit(t *testing.T) {
	tests := []struct {
		name    string
		holdTTL time.Duration
		give    []op
		want    porcupine.CheckResult
	}{
		{name: "a hold past the limit", give: []op{
			holdOf("R-1", "f1", 0, 1, Ok, "r1"), holdOf("R-2", "f1", 2, 3, Ok, "r2"), holdOf("R-3", "f1", 4, 5, Ok, "r3"),
		}, want: porcupine.Illegal},
		{name: "HOLD_LIMIT_REACHED at the limit, then a hold once one was cancelled", give: []op{
			holdOf("R-1", "f1", 0, 1, Ok, "r1"), holdOf("R-2", "f1", 2, 3, Ok, "r2"), holdOf("R-3", "f1", 4, 5, Limited, ""),
			cancelOf("R-1", "f1", "r1", 6, 7, Ok), holdOf("R-3", "f1", 8, 9, Ok, "r3"),
		}, want: porcupine.Ok},
		{name: "a hold while a cancel was in flight", give: []op{
			holdOf("R-1", "f1", 0, 1, Ok, "r1"), holdOf("R-2", "f1", 2, 3, Ok, "r2"),
			cancelOf("R-1", "f1", "r1", 4, 9, Ok), holdOf("R-3", "f1", 5, 6, Ok, "r3"),
		}, want: porcupine.Ok},
		{name: "a hold after a payment without an answer", give: []op{
			holdOf("R-1", "f1", 0, 1, Ok, "r1"), holdOf("R-2", "f1", 2, 3, Ok, "r2"),
			payOf("R-1", "f1", "r1", 4, never, Unknown), holdOf("R-3", "f1", 5, 6, Ok, "r3"),
		}, want: porcupine.Ok},
		{name: "a payment refused for points keeps the hold", give: []op{
			holdOf("R-1", "f1", 0, 1, Ok, "r1"), holdOf("R-2", "f1", 2, 3, Ok, "r2"),
			payOf("R-1", "f1", "r1", 4, 5, Kept), holdOf("R-3", "f1", 6, 7, Ok, "r3"),
		}, want: porcupine.Illegal},
		{name: "a hold once the first lapsed", holdTTL: 15 * time.Millisecond, give: []op{
			holdOf("R-1", "f1", 0, 1, Ok, "r1"), holdOf("R-2", "f1", 2, 3, Ok, "r2"), holdOf("R-3", "f1", 20, 21, Ok, "r3"),
		}, want: porcupine.Ok},
		{name: "two fans, each at the limit", give: []op{
			holdOf("R-1", "f1", 0, 1, Ok, "r1"), holdOf("R-2", "f1", 2, 3, Ok, "r2"),
			holdOf("R-3", "f2", 0, 1, Ok, "r3"), holdOf("R-4", "f2", 2, 3, Ok, "r4"),
		}, want: porcupine.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := recordQueue(Queue{Capacity: 1, MaxHolds: 2, HoldTTL: tt.holdTTL}, tt.give...).Check(Options{Timeout: 10 * time.Second})
			assert.Equal(t, tt.want, got, why)
			assert.Contains(t, why, "seat model: Ok", "every seat's own history is legal")
			if tt.want == porcupine.Illegal {
				assert.Contains(t, why, "hold limit model: Illegal")
				assert.Contains(t, why, "fan f1 in concert c (maxHoldsPerUser 2): no order of its")
			}
		})
	}
}

func TestCheckExplainsAndVisualizes(t *testing.T) {
	dir := t.TempDir()
	r := record(1, hold("f1", 0, 10, Ok, "r1"), hold("f2", 5, 15, Ok, "r2"), join("f1", 0, 1, Active))
	got, why := r.Check(Options{VisualizeDir: dir})
	require.Equal(t, porcupine.Illegal, got, why)
	t.Log(why)
	assert.Contains(t, why, "seat model: Illegal, 2 operations (0 without an answer) over 1 seat")
	assert.Contains(t, why, "line model: Ok, 1 operations")
	assert.Contains(t, why, "f1 holds R-1 → r1  ⇒ {HELD by f1 (r1)}")
	assert.Contains(t, why, "and left out of it, by call:\n    [5.000 ms, 15.000 ms]  f2 holds R-1 → r2")
	page, err := os.ReadFile(filepath.Join(dir, "seats.html"))
	require.NoError(t, err, why)
	assert.Contains(t, string(page), "f2 holds R-1")
	assert.NoFileExists(t, filepath.Join(dir, "lines.html"), "the line is linearizable")

	got, why = record(1, hold("f1", 0, 10, Ok, "r1"), hold("f2", 20, 30, Refused, ""), hold("f3", 25, never, Unknown, ""),
		join("f1", 0, 1, Active), out("f1", 5, never, Unknown), join("f2", 0, never, Unknown)).Check(Options{VisualizeDir: dir})
	assert.Equal(t, porcupine.Ok, got, why)
	assert.Contains(t, why, "seat model: Ok, 3 operations (1 without an answer) over 1 seat")
	assert.Contains(t, why, "line model: Ok, 3 operations (2 without an answer) over 1 line")
}

// TestCanonicalLineOrder holds canonicalLine's claim against porcupine's own search: on random small
// line histories of the shape clients record (a fan admitted once at most, every out of theirs called
// after they were seen ACTIVE, answers missing at random), the history at canonical instants is
// linearizable exactly when the recorded one is.
func TestCanonicalLineOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	verdicts := map[porcupine.CheckResult]int{}
	for range 3000 {
		var ops []op
		for f := range 2 + rng.IntN(4) {
			fan := fmt.Sprintf("f%d", f)
			call := rng.Int64N(100)
			ret := call + 1 + rng.Int64N(40)
			seen := int64(-1) // when the fan was seen ACTIVE
			switch rng.IntN(4) {
			case 0:
				ops = append(ops, join(fan, call, ret, Active))
				seen = ret
			case 1:
				ops = append(ops, join(fan, call, never, Unknown))
			default:
				ops = append(ops, join(fan, call, ret, Waiting))
				if rng.IntN(3) > 0 {
					seen = ret + rng.Int64N(150)
					ops = append(ops, admitted(fan, call, seen))
				}
			}
			from := max(seen, call)
			for range rng.IntN(3) {
				c := from + rng.Int64N(80)
				if rng.IntN(4) == 0 {
					ops = append(ops, out(fan, c, never, Unknown))
				} else {
					ops = append(ops, out(fan, c, c+rng.Int64N(30), Ok))
				}
			}
		}
		r := record(1+rng.IntN(2), ops...)
		_, lines := r.history()
		want := porcupine.CheckOperations(lineModel, lines)
		canonical, ok := canonicalLine(lines)
		require.True(t, ok)
		require.Equal(t, want, porcupine.CheckOperations(lineModel, canonical), "recorded:\n%s", describeAll(lines))
		verdicts[map[bool]porcupine.CheckResult{true: porcupine.Ok, false: porcupine.Illegal}[want]]++
	}
	t.Log(verdicts)
	assert.Greater(t, verdicts[porcupine.Ok], 300)
	assert.Greater(t, verdicts[porcupine.Illegal], 300)
}

func describeAll(ops []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "%s %s\n", interval(op), lineModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// TestDropRepeats holds dropRepeats against porcupine's own search: on random small seat histories
// (a seat run one operation at a time, answers lost at random and their requests sent again up to 3
// times, or operations and answers drawn at random; sometimes a failover, sometimes one answer
// falsified), dropping the repeats of an unanswered request beyond the first 1+F changes no verdict.
func TestDropRepeats(t *testing.T) {
	// A hold without an answer, sent 3 times: one copy took the seat before the failover, which took it
	// back; another took it again after a hold and cancel of f3. Two copies must stay.
	r := record(1, hold("f1", 0, never, Unknown, ""), hold("f1", 5, never, Unknown, ""), hold("f1", 10, never, Unknown, ""),
		hold("f2", 2, 4, Refused, ""), hold("f3", 30, 31, Ok, "r3"), cancel("f3", "r3", 32, 33, Ok),
		hold("f2", 40, 41, Refused, ""))
	r.Failover(r.start.Add(20*time.Millisecond), r.start.Add(21*time.Millisecond), func(Seat) bool { return true })
	seats, _ := r.history()
	require.True(t, porcupine.CheckOperations(seatModel, seats))
	assert.Len(t, dropRepeats(seats), len(seats)-1)
	assert.True(t, porcupine.CheckOperations(seatModel, dropRepeats(seats)))

	rng := rand.New(rand.NewPCG(24, 2))
	verdicts := map[bool]int{}
	dropped := 0
	for range 1000 {
		var ops []op
		now := seatIs{}
		holding := map[string]string{} // fan -> reservation
		at := int64(0)
		for step := range 3 + rng.IntN(5) {
			at += 5 + rng.Int64N(10)
			fan := fmt.Sprintf("f%d", rng.IntN(3))
			lost := rng.IntN(3) == 0
			var o op
			switch res := holding[fan]; {
			case res == "":
				r := fmt.Sprintf("r%d", step)
				if now.status == available && (!lost || rng.IntN(2) == 0) {
					now = seatIs{held, fan, r}
					if lost {
						r = "" // a hold without an answer holds the seat under a reservation nobody knows
					} else {
						holding[fan] = r
					}
					o = hold(fan, at, at+1+rng.Int64N(15), Ok, r)
				} else {
					o = hold(fan, at, at+1+rng.Int64N(15), Refused, "")
				}
				if lost {
					o = hold(fan, at, never, Unknown, "")
				}
			case rng.IntN(2) == 0:
				if !lost || rng.IntN(2) == 0 {
					now, holding[fan] = seatIs{}, ""
				}
				o = cancel(fan, res, at, at+1+rng.Int64N(15), Ok)
				if lost {
					o = cancel(fan, res, at, never, Unknown)
				}
			default:
				if !lost || rng.IntN(2) == 0 {
					now, holding[fan] = seatIs{sold, fan, res}, ""
				}
				o = pay(fan, res, at, at+1+rng.Int64N(15), Ok)
				if lost {
					o = pay(fan, res, at, never, Unknown)
				}
			}
			ops = append(ops, o)
			for range rng.IntN(4) * btoi(lost) { // sent again, never answered either
				at += 1 + rng.Int64N(5)
				again := o
				again.call = at
				ops = append(ops, again)
			}
		}
		if rng.IntN(2) == 0 { // or any history at all, of the same few reservations
			ops = randomSeatOps(rng)
			at = 100
		}
		if rng.IntN(2) == 0 { // one answer falsified
			i := rng.IntN(len(ops))
			if ops[i].result == Ok {
				ops[i].result = Refused
			} else if ops[i].result == Refused {
				ops[i].result, ops[i].res = Ok, "rx"
			}
		}
		r := record(1, ops...)
		if rng.IntN(2) == 0 {
			f := r.start.Add(time.Duration(rng.Int64N(at+1)) * time.Millisecond)
			r.Failover(f, f.Add(time.Millisecond), func(Seat) bool { return true })
		}
		seats, _ := r.history()
		kept := dropRepeats(seats)
		dropped += len(seats) - len(kept)
		want := porcupine.CheckOperations(seatModel, seats)
		require.Equal(t, want, porcupine.CheckOperations(seatModel, kept), "recorded:\n%s", describeSeats(seats))
		verdicts[want]++
	}
	t.Log(verdicts, "dropped", dropped)
	assert.Greater(t, verdicts[true], 300)
	assert.Greater(t, verdicts[false], 300)
	assert.Greater(t, dropped, 1000)
}

// randomSeatOps is a seat history made of anything: holds, cancels and payments by 2 fans of 2
// reservations with any answers at any times, each unanswered one sent again up to 2 times.
func randomSeatOps(rng *rand.Rand) []op {
	var ops []op
	for range 2 + rng.IntN(4) {
		fan, res := fmt.Sprintf("f%d", rng.IntN(2)), fmt.Sprintf("r%d", rng.IntN(2))
		call := rng.Int64N(100)
		ret := call + 1 + rng.Int64N(30)
		result := []Result{Ok, Refused, Unknown, Unknown}[rng.IntN(4)]
		if result == Unknown {
			ret = never
		}
		var o op
		switch rng.IntN(3) {
		case 0:
			if result != Ok {
				res = ""
			}
			o = hold(fan, call, ret, result, res)
		case 1:
			o = cancel(fan, res, call, ret, result)
		default:
			o = pay(fan, res, call, ret, result)
		}
		ops = append(ops, o)
		for range rng.IntN(3) * btoi(result == Unknown) {
			again := o
			again.call += 1 + rng.Int64N(20)
			ops = append(ops, again)
		}
	}
	return ops
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func describeSeats(ops []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "%s %s\n", interval(op), seatModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}
