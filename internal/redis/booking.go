package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func isNil(err error) bool { return rueidis.IsRedisNil(err) }

func isNoScript(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && rerr.IsNoScript()
}

func (s *Store) reservationScript(ctx context.Context, sc *script, concertID string, keys, args []string) (ticketrush.Reservation, error) {
	msg, err := s.exec(ctx, sc, keys, args)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	raw, err := msg.ToString()
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	return DecodeReservation(concertID, raw)
}

// Hold holds a seat for the fan of claims: one script that checks the token is ACTIVE, the seat free
// and the fan under the hold limit, then writes the reservation and its event. It reports whether it
// lapsed another fan's expired hold of the seat on the way.
func (s *Store) Hold(ctx context.Context, c ticketrush.QueueClaims, scheduleID, seatID string, price int64, now time.Time) (ticketrush.Reservation, bool, error) {
	id := ticketrush.NewReservationID(c.ConcertID, scheduleID)
	k := s.keys.Concert(c.ConcertID)
	msg, err := s.exec(ctx, s.seatHold, append(k.hold(scheduleID), k.UserRate(c.UserID)),
		append(holdArgs(c, scheduleID, seatID, price, id, now), limitArgs(s.limit)...))
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

// Reservation reads one reservation.
func (s *Store) Reservation(ctx context.Context, id string) (ticketrush.Reservation, error) {
	concertID, _, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	raw, err := s.client.Do(ctx, s.client.B().Hget().Key(s.keys.Concert(concertID).Reservations()).Field(id).Build()).ToString()
	if err != nil {
		if isNil(err) {
			return ticketrush.Reservation{}, ticketrush.ErrNotFound
		}
		_, err = mapError(err)
		return ticketrush.Reservation{}, fmt.Errorf("read reservation: %w", err)
	}
	return DecodeReservation(concertID, raw)
}

// Cancel gives back the user's HELD reservation.
func (s *Store) Cancel(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	k := s.keys.Concert(concertID)
	return s.reservationScript(ctx, s.holdCancel, concertID, append(k.cancel(scheduleID), k.UserRate(userID)),
		append(cancelArgs(userID, id, now), limitArgs(s.limit)...))
}

// Sweep lapses up to batch expired holds of a concert and returns how many it lapsed.
func (s *Store) Sweep(ctx context.Context, concertID string, scheduleIDs []string, now time.Time, batch int) (int, error) {
	msg, err := s.exec(ctx, s.holdSweep, s.keys.Concert(concertID).sweep(scheduleIDs), sweepArgs(now, batch, scheduleIDs))
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", concertID, err)
	}
	n, err := msg.AsInt64()
	return int(n), err
}

// ScheduleCounts returns the taken and sold seats of each schedule of a concert.
func (s *Store) ScheduleCounts(ctx context.Context, concertID string, scheduleIDs []string, now time.Time) ([]ticketrush.ScheduleCount, error) {
	msg, err := s.exec(ctx, s.scheduleCounts, s.keys.Concert(concertID).counts(scheduleIDs), countsArgs(now, scheduleIDs))
	if err != nil {
		return nil, fmt.Errorf("schedule counts %s: %w", concertID, err)
	}
	return countsReply(&msg, scheduleIDs)
}

func countsReply(msg interface{ AsIntSlice() ([]int64, error) }, scheduleIDs []string) ([]ticketrush.ScheduleCount, error) {
	nums, err := msg.AsIntSlice()
	if err != nil {
		return nil, err
	}
	if len(nums) != 2*len(scheduleIDs) {
		return nil, fmt.Errorf("schedule counts: %d numbers for %d schedules", len(nums), len(scheduleIDs))
	}
	out := make([]ticketrush.ScheduleCount, len(scheduleIDs))
	for i, id := range scheduleIDs {
		out[i] = ticketrush.ScheduleCount{ScheduleID: id, Taken: nums[2*i], Sold: nums[2*i+1]}
	}
	return out, nil
}

// GatedScheduleCounts returns the token's state and the schedule counts, in one round trip.
func (s *Store) GatedScheduleCounts(ctx context.Context, c ticketrush.QueueClaims, scheduleIDs []string, now time.Time) (ticketrush.TokenState, []ticketrush.ScheduleCount, error) {
	k := s.keys.Concert(c.ConcertID)
	counts := func() rueidis.Completed {
		return s.evalsha(s.scheduleCounts, k.counts(scheduleIDs), countsArgs(now, scheduleIDs))
	}
	st, data, err := s.gated(ctx, c, now, counts)
	if err != nil {
		return st, nil, err
	}
	msg, err := data.ToMessage()
	if isNoScript(err) {
		msg, err = s.exec(ctx, s.scheduleCounts, k.counts(scheduleIDs), countsArgs(now, scheduleIDs))
	}
	if err != nil {
		_, err = mapError(err)
		return st, nil, fmt.Errorf("schedule counts: %w", err)
	}
	out, err := countsReply(&msg, scheduleIDs)
	return st, out, err
}

