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
		balance, err := s.Balance(ctx, "nobody")
		require.NoError(t, err)
		assert.Zero(t, balance, "a user never seen has 0")

		c1, replayed, err := s.Charge(ctx, "alice", 100, "k1", "fp-100", t0)
		require.NoError(t, err)
		assert.False(t, replayed)
		assert.Equal(t, int64(100), c1.Balance)
		c2, replayed, err := s.Charge(ctx, "alice", 100, "k1", "fp-100", t0.Add(time.Second))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, c1, c2, "the same key and body: the first response again")
		_, _, err = s.Charge(ctx, "alice", 200, "k1", "fp-200", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict)
		_, replayed, err = s.Charge(ctx, "bob", 100, "k1", "fp-100", t0)
		require.NoError(t, err)
		assert.False(t, replayed, "keys are scoped to the user")

		_, _, err = s.Charge(ctx, "alice", ticketrush.MaxBalance-100, "", "", t0)
		require.NoError(t, err)
		_, _, err = s.Charge(ctx, "alice", 1, "", "", t0)
		assert.ErrorIs(t, err, ticketrush.ErrBalanceLimit)
		balance, err = s.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(ticketrush.MaxBalance), balance)
	})
}

func TestRemember(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		reserved, done, _, _, err := s.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.True(t, reserved, "the first request takes the key")
		assert.False(t, done)
		reserved, done, _, _, err = s.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.False(t, reserved || done, "a request with the same fingerprint sees the key reserved")
		_, _, _, _, err = s.ReserveKey(ctx, "alice", "k", "fp2", "p2", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a reserved key refuses another request")
		_, _, err = s.Remember(ctx, "alice", "k", "fp2", "p2", true, t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "nor can another request record its answer")
		assert.Empty(t, eventTypes(t, c, s.keys.Wallet("alice").Events()), "a reservation is not durable")

		ref, created, err := s.Remember(ctx, "alice", "k", "fp", "p1", true, t0)
		require.NoError(t, err)
		assert.Equal(t, []any{"p1", true}, []any{ref, created})
		ref, created, err = s.Remember(ctx, "alice", "k", "fp", "p1", false, t0)
		require.NoError(t, err)
		assert.Equal(t, []any{"p1", true}, []any{ref, created}, "the first answer recorded stands")
		require.NoError(t, s.ReleaseKey(ctx, "alice", "k", "fp", t0))
		reserved, done, ref, created, err = s.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.Equal(t, []any{false, true, "p1", true}, []any{reserved, done, ref, created}, "a recorded key is not released")
		assert.Equal(t, []string{"idem.remember"}, eventTypes(t, c, s.keys.Wallet("alice").Events()), "one event per key")

		reserved, _, _, _, err = s.ReserveKey(ctx, "bob", "k", "fp", "p1", t0)
		require.NoError(t, err)
		require.True(t, reserved, "keys are scoped to the user")
		require.NoError(t, s.ReleaseKey(ctx, "bob", "k", "fp-other", t0))
		_, _, _, _, err = s.ReserveKey(ctx, "bob", "k", "fp-other", "p9", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "another request cannot release the key")
		require.NoError(t, s.ReleaseKey(ctx, "bob", "k", "fp", t0))
		reserved, _, _, _, err = s.ReserveKey(ctx, "bob", "k", "fp-other", "p9", t0)
		require.NoError(t, err)
		assert.True(t, reserved, "a released key is free for any request")

		_, _, err = s.Charge(ctx, "carol", 100, "k", "POST /v1/points/charges 100", t0)
		require.NoError(t, err)
		_, _, _, _, err = s.ReserveKey(ctx, "carol", "k", "fp", "p1", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a key used on a charge cannot pay")
		_, _, _, _, err = s.ReserveKey(ctx, "dave", "k", "fp", "p1", t0)
		require.NoError(t, err)
		_, _, err = s.Charge(ctx, "dave", 100, "k", "POST /v1/points/charges 100", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a key reserved by a payment cannot charge")
	})
}
