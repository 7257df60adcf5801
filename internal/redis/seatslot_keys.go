package redis

import (
	"strings"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Every concert keeps each schedule's seats, holds, reservations, payments being made, sold count and
// seat count, and an event stream, in a seat slot of its own, or on a cluster in a block of seat slots
// (placement.go), each tagged {c:<id>:s:<slot>} (docs/scaleout.md, "One concert over every master: seat slots"). The concert's slot keeps what the line reads: the fans' open holds over every schedule
// (the gate, ugate) and the concert's seat count, which the tick carries there from the schedules'
// counts. Where each seat slot lands is chosen at creation (placement.go): a line of one shard keeps
// them in the concert's own slot, where a hold and each step of a reservation are one call.

// Schedule returns the keys of a seat slot of a concert whose seats are spread (Layout.Slot names it).
func (c ConcertKeys) Schedule(slot SeatSlot) ScheduleKeys {
	// shard is "<prefix>:{c:<id>:q": the tag's opening, to which a shard appends its number.
	return ScheduleKeys{base: strings.TrimSuffix(c.shard, "q") + "s:" + string(slot) + "}:", schedule: slot.ScheduleID()}
}

// Gate is the concert's hash user -> the fan's record while they have open holds (gate_apply): their
// hold rate bucket '~<time>' first, then each open hold over every schedule, '<res>:<until ms>': the
// per-fan hold limit of a concert whose seats are spread.
func (c ConcertKeys) Gate() string { return c.base + "ugate" }

// ScheduleKeys names the keys of one seat slot of a schedule; all share the hash tag {c:<id>:s:<slot>}.
type ScheduleKeys struct{ base, schedule string }

func (s ScheduleKeys) Seats() string        { return s.base + "seats" }
func (s ScheduleKeys) Holds() string        { return s.base + "holds" }
func (s ScheduleKeys) Reservations() string { return s.base + "res" }

// UserHolds is a list of each fan's open holds that layouts before version 3 keep in the slot; from
// version 3 the gate counts a fan's holds, and the layout migration deletes it.
func (s ScheduleKeys) UserHolds() string   { return s.base + "uholds" }
func (s ScheduleKeys) Paying() string      { return s.base + "paying" }
func (s ScheduleKeys) Sold() string        { return s.base + "sold" }
func (s ScheduleKeys) Inventory() string   { return s.base + "inv" }
func (s ScheduleKeys) Events() string      { return s.base + "events" }
func (s ScheduleKeys) DeadLetters() string { return s.base + "dead" }

// rate is the user's rate bucket of a step on the seat slot: the concert's where the slot is the
// concert's own (gate not nil: one bucket for all of a fan's calls to the concert), else the slot's.
func (s ScheduleKeys) rate(userID string, gate *ConcertKeys) string {
	if gate != nil {
		return gate.UserRate(userID)
	}
	return s.UserRate(userID)
}

// together reports whether the seat slot is concert c's own slot, where one call reaches both.
func (s ScheduleKeys) together(c ConcertKeys) bool { return slot(s.Seats()) == slot(c.Cfg()) }

// UserRate is a user's rate bucket for the calls that start on the schedule's slot (cancel, pay).
func (s ScheduleKeys) UserRate(userID string) string { return s.base + "rl:" + userID }

// All returns the schedule slot's keys but its rate buckets (which expire on their own).
func (s ScheduleKeys) All() []string {
	return []string{s.Seats(), s.Holds(), s.Reservations(), s.UserHolds(), s.Paying(), s.Sold(), s.Inventory(),
		s.Events(), s.DeadLetters()}
}

// gateApply is gate_apply's call: a batch of the gate's steps at one shard, the holds under the rate l.
func (g gateAt) gateApply(steps []gateStep, l UserLimit) (keys, args []string) {
	sh := g.shard
	keys = make([]string, 0, 4+len(steps))
	keys = append(keys, sh.Token(), sh.Places(), sh.Gate(), sh.Shown())
	args = make([]string, 0, 5+8*len(steps))
	args = append(args, itoa(l.Rate), itoa(l.Burst), ms(PayingGate), g.hold, g.maxHolds)
	for _, st := range steps {
		keys = append(keys, sh.UserRate(st.user))
		status, expires, given := "", "", ""
		if st.kind == gateFollowStep {
			status, expires = st.status, millis(st.expires)
		} else if !st.given.IsZero() {
			given = millis(st.given)
		}
		args = append(args, st.kind, st.user, st.id, utoa(st.seq), status, expires, millis(st.now), given)
	}
	return keys, args
}

// tokenDone is token_done's call: user's token of seq DONE on the concert's slot.
func (c ConcertKeys) tokenDone(userID string, seq uint64, now time.Time) (keys, args []string) {
	return []string{c.Active(), c.ActiveSeq(), c.Done(), c.Events()}, []string{userID, utoa(seq), millis(now)}
}

// followKeys is the concert's keys a fan's gate entry follows a step with (lib/follow.lua).
func (c ConcertKeys) followKeys() []string {
	return []string{c.Gate(), c.Active(), c.ActiveSeq(), c.Done(), c.Events()}
}

// seatHold is seat_hold's call: the gate's and seat_take's in one, for a seat slot s in the concert's
// own slot.
func (c ConcertKeys) seatHold(s ScheduleKeys, claims ticketrush.QueueClaims, seatID string, price int64, resID string, l UserLimit, now time.Time) (keys, args []string) {
	keys = []string{c.Cfg(), c.Places(), c.Active(), c.ActiveSeq(), c.Gate(), c.NoShow(), c.UserRate(claims.UserID),
		s.Seats(), s.Holds(), s.Reservations(), s.Events(), s.Inventory()}
	args = []string{claims.UserID, utoa(claims.Seq), s.schedule, seatID, i64toa(price), resID, millis(now), itoa(l.Rate),
		itoa(l.Burst)}
	return keys, args
}

// withGate appends the concert's keys of a step's follow (lib/follow.lua) to keys when gate is not nil:
// a seat slot in the concert's own slot follows in the step's own call.
func withGate(keys []string, gate *ConcertKeys) []string {
	if gate == nil {
		return keys
	}
	return append(keys, gate.followKeys()...)
}

// inventoryCarry is inventory_carry's call: the schedules' counts summed onto the concert's.
func (c ConcertKeys) inventoryCarry(avail, sold int64, now time.Time) (keys, args []string) {
	return []string{c.Inventory(), c.Events()}, []string{i64toa(avail), i64toa(sold), millis(now)}
}

// scheduleLoad is schedule_load's call: the schedule's seat count of seats seats.
func (s ScheduleKeys) scheduleLoad(seats int, now time.Time) (keys, args []string) {
	return []string{s.Inventory(), s.Events()}, []string{itoa(seats), millis(now)}
}

// seatTake is seat_take's call: step 2 of the hold of seatID at price as resID, until expires.
func (s ScheduleKeys) seatTake(claims ticketrush.QueueClaims, seatID string, price int64, resID string, expires, now time.Time) (keys, args []string) {
	keys = []string{s.Seats(), s.Holds(), s.Reservations(), s.Events(), s.Inventory()}
	args = []string{claims.UserID, utoa(claims.Seq), s.schedule, seatID, i64toa(price), resID, millis(expires), millis(now)}
	return keys, args
}

// seatSell is seat_sell's call: the sale of resID, paid by d, on the schedule's side.
func (s ScheduleKeys) seatSell(resID string, d ticketrush.Payment, gate *ConcertKeys, now time.Time) (keys, args []string) {
	keys = withGate([]string{s.Seats(), s.Reservations(), s.Paying(), s.Sold(), s.Events(), s.Inventory()}, gate)
	return keys, []string{resID, d.ID, i64toa(d.Balance), millis(d.PaidAt), millis(now), ms(PayingGate)}
}

// holdCancel is hold_cancel's call on the schedule's slot.
func (s ScheduleKeys) holdCancel(userID, resID string, l UserLimit, gate *ConcertKeys, now time.Time) (keys, args []string) {
	keys = withGate([]string{s.Seats(), s.Holds(), s.Reservations(), s.Events(), s.Inventory(), s.rate(userID, gate)}, gate)
	return keys, []string{userID, resID, millis(now), itoa(l.Rate), itoa(l.Burst), ms(PayingGate)}
}

// holdSweep is hold_sweep's call on the schedule's slot.
func (s ScheduleKeys) holdSweep(now time.Time, batch int) (keys, args []string) {
	keys = []string{s.Holds(), s.Reservations(), s.Events(), s.Inventory(), s.Seats()}
	return keys, []string{millis(now), itoa(batch), s.schedule}
}

// scheduleCounts is schedule_counts's call on the schedule's slot.
func (s ScheduleKeys) scheduleCounts(now time.Time) (keys, args []string) {
	return []string{s.Holds(), s.Reservations(), s.Sold(), s.Seats()}, []string{millis(now), s.schedule}
}

// paymentClaim is payment_claim's call on the schedule's slot.
func (s ScheduleKeys) paymentClaim(userID, resID string, l UserLimit, gate *ConcertKeys, now time.Time) (keys, args []string) {
	keys = withGate([]string{s.Seats(), s.Holds(), s.Reservations(), s.Paying(), s.Events(), s.rate(userID, gate)}, gate)
	return keys, []string{userID, resID, millis(now), itoa(l.Rate), itoa(l.Burst), ms(PayingGate)}
}

// paymentRelease is payment_release's call on the schedule's slot.
func (s ScheduleKeys) paymentRelease(resID string, gate *ConcertKeys, now time.Time) (keys, args []string) {
	keys = withGate([]string{s.Seats(), s.Holds(), s.Reservations(), s.Paying(), s.Events(), s.Inventory()}, gate)
	return keys, []string{resID, millis(now), ms(PayingGate)}
}
