package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Claim is step 1 of a payment. On a spread concert the claim on the schedule's slot is followed by its
// gate entry pinned (or, for a reservation PAID already, the sale's gate_done again: what a crash after
// the sale may have left undone); a failure of the gate's step fails the claim: the payment stops
// before its debit, and its retry claims again.
func (s *Store) Claim(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error) {
	return s.reservationStep(ctx, id, now, true, "claim",
		func(c ConcertKeys, scheduleID string) (*script, []string, []string) {
			keys, args := c.paymentClaim(userID, scheduleID, id, s.limit, now)
			return s.paymentClaim, keys, args
		},
		func(sk ScheduleKeys) (*script, []string, []string) {
			keys, args := sk.paymentClaim(userID, id, s.limit, now)
			return s.paymentClaim, keys, args
		})
}

// Complete is step 3 of a payment: the sale. Completing a PAID reservation again returns it unchanged.
// On a spread concert the sale on the schedule's slot is followed by the fan's side on the concert's
// (gate_done); a failure of the latter fails the call: the sale stands, and a retry of the payment
// finds it PAID and runs gate_done again (Claim).
func (s *Store) Complete(ctx context.Context, id string, d ticketrush.Payment, now time.Time) (ticketrush.Reservation, error) {
	return s.reservationStep(ctx, id, now, true, "complete",
		func(c ConcertKeys, scheduleID string) (*script, []string, []string) {
			keys, args := c.paymentComplete(scheduleID, id, d, now)
			return s.paymentComplete, keys, args
		},
		func(sk ScheduleKeys) (*script, []string, []string) {
			keys, args := sk.seatSell(id, d)
			return s.seatSell, keys, args
		})
}

// Release undoes step 1 of a payment that was not debited. On a spread concert the release stands
// whatever the gate's step answers: the entry pinned by the claim runs out by itself (PayingGate after
// the claim, or at the hold's expiry).
func (s *Store) Release(ctx context.Context, id string, now time.Time) (ticketrush.Reservation, error) {
	return s.reservationStep(ctx, id, now, false, "release",
		func(c ConcertKeys, scheduleID string) (*script, []string, []string) {
			keys, args := c.paymentRelease(scheduleID, id, now)
			return s.paymentRelease, keys, args
		},
		func(sk ScheduleKeys) (*script, []string, []string) {
			keys, args := sk.paymentRelease(id, now)
			return s.paymentRelease, keys, args
		})
}

// reservationStep runs one step of reservation id: on a concert whose seats share its slot, the script
// oneSlot names; on a spread concert (a slot per schedule), the script spread names on the schedule's
// slot, then the fan's side of it on the concert's slot (follow). With must, a failure of that second
// step fails the call; without, it is left to run out (a gate entry carries its own expiry).
func (s *Store) reservationStep(ctx context.Context, id string, now time.Time, must bool, what string,
	oneSlot func(c ConcertKeys, scheduleID string) (*script, []string, []string),
	spread func(sk ScheduleKeys) (*script, []string, []string)) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	return w.seats.step(ctx, id, scheduleID, now, must, what, oneSlot, spread)
}

// StuckPayments lists reservations of a concert claimed for payment before before: a crash may have
// left them in the middle.
func (s *Store) StuckPayments(ctx context.Context, concertID string, before time.Time, limit int) ([]string, error) {
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return nil, fmt.Errorf("stuck payments %s: %w", concertID, err)
	}
	ids, err := w.seats.stuck(ctx, before, limit)
	if err != nil {
		return nil, fmt.Errorf("stuck payments %s: %w", concertID, err)
	}
	return ids, nil
}