// GatedSeats returns the token's state and the schedule's seat states (seat -> raw state, for the seats
// that are not plainly available), in one round trip.
func (s *Store) GatedSeats(ctx context.Context, c ticketrush.QueueClaims, scheduleID string, now time.Time) (ticketrush.TokenState, map[string]ticketrush.SeatStatus, error) {
	read := func() rueidis.Completed {
		return s.client.B().Hgetall().Key(s.keys.Concert(c.ConcertID).Seats(scheduleID)).Build()
	}
	st, data, err := s.gated(ctx, c, now, read)
	if err != nil {
		return st, nil, err
	}
	raw, err := data.AsStrMap()
	if err != nil {
		_, err = mapError(err)
		return st, nil, fmt.Errorf("seat map: %w", err)
	}
	ms := now.UnixMilli()
	out := make(map[string]ticketrush.SeatStatus, len(raw))
	for seat, state := range raw {
		if t, ok := takenSeat(state); ok {
			if status := t.StatusAt(ms); status != ticketrush.SeatAvailable { // a lapsed hold not yet swept reads AVAILABLE
				out[seat] = status
			}
		}
	}
	return st, out, nil
}

// gated runs the token status script and cmd in one round trip. A gated call is the fan showing up
// (noShowSeconds): the same round trip takes them off the concert's no-show watch.
func (s *Store) gated(ctx context.Context, c ticketrush.QueueClaims, now time.Time, cmd func() rueidis.Completed) (ticketrush.TokenState, rueidis.RedisResult, error) {
	msg, data, err := s.execWith(ctx, s.status, s.keys.Concert(c.ConcertID).status(), statusArgs(c, now), cmd, s.shown(c))
	if err != nil {
		return ticketrush.TokenState{}, data, fmt.Errorf("token status: %w", err)
	}
	st, err := tokenState(msg)
	return st, data, err
}

// Claim is step 1 of a payment.
func (s *Store) Claim(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	k := s.keys.Concert(concertID)
	return s.reservationScript(ctx, s.paymentClaim, concertID, append(k.claim(scheduleID), k.UserRate(userID)),
		append(claimArgs(userID, id, now), limitArgs(s.limit)...))
}

// Complete is step 3 of a payment: the sale. Completing a PAID reservation again returns it unchanged.
func (s *Store) Complete(ctx context.Context, id string, d ticketrush.Payment, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	return s.reservationScript(ctx, s.paymentComplete, concertID, s.keys.Concert(concertID).complete(scheduleID), completeArgs(id, d, now))
}

// Release undoes step 1 of a payment that was not debited.
func (s *Store) Release(ctx context.Context, id string, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	return s.reservationScript(ctx, s.paymentRelease, concertID, s.keys.Concert(concertID).release(scheduleID), releaseArgs(id, now))
}

// StuckPayments lists reservations of a concert claimed for payment before before: a crash may have
// left them in the middle.
func (s *Store) StuckPayments(ctx context.Context, concertID string, before time.Time, limit int) ([]string, error) {
	cmd := s.client.B().Zrangebyscore().Key(s.keys.Concert(concertID).Paying()).Min("-inf").Max(millis(before)).
		Limit(0, int64(limit)).Build()
	ids, err := s.client.Do(ctx, cmd).AsStrSlice()
	if err != nil {
		_, err = mapError(err)
		return nil, fmt.Errorf("stuck payments %s: %w", concertID, err)
	}
	return ids, nil
}

// Debit is step 2 of a payment: the reservation's price leaves the user's wallet, once per reservation.
func (s *Store) Debit(ctx context.Context, userID, resID string, amount int64, now time.Time) (ticketrush.Payment, error) {
	msg, err := s.exec(ctx, s.walletDebit, s.keys.Wallet(userID).money(), debitArgs(userID, resID, amount, now))
	if err != nil {
		return ticketrush.Payment{}, fmt.Errorf("debit %s: %w", resID, err)
	}
	raw, err := msg.ToString()
	if err != nil {
		return ticketrush.Payment{}, err
	}
	return DecodeMovement(resID, raw)
}

// Debited returns the debit of a reservation, if there is one.
func (s *Store) Debited(ctx context.Context, userID, resID string) (ticketrush.Payment, bool, error) {
	raw, err := s.client.Do(ctx, s.client.B().Hget().Key(s.keys.Wallet(userID).Debits()).Field(resID).Build()).ToString()
	if isNil(err) {
		return ticketrush.Payment{}, false, nil
	}
	if err != nil {
		_, err = mapError(err)
		return ticketrush.Payment{}, false, fmt.Errorf("read debit %s: %w", resID, err)
	}
	p, err := DecodeMovement(resID, raw)
	return p, err == nil, err
}

// Refund gives a reservation's debit back, once; it reports whether there was a debit to refund.
func (s *Store) Refund(ctx context.Context, userID, resID string, now time.Time) (bool, error) {
	msg, err := s.exec(ctx, s.walletRefund, s.keys.Wallet(userID).money(), refundArgs(userID, resID, now))
	if err != nil {
		return false, fmt.Errorf("refund %s: %w", resID, err)
	}
	raw, err := msg.ToString()
	return raw != "", err
}

