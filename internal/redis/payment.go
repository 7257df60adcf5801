package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Claim is step 1 of a payment.
func (s *Store) Claim(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	sched, err := s.seatSlots(ctx, concertID)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	if sched == nil {
		keys, args := s.keys.Concert(concertID).paymentClaim(userID, scheduleID, id, s.limit, now)
		return s.reservationScript(ctx, s.paymentClaim, concertID, keys, args)
	}
	// The claim on the schedule's slot, then its gate entry pinned (or, for a reservation PAID already,
	// the sale's gate_done again: what a crash after the sale may have left undone). A failure of the
	// gate's step fails the claim: the payment stops before its debit, and its retry claims again.
	keys, args := s.keys.Concert(concertID).Schedule(scheduleID).paymentClaim(userID, id, s.limit, now)
	r, err := s.reservationScript(ctx, s.paymentClaim, concertID, keys, args)
	if err != nil {
		return r, err
	}
	if err := s.follow(ctx, r, now); err != nil {
		return ticketrush.Reservation{}, fmt.Errorf("claim %s: %w", id, err)
	}
	return r, nil
}

// Complete is step 3 of a payment: the sale. Completing a PAID reservation again returns it unchanged.
func (s *Store) Complete(ctx context.Context, id string, d ticketrush.Payment, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	sched, err := s.seatSlots(ctx, concertID)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	if sched == nil {
		keys, args := s.keys.Concert(concertID).paymentComplete(scheduleID, id, d, now)
		return s.reservationScript(ctx, s.paymentComplete, concertID, keys, args)
	}
	// The sale on the schedule's slot, then the fan's side on the concert's (gate_done). A failure of
	// the latter fails the call: the sale stands, and a retry of the payment finds it PAID and runs
	// gate_done again (Claim).
	keys, args := s.keys.Concert(concertID).Schedule(scheduleID).seatSell(id, d)
	r, err := s.reservationScript(ctx, s.seatSell, concertID, keys, args)
	if err != nil {
		return r, err
	}
	if err := s.follow(ctx, r, now); err != nil {
		return ticketrush.Reservation{}, fmt.Errorf("complete %s: %w", id, err)
	}
	return r, nil
}

// Release undoes step 1 of a payment that was not debited.
func (s *Store) Release(ctx context.Context, id string, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	sched, err := s.seatSlots(ctx, concertID)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	if sched == nil {
		keys, args := s.keys.Concert(concertID).paymentRelease(scheduleID, id, now)
		return s.reservationScript(ctx, s.paymentRelease, concertID, keys, args)
	}
	keys, args := s.keys.Concert(concertID).Schedule(scheduleID).paymentRelease(id, now)
	r, err := s.reservationScript(ctx, s.paymentRelease, concertID, keys, args)
	if err != nil {
		return r, err
	}
	// The release stands whatever the gate's step answers: the entry pinned by the claim runs out by
	// itself (PayingGate after the claim, or at the hold's expiry).
	_ = s.follow(ctx, r, now)
	return r, nil
}

// StuckPayments lists reservations of a concert claimed for payment before before: a crash may have
// left them in the middle.
func (s *Store) StuckPayments(ctx context.Context, concertID string, before time.Time, limit int) ([]string, error) {
	if sched, err := s.seatSlots(ctx, concertID); err != nil {
		return nil, fmt.Errorf("stuck payments %s: %w", concertID, err)
	} else if sched != nil {
		ids, err := s.stuckSpread(ctx, s.keys.Concert(concertID), sched, before, limit)
		if err != nil {
			return nil, fmt.Errorf("stuck payments %s: %w", concertID, err)
		}
		return ids, nil
	}
	cmd := s.client.B().Zrangebyscore().Key(s.keys.Concert(concertID).Paying()).Min("-inf").Max(millis(before)).
		Limit(0, int64(limit)).Build()
	ids, err := s.client.Do(ctx, cmd).AsStrSlice()
	if err != nil {
		_, err = mapError(err)
		return nil, fmt.Errorf("stuck payments %s: %w", concertID, err)
	}
	return ids, nil
}
