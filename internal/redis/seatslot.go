package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Each schedule's seats live in a seat slot (seatslot_keys.go). Where that slot is the concert's own (a
// line of one shard), a hold and each step of a reservation are one call: seat_hold, and the step with its
// follow (lib/follow.lua). Elsewhere a step that touched the concert's slot alone crosses two, and is a
// short chain of idempotent steps keyed by the reservation id, as a payment is (docs/scaleout.md, "One
// concert over every master: seat slots"):
//
//   - a hold: gate_apply's hold step on the fan's line shard (rate, token ACTIVE, shown up, one of the fan's
//     maxHoldsPerUser reserved until the hold's expiry), then seat_take on the schedule's; a refusal there
//     gives the gate entry back (gate_apply's follow). A crash between the two leaves a gate entry that stops
//     counting at the expiry the hold would have had.
//   - a cancel, a payment's claim, release and sale: the reservation's step on the schedule's slot, then
//     its gate entry follows it on the concert's slot (gate_apply's follow, which after a sale makes the fan's
//     token DONE when it was their last open hold). A crash between leaves an entry that counts at most
//     until the hold's expiry, or PayingGate after a claim.
//   - a lapse needs no step on the concert's slot: the gate entry ran out with the hold.

// PayingGate is how long after a claim a reservation being paid keeps counting against its fan's hold
// limit, at least (and at least until its hold's expiry): longer than the sweeper takes to finish or
// undo a payment left claimed (booking.StuckAfter and a sweep's pace, TestPayingGateOutlastsStuckPayments),
// whose step then sets the entry to what the reservation became.
const PayingGate = time.Minute

// loadSchedules writes the seat count of each schedule of a concert, where it is not there yet (schedule_load, one pipelined round trip).
func (s *Seats) loadSchedules(ctx context.Context, c ticketrush.Concert, now time.Time) error {
	w, err := s.ways(ctx, c.ID)
	if err != nil {
		return err
	}
	return w.seats.load(ctx, c, now)
}

// gateAt is where a fan's gate steps run (gate_apply): their line shard, which keeps their token, their
// record of open holds and their show-up, and is told the concert's hold settings, which it cannot read.
// Steps are batched per shard (key).
type gateAt struct {
	concertID string
	k         ConcertKeys
	shard     ShardKeys
	hold      string // ms
	maxHolds  string
}

// key names the gate's batches: the shard's record's key.
func (g gateAt) key() string { return g.shard.Gate() }

// holdSpread is a hold of a seat whose seat slot is not the concert's: gate_apply's hold step, then seat_take, then
// the gate entry given back when seat_take refused. An answer lost on the way (ErrUnavailable) gives nothing back:
// the seat may be held; the entry runs out with the hold either way.
func (s *Seats) holdSpread(ctx context.Context, g gateAt, c ticketrush.QueueClaims, slot SeatSlot, seatID string, price int64, id string, now time.Time) (rueidis.RedisMessage, error) {
	expires, err := s.gateHold(ctx, g, c, id, now)
	if err != nil {
		return rueidis.RedisMessage{}, err
	}
	if err := s.crashAt("gate"); err != nil {
		return rueidis.RedisMessage{}, err
	}
	keys, args := g.k.Schedule(slot).seatTake(c, seatID, price, id, expires, now)
	msg, err := s.exec(ctx, s.seatTake, keys, args)
	if err != nil && !lost(err) {
		if err := s.crashAt("take"); err != nil {
			return rueidis.RedisMessage{}, err
		}
		// The fan's hold limit back at once; if this fails too, the entry runs out at expires.
		_ = s.gateFollow(ctx, g, ticketrush.Reservation{ConcertID: c.ConcertID, UserID: c.UserID, ID: id, Seq: c.Seq}, now) // no status: gone
	}
	return msg, err
}

// errAsk is a shard's answer to a hold step whose token it does not have, or whose fan may have shown up
// by a gated read past the no-show deadline: the concert's slot is asked (gateHold).
var errAsk = errors.New("gate_apply: ASK")

// gateHold is step 1 of a hold whose seat slot is not the concert's: the hold's expiry, or the gate's
// refusal (gate_apply's H step, in a batch: gates, asking the concert's slot where the shard cannot tell:
// gateAsk).
func (s *core) gateHold(ctx context.Context, g gateAt, c ticketrush.QueueClaims, id string, now time.Time) (time.Time, error) {
	ms, _, err := s.gateAsk(ctx, g, c, gateStep{at: g, kind: gateHoldStep, user: c.UserID, id: id, seq: c.Seq, now: now})
	if err != nil {
		return time.Time{}, err
	}
	if ms <= now.UnixMilli() {
		return time.Time{}, fmt.Errorf("gate_apply: a hold's expiry %d, not after now", ms)
	}
	return time.UnixMilli(ms), nil
}

// gateShow is a gated read's check on the fan's shard (gate_apply's G step, in a batch): the token
// ACTIVE, the fan shown up. A token the shard refuses is asked of the concert's slot, whose state tells
// why (WAITING at a position, EXPIRED): refusals cost that round trip, an ACTIVE fan's read none on the
// concert's slot.
func (s *core) gateShow(ctx context.Context, g gateAt, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	ms, asked, err := s.gateAsk(ctx, g, c, gateStep{at: g, kind: gateShowStep, user: c.UserID, seq: c.Seq, now: now})
	switch {
	case err == nil:
		return ticketrush.TokenState{Status: ticketrush.StatusActive, ActiveUntil: fromMillis(ms)}, nil
	case asked.Status != "":
		return asked, nil // the concert's slot's state, not ACTIVE: the read's answer
	case errors.Is(err, ticketrush.ErrQueueNotActive) || errors.Is(err, ticketrush.ErrQueueTokenExpired):
		st, _, err := s.gatedOnConcert(ctx, c, now)
		return st, err
	}
	return ticketrush.TokenState{}, err
}

// gateAsk runs a hold's or a gated read's step at the fan's gate. A shard that answers ASK learns the
// token from the concert's slot (gatedOnConcert, which takes the fan off its no-show watch too) and
// takes the step again with it; a token not ACTIVE there is the step's refusal, and asked its state.
func (s *core) gateAsk(ctx context.Context, g gateAt, c ticketrush.QueueClaims, step gateStep) (ms int64, asked ticketrush.TokenState, err error) {
	ms, err = s.gates.do(ctx, g.key(), step)
	if !errors.Is(err, errAsk) {
		return ms, asked, err
	}
	if asked, _, err = s.gatedOnConcert(ctx, c, step.now); err != nil {
		return 0, ticketrush.TokenState{}, err
	}
	if asked.Status != ticketrush.StatusActive {
		if e := asked.Status.GateError(); e != nil {
			return 0, asked, e
		}
		return 0, asked, ticketrush.ErrQueueTokenExpired
	}
	step.given = asked.ActiveUntil
	ms, err = s.gates.do(ctx, g.key(), step)
	if errors.Is(err, errAsk) {
		return 0, ticketrush.TokenState{}, fmt.Errorf("gate_apply: ASK for a token given (%w)", ticketrush.ErrUnavailable)
	}
	return ms, ticketrush.TokenState{}, err
}

// gateFollow sets the fan's gate entry of r, as a step on its seat slot left it, at its gate (gate_apply's
// F step, in a batch: gates; lib/follow.lua). A sale that ends the token on the fan's shard ends it on
// the concert's slot too (token_done), before the step is answered: the fan reads DONE at once.
func (s *core) gateFollow(ctx context.Context, g gateAt, r ticketrush.Reservation, now time.Time) error {
	ended, err := s.gates.do(ctx, g.key(), gateStep{at: g, kind: gateFollowStep, user: r.UserID, id: r.ID, seq: r.Seq,
		status: string(r.Status), expires: r.ExpiresAt, now: now})
	if err != nil || ended != 1 {
		return err
	}
	keys, args := g.k.tokenDone(r.UserID, r.Seq, now)
	_, err = s.exec(ctx, s.tokenDone, keys, args)
	return err
}

// The gate's steps of a concert whose seat slots are not its own go to its gate in batches (batch.go):
// gate_apply decides each as if alone, in the batch's order.
const (
	maxGateSteps = 256
	gateWait     = 3 * time.Second // bounds a gate_apply call: no one request's deadline is the batch's
)

// gateStep is one step of gate_apply at its gate: a hold's (gateHoldStep) or a gated read's
// (gateShowStep), with given, the token's activeUntil the concert's slot answered after an ASK, or a follow (gateFollowStep, of the reservation
// as its step left it: status and expires).
type gateStep struct {
	at                  gateAt
	kind                string
	user, id, status    string
	seq                 uint64
	expires, now, given time.Time
}

const (
	gateHoldStep   = "H"
	gateShowStep   = "G"
	gateFollowStep = "F"
)

// newGates is the store's batches of gate_apply calls, one queue a gate. A hold's step whose request ended
// before its batch was sent is dropped; one that ended while the call was in flight has its entry given
// back (a follow without a status, sent on its own: the hold never reaches its seat). A follow is always
// sent: it sets what its step on the seat slot left.
func (s *core) newGates() *batches[gateStep, int64] {
	return &batches[gateStep, int64]{max: maxGateSteps, wait: gateWait, send: s.sendGates,
		keep: func(st gateStep) bool { return st.kind == gateFollowStep },
		gone: func(ctx context.Context, _ string, st gateStep, expires int64) {
			if st.kind == gateHoldStep && expires > 0 {
				back := ticketrush.Reservation{ConcertID: st.at.concertID, UserID: st.user, ID: st.id, Seq: st.seq}
				go func() { _ = s.gateFollow(context.WithoutCancel(ctx), st.at, back, st.now) }()
			}
		}}
}

// sendGates is one gate_apply call for a batch of steps of one gate: each hold's expiry (ms) and each
// gated read's activeUntil (ms), or its refusal (errAsk: the token asked of the concert's slot), each follow's 1 when the fan's token became DONE,
// else 0.
func (s *core) sendGates(ctx context.Context, _ string, steps []gateStep) ([]batchResult[int64], error) {
	keys, args := steps[0].at.gateApply(steps, s.limit)
	msg, err := s.exec(ctx, s.gateApply, keys, args)
	if err != nil {
		return nil, err
	}
	items, err := msg.ToArray()
	if err != nil || len(items) != len(steps) {
		return nil, fmt.Errorf("gate_apply reply: %d items for %d steps (%v)", len(items), len(steps), err)
	}
	out := make([]batchResult[int64], len(steps))
	for i, it := range items {
		if it.IsInt64() {
			out[i].res, _ = it.AsInt64()
			continue
		}
		code, _ := it.ToString()
		checks := steps[i].kind != gateFollowStep
		if code == "ASK" && checks {
			out[i].err = errAsk
			continue
		}
		e, ok := ticketrush.ErrorOf(ticketrush.Code(code))
		if !ok || !checks {
			return nil, fmt.Errorf("gate_apply reply: %q for a %s step", code, steps[i].kind)
		}
		s.metrics.errors.WithLabelValues(s.gateApply.name, code).Inc()
		out[i].err = e
	}
	return out, nil
}

// follow sets the gate entry of r, as its step on the schedule's slot left it, at its gate: counting
// until its expiry while HELD, until PayingGate after now at least while being paid, the token DONE
// after a sale that was the fan's last open hold, and gone otherwise.
func (s *core) follow(ctx context.Context, g gateAt, r ticketrush.Reservation, now time.Time) error {
	if err := s.crashAt("follow"); err != nil {
		return err
	}
	return s.gateFollow(ctx, g, r, now)
}

// lost reports whether err may hide a step that ran (the answer was lost), rather than a refusal. A
// step whose connection could not be dialled was never sent: not lost.
func lost(err error) bool {
	if unsent(err) {
		return false
	}
	return errors.Is(err, ticketrush.ErrUnavailable) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}

// unsent reports whether err is the failure to dial the connection a step was to go on: the step never
// reached Redis.
func unsent(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}

// crashAt is the crash hook of the chains' step boundaries (tests only: a test sets Store.crash).
func (s *core) crashAt(step string) error {
	if s.crash == nil {
		return nil
	}
	return s.crash(step)
}

// sweepSpread lapses expired holds of each schedule of a concert whose seats are spread, one pipelined
// round trip over the schedules' slots.
func (s *Seats) sweepSpread(ctx context.Context, k ConcertKeys, slots []SeatSlot, now time.Time, batch int) (int, error) {
	calls := make([]call, len(slots))
	for i, slot := range slots {
		calls[i] = built(k.Schedule(slot).holdSweep(now, batch))
	}
	msgs, err := s.execMulti(ctx, s.holdSweep, calls)
	total := 0
	for _, msg := range msgs {
		if n, rerr := sweepReply(msg); rerr == nil {
			total += n
		}
	}
	return total, err
}

// scheduleCountsSpread reads each schedule's counts on its slot, one pipelined round trip.
func (s *Seats) scheduleCountsSpread(ctx context.Context, k ConcertKeys, slots []SeatSlot, now time.Time) ([]ticketrush.ScheduleCount, error) {
	calls := make([]call, len(slots))
	for i, slot := range slots {
		calls[i] = built(k.Schedule(slot).scheduleCounts(now))
	}
	scheduleIDs := slotSchedules(slots)
	msgs, err := s.execMulti(ctx, s.scheduleCounts, calls)
	if err != nil {
		return nil, err
	}
	out := make([]ticketrush.ScheduleCount, len(scheduleIDs))
	for i, msg := range msgs {
		one, err := countsReply(msg, scheduleIDs[i:i+1])
		if err != nil {
			return nil, err
		}
		out[i] = one[0]
	}
	return out, nil
}

// gatedCountsSpread is GatedScheduleCounts of a concert whose seats are spread: the token check (gated)
// and each schedule's counts on its own slot, in one pipelined round trip (two when Redis did not know
// a script yet).
func (s *Seats) gatedCountsSpread(ctx context.Context, c ticketrush.QueueClaims, slots []SeatSlot, now time.Time) (ticketrush.TokenState, []ticketrush.ScheduleCount, error) {
	k := s.keys.Concert(c.ConcertID)
	reads := make([]func() rueidis.Completed, len(slots))
	for i, slot := range slots {
		ck, ca := k.Schedule(slot).scheduleCounts(now)
		reads[i] = func() rueidis.Completed { return s.evalsha(s.scheduleCounts, ck, ca) }
	}
	st, res, err := s.gated(ctx, c, now, reads...)
	if err != nil || st.Status.GateError() != nil {
		return st, nil, err
	}
	for _, r := range res {
		if isNoScript(r.Error()) {
			counts, err := s.scheduleCountsSpread(ctx, k, slots, now)
			return st, counts, err
		}
	}
	scheduleIDs := slotSchedules(slots)
	out := make([]ticketrush.ScheduleCount, len(scheduleIDs))
	for i := range scheduleIDs {
		msg, err := res[i].ToMessage()
		if err != nil {
			return st, nil, fmt.Errorf("schedule counts: %w", s.scriptError(s.scheduleCounts, err))
		}
		one, err := countsReply(msg, scheduleIDs[i:i+1])
		if err != nil {
			return st, nil, err
		}
		out[i] = one[0]
	}
	return st, out, nil
}

// slotSchedules is the schedule of each seat slot, in their order (a schedule once a block).
func slotSchedules(slots []SeatSlot) []string {
	out := make([]string, len(slots))
	for i, s := range slots {
		out[i] = s.ScheduleID()
	}
	return out
}

// stuckSpread lists the reservations claimed before before over every schedule's slot (one pipelined
// round trip), oldest claims first, at most limit.
func (s *Seats) stuckSpread(ctx context.Context, k ConcertKeys, slots []SeatSlot, before time.Time, limit int) ([]string, error) {
	cmds := make(rueidis.Commands, len(slots))
	for i, slot := range slots {
		cmds[i] = s.client.B().Zrangebyscore().Key(k.Schedule(slot).Paying()).Min("-inf").Max(millis(before)).
			Withscores().Limit(0, int64(limit)).Build()
	}
	type claimed struct {
		id string
		at float64
	}
	var all []claimed
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		zs, err := r.AsZScores()
		if err != nil {
			return nil, unavailable(err)
		}
		for _, z := range zs {
			all = append(all, claimed{id: z.Member, at: z.Score})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at < all[j].at })
	out := make([]string, 0, min(limit, len(all)))
	for _, c := range all[:min(limit, len(all))] {
		out = append(out, c.id)
	}
	return out, nil
}