// Balance returns a user's balance (0 for a user never seen).
func (s *Store) Balance(ctx context.Context, userID string) (int64, error) {
	n, err := s.client.Do(ctx, s.client.B().Hget().Key(s.keys.Wallet(userID).Balances()).Field(userID).Build()).AsInt64()
	if isNil(err) {
		return 0, nil
	}
	if err != nil {
		_, err = mapError(err)
		return 0, fmt.Errorf("read balance: %w", err)
	}
	return n, nil
}

// Charge adds amount to a user's balance; with an idempotency key, a retry with the same fingerprint
// replies with the first charge (replayed true).
func (s *Store) Charge(ctx context.Context, userID string, amount int64, idemKey, fingerprint string, now time.Time) (ticketrush.Charge, bool, error) {
	w := s.keys.Wallet(userID)
	id := "c" + ticketrush.NewID() + ticketrush.NewID()
	msg, err := s.exec(ctx, s.pointsCharge, append(w.charge(userID, idemKey), w.UserRate(userID)),
		append(chargeArgs(userID, amount, id, now, idemKey, fingerprint), limitArgs(s.limit)...))
	if err != nil {
		return ticketrush.Charge{}, false, fmt.Errorf("charge: %w", err)
	}
	c, replayed, err := chargeReply(msg)
	if err != nil {
		return ticketrush.Charge{}, false, fmt.Errorf("charge: %w", err)
	}
	return c, replayed, nil
}

// chargeReply reads points_charge's {charge id, amount, balance, created at, replayed}.
func chargeReply(msg rueidis.RedisMessage) (ticketrush.Charge, bool, error) {
	r, err := reply(msg, 5)
	if err != nil {
		return ticketrush.Charge{}, false, err
	}
	c := ticketrush.Charge{ID: r.str(0), Amount: r.int(1), Balance: r.int(2), CreatedAt: fromMillis(r.int(3))}
	replayed := r.flag(4)
	return c, replayed, r.err
}

// rememberStep runs one step of payment_remember and returns its state and the record it replied.
func (s *Store) rememberStep(ctx context.Context, step, userID, key, fingerprint, ref string, created bool, now time.Time) (string, idempotencyRecord, error) {
	msg, err := s.exec(ctx, s.paymentRemember, s.keys.Wallet(userID).remember(userID, key), rememberArgs(userID, key, fingerprint, ref, created, now, step))
	if err != nil {
		return "", idempotencyRecord{}, fmt.Errorf("idempotency key %s: %w", step, err)
	}
	r, err := reply(msg, 2)
	if err != nil {
		return "", idempotencyRecord{}, fmt.Errorf("idempotency key %s: %w", step, err)
	}
	state, raw := r.str(0), r.str(1)
	if r.err != nil {
		return "", idempotencyRecord{}, fmt.Errorf("idempotency key %s: %w", step, r.err)
	}
	var rec idempotencyRecord
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return "", idempotencyRecord{}, fmt.Errorf("decode idempotency record: %w", err)
		}
	}
	return state, rec, nil
}

// ReserveKey reserves a user's Idempotency-Key for a payment before it is made, in one script call that
// a concurrent request with the same key sees: reserved is true when this call took the key; done is
// true when the key has its answer already (ref and created are that answer); neither when a request
// with the same fingerprint holds it. The key used with another fingerprint is IDEMPOTENCY_CONFLICT.
func (s *Store) ReserveKey(ctx context.Context, userID, key, fingerprint, ref string, now time.Time) (reserved, done bool, doneRef string, created bool, err error) {
	state, rec, err := s.rememberStep(ctx, "reserve", userID, key, fingerprint, ref, false, now)
	if err != nil {
		return false, false, "", false, err
	}
	switch state {
	case "RESERVED":
		return true, false, "", false, nil
	case "PENDING":
		return false, false, "", false, nil
	case "DONE":
		return false, true, rec.Ref, rec.Created, nil
	}
	return false, false, "", false, fmt.Errorf("idempotency key reserve: unexpected state %q", state)
}

// Remember records the answer of a payment under its Idempotency-Key for 24 h, with an event that makes
// the record durable (restore brings it back). The first answer recorded stands: Remember returns the
// recorded payment and creation flag, which a later caller answers with instead of its own.
func (s *Store) Remember(ctx context.Context, userID, key, fingerprint, ref string, created bool, now time.Time) (string, bool, error) {
	state, rec, err := s.rememberStep(ctx, "finish", userID, key, fingerprint, ref, created, now)
	if err != nil {
		return "", false, err
	}
	if state != "DONE" {
		return "", false, fmt.Errorf("idempotency key finish: unexpected state %q", state)
	}
	return rec.Ref, rec.Created, nil
}

// ReleaseKey frees a user's Idempotency-Key reserved for a payment that was refused, so that a retry
// acts again; a key with its answer recorded, or reserved with another fingerprint, stays.
func (s *Store) ReleaseKey(ctx context.Context, userID, key, fingerprint string, now time.Time) error {
	_, _, err := s.rememberStep(ctx, "release", userID, key, fingerprint, "", false, now)
	return err
}
