package redis

import (
	"context"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Claim is step 1 of a payment. The claim on the schedule's slot is followed by its gate entry pinned (or, for a reservation PAID already, the sale's follow again: what a crash after
// the sale may have left undone); a failure of the gate's step fails the claim: the payment stops
// before its debit, and its retry claims again.
func (s *Seats) Claim(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error) {
	return s.reservationStep(ctx, id, now, true, "claim",
		func(sk ScheduleKeys, gate *ConcertKeys) (*script, []string, []string) {
			keys, args := sk.paymentClaim(userID, id, s.limit, gate, now)
			return s.paymentClaim, keys, args
		})
}

// Complete is step 3 of a payment: the sale. Completing a PAID reservation again returns it unchanged.
// The sale on the schedule's slot is followed by the fan's side on the concert's (lib/follow.lua); where
// that is a call of its own, its failure fails the call: the sale stands, and a retry of the payment
// finds it PAID and follows again (Claim).
func (s *Seats) Complete(ctx context.Context, id string, d ticketrush.Payment, now time.Time) (ticketrush.Reservation, error) {
	return s.reservationStep(ctx, id, now, true, "complete",
		func(sk ScheduleKeys, gate *ConcertKeys) (*script, []string, []string) {
			keys, args := sk.seatSell(id, d, gate, now)
			return s.seatSell, keys, args
		})
}

// Release undoes step 1 of a payment that was not debited. The release stands
// whatever the gate's step answers: the entry pinned by the claim runs out by itself (PayingGate after
// the claim, or at the hold's expiry).
func (s *Seats) Release(ctx context.Context, id string, now time.Time) (ticketrush.Reservation, error) {
	return s.reservationStep(ctx, id, now, false, "release",
		func(sk ScheduleKeys, gate *ConcertKeys) (*script, []string, []string) {
			keys, args := sk.paymentRelease(id, gate, now)
			return s.paymentRelease, keys, args
		})
}

// reservationStep runs one step of reservation id, the script step names on the schedule's seat slot:
// with the fan's side of it (follow) in the same call where that slot is the concert's own (gate not
// nil), else as a call of its own after it. With must, a failure of that second call fails the step;
// without, it is left to run out (a gate entry carries its own expiry).
func (s *Seats) reservationStep(ctx context.Context, id string, now time.Time, must bool, what string,
	step func(sk ScheduleKeys, gate *ConcertKeys) (*script, []string, []string)) (ticketrush.Reservation, error) {
	seats, _, scheduleID, err := s.reservationSeats(ctx, id)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	return seats.step(ctx, id, scheduleID, now, must, what, step)
}

// StuckPayments lists reservations of a concert claimed for payment before before: a crash may have
// left them in the middle.
func (s *Seats) StuckPayments(ctx context.Context, concertID string, before time.Time, limit int) ([]string, error) {
	return onSeats(ctx, s.core, concertID, "stuck payments", func(seats seatWay) ([]string, error) {
		return seats.stuck(ctx, before, limit)
	})
}
