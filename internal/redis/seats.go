package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func (s *Seats) reservationScript(ctx context.Context, sc *script, concertID string, keys, args []string) (ticketrush.Reservation, error) {
	msg, err := s.exec(ctx, sc, keys, args)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	raw, err := msg.ToString()
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	return decodeReservation(concertID, raw)
}

// Hold holds a seat for the fan of claims: the token ACTIVE, the fan under the hold limit and the seat
// free, then the reservation and its event written (one call where the seat slot is the concert's own,
// else gate_apply's hold step and seat_take). It reports whether it lapsed another fan's expired hold of the seat on
// the way.
func (s *Seats) Hold(ctx context.Context, c ticketrush.QueueClaims, scheduleID, seatID string, price int64, now time.Time) (ticketrush.Reservation, bool, error) {
	var msg rueidis.RedisMessage
	w, err := s.ways(ctx, c.ConcertID)
	if err == nil {
		msg, err = w.seats.hold(ctx, c, scheduleID, seatID, price, w.seats.newID(scheduleID, seatID), now)
	}
	if errors.Is(err, ticketrush.ErrQueueTokenExpired) {
		// The hold knows the concert slot's line only: a fan of a sharded line may still wait in theirs.
		if st, serr := w.line.expired(ctx, c, ticketrush.TokenState{Status: ticketrush.StatusExpired}, now); serr == nil &&
			st.Status == ticketrush.StatusWaiting {
			err = ticketrush.ErrQueueNotActive
		}
	}
	if err != nil {
		return ticketrush.Reservation{}, false, fmt.Errorf("hold %s/%s: %w", scheduleID, seatID, err)
	}
	res := ticketrush.Reservation{UserID: c.UserID, ConcertID: c.ConcertID, ScheduleID: scheduleID, SeatID: seatID,
		Seq: c.Seq, Price: price, Status: ticketrush.ReservationHeld}
	lapsed, err := holdReply(msg, &res)
	if err != nil {
		return ticketrush.Reservation{}, false, fmt.Errorf("hold %s/%s: %w", scheduleID, seatID, err)
	}
	return res, lapsed, nil
}

// holdReply reads seat_hold's {res, expires, created, lapsed} into res.
func holdReply(msg rueidis.RedisMessage, res *ticketrush.Reservation) (lapsed bool, err error) {
	r, err := reply(msg, 4)
	if err != nil {
		return false, err
	}
	res.ID, res.ExpiresAt, res.CreatedAt = r.str(0), fromMillis(r.int(1)), fromMillis(r.int(2))
	lapsed = r.flag(3)
	return lapsed, r.err
}

// reservationSeats is where reservation id is kept: the seats of its concert's layout, and the concert
// and schedule the id names; an id that names none is ErrNotFound.
func (s *Seats) reservationSeats(ctx context.Context, id string) (seats seatWay, concertID, scheduleID string, err error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return nil, "", "", ticketrush.ErrNotFound
	}
	w, err := s.ways(ctx, concertID)
	return w.seats, concertID, scheduleID, err
}

// Reservation reads one reservation.
func (s *Seats) Reservation(ctx context.Context, id string) (ticketrush.Reservation, error) {
	seats, concertID, scheduleID, err := s.reservationSeats(ctx, id)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	key := seats.reservationsKey(scheduleID, id)
	raw, err := s.client.Do(ctx, s.client.B().Hget().Key(key).Field(id).Build()).ToString()
	if err != nil {
		if isNil(err) {
			return ticketrush.Reservation{}, ticketrush.ErrNotFound
		}
		_, err = mapError(err)
		return ticketrush.Reservation{}, fmt.Errorf("read reservation: %w", err)
	}
	return decodeReservation(concertID, raw)
}

