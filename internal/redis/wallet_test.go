package redis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func TestCharge(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		ctx := context.Background()
		balance, err := s.Wallet.Balance(ctx, "nobody")
		require.NoError(t, err)
		assert.Zero(t, balance, "a user never seen has 0")

		c1, replayed, err := s.Wallet.Charge(ctx, "alice", 100, "k1", "fp-100", t0)
		require.NoError(t, err)
		assert.False(t, replayed)
		assert.Equal(t, int64(100), c1.Balance)
		c2, replayed, err := s.Wallet.Charge(ctx, "alice", 100, "k1", "fp-100", t0.Add(time.Second))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, c1, c2, "the same key and body: the first response again")
		_, _, err = s.Wallet.Charge(ctx, "alice", 200, "k1", "fp-200", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict)
		_, replayed, err = s.Wallet.Charge(ctx, "bob", 100, "k1", "fp-100", t0)
		require.NoError(t, err)
		assert.False(t, replayed, "keys are scoped to the user")

		_, _, err = s.Wallet.Charge(ctx, "alice", ticketrush.MaxBalance-100, "", "", t0)
		require.NoError(t, err)
		_, _, err = s.Wallet.Charge(ctx, "alice", 1, "", "", t0)
		assert.ErrorIs(t, err, ticketrush.ErrBalanceLimit)
		balance, err = s.Wallet.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(ticketrush.MaxBalance), balance)
	})
}

// TestChargeRefusalReplayed: a charge refused with an Idempotency-Key answers every retry with the key
// with the same refusal, even once the balance has room, durably (an idem.remember event); without
// the key, or with another, the charge acts.
func TestChargeRefusalReplayed(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		_, _, err := s.Wallet.Charge(ctx, "alice", ticketrush.MaxBalance-100, "", "", t0)
		require.NoError(t, err)
		_, _, err = s.Wallet.Charge(ctx, "alice", 500, "k", "fp-500", t0)
		require.ErrorIs(t, err, ticketrush.ErrBalanceLimit)
		_, err = s.Wallet.Debit(ctx, "alice", "r1", 1000, t0)
		require.NoError(t, err, "the balance has room for 500 now")
		_, _, err = s.Wallet.Charge(ctx, "alice", 500, "k", "fp-500", t0.Add(time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrBalanceLimit, "the retry with the key: the first answer again")
		_, _, err = s.Wallet.Charge(ctx, "alice", 600, "k", "fp-600", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "the key with another body")
		_, _, _, _, err = s.Wallet.ReserveKey(ctx, "alice", "k", "fp-pay", "p1", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "nor can it pay")
		balance, err := s.Wallet.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(ticketrush.MaxBalance-1100), balance, "the refused charge added nothing")
		_, _, err = s.Wallet.Charge(ctx, "alice", 500, "k2", "fp-500", t0)
		require.NoError(t, err, "another key acts")

		var b ticketrush.RecordBatch
		decodeStream(t, c, s.keys.Wallet("alice").Events(), EventSource{Stream: s.keys.Wallet("alice").Events(),
			Shard: WalletShard("alice")}, &b)
		require.Len(t, b.Idempotency, 2, "the refusal's record and the second key's charge")
		assert.Equal(t, ticketrush.IdempotencyRecord{UserID: "alice", Key: "k", Kind: "charge", Fingerprint: "fp-500",
			Refused: "BALANCE_LIMIT", At: t0}, b.Idempotency[0], "the refusal is durable")
	})
}

