package linearize

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// lineOp is what a client did or saw of a concert's line.
type lineOp uint8

const (
	opJoin  lineOp = iota + 1 // POST /v1/concerts/{id}/queue
	opAdmit                   // the fan was seen ACTIVE: admitted between their join's call and that answer
	opOut                     // the fan's slot was given back: a leave, the last hold paid (DONE), an expiry
	opWait                    // the fan was seen WAITING at a position, by an answer to a poll
)

func (o lineOp) String() string { return [...]string{"?", "join", "admitted", "out", "WAITING"}[o] }

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
	position int64    // of a join answered WAITING or an opWait: the position told (0: not known)
	asked    int64    // of an admission: the call of the request that saw ACTIVE; of a told out: the join's call
	leave    bool     // of an out: the fan's own leave (DELETE /v1/queue)
	told     bool     // of an out: the fan was told their token is not ACTIVE (Recorder.Expired)
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

// lineStep is the line's sequential specification as far as admission goes (docs/api.md, Waiting
// room): never more than activeCapacity fans ACTIVE at once. A fan counts in from an admission somebody
// saw (a join or a poll that answered ACTIVE) and out from a leave, the payment of their last hold
// (DONE), or, for a fan told their token is not ACTIVE any more, the earliest event that could have
// given the slot back without the fan seeing it (placeTold). An admission nobody saw (a join whose
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
		case opWait:
			d = fmt.Sprintf("%s WAITING at position %d", in.fan, in.position)
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

// placeTold puts each out of a fan told their token is not ACTIVE any more (Recorder.Expired) at the
// earliest instant something the fan did not see could have given their slot back (docs/api.md, Waiting
// room): their active time lapsing, activeTTL after the admission; a no-show drop, noShow after it (the
// admission came after the join's call, in.asked); a failover that ended before the join's call could
// not lose the admission, any other that began before the fan was told could. Never before the fan saw
// ACTIVE (the out's call). With none of these possible the slot is never given back: the out is
// dropped, and the fan counts ACTIVE to the end.
func placeTold(history []porcupine.Operation, queues map[string]Queue, failovers []failover) []porcupine.Operation {
	out := history[:0:0]
	for _, op := range history {
		in := op.Input.(lineInput)
		if in.op != opOut || !in.told {
			out = append(out, op)
			continue
		}
		q := queues[in.concert]
		at := int64(math.MaxInt64)
		for _, d := range []time.Duration{q.ActiveTTL, q.NoShow} {
			if d > 0 {
				at = min(at, in.asked+d.Nanoseconds())
			}
		}
		for _, f := range failovers {
			if f.to > in.asked && f.from < op.Return {
				at = min(at, f.from)
			}
		}
		if at == math.MaxInt64 {
			continue
		}
		in.seen = [2]int64{op.Call, op.Return}
		op.Input, op.Call, op.Return = in, max(at, op.Call), max(at, op.Call, op.Return)
		out = append(out, op)
	}
	return out
}

// lineRules checks what a fan saw of their place in the line, on the recorded intervals (no search):
//
//   - arrival order (docs/api.md, Waiting room; docs/scaleout.md, "Arrival order across shards"): a
//     fan is admitted ahead of a fan whose join was answered before theirs only if that join was
//     answered while their own was in flight. One shard or many, a join takes its arrival seq between
//     its call and its answer, and the line admits in seq order: so a fan X whose join was answered
//     before Y's join was sent is never still WAITING once Y was seen ACTIVE.
//   - a leave answered 204 is final: the fan is never seen WAITING or ACTIVE after it.
//   - a WAITING fan's position never grows: it is seq − head − leaves between (docs/scaleout.md,
//     "Positions"), and neither the head nor the leaves move back. The fans a concurrent join may
//     overtake took their seqs before it answered, so they are counted from its first answer on.
//
// A WAITING answer is read from the instance's view: it may be as old as stale before its call. A
// failover may lose joins, leaves and admissions of before the kill (docs/durability.md), and while its
// replica is not elected yet the views wait on the dead master: no WAITING answer given after a kill
// counts, and no ACTIVE one across it. An answer that never came says nothing here. It returns one
// sentence per breach.
func lineRules(history []porcupine.Operation, stale int64, failovers []failover) []string {
	across := func(from, to int64) bool { // a failover may lie between from and to
		return slices.ContainsFunc(failovers, func(f failover) bool { return f.to > from && f.from < to })
	}
	kill := int64(math.MaxInt64) // WAITING answers given after it do not count
	for _, f := range failovers {
		kill = min(kill, f.from)
	}
	var broken []string
	for _, part := range partition(history, func(op porcupine.Operation) string { return op.Input.(lineInput).concert }) {
		concert := part[0].Input.(lineInput).concert
		fans := lineTokens(part, stale, kill)
		broken = append(broken, arrivalBreaches(concert, fans)...)
		for _, t := range fans {
			broken = append(broken, t.breaches(concert, across)...)
		}
	}
	return broken
}

