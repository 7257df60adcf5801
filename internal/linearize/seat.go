package linearize

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Seat names one seat of one schedule: the unit the seat model checks alone.
type Seat struct{ Concert, Schedule, ID string }

func (s Seat) String() string { return s.Concert + "/" + s.Schedule + "/" + s.ID }

// seatOp is what a client asked of a seat.
type seatOp uint8

const (
	opHold     seatOp = iota + 1 // POST /v1/reservations
	opCancel                     // DELETE /v1/reservations/{id}
	opPay                        // POST /v1/payments
	opFailover                   // the seat's master died and its replica took over
)

func (o seatOp) String() string {
	return [...]string{"?", "hold", "cancel", "pay", "failover"}[o]
}

// seatInput is one operation on a seat: the fan who made it and, for a cancel or a payment, the
// reservation it names.
type seatInput struct {
	seat Seat
	op   seatOp
	fan  string
	res  string
}

// seatOutput is what the client was told: the result and, for a hold that succeeded, its reservation.
type seatOutput struct {
	result Result
	res    string
}

// seatStatus is the seat of the contract: AVAILABLE, HELD by one fan, SOLD.
type seatStatus uint8

const (
	available seatStatus = iota
	held
	sold
)

// seatIs is one state of a seat: its status and, when HELD or SOLD, the fan and the reservation. A hold
// whose answer never came and that took effect has an unknown reservation (""): no cancel or payment
// can name it.
type seatIs struct {
	status   seatStatus
	fan, res string
}

func (s seatIs) String() string {
	switch s.status {
	case held:
		return "HELD by " + s.fan + " (" + orUnknown(s.res) + ")"
	case sold:
		return "SOLD to " + s.fan + " (" + orUnknown(s.res) + ")"
	}
	return "AVAILABLE"
}

func orUnknown(res string) string {
	if res == "" {
		return "reservation unknown"
	}
	return res
}

// seatState is the seat now and what a failover of its master could still take back. A Redis
// replica copies its master's writes in order and asynchronously; a hold, a cancel and every step of
// a payment answer only once a replica has them (WAIT, docs/durability.md), so everything the seat's
// master did up to such an answer survives a failover. Writes after it may not: a write whose answer
// never came. trail is the seat after the last write
// a replica confirmed, then after each write since; the last entry is the seat now. A failover leaves
// the seat as any entry of trail.
type seatState struct{ trail []seatIs }

func (s seatState) now() seatIs { return s.trail[len(s.trail)-1] }

// confirmed is the seat after a write a replica confirmed: nothing before it can be taken back.
func confirmed(s seatIs) seatState { return seatState{trail: []seatIs{s}} }

// unconfirmed is st after a write no replica confirmed (or nothing changed when s is the seat now).
func (st seatState) unconfirmed(s seatIs) seatState {
	if s == st.now() {
		return st
	}
	return seatState{trail: append(slices.Clip(st.trail), s)}
}

// seatStep is the seat's sequential specification (docs/api.md, Reservations and Payments), one
// operation at a time. It returns the states the seat may be in after op, none when op could not have
// answered as it did. Holds last longer than the histories it checks: no hold lapses.
func seatStep(state, input, output any) []any {
	st, in, out := state.(seatState), input.(seatInput), output.(seatOutput)
	now := st.now()
	mine := now.fan == in.fan && now.res == in.res && in.res != ""
	next := func(s seatState) []any { return []any{s} }
	switch in.op {
	case opHold:
		switch out.result {
		case Ok: // 201: the seat was AVAILABLE, and is HELD by the fan under the reservation it was told
			if now.status == available && out.res != "" {
				return next(confirmed(seatIs{held, in.fan, out.res}))
			}
		case Refused: // 409 SEAT_UNAVAILABLE: someone holds it, or it is sold
			if now.status != available {
				return next(st)
			}
		case Limited: // 409 HOLD_LIMIT_REACHED: the fan's holds, not the seat, said no (holdModel)
			return next(st)
		case Unknown: // it may have happened, under a reservation the fan never learnt
			if now.status == available {
				return next(st.unconfirmed(seatIs{held, in.fan, ""}))
			}
			return next(st)
		}
	case opCancel:
		switch out.result {
		case Ok: // 204: the fan's hold is gone, the seat AVAILABLE, and a replica has it
			if now.status == held && mine {
				return next(confirmed(seatIs{}))
			}
		case Refused: // 409 RESERVATION_NOT_HELD, 404: not the fan's hold (any more)
			if now.status != held || !mine {
				return next(st)
			}
		case Unknown:
			if now.status == held && mine {
				return next(st.unconfirmed(seatIs{}))
			}
			return next(st)
		}
	case opPay:
		switch out.result {
		case Ok: // 201, or 200 for the same payment again: the seat is SOLD to the fan
			if mine && (now.status == held || now.status == sold) {
				return next(confirmed(seatIs{sold, in.fan, in.res}))
			}
		case Refused: // 409 RESERVATION_NOT_HELD, 410 RESERVATION_EXPIRED: not the fan's hold
			if !mine {
				return next(st)
			}
		case Kept: // 409 INSUFFICIENT_BALANCE: refused, and the hold stays
			if mine && now.status == held {
				return next(st)
			}
		case Unknown:
			if mine && now.status == held {
				return next(st.unconfirmed(seatIs{sold, in.fan, in.res}))
			}
			return next(st)
		}
	case opFailover: // the replica is elected: the seat is as it had last copied it
		var after []any
		for _, s := range st.trail {
			after = append(after, confirmed(s))
		}
		return after
	}
	return nil
}

