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

// lineInput is one operation on a line; capacity is the concert's activeCapacity.
type lineInput struct {
	concert  string
	op       lineOp
	fan      string
	capacity int
	why      string // of an out: what the client saw
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
		switch in.op {
		case opJoin:
			return fmt.Sprintf("%s joins → %s", in.fan, output.(Result))
		case opOut:
			return fmt.Sprintf("%s out (%s) → %s", in.fan, in.why, output.(Result))
		}
		return fmt.Sprintf("%s %s", in.fan, in.op)
	},
	DescribeState: func(state any) string {
		fans := state.(lineState).fans()
		return fmt.Sprintf("%d ACTIVE: %s", len(fans), strings.Join(fans, ", "))
	},
}
