package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// migrateBatch is how many fans or fields one migration call moves.
const migrateBatch = 1000

// LayoutMigration is what MigrateLayout moved of one concert.
type LayoutMigration struct {
	Waiting int64 // fans moved from a sorted set into places and order
	Seen    int64 // liveness fields moved from the hash into seen
	Seats   int   // reservations moved from the concert's keys into its seat slots
	Gates   int   // fans' gate records moved from the concert's slot into their line shards
}

// MigrateLayout moves what concert c holds of an earlier layout version into LayoutVersion: each line's
// sorted set into places and order (line_migrate, all the lines' calls in one round trip, a batch each,
// until none is left), a line of one slot's liveness hash into seen (seen_migrate, which records the
// version in the concert's settings), then seats kept in the concert's own keys into seat slots
// (migrateSeats). Running it again, or on a concert of the current layout, moves nothing; a concert not in
// Redis answers ErrNotFound (its first load writes the current layout).
func (s *Store) MigrateLayout(ctx context.Context, c ticketrush.Concert) (LayoutMigration, error) {
	m, err := s.migrateLine(ctx, c.ID)
	if err != nil {
		return m, err
	}
	m.Seats, err = s.migrateSeats(ctx, c)
	if err != nil {
		return m, fmt.Errorf("migrate the seats of %s: %w", c.ID, err)
	}
	m.Gates, err = s.migrateGates(ctx, c.ID)
	if err != nil {
		return m, fmt.Errorf("migrate the gate of %s: %w", c.ID, err)
	}
	return m, nil
}

// migrateGates moves the gate records a line over shards kept in the concert's slot before version 4
// into each fan's shard (HSETNX: a record the shard has already is newer), then deletes the concert's.
// A crash between leaves the concert's in place; the next run moves them again, changing nothing the
// first run wrote. A line of one shard keeps its gate in the concert's slot: nothing moves.
func (s *Store) migrateGates(ctx context.Context, concertID string) (int, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return 0, err
	}
	seats, ok := w.seats.(seatSlots)
	if !ok || seats.shards <= 1 {
		return 0, nil
	}
	k := s.keys.Concert(concertID)
	records, err := s.client.Do(ctx, s.client.B().Hgetall().Key(k.Gate()).Build()).AsStrMap()
	if err != nil {
		return 0, unavailable(err)
	}
	if len(records) == 0 {
		return 0, nil
	}
	cmds := make(rueidis.Commands, 0, len(records))
	for user, v := range records {
		cmds = append(cmds, s.client.B().Hsetnx().Key(seats.fanGate(user).key()).Field(user).Value(v).Build())
	}
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return 0, unavailable(err)
		}
	}
	if err := s.client.Do(ctx, s.client.B().Del().Key(k.Gate()).Build()).Error(); err != nil {
		return 0, unavailable(err)
	}
	return len(records), nil
}

// migrateLine moves a line of an older layout (MigrateLayout).
func (s *Store) migrateLine(ctx context.Context, concertID string) (LayoutMigration, error) {
	var m LayoutMigration
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return m, fmt.Errorf("migrate layout of %s: %w", concertID, err)
	}
	calls := w.line.migrations()
	for len(calls) > 0 {
		msgs, err := s.execMulti(ctx, s.lineMigrate, calls)
		if err != nil {
			return m, fmt.Errorf("migrate the line of %s: %w", concertID, err)
		}
		left := calls[:0]
		for i, msg := range msgs {
			r, err := reply(msg, 2)
			if err != nil {
				return m, fmt.Errorf("migrate the line of %s: %w", concertID, err)
			}
			m.Waiting += r.int(0)
			if r.int(1) > 0 {
				left = append(left, calls[i])
			}
			if r.err != nil {
				return m, fmt.Errorf("migrate the line of %s: %w", concertID, r.err)
			}
		}
		calls = left
	}
	k := s.keys.Concert(concertID)
	for {
		keys, args := seenMigrate(k, migrateBatch)
		msg, err := s.exec(ctx, s.seenMigrate, keys, args)
		if err != nil {
			return m, fmt.Errorf("migrate the liveness of %s: %w", concertID, err)
		}
		r, err := reply(msg, 2)
		if err != nil {
			return m, fmt.Errorf("migrate the liveness of %s: %w", concertID, err)
		}
		m.Seen += r.int(0)
		if left := r.int(1); r.err != nil || left == 0 {
			return m, r.err
		}
	}
}