func seatEqual(a, b any) bool { return slices.Equal(a.(seatState).trail, b.(seatState).trail) }

func seatHash(state any) uint64 {
	h := fnv.New64a()
	for _, s := range state.(seatState).trail {
		fmt.Fprintf(h, "%d|%s|%s;", s.status, s.fan, s.res)
	}
	return h.Sum64()
}

// seatModel checks every seat's history alone (porcupine's P-compositionality): one partition per seat.
var seatModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		return partition(history, func(op porcupine.Operation) string { return op.Input.(seatInput).seat.String() })
	},
	Init:  func() []any { return []any{confirmed(seatIs{})} },
	Step:  seatStep,
	Equal: seatEqual,
	Hash:  seatHash,
	DescribeOperation: func(input, output any) string {
		return describeSeatOp(input.(seatInput), output.(seatOutput))
	},
	DescribeState: func(state any) string {
		st := state.(seatState)
		if len(st.trail) == 1 {
			return st.now().String()
		}
		var was []string
		for _, s := range st.trail[:len(st.trail)-1] {
			was = append(was, s.String())
		}
		return st.now().String() + "; a failover could leave it " + strings.Join(was, " or ")
	},
}).ToModel()

func describeSeatOp(in seatInput, out seatOutput) string {
	switch in.op {
	case opFailover:
		return "failover of " + in.seat.ID + "'s master"
	case opHold:
		if out.result == Ok {
			return fmt.Sprintf("%s holds %s → %s", in.fan, in.seat.ID, out.res)
		}
		return fmt.Sprintf("%s holds %s → %s", in.fan, in.seat.ID, out.result)
	}
	return fmt.Sprintf("%s %ss %s (%s) → %s", in.fan, in.op, in.seat.ID, in.res, out.result)
}

// dropRepeats keeps, of the operations on a seat that are one request sent again by the same fan and
// never answered (a client trying a hold, a cancel or a payment again after each 5xx, tens of times
// through a failover), the 1+F called first, F being the seat's failovers, and drops the others. On
// 55 such tries of a cancel, porcupine's search over the orders of copies that change nothing did not
// finish in a minute.
//
// Why that changes no verdict: such an operation changes the seat only from one state (an AVAILABLE
// seat for a hold, the fan's hold for a cancel or a payment), into one from which nothing but a
// failover leads back (no cancel or payment names the reservation of a hold without an answer; a
// cancelled or sold reservation is never HELD again). So in any order that fits, at most 1+F copies
// change anything, the others can go, and those that change something can be the ones called first:
// their intervals (to infinity) hold every later copy's. TestDropRepeats holds this against
// porcupine's search on random small histories.
func dropRepeats(history []porcupine.Operation) []porcupine.Operation {
	failovers := map[Seat]int{}
	for _, op := range history {
		if in := op.Input.(seatInput); in.op == opFailover {
			failovers[in.seat]++
		}
	}
	copies := map[seatInput][]int{} // unanswered operations by what they asked: their indexes
	for i, op := range history {
		if op.Output.(seatOutput).result == Unknown {
			in := op.Input.(seatInput)
			copies[in] = append(copies[in], i)
		}
	}
	drop := map[int]bool{}
	for in, idx := range copies {
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(history[a].Call, history[b].Call) })
		for _, i := range idx[min(len(idx), 1+failovers[in.seat]):] {
			drop[i] = true
		}
	}
	kept := make([]porcupine.Operation, 0, len(history)-len(drop))
	for i, op := range history {
		if !drop[i] {
			kept = append(kept, op)
		}
	}
	return kept
}
