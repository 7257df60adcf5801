package linearize

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// holdOp is what changes the count of a fan's open holds in a concert.
type holdOp uint8

const (
	opTake    holdOp = iota + 1 // a hold answered 201: the reservation is open
	opFree                      // a cancel or a payment of it was sent (answered done, or not answered)
	opLapse                     // the hold's time ran out (holdTtlSeconds)
	opRefused                   // a hold refused HOLD_LIMIT_REACHED
)

func (o holdOp) String() string { return [...]string{"?", "holds", "frees", "lapses", "refused"}[o] }

// holdInput is one operation on a fan's holds in a concert: the reservation it names (none for a
// refusal) and the concert's maxHoldsPerUser.
type holdInput struct {
	concert, fan string
	op           holdOp
	res          string
	seat         string
	limit        int
	seen         [2]int64 // the recorded interval of the hold, cancel or payment it stands for
}

// holdState is the fan's open reservations, sorted, one a line (a string, so that == compares states).
type holdState string

func (s holdState) list() []string {
	if s == "" {
		return nil
	}
	return strings.Split(string(s), "\n")
}

// holdStep is the contract sentence (docs/api.md, Reservations): a fan never holds more than
// maxHoldsPerUser seats of a concert at once; HOLD_LIMIT_REACHED is a refusal that changes nothing
// (it is accepted whatever the count: a gate entry a crashed step left counts against the limit until
// the hold's expiry, docs/durability.md).
func holdStep(state, input, _ any) (bool, any) {
	st, in := state.(holdState), input.(holdInput)
	open := st.list()
	switch in.op {
	case opTake:
		if len(open) >= in.limit {
			return false, st
		}
		open = append(open, in.res)
		slices.Sort(open)
	case opFree, opLapse:
		open = slices.DeleteFunc(open, func(r string) bool { return r == in.res })
	}
	return true, holdState(strings.Join(open, "\n"))
}

// fanHolds turns the seat history into each fan's holds in each concert whose maxHoldsPerUser is known,
// every operation at one instant: a hold at its return (the latest it took effect), a cancel or a
// payment answered done or not answered at its call (the earliest it may have freed the hold), the
// hold's lapse holdTTL after its call (the earliest it may have lapsed). A refused cancel or payment,
// or one refused for points, frees nothing of its own. Every hold is then open in a stretch inside the
// one it was open in any order that fits, so the count of open holds at each instant is the fewest
// the fan can have had then: the history keeps the limit exactly when this order fits holdStep, and
// porcupine checks it at once. A failover that takes a cancel back (docs/durability.md) only adds
// holds, so it can only let a breach pass, never fail a history that kept the limit.
func fanHolds(seats []porcupine.Operation, queues map[string]Queue) []porcupine.Operation {
	var out []porcupine.Operation
	at := func(op porcupine.Operation, in holdInput, t int64) {
		in.seen = [2]int64{op.Call, op.Return}
		out = append(out, porcupine.Operation{ClientId: op.ClientId, Input: in, Output: Ok, Call: t, Return: t})
	}
	for _, op := range seats {
		in, res := op.Input.(seatInput), op.Output.(seatOutput)
		q := queues[in.seat.Concert]
		if q.MaxHolds == 0 || in.op == opFailover {
			continue
		}
		h := holdInput{concert: in.seat.Concert, fan: in.fan, seat: in.seat.ID, limit: q.MaxHolds}
		switch {
		case in.op == opHold && res.result == Ok:
			lapse := op.Call + q.HoldTTL.Nanoseconds()
			if q.HoldTTL > 0 && lapse <= op.Return {
				continue // it may have lapsed by the time it was answered
			}
			h.op, h.res = opTake, res.res
			at(op, h, op.Return)
			if q.HoldTTL > 0 {
				h.op = opLapse
				at(op, h, lapse)
			}
		case in.op == opHold && res.result == Limited:
			h.op = opRefused
			at(op, h, op.Call)
		case (in.op == opCancel || in.op == opPay) && (res.result == Ok || res.result == Unknown):
			h.op, h.res = opFree, in.res
			at(op, h, op.Call)
		}
	}
	return out
}

// holdModel checks each fan's holds in each concert alone: one partition per concert and fan.
var holdModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		return partition(history, func(op porcupine.Operation) string {
			in := op.Input.(holdInput)
			return in.concert + "\n" + in.fan
		})
	},
	Init: func() any { return holdState("") },
	Step: holdStep,
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(holdState)))
		return h.Sum64()
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(holdInput)
		d := fmt.Sprintf("%s %s %s (%s)", in.fan, in.op, in.seat, in.res)
		if in.op == opRefused {
			d = fmt.Sprintf("%s holds %s → HOLD_LIMIT_REACHED", in.fan, in.seat)
		}
		return d + " " + interval(porcupine.Operation{Call: in.seen[0], Return: in.seen[1]})
	},
	DescribeState: func(state any) string {
		open := state.(holdState).list()
		return fmt.Sprintf("%d open: %s", len(open), strings.Join(open, ", "))
	},
}