// seenMigrate is seen_migrate's call: at most batch fields of a line of one slot's liveness hash into
// seen, then the layout version recorded.
func seenMigrate(k ConcertKeys, batch int) (keys, args []string) {
	return []string{k.Cfg(), k.Alive(), k.Seen()}, []string{itoa(batch), itoa(LayoutVersion)}
}

// migrateSeats moves the seats of a concert that keeps them in its own keys (cfg sched empty: a line of
// one slot before version 3) into seat slots in the concert's own slot (SlotsTogether): each reservation,
// with its seat and its place in the HELD or paying set (a claim keeps its time), is written as restore
// writes it (restoreSeatSlots: one MULTI per seat slot, its keys emptied first), then, in one MULTI on the
// concert's slot, the concert's own seat keys go, the fans' gate entries and the concert's count are
// written and cfg sched names the slots. A crash before that last MULTI leaves those keys in place and
// sched empty: the next run moves them again. It returns how many reservations it moved; none for a
// concert whose sched is set.
func (s *Store) migrateSeats(ctx context.Context, c ticketrush.Concert) (int, error) {
	k := s.keys.Concert(c.ID)
	sched, err := s.client.Do(ctx, s.client.B().Hget().Key(k.Cfg()).Field("sched").Build()).ToString()
	if err == nil && sched != "" { // in seat slots already: their lists of open holds go (the gate counts)
		var cmds rueidis.Commands
		for _, slot := range splitSchedules(sched) {
			cmds = append(cmds, s.client.B().Unlink().Key(k.Schedule(slot).UserHolds()).Build())
		}
		for _, r := range s.client.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return 0, unavailable(err)
			}
		}
		return 0, nil
	}
	if err != nil && !isNil(err) {
		return 0, unavailable(err)
	}
	res, err := s.inSlotReservations(ctx, k, c.ID)
	if err != nil {
		return 0, err
	}
	slots := SlotsTogether(k, c)
	var rep RestoredConcert
	var cmds []func(rueidis.Builder) rueidis.Completed
	gates, err := restoreSeatSlots(ctx, s.client, &rep, k, c, slots, res, &cmds)
	if err != nil {
		return 0, err
	}
	cmds = append(cmds, hset(k.Gate(), gates)...) // a line of one slot: its gate is the concert's slot
	gone := inSlotSeatKeys(k, c)
	value := joinSlots(slots)
	cmds = append([]func(rueidis.Builder) rueidis.Completed{
		func(b rueidis.Builder) rueidis.Completed { return b.Unlink().Key(gone...).Build() },
		func(b rueidis.Builder) rueidis.Completed { return b.Del().Key(k.Gate()).Build() },
	}, cmds...)
	cmds = append(cmds, func(b rueidis.Builder) rueidis.Completed {
		return b.Hset().Key(k.Cfg()).FieldValue().FieldValue("sched", value).FieldValue("lv", itoa(LayoutVersion)).Build()
	})
	if err := multi(ctx, s.client, cmds); err != nil {
		return 0, err
	}
	s.forget(c.ID)
	return rep.Reservations, nil
}

// inSlotReservations reads every reservation kept in concert k's own keys, with when each being paid was
// claimed.
func (s *Store) inSlotReservations(ctx context.Context, k ConcertKeys, concertID string) ([]ticketrush.ReservationRecord, error) {
	got := s.client.DoMulti(ctx, s.client.B().Hgetall().Key(k.Reservations()).Build(),
		s.client.B().Zrange().Key(k.Paying()).Min("0").Max("-1").Withscores().Build())
	raws, err := got[0].AsStrMap()
	if err != nil {
		return nil, unavailable(err)
	}
	claims, err := got[1].AsZScores()
	if err != nil {
		return nil, unavailable(err)
	}
	claimed := make(map[string]time.Time, len(claims))
	for _, z := range claims {
		claimed[z.Member] = time.UnixMilli(int64(z.Score))
	}
	out := make([]ticketrush.ReservationRecord, 0, len(raws))
	for _, raw := range raws {
		r, err := decodeReservation(concertID, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, ticketrush.ReservationRecord{Reservation: r, ClaimedAt: claimed[r.ID], PaidAmount: -1})
	}
	return out, nil
}

// inSlotSeatKeys is the keys that held concert c's seats in its own slot before layout version 3.
func inSlotSeatKeys(k ConcertKeys, c ticketrush.Concert) []string {
	gone := []string{k.Holds(), k.Reservations(), k.UserHolds(), k.Paying(), k.Sold()}
	for _, sc := range c.Schedules {
		gone = append(gone, k.Seats(sc.ID))
	}
	return gone
}