// Cancel gives back the user's HELD reservation. The cancel stands whatever the gate's step answers
// (where it is a call of its own): a gate entry left behind runs out at the hold's expiry (and
// a follow's failure is counted in the script error metric).
func (s *Seats) Cancel(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error) {
	return s.reservationStep(ctx, id, now, false, "cancel",
		func(sk ScheduleKeys, gate *ConcertKeys) (*script, []string, []string) {
			keys, args := sk.holdCancel(userID, id, s.limit, gate, now)
			return s.holdCancel, keys, args
		})
}

// Sweep lapses up to batch expired holds of a concert and returns how many it lapsed.
func (s *Seats) Sweep(ctx context.Context, concertID string, scheduleIDs []string, now time.Time, batch int) (int, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", concertID, err)
	}
	n, err := w.seats.sweep(ctx, scheduleIDs, now, batch)
	if err != nil {
		return n, fmt.Errorf("sweep %s: %w", concertID, err)
	}
	return n, nil
}

// sweepReply reads hold_sweep's count of holds lapsed.
func sweepReply(msg rueidis.RedisMessage) (int, error) {
	n, err := msg.ToInt64()
	if err != nil {
		return 0, fmt.Errorf("script reply: %w", err)
	}
	if n < 0 {
		return 0, fmt.Errorf("script reply: %d holds lapsed", n)
	}
	return int(n), nil
}

// ScheduleCounts returns the taken and sold seats of each schedule of a concert.
func (s *Seats) ScheduleCounts(ctx context.Context, concertID string, scheduleIDs []string, now time.Time) ([]ticketrush.ScheduleCount, error) {
	return onSeats(ctx, s.core, concertID, "schedule counts", func(seats seatWay) ([]ticketrush.ScheduleCount, error) {
		return seats.counts(ctx, scheduleIDs, now)
	})
}