// lineReading is one answer a fan was given: its interval, and the position of a WAITING one.
type lineReading struct{ call, ret, position int64 }

// lineToken is what lineRules knows of one fan's queue token in one concert's line.
type lineToken struct {
	fan      string
	joinCall int64 // the first join's call: the token's seq was taken after it
	joinRet  int64 // the first answer to a join: the seq was taken before it (math.MaxInt64: none)
	seen     int64 // when first seen ACTIVE (math.MaxInt64: never)
	active   []lineReading
	waits    []lineReading
	leaves   [][2]int64
}

// lineTokens reads the tokens of one concert's operations, in the order their fans first appear: a
// poll's WAITING answer read as old as stale before its call, and no WAITING answer given after kill.
func lineTokens(part []porcupine.Operation, stale, kill int64) []*lineToken {
	byFan := map[string]*lineToken{}
	var fans []*lineToken
	tok := func(fan string) *lineToken {
		t, ok := byFan[fan]
		if !ok {
			t = &lineToken{fan: fan, joinCall: math.MaxInt64, joinRet: math.MaxInt64, seen: math.MaxInt64}
			byFan[fan] = t
			fans = append(fans, t)
		}
		return t
	}
	for _, op := range part {
		in, out := op.Input.(lineInput), op.Output.(Result)
		t := tok(in.fan)
		if in.op == opJoin { // a join sent again gets the token the first one made (200)
			t.joinCall = min(t.joinCall, op.Call)
		}
		switch {
		case in.op == opJoin && (out == Waiting || out == Active):
			t.joinRet = min(t.joinRet, op.Return)
			if out == Active {
				t.seen = min(t.seen, op.Return)
				t.active = append(t.active, lineReading{op.Call, op.Return, 0})
			} else if op.Return < kill {
				t.waits = append(t.waits, lineReading{op.Call, op.Return, in.position})
			}
		case in.op == opAdmit:
			t.seen = min(t.seen, op.Return)
			t.active = append(t.active, lineReading{in.asked, op.Return, 0})
		case in.op == opWait && op.Return < kill:
			t.waits = append(t.waits, lineReading{op.Call - stale, op.Return, in.position})
		case in.op == opOut && in.leave && out == Ok:
			t.leaves = append(t.leaves, [2]int64{op.Call, op.Return})
		}
	}
	return fans
}

// arrivalBreaches are the breaches of arrival order in concert's line: a fan X whose join was answered
// before Y's join was sent, still WAITING once Y was seen ACTIVE.
func arrivalBreaches(concert string, fans []*lineToken) []string {
	var broken []string
	for _, y := range fans {
		if y.seen == math.MaxInt64 || y.joinCall == math.MaxInt64 {
			continue
		}
		for _, x := range fans {
			if x.joinRet >= y.joinCall {
				continue
			}
			for _, w := range x.waits {
				if w.call > y.seen {
					broken = append(broken, fmt.Sprintf("line %s: %s, whose join was answered at %s before %s's was sent at %s, "+
						"was still WAITING after %s was seen ACTIVE at %s (a poll answered %s)",
						concert, x.fan, ms(x.joinRet), y.fan, ms(y.joinCall), y.fan, ms(y.seen), interval(porcupine.Operation{Call: w.call, Return: w.ret})))
					break
				}
			}
		}
	}
	return broken
}

// breaches are the breaches of t's own readings in concert's line: seen ACTIVE or WAITING after a
// leave answered 204 (unless a failover may lie between, per across), and a WAITING position that grew.
func (t *lineToken) breaches(concert string, across func(from, to int64) bool) []string {
	var broken []string
	for _, l := range t.leaves {
		for _, c := range []struct {
			what string
			seen []lineReading
		}{{"ACTIVE", t.active}, {"WAITING", t.waits}} {
			what, seen := c.what, c.seen
			if i := slices.IndexFunc(seen, func(r lineReading) bool { return r.call > l[1] && !across(l[0], r.ret) }); i >= 0 {
				broken = append(broken, fmt.Sprintf("line %s: %s left (204 at %s) and was seen %s after it %s",
					concert, t.fan, ms(l[1]), what, interval(porcupine.Operation{Call: seen[i].call, Return: seen[i].ret})))
			}
		}
	}
	for _, j := range t.waits {
		i := slices.IndexFunc(t.waits, func(i lineReading) bool {
			return i.position > 0 && j.position > i.position && i.ret <= j.call
		})
		if j.position > 0 && i >= 0 {
			broken = append(broken, fmt.Sprintf("line %s: %s WAITING at position %d %s, then at position %d %s",
				concert, t.fan, t.waits[i].position, interval(porcupine.Operation{Call: t.waits[i].call, Return: t.waits[i].ret}),
				j.position, interval(porcupine.Operation{Call: j.call, Return: j.ret})))
			break
		}
	}
	return broken
}

// ms is an instant in milliseconds of the recorder's clock.
func ms(at int64) string { return fmt.Sprintf("%.3f ms", float64(at)/1e6) }
