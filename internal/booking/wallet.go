package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Points and payments: a fan's balance, a charge, and a payment of a hold, once per Idempotency-Key.

// Balance returns the user's points.
func (s *Service) Balance(ctx context.Context, userID string) (int64, error) {
	return s.wallet.Balance(ctx, userID)
}

// Charge adds points. With an idempotency key, a retry with the same amount replies with the first
// charge (replayed) and the same key with another amount is refused.
func (s *Service) Charge(ctx context.Context, userID string, amount int64, idemKey string) (ticketrush.Charge, bool, error) {
	if amount < 1 || amount > ticketrush.MaxChargeAmount {
		return ticketrush.Charge{}, false, ticketrush.ErrInvalidAmount
	}
	c, replayed, err := s.wallet.Charge(ctx, userID, amount, idemKey, fmt.Sprintf("POST /v1/points/charges %d", amount), s.now())
	if err != nil {
		return c, false, err
	}
	if !replayed {
		s.metrics.charged.Add(float64(amount))
	}
	return c, replayed, nil
}

// PayOnce is Pay with an optional Idempotency-Key: a retry with the same key and reservation answers as
// the first request did without acting again, a refusal as much as a payment; the same key with
// another request is refused.
//
// The key is reserved before paying, in one script call that every other request with the key sees, so
// one key pays one reservation however many requests race with it. A request that finds the key
// reserved for the same reservation waits (up to keyWait) for the first request's answer and repeats
// it. A payment refused by the sale's rules (replayedRefusal) records its refusal under the key; one
// that failed otherwise (Redis did not answer) releases the key, so its retry acts. When the first
// request crashed before recording its answer, the request that waited for it in vain finishes the
// payment itself (Pay is idempotent per reservation: one debit) and records the answer; the first
// answer recorded stands.
func (s *Service) PayOnce(ctx context.Context, userID, resID, idemKey string) (ticketrush.Payment, bool, error) {
	if idemKey == "" {
		return s.Pay(ctx, userID, resID)
	}
	fingerprint := "POST /v1/payments " + resID
	reserved, done, ref, created, err := s.wallet.ReserveKey(ctx, userID, idemKey, fingerprint, ticketrush.PaymentID(resID), s.now())
	if err != nil {
		return ticketrush.Payment{}, false, err // a refusal the key recorded comes back here
	}
	if !reserved && !done {
		if reserved, done, ref, created, err = s.awaitKey(ctx, userID, idemKey, fingerprint, resID); err != nil {
			return ticketrush.Payment{}, false, err
		}
	}
	if done {
		p, err := s.Payment(ctx, userID, ref)
		return p, created, err
	}
	p, created, err := s.Pay(ctx, userID, resID)
	if err != nil {
		if code, ok := replayedRefusal(err); ok {
			a, rerr := s.wallet.RememberRefusal(ctx, userID, idemKey, fingerprint, code, s.now())
			if rerr != nil {
				s.log.Warn("idempotency key's refusal not recorded", "err", rerr)
				return p, false, err // the key stays reserved: a retry waits for it, then acts
			}
			return s.keyAnswer(ctx, userID, a)
		}
		if reserved {
			if rerr := s.wallet.ReleaseKey(ctx, userID, idemKey, fingerprint, s.now()); rerr != nil {
				s.log.Warn("idempotency key not released", "err", rerr)
			}
		}
		return p, false, err
	}
	a, err := s.wallet.Remember(ctx, userID, idemKey, fingerprint, p.ID, created, s.now())
	if err != nil {
		return ticketrush.Payment{}, false, err // paid; the retry with the key finds it and records the answer
	}
	if a.Refused != nil {
		return ticketrush.Payment{}, false, a.Refused
	}
	if a.Ref != p.ID {
		return ticketrush.Payment{}, false, fmt.Errorf("idempotency key recorded payment %s, not %s", a.Ref, p.ID)
	}
	// The key's answer is this payment, as the first request to record it said (created): the payment
	// is the one Pay has just read back from Redis, without reading it a second time.
	return p, a.Created, nil
}

// keyAnswer is the reply of the answer an Idempotency-Key recorded: its payment, or its refusal.
func (s *Service) keyAnswer(ctx context.Context, userID string, a ticketrush.KeyAnswer) (ticketrush.Payment, bool, error) {
	if a.Refused != nil {
		return ticketrush.Payment{}, false, a.Refused
	}
	p, err := s.Payment(ctx, userID, a.Ref)
	return p, a.Created, err
}

// replayedRefusal is the code of a payment's refusal by the sale's rules, which its Idempotency-Key
// answers every retry with: a code the error table marks as a refusal (for a payment: the reservation
// unknown or not the caller's, not held, expired, or the balance short). A failure that says nothing of
// the payment (Redis did not answer, the request was cut, the rate limit) is not one: its retry acts.
func replayedRefusal(err error) (ticketrush.Code, bool) {
	if errors.Is(err, ticketrush.ErrUnavailable) {
		return "", false
	}
	code := ticketrush.ErrorCode(err)
	info, ok := ticketrush.LookupCode(code)
	return code, ok && info.Refusal
}

// keyWait bounds how long a request waits for the answer of an earlier request with its
// Idempotency-Key; keyPoll is how often it looks.
const (
	keyWait = time.Second
	keyPoll = 10 * time.Millisecond
)

