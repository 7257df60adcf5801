package redis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Debit is step 2 of a payment: the reservation's price leaves the user's wallet, once per reservation.
func (s *Wallet) Debit(ctx context.Context, userID, resID string, amount int64, now time.Time) (ticketrush.Payment, error) {
	keys, args := s.keys.Wallet(userID).walletDebit(userID, resID, amount, now)
	msg, err := s.exec(ctx, s.walletDebit, keys, args)
	if err != nil {
		return ticketrush.Payment{}, fmt.Errorf("debit %s: %w", resID, err)
	}
	raw, err := msg.ToString()
	if err != nil {
		return ticketrush.Payment{}, err
	}
	return decodeMovement(resID, raw)
}

// Debited returns the debit of a reservation, if there is one.
func (s *Wallet) Debited(ctx context.Context, userID, resID string) (ticketrush.Payment, bool, error) {
	raw, err := s.client.Do(ctx, s.client.B().Hget().Key(s.keys.Wallet(userID).Debits()).Field(resID).Build()).ToString()
	if isNil(err) {
		return ticketrush.Payment{}, false, nil
	}
	if err != nil {
		_, err = mapError(err)
		return ticketrush.Payment{}, false, fmt.Errorf("read debit %s: %w", resID, err)
	}
	p, err := decodeMovement(resID, raw)
	return p, err == nil, err
}

// Refund gives a reservation's debit back, once; it reports whether there was a debit to refund.
func (s *Wallet) Refund(ctx context.Context, userID, resID string, now time.Time) (bool, error) {
	keys, args := s.keys.Wallet(userID).walletRefund(userID, resID, now)
	msg, err := s.exec(ctx, s.walletRefund, keys, args)
	if err != nil {
		return false, fmt.Errorf("refund %s: %w", resID, err)
	}
	refunded, err := refundReply(resID, msg)
	if err != nil {
		return false, fmt.Errorf("refund %s: %w", resID, err)
	}
	return refunded, nil
}

// refundReply reads wallet_refund's refund JSON of reservation resID (true), or ” when there was no
// debit to refund (false).
func refundReply(resID string, msg rueidis.RedisMessage) (bool, error) {
	raw, err := msg.ToString()
	if err != nil {
		return false, fmt.Errorf("script reply: %w", err)
	}
	if raw == "" {
		return false, nil
	}
	if _, err := decodeMovement(resID, raw); err != nil {
		return false, err
	}
	return true, nil
}