// carryInventory writes the sum of the schedules' seat counts of a concert whose seats are spread onto
// the concert's inv (inventory_carry), where the line's scripts read it: a pipelined read of every
// schedule's count and the holds past their expiry not lapsed yet, then one script call. The admission
// tick of a sharded line runs it before line_admit, so sold-out closes the line within a tick. A line of
// one shard, whose seat slots are all in the concert's own slot, carries them in its queue_tick instead
// (concertWays.carried).
func (s *Seats) carryInventory(ctx context.Context, k ConcertKeys, sched []SeatSlot, now time.Time) error {
	cmds := make(rueidis.Commands, 0, 2*len(sched))
	for _, slot := range sched {
		sk := k.Schedule(slot)
		cmds = append(cmds, s.client.B().Hmget().Key(sk.Inventory()).Field("avail", "sold").Build(),
			s.client.B().Zcount().Key(sk.Holds()).Min("-inf").Max(millis(now)).Build())
	}
	res := s.client.DoMulti(ctx, cmds...)
	var avail, sold int64
	for i, slot := range sched {
		id := slot.ScheduleID()
		counts, err := res[2*i].ToArray()
		if err != nil {
			return fmt.Errorf("seat count of %s: %w", id, unavailable(err))
		}
		if len(counts) != 2 || counts[0].IsNil() {
			return fmt.Errorf("seat count of %s: not loaded", id)
		}
		a, aerr := counts[0].AsInt64()
		n, serr := counts[1].AsInt64()
		lapsed, lerr := res[2*i+1].AsInt64()
		if err := errors.Join(aerr, serr, lerr); err != nil {
			return fmt.Errorf("seat count of %s: %w", id, unavailable(err))
		}
		avail += a + lapsed
		sold += n
	}
	keys, args := k.inventoryCarry(avail, sold, now)
	_, err := s.exec(ctx, s.inventoryCarry, keys, args)
	return err
}

// SeatEvents is the event stream of a schedule's seat slot (a concert whose seats are spread).
func (k Keys) SeatEvents(concertID string, slot SeatSlot) EventSource {
	s := k.Concert(concertID).Schedule(slot)
	return EventSource{Stream: s.Events(), DeadLetters: s.DeadLetters(), ConcertID: concertID, Schedule: slot.ScheduleID()}
}

func (s *Seats) newSeatSlotScripts() {
	s.gateApply = s.newScript("gate_apply", false)
	s.tokenDone = s.newScript("token_done", false)
	s.seatTake = s.newScript("seat_take", false)
	s.seatSell = s.newScript("seat_sell", false)
	s.scheduleLoad = s.newScript("schedule_load", false)
	s.inventoryCarry = s.newScript("inventory_carry", false)
}