// awaitKey waits for the request that reserved an Idempotency-Key to record its answer: done is false
// when it did not within keyWait (it crashed) or released the key (it was refused: took is true, this
// request has the key now), and the caller acts itself.
func (s *Service) awaitKey(ctx context.Context, userID, key, fingerprint, resID string) (took, done bool, ref string, created bool, err error) {
	deadline := time.NewTimer(keyWait)
	defer deadline.Stop()
	tick := time.NewTicker(keyPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, false, "", false, fmt.Errorf("%w: %w", ticketrush.ErrUnavailable, ctx.Err())
		case <-deadline.C:
			return false, false, "", false, nil
		case <-tick.C:
		}
		reserved, done, ref, created, err := s.wallet.ReserveKey(ctx, userID, key, fingerprint, ticketrush.PaymentID(resID), s.now())
		if err != nil || done || reserved { // reserved: the first request was refused and released the key
			return reserved, done, ref, created, err
		}
	}
}

// Pay pays for a reservation from the user's points: claim the hold, debit the wallet once per
// reservation, complete the sale. created is false when the reservation was PAID already (the same
// payment is returned).
func (s *Service) Pay(ctx context.Context, userID, resID string) (ticketrush.Payment, bool, error) {
	r, err := s.store.Claim(ctx, userID, resID, s.now())
	if err != nil {
		s.refused(err)
		return ticketrush.Payment{}, false, err
	}
	if r.Status == ticketrush.ReservationPaid {
		return ticketrush.PaymentOf(r), false, nil
	}
	s.seats.existing(r.ScheduleID).changed(r.SeatID, &ticketrush.TakenSeat{Paying: true})
	s.changedSeats(ctx, r.ConcertID) // the claim, and the sale or release just after it
	if err := s.step(AfterClaim); err != nil {
		return ticketrush.Payment{}, false, err
	}
	debit, err := s.wallet.Debit(ctx, userID, resID, r.Price, s.now())
	if errors.Is(err, ticketrush.ErrInsufficientBalance) || errors.Is(err, ticketrush.ErrReservationNotHeld) {
		s.refused(err)
		released, rerr := s.store.Release(ctx, resID, s.now())
		if rerr != nil {
			return ticketrush.Payment{}, false, errors.Join(err, rerr) // the sweeper releases it
		}
		s.released(released)
		return ticketrush.Payment{}, false, err
	}
	if err != nil {
		return ticketrush.Payment{}, false, err
	}
	if err := s.step(AfterDebit); err != nil {
		return ticketrush.Payment{}, false, err
	}
	done, err := s.complete(ctx, userID, resID, debit)
	if err != nil {
		return ticketrush.Payment{}, false, err
	}
	if err := s.step(AfterComplete); err != nil {
		return ticketrush.Payment{}, false, err
	}
	// Two requests for one reservation at once may both get here: both answer 201 with the one payment.
	return ticketrush.PaymentOf(done), true, nil
}

// complete is step 3, with the compensating refund when the sale can no longer happen (the sweeper
// released the claim while this payment was debiting).
func (s *Service) complete(ctx context.Context, userID, resID string, debit ticketrush.Payment) (ticketrush.Reservation, error) {
	r, err := s.store.Complete(ctx, resID, debit, s.now())
	if errors.Is(err, ticketrush.ErrReservationNotHeld) {
		if _, rerr := s.wallet.Refund(ctx, userID, resID, s.now()); rerr != nil {
			return r, fmt.Errorf("refund after a failed sale: %w", rerr)
		}
		s.metrics.refunded.Add(float64(debit.Amount))
		s.refused(ticketrush.ErrReservationExpired)
		return r, ticketrush.ErrReservationExpired
	}
	if err != nil {
		return r, err
	}
	if r.PaymentID == debit.ID && r.Status == ticketrush.ReservationPaid {
		s.metrics.paid.WithLabelValues(r.ConcertID).Inc()
		s.metrics.debited.Add(float64(debit.Amount))
	}
	if r.Status == ticketrush.ReservationPaid {
		s.seats.existing(r.ScheduleID).changed(r.SeatID, &ticketrush.TakenSeat{Sold: true})
		s.seats.ended(r.ConcertID, userID) // DONE when it was the fan's last open hold
		if s.tokenChanged != nil {
			s.tokenChanged(r.ConcertID, userID)
		}
	}
	return r, nil
}

// released tells the seat view what a payment's release left: the hold again, or the seat free.
func (s *Service) released(r ticketrush.Reservation) {
	switch r.Status {
	case ticketrush.ReservationHeld:
		s.seats.existing(r.ScheduleID).changed(r.SeatID, &ticketrush.TakenSeat{HeldUntil: r.ExpiresAt.UnixMilli()})
	case ticketrush.ReservationExpired:
		s.seats.existing(r.ScheduleID).changed(r.SeatID, nil)
	}
}

// Payment returns one of the user's payments.
func (s *Service) Payment(ctx context.Context, userID, id string) (ticketrush.Payment, error) {
	resID, ok := ticketrush.ReservationOfPayment(id)
	if !ok {
		return ticketrush.Payment{}, ticketrush.ErrNotFound
	}
	r, err := s.Reservation(ctx, userID, resID)
	if err != nil {
		return ticketrush.Payment{}, err
	}
	if r.Status != ticketrush.ReservationPaid {
		return ticketrush.Payment{}, ticketrush.ErrNotFound
	}
	return ticketrush.PaymentOf(r), nil
}