// onSeats is read's answer through the seats of concertID's layout; on an error, the layout's or
// read's, it is T's zero value and the error names what and the concert.
func onSeats[T any](ctx context.Context, s *core, concertID, what string, read func(seatWay) (T, error)) (T, error) {
	w, err := s.ways(ctx, concertID)
	if err == nil {
		var out T
		if out, err = read(w.seats); err == nil {
			return out, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("%s %s: %w", what, concertID, err)
}

// countsReply reads schedule_counts's {taken, sold, ...}: two integers per schedule of scheduleIDs.
func countsReply(msg rueidis.RedisMessage, scheduleIDs []string) ([]ticketrush.ScheduleCount, error) {
	r, err := reply(msg, 2*len(scheduleIDs))
	if err != nil {
		return nil, fmt.Errorf("schedule counts: %w", err)
	}
	out := make([]ticketrush.ScheduleCount, len(scheduleIDs))
	for i, id := range scheduleIDs {
		out[i] = ticketrush.ScheduleCount{ScheduleID: id, Taken: r.int(2 * i), Sold: r.int(2*i + 1)}
	}
	if r.err != nil {
		return nil, fmt.Errorf("schedule counts: %w", r.err)
	}
	return out, nil
}

// GatedScheduleCounts returns the token's state and the schedule counts, in one round trip.
func (s *Seats) GatedScheduleCounts(ctx context.Context, c ticketrush.QueueClaims, scheduleIDs []string, now time.Time) (ticketrush.TokenState, []ticketrush.ScheduleCount, error) {
	w, err := s.ways(ctx, c.ConcertID)
	if err != nil {
		return ticketrush.TokenState{}, nil, err
	}
	return w.seats.gatedCounts(ctx, c, scheduleIDs, now)
}

// GatedSeats returns the token's state and the schedule's seat states (seat -> raw state, for the seats
// that are not plainly available), in one round trip.
func (s *Seats) GatedSeats(ctx context.Context, c ticketrush.QueueClaims, scheduleID string, now time.Time) (ticketrush.TokenState, map[string]ticketrush.SeatStatus, error) {
	w, err := s.ways(ctx, c.ConcertID)
	if err != nil {
		return ticketrush.TokenState{}, nil, err
	}
	keys := w.seats.seatsKeys(scheduleID)
	reads := make([]func() rueidis.Completed, len(keys))
	for i, key := range keys {
		reads[i] = func() rueidis.Completed { return s.client.B().Hgetall().Key(key).Build() }
	}
	st, data, err := s.gated(ctx, c, now, reads...)
	if err != nil {
		return st, nil, err
	}
	out := map[string]ticketrush.SeatStatus{}
	for _, d := range data {
		msg, err := d.ToMessage()
		if err != nil {
			_, err = mapError(err)
			return st, nil, fmt.Errorf("seat map: %w", err)
		}
		err = seatsReply(msg, now, out)
		if err != nil && st.Status.GateError() != nil {
			return st, nil, nil // the token is refused: its refusal, not the seats' fault, is the answer
		}
		if err != nil {
			return st, nil, fmt.Errorf("seat map: %w", err)
		}
	}
	return st, out, nil
}

// seatsReply reads the HGETALL of a seats hash of a schedule into out: the seats not available at now.
// Every entry must be a seat state: one that is not is an error, not a free seat (the seat scripts
// would refuse a hold of it).
func seatsReply(msg rueidis.RedisMessage, now time.Time, out map[string]ticketrush.SeatStatus) error {
	raw, err := msg.AsStrMap()
	if err != nil {
		return err
	}
	ms := now.UnixMilli()
	for seat, state := range raw {
		t, ok := takenSeat(state)
		if !ok {
			return fmt.Errorf("seat %s: %q is no seat state", seat, state)
		}
		if status := t.StatusAt(ms); status != ticketrush.SeatAvailable { // a lapsed hold not yet swept reads AVAILABLE
			out[seat] = status
		}
	}
	return nil
}

// TakenSeats reads the seats of each schedule of a concert that are not plainly free (HGETALL of each
// seats hash of the schedules, a block's each, pipelined in one round trip): what an instance's seat view keeps.
func (s *Seats) TakenSeats(ctx context.Context, concertID string, scheduleIDs []string) ([]map[string]ticketrush.TakenSeat, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return nil, err
	}
	var cmds rueidis.Commands
	of := make([]int, 0, len(scheduleIDs)) // the schedule of each command
	for i, id := range scheduleIDs {
		for _, key := range w.seats.seatsKeys(id) {
			cmds = append(cmds, s.client.B().Hgetall().Key(key).Build())
			of = append(of, i)
		}
	}
	out := make([]map[string]ticketrush.TakenSeat, len(scheduleIDs))
	for i := range out {
		out[i] = map[string]ticketrush.TakenSeat{}
	}
	for j, res := range s.client.DoMulti(ctx, cmds...) {
		raw, err := res.AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("seats of %s: %w", scheduleIDs[of[j]], unavailable(err))
		}
		takenSeats(raw, out[of[j]])
	}
	return out, nil
}

// takenSeats reads a seats hash of a schedule into out; an entry that is no seat state counts as free, as the seat
// map shows it (the script would refuse it: the view only refuses what the script surely would).
func takenSeats(raw map[string]string, out map[string]ticketrush.TakenSeat) {
	for seat, v := range raw {
		if t, ok := takenSeat(v); ok {
			out[seat] = t
		}
	}
}

// takenSeat reads one seat state of a seats hash; ok is false for anything that is no seat state.
// TakenSeat.StatusAt is what the seat map shows of it (GatedSeats and the seat view alike).
func takenSeat(v string) (ticketrush.TakenSeat, bool) {
	st, ok := parseSeatState(v)
	if !ok {
		return ticketrush.TakenSeat{}, false
	}
	switch st.Kind {
	case SeatSold:
		return ticketrush.TakenSeat{Sold: true}, true
	case SeatPaying:
		return ticketrush.TakenSeat{Paying: true}, true
	}
	return ticketrush.TakenSeat{HeldUntil: st.Expires}, true // SeatHeld: parseSeatState knows no other kind
}