// Balance returns a user's balance (0 for a user never seen).
func (s *Wallet) Balance(ctx context.Context, userID string) (int64, error) {
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
func (s *Wallet) Charge(ctx context.Context, userID string, amount int64, idemKey, fingerprint string, now time.Time) (ticketrush.Charge, bool, error) {
	w := s.keys.Wallet(userID)
	id := "c" + ticketrush.NewID() + ticketrush.NewID()
	keys, args := w.pointsCharge(userID, amount, id, idemKey, fingerprint, s.limit, now)
	msg, err := s.exec(ctx, s.pointsCharge, keys, args)
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
func (s *Wallet) rememberStep(ctx context.Context, step, userID, key, fingerprint, ref string, created bool, refused ticketrush.Code, now time.Time) (string, idempotencyRecord, error) {
	keys, args := s.keys.Wallet(userID).paymentRemember(step, userID, key, fingerprint, ref, created, refused, now)
	msg, err := s.exec(ctx, s.paymentRemember, keys, args)
	if err != nil {
		return "", idempotencyRecord{}, fmt.Errorf("idempotency key %s: %w", step, err)
	}
	state, rec, err := rememberReply(step, msg)
	if err != nil {
		return "", idempotencyRecord{}, fmt.Errorf("idempotency key %s: %w", step, err)
	}
	return state, rec, nil
}

// refusalOf is the error a key whose first request was refused answers with: the code's sentinel, or
// an internal error for a code this build does not know.
func refusalOf(rec idempotencyRecord) error {
	if e, ok := ticketrush.ErrorOf(ticketrush.Code(rec.Refused)); ok {
		return e
	}
	return fmt.Errorf("idempotency record refused with unknown code %q", rec.Refused)
}

// rememberStates are the states each step of payment_remember replies.
var rememberStates = map[string][]string{
	"reserve": {"RESERVED", "PENDING", "DONE"},
	"finish":  {"DONE"},
	"release": {"RELEASED", "NONE"},
}

// rememberReply reads payment_remember's {state, record JSON} for step: a state of that step, and a
// record that decodes (” only with NONE: a release of a key that had none).
func rememberReply(step string, msg rueidis.RedisMessage) (string, idempotencyRecord, error) {
	r, err := reply(msg, 2)
	if err != nil {
		return "", idempotencyRecord{}, err
	}
	state, raw := r.str(0), r.str(1)
	if r.err != nil {
		return "", idempotencyRecord{}, r.err
	}
	if !slices.Contains(rememberStates[step], state) {
		return "", idempotencyRecord{}, fmt.Errorf("unexpected state %q", state)
	}
	if raw == "" && state == "NONE" {
		return state, idempotencyRecord{}, nil
	}
	rec, err := decodeIdempotency(raw)
	if err != nil {
		return "", idempotencyRecord{}, err
	}
	return state, rec, nil
}

// ReserveKey reserves a user's Idempotency-Key for a payment before it is made, in one script call that
// a concurrent request with the same key sees: reserved is true when this call took the key; done is
// true when the key has its answer already (ref and created are that answer, or err is the refusal that
// answered it); neither when a request with the same fingerprint holds it. The key used with another
// fingerprint is IDEMPOTENCY_CONFLICT.
func (s *Wallet) ReserveKey(ctx context.Context, userID, key, fingerprint, ref string, now time.Time) (reserved, done bool, doneRef string, created bool, err error) {
	state, rec, err := s.rememberStep(ctx, "reserve", userID, key, fingerprint, ref, false, "", now)
	if err != nil {
		return false, false, "", false, err
	}
	switch state {
	case "RESERVED":
		return true, false, "", false, nil
	case "PENDING":
		return false, false, "", false, nil
	}
	if rec.Refused != "" { // DONE with a refusal: the key answers with it again
		return false, true, "", false, refusalOf(rec)
	}
	return false, true, rec.Ref, rec.Created, nil // DONE: rememberReply lets no other state of reserve through
}

// Remember records the answer of a payment under its Idempotency-Key for 24 h, with an event that makes
// the record durable (restore brings it back). The first answer recorded stands: Remember returns it,
// and a later caller answers with it instead of its own.
func (s *Wallet) Remember(ctx context.Context, userID, key, fingerprint, ref string, created bool, now time.Time) (ticketrush.KeyAnswer, error) {
	return s.finishKey(ctx, userID, key, fingerprint, ref, created, "", now)
}

// RememberRefusal records that the payment under a user's Idempotency-Key was refused with code, as
// Remember records a payment, so that a retry with the key answers with the same refusal and does not
// act. The first answer recorded stands: RememberRefusal returns it.
func (s *Wallet) RememberRefusal(ctx context.Context, userID, key, fingerprint string, code ticketrush.Code, now time.Time) (ticketrush.KeyAnswer, error) {
	return s.finishKey(ctx, userID, key, fingerprint, "", false, code, now)
}

// finishKey is payment_remember's 'finish': the answer it recorded, or that an earlier finish did.
func (s *Wallet) finishKey(ctx context.Context, userID, key, fingerprint, ref string, created bool, code ticketrush.Code, now time.Time) (ticketrush.KeyAnswer, error) {
	_, rec, err := s.rememberStep(ctx, "finish", userID, key, fingerprint, ref, created, code, now)
	if err != nil {
		return ticketrush.KeyAnswer{}, err
	}
	if rec.Refused != "" {
		return ticketrush.KeyAnswer{Refused: refusalOf(rec)}, nil
	}
	return ticketrush.KeyAnswer{Ref: rec.Ref, Created: rec.Created}, nil // DONE: the one state rememberReply lets through for finish
}

// ReleaseKey frees a user's Idempotency-Key reserved for a payment that failed without an answer to
// repeat (Redis did not answer, the request was cancelled), so that a retry acts again; a key with its
// answer recorded, or reserved with another fingerprint, stays.
func (s *Wallet) ReleaseKey(ctx context.Context, userID, key, fingerprint string, now time.Time) error {
	_, _, err := s.rememberStep(ctx, "release", userID, key, fingerprint, "", false, "", now)
	return err
}
