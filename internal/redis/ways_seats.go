package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The seats of a concert's layout (ways.go): the seat slots each schedule's seats are in.

// seatWay is how a concert's seats are reached (seatSlots).
type seatWay interface {
	hold(ctx context.Context, c ticketrush.QueueClaims, scheduleID, seatID string, price int64, id string, now time.Time) (rueidis.RedisMessage, error)
	// step runs one step of reservation id with the script step names (reservationStep).
	step(ctx context.Context, id, scheduleID string, now time.Time, must bool, what string,
		step func(sk ScheduleKeys, gate *ConcertKeys) (*script, []string, []string)) (ticketrush.Reservation, error)
	sweep(ctx context.Context, scheduleIDs []string, now time.Time, batch int) (int, error)
	counts(ctx context.Context, scheduleIDs []string, now time.Time) ([]ticketrush.ScheduleCount, error)
	gatedCounts(ctx context.Context, c ticketrush.QueueClaims, scheduleIDs []string, now time.Time) (ticketrush.TokenState, []ticketrush.ScheduleCount, error)
	// newID is a fresh reservation id of seatID, naming its seat's block (ticketrush.ReservationBlock).
	newID(scheduleID, seatID string) string
	// seatsKeys is the seats hashes of a schedule, one a block; reservationsKey the res hash that keeps
	// reservation id.
	seatsKeys(scheduleID string) []string
	reservationsKey(scheduleID, id string) string
	stuck(ctx context.Context, before time.Time, limit int) ([]string, error)
	// carry sums the schedules' seat counts onto the concert's, where the line reads them.
	carry(ctx context.Context, now time.Time) error
	// load writes each schedule's seat count where it is not there yet.
	load(ctx context.Context, c ticketrush.Concert, now time.Time) error
}

// seatSlots are a concert's seats in a seat slot per schedule, or per block of a schedule (seatslot.go,
// placement.go). A step on a seat slot in the concert's own slot (together) is one call; on another, a
// short chain over that slot and the concert's.
type seatSlots struct {
	s        *Seats
	k        ConcertKeys
	id       string
	sched    []SeatSlot
	blocks   seatBlocks // sched by schedule, built once with the layout: no grouping per call
	together map[SeatSlot]bool
	// shards is the line's (1: its gate would be the concert's slot, where its seats are), holdMS and maxHolds the settings a
	// shard's gate is told (gateAt)
	shards           int
	holdMS, maxHolds string
}

// fanGate is where the gate steps of userID's holds run: their line shard.
func (w seatSlots) fanGate(userID string) gateAt {
	return gateAt{concertID: w.id, k: w.k, shard: w.k.Shard(LineShard(userID, w.shards)), hold: w.holdMS, maxHolds: w.maxHolds}
}

// notTogether is the refusal of a step on a seat slot that a line of one shard keeps elsewhere:
// ErrNotFound for a concert not in Redis (no layout names its slots), else errNotTogether.
func (w seatSlots) notTogether() error {
	if len(w.sched) == 0 {
		return ticketrush.ErrNotFound
	}
	return errNotTogether
}

func newSeatSlots(s *Seats, k ConcertKeys, concertID string, sched []SeatSlot) seatSlots {
	w := seatSlots{s: s, k: k, id: concertID, sched: sched, blocks: blocksBySchedule(sched), together: map[SeatSlot]bool{}}
	for _, slot := range sched {
		w.together[slot] = k.Schedule(slot).together(k)
	}
	return w
}

// stock is the inv and holds keys, in pairs, of every seat slot when all are in the concert's own slot
// (a line of one shard): its tick carries their counts itself and its join counts activePerSeat's seats
// from them (lib/carry.lua, lib/stock.lua). Else none: the counts are carried by a call of their own.
func (w seatSlots) stock() []string {
	var out []string
	for _, slot := range w.sched {
		if !w.together[slot] {
			return nil
		}
		sk := w.k.Schedule(slot)
		out = append(out, sk.Inventory(), sk.Holds())
	}
	return out
}

// gate is the concert's keys a step on slot follows with in its own call, or nil where the follow is a
// call of its own.
func (w seatSlots) gate(slot SeatSlot) *ConcertKeys {
	if w.together[slot] {
		return &w.k
	}
	return nil
}