func TestRemember(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		reserved, done, _, _, err := s.Wallet.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.True(t, reserved, "the first request takes the key")
		assert.False(t, done)
		reserved, done, _, _, err = s.Wallet.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.False(t, reserved || done, "a request with the same fingerprint sees the key reserved")
		_, _, _, _, err = s.Wallet.ReserveKey(ctx, "alice", "k", "fp2", "p2", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a reserved key refuses another request")
		_, err = s.Wallet.Remember(ctx, "alice", "k", "fp2", "p2", true, t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "nor can another request record its answer")
		assert.Empty(t, eventTypes(t, c, s.keys.Wallet("alice").Events()), "a reservation is not durable")

		a, err := s.Wallet.Remember(ctx, "alice", "k", "fp", "p1", true, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.KeyAnswer{Ref: "p1", Created: true}, a)
		a, err = s.Wallet.Remember(ctx, "alice", "k", "fp", "p1", false, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.KeyAnswer{Ref: "p1", Created: true}, a, "the first answer recorded stands")
		a, err = s.Wallet.RememberRefusal(ctx, "alice", "k", "fp", "INSUFFICIENT_BALANCE", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.KeyAnswer{Ref: "p1", Created: true}, a, "a later refusal does not replace it")
		require.NoError(t, s.Wallet.ReleaseKey(ctx, "alice", "k", "fp", t0))
		reserved, done, ref, created, err := s.Wallet.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.Equal(t, []any{false, true, "p1", true}, []any{reserved, done, ref, created}, "a recorded key is not released")
		assert.Equal(t, []string{"idem.remember"}, eventTypes(t, c, s.keys.Wallet("alice").Events()), "one event per key")

		reserved, _, _, _, err = s.Wallet.ReserveKey(ctx, "bob", "k", "fp", "p1", t0)
		require.NoError(t, err)
		require.True(t, reserved, "keys are scoped to the user")
		require.NoError(t, s.Wallet.ReleaseKey(ctx, "bob", "k", "fp-other", t0))
		_, _, _, _, err = s.Wallet.ReserveKey(ctx, "bob", "k", "fp-other", "p9", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "another request cannot release the key")
		require.NoError(t, s.Wallet.ReleaseKey(ctx, "bob", "k", "fp", t0))
		reserved, _, _, _, err = s.Wallet.ReserveKey(ctx, "bob", "k", "fp-other", "p9", t0)
		require.NoError(t, err)
		assert.True(t, reserved, "a released key is free for any request")

		_, _, err = s.Wallet.Charge(ctx, "carol", 100, "k", "POST /v1/points/charges 100", t0)
		require.NoError(t, err)
		_, _, _, _, err = s.Wallet.ReserveKey(ctx, "carol", "k", "fp", "p1", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a key used on a charge cannot pay")
		_, _, _, _, err = s.Wallet.ReserveKey(ctx, "dave", "k", "fp", "p1", t0)
		require.NoError(t, err)
		_, _, err = s.Wallet.Charge(ctx, "dave", 100, "k", "POST /v1/points/charges 100", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a key reserved by a payment cannot charge")

		// A refusal recorded under the key: every retry answers with it, and nothing frees the key.
		_, _, _, _, err = s.Wallet.ReserveKey(ctx, "erin", "k", "fp", "p1", t0)
		require.NoError(t, err)
		a, err = s.Wallet.RememberRefusal(ctx, "erin", "k", "fp", "INSUFFICIENT_BALANCE", t0)
		require.NoError(t, err)
		assert.ErrorIs(t, a.Refused, ticketrush.ErrInsufficientBalance)
		assert.Empty(t, a.Ref)
		a, err = s.Wallet.Remember(ctx, "erin", "k", "fp", "p1", true, t0)
		require.NoError(t, err)
		assert.ErrorIs(t, a.Refused, ticketrush.ErrInsufficientBalance, "a later payment does not replace the refusal")
		require.NoError(t, s.Wallet.ReleaseKey(ctx, "erin", "k", "fp", t0))
		reserved, done, _, _, err = s.Wallet.ReserveKey(ctx, "erin", "k", "fp", "p1", t0)
		assert.ErrorIs(t, err, ticketrush.ErrInsufficientBalance, "the retry: the first answer again")
		assert.False(t, reserved, "and it does not take the key to act")
		assert.True(t, done)
		_, _, _, _, err = s.Wallet.ReserveKey(ctx, "erin", "k", "fp-other", "p2", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "another request with the key")

		var b ticketrush.RecordBatch
		decodeStream(t, c, s.keys.Wallet("erin").Events(), EventSource{Stream: s.keys.Wallet("erin").Events(),
			Shard: WalletShard("erin")}, &b)
		assert.Equal(t, []ticketrush.IdempotencyRecord{{UserID: "erin", Key: "k", Kind: "payment", Fingerprint: "fp",
			Refused: "INSUFFICIENT_BALANCE", At: t0}}, b.Idempotency, "the refusal is durable")
	})
}
