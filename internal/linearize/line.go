package linearize

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// lineOp is what a client did or saw of a concert's line.
type lineOp uint8

const (
	opJoin  lineOp = iota + 1 // POST /v1/concerts/{id}/queue
	opAdmit                   // the fan was seen ACTIVE: admitted between their join's call and that answer
	opOut                     // the fan's slot was given back: a leave, the last hold paid (DONE), an expiry
)

func (o lineOp) String() string { return [...]string{"?", "join", "admitted", "out"}[o] }

// lineInput is one operation on a line; capacity is the concert's activeCapacity. fan is what the
// line admits: a fan's queue token (one live token per fan and concert; a fan who joins again after
// DONE has a new one, and callers name it apart, for example fan#2).
type lineInput struct {
	concert  string
	op       lineOp
	fan      string
	capacity int
	why      string   // of an out: what the client saw
	seen     [2]int64 // the operation's interval as recorded, when canonicalLine moved it
}

// lineState is the set of fans ACTIVE, sorted, one a line (a string, so that == compares states).
type lineState string

func (s lineState) fans() []string {
	if s == "" {
		return nil
	}
	return strings.Split(string(s), "\n")
}

func (s lineState) has(fan string) bool { return slices.Contains(s.fans(), fan) }

func (s lineState) with(fan string) lineState {
	f := append(s.fans(), fan)
	slices.Sort(f)
	return lineState(strings.Join(f, "\n"))
}

func (s lineState) without(fan string) lineState {
	return lineState(strings.Join(slices.DeleteFunc(s.fans(), func(f string) bool { return f == fan }), "\n"))
}

// lineStep is the line's sequential specification as far as admission goes (docs/api.md, Queue):
// never more than activeCapacity fans ACTIVE at once. A fan counts in from an admission somebody saw
// (a join or a poll that answered ACTIVE) and out from a leave, the payment of their last hold (DONE),
// or an answer that told them their token is no longer ACTIVE. An admission nobody saw (a join whose
// answer never came) is not counted: the model then counts fewer fans in than there are, which can
// only let an over-admission pass, never fail a history that kept the capacity.
func lineStep(state, input, output any) (bool, any) {
	st, in, out := state.(lineState), input.(lineInput), output.(Result)
	admit := func() (bool, any) {
		if st.has(in.fan) {
			return true, st
		}
		fans := st.fans()
		if len(fans) >= in.capacity {
			return false, st
		}
		return true, st.with(in.fan)
	}
	switch in.op {
	case opJoin:
		switch out {
		case Active: // admitted at once: nobody waited and there was room
			return admit()
		case Waiting, Unknown:
			return true, st
		}
	case opAdmit:
		return admit()
	case opOut: // a leave whose answer never came may have happened: it only ever frees a slot
		if st.has(in.fan) {
			return true, st.without(in.fan)
		}
		return true, st
	}
	return false, st
}

// canonicalLine puts each operation of a line history at one instant of its interval: an admission at
// its return (as late as it may have happened), a slot given back (an out) at its call (as early as
// it may have happened), an operation that changes nothing (a join answered WAITING or without an
// answer) at its call. The history is linearizable exactly when this order fits the line model, and
// porcupine checks it at once, where its search over the recorded intervals does not finish: at the
// failover of the scale-out test 75 admissions each span the 5 s a fan waits across it, at capacity,
// and the search was still running after a minute (1,443 operations).
//
// Why the order is enough: take any order that fits the model. Move each admission to its return and
// each out to its call. A fan is then ACTIVE from its admission's return to its first out's call, a
// stretch inside the one it was ACTIVE in that order (its admission came no later, its out no
// earlier), so at every instant at most the fans that order had are ACTIVE: no admission finds the
// line fuller than before. That holds when each fan (token) has at most one admission and every out of
// it is called after that admission returned, which is how clients record them (an out's since is the
// moment the fan saw ACTIVE or later). When a history breaks this, canonicalLine returns it unchanged
// and false. TestCanonicalLineOrder holds the claim against porcupine's search on the recorded
// intervals of random small histories.
func canonicalLine(history []porcupine.Operation) ([]porcupine.Operation, bool) {
	admitted := map[[2]string]porcupine.Operation{} // by concert and fan: the admission
	admits := func(op porcupine.Operation) bool {
		in := op.Input.(lineInput)
		return in.op == opAdmit || in.op == opJoin && op.Output.(Result) == Active
	}
	for _, op := range history {
		in := op.Input.(lineInput)
		if admits(op) {
			if _, twice := admitted[[2]string{in.concert, in.fan}]; twice {
				return history, false
			}
			admitted[[2]string{in.concert, in.fan}] = op
		}
	}
	out := make([]porcupine.Operation, len(history))
	for i, op := range history {
		in := op.Input.(lineInput)
		in.seen = [2]int64{op.Call, op.Return}
		at := op.Call
		switch {
		case admits(op):
			at = op.Return
		case in.op == opOut:
			if a, ok := admitted[[2]string{in.concert, in.fan}]; ok && op.Call < a.Return {
				return history, false
			}
		}
		op.Input, op.Call, op.Return = in, at, at
		out[i] = op
	}
	return out, true
}

// lineModel checks each concert's line alone: one partition per concert.
var lineModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		return partition(history, func(op porcupine.Operation) string { return op.Input.(lineInput).concert })
	},
	Init: func() any { return lineState("") },
	Step: lineStep,
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(lineState)))
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		in := input.(lineInput)
		var d string
		switch in.op {
		case opJoin:
			d = fmt.Sprintf("%s joins → %s", in.fan, output.(Result))
		case opOut:
			d = fmt.Sprintf("%s out (%s) → %s", in.fan, in.why, output.(Result))
		default:
			d = fmt.Sprintf("%s %s", in.fan, in.op)
		}
		if in.seen != [2]int64{} {
			d += " " + interval(porcupine.Operation{Call: in.seen[0], Return: in.seen[1]})
		}
		return d
	},
	DescribeState: func(state any) string {
		fans := state.(lineState).fans()
		return fmt.Sprintf("%d ACTIVE: %s", len(fans), strings.Join(fans, ", "))
	},
}