func (w seatSlots) hold(ctx context.Context, c ticketrush.QueueClaims, scheduleID, seatID string, price int64, id string, now time.Time) (rueidis.RedisMessage, error) {
	slot := w.blocks.seat(scheduleID, seatID)
	if w.together[slot] {
		keys, args := w.k.seatHold(w.k.Schedule(slot), c, seatID, price, id, w.s.limit, now)
		return w.s.exec(ctx, w.s.seatHold, keys, args)
	}
	if w.shards <= 1 {
		return rueidis.RedisMessage{}, w.notTogether()
	}
	return w.s.holdSpread(ctx, w.fanGate(c.UserID), c, slot, seatID, price, id, now)
}

// step runs the schedule's step, with the fan's side of it (follow) in the same call where the seat slot
// is the concert's own, else after it: with must, a failure of that second call fails the step; without,
// it is left to run out (a gate entry carries its own expiry).
func (w seatSlots) step(ctx context.Context, id, scheduleID string, now time.Time, must bool, what string,
	step func(sk ScheduleKeys, gate *ConcertKeys) (*script, []string, []string)) (ticketrush.Reservation, error) {
	slot := w.blocks.reservation(scheduleID, id)
	gate := w.gate(slot)
	if gate == nil && w.shards <= 1 {
		return ticketrush.Reservation{}, fmt.Errorf("%s %s: %w", what, id, w.notTogether())
	}
	sc, keys, args := step(w.k.Schedule(slot), gate)
	r, err := w.s.reservationScript(ctx, sc, w.id, keys, args)
	if err != nil || gate != nil {
		return r, err
	}
	if err := w.s.follow(ctx, w.fanGate(r.UserID), r, now); err != nil && must {
		return ticketrush.Reservation{}, fmt.Errorf("%s %s: %w", what, id, err)
	}
	return r, nil
}

func (w seatSlots) sweep(ctx context.Context, scheduleIDs []string, now time.Time, batch int) (int, error) {
	return w.s.sweepSpread(ctx, w.k, w.blocks.all(scheduleIDs), now, batch)
}

func (w seatSlots) counts(ctx context.Context, scheduleIDs []string, now time.Time) ([]ticketrush.ScheduleCount, error) {
	counts, err := w.s.scheduleCountsSpread(ctx, w.k, w.blocks.all(scheduleIDs), now)
	return bySchedule(scheduleIDs, counts), err
}

func (w seatSlots) gatedCounts(ctx context.Context, c ticketrush.QueueClaims, scheduleIDs []string, now time.Time) (ticketrush.TokenState, []ticketrush.ScheduleCount, error) {
	st, counts, err := w.s.gatedCountsSpread(ctx, c, w.blocks.all(scheduleIDs), now)
	if counts == nil {
		return st, nil, err
	}
	return st, bySchedule(scheduleIDs, counts), err
}

func (w seatSlots) newID(scheduleID, seatID string) string {
	b := w.blocks.of(scheduleID)
	if len(b) == 1 {
		return ticketrush.NewReservationID(w.id, scheduleID)
	}
	return ticketrush.NewReservationIDInBlock(w.id, scheduleID, seatBlock(seatID, len(b)))
}

func (w seatSlots) seatsKeys(scheduleID string) []string {
	b := w.blocks.of(scheduleID)
	out := make([]string, len(b))
	for i, slot := range b {
		out[i] = w.k.Schedule(slot).Seats()
	}
	return out
}

func (w seatSlots) reservationsKey(scheduleID, id string) string {
	return w.k.Schedule(w.blocks.reservation(scheduleID, id)).Reservations()
}

// bySchedule sums the counts of each block of a schedule (counts, one a seat slot) into one a schedule,
// in the order of scheduleIDs.
func bySchedule(scheduleIDs []string, counts []ticketrush.ScheduleCount) []ticketrush.ScheduleCount {
	out := make([]ticketrush.ScheduleCount, len(scheduleIDs))
	for i, id := range scheduleIDs {
		out[i].ScheduleID = id
		for _, c := range counts {
			if c.ScheduleID == id {
				out[i].Taken += c.Taken
				out[i].Sold += c.Sold
			}
		}
	}
	return out
}

func (w seatSlots) stuck(ctx context.Context, before time.Time, limit int) ([]string, error) {
	return w.s.stuckSpread(ctx, w.k, w.sched, before, limit)
}

func (w seatSlots) carry(ctx context.Context, now time.Time) error {
	return w.s.carryInventory(ctx, w.k, w.sched, now)
}

func (w seatSlots) load(ctx context.Context, c ticketrush.Concert, now time.Time) error {
	calls := make([]call, len(w.sched))
	for i, slot := range w.sched {
		calls[i] = built(w.k.Schedule(slot).scheduleLoad(int(w.blocks.seats(c, slot)), now))
	}
	_, err := w.s.execMulti(ctx, w.s.scheduleLoad, calls)
	return err
}
