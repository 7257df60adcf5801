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
	keys, args := s.keys.Concert(concertID).paymentClaim(userID, scheduleID, id, s.limit, now)
	return s.reservationScript(ctx, s.paymentClaim, concertID, keys, args)
}

// Complete is step 3 of a payment: the sale. Completing a PAID reservation again returns it unchanged.
func (s *Store) Complete(ctx context.Context, id string, d ticketrush.Payment, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	keys, args := s.keys.Concert(concertID).paymentComplete(scheduleID, id, d, now)
	return s.reservationScript(ctx, s.paymentComplete, concertID, keys, args)
}

// Release undoes step 1 of a payment that was not debited.
func (s *Store) Release(ctx context.Context, id string, now time.Time) (ticketrush.Reservation, error) {
	concertID, scheduleID, ok := ticketrush.ParseReservationID(id)
	if !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	keys, args := s.keys.Concert(concertID).paymentRelease(scheduleID, id, now)
	return s.reservationScript(ctx, s.paymentRelease, concertID, keys, args)
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
