package writebehind

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Redis emptied after a drain: readiness fails, restore brings the sale back from Postgres,
// reconcile is clean, and the sale goes on where it was: a held seat still held (and payable), a
// sold seat still sold, balances and idempotency keys as they were.
func TestRestoreAfterFlushAll(t *testing.T) {
	t.Parallel()
	s := newSale(t, dbtest.PrivateRedis(t), "tr", dbtest.Postgres(t), time.Minute)
	restoreAfterEmptied(t, s, func() {
		require.NoError(t, s.rdb.Do(context.Background(), s.rdb.B().Flushall().Build()).Error())
	})
}

// TestRestoreOnCluster is TestRestoreAfterFlushAll on the shared Redis Cluster (scripts/cluster.sh),
// whose concerts and wallet shards live on three masters. FLUSHALL would empty the other tests' keys
// too: the sale's Redis is emptied by deleting every key of its prefix on every master, which is all
// the service sees.
func TestRestoreOnCluster(t *testing.T) {
	t.Parallel()
	c, prefix := dbtest.Cluster(t)
	s := newSale(t, dbtest.ClusterURL(t), prefix, dbtest.Postgres(t), time.Minute)
	restoreAfterEmptied(t, s, func() { dbtest.DeletePrefix(c, prefix) })
}

func restoreAfterEmptied(t *testing.T, s *sale, empty func()) {
	ctx := context.Background()
	run(t, s.worker(Config{}, prometheus.NewRegistry()))
	state := redis.NewStateMarker(s.rdb, s.prefix)

	// One fan holds a seat, another bought one; one charge and one payment have Idempotency-Keys; a
	// third fan's payment with a key was refused (no points). Then the load.
	sched := s.concert.Schedules[1].ID
	_, _, err := s.booking.Charge(ctx, "holder", 5_000, "")
	require.NoError(t, err)
	first, _, err := s.booking.Charge(ctx, "buyer", 5_000, "charge-key")
	require.NoError(t, err)
	join := func(user string) string {
		tk, _, err := s.queue.Join(ctx, user, s.concert.ID)
		require.NoError(t, err)
		return tk.Token
	}
	held, err := s.booking.Hold(ctx, "holder", join("holder"), sched, "VIP-7")
	require.NoError(t, err)
	bought, err := s.booking.Hold(ctx, "buyer", join("buyer"), sched, "VIP-8")
	require.NoError(t, err)
	paid, created, err := s.booking.PayOnce(ctx, "buyer", bought.ID, "pay-key")
	require.NoError(t, err)
	require.True(t, created)
	short, err := s.booking.Hold(ctx, "short", join("short"), sched, "VIP-9")
	require.NoError(t, err)
	_, _, err = s.booking.PayOnce(ctx, "short", short.ID, "short-key")
	require.ErrorIs(t, err, ticketrush.ErrInsufficientBalance)
	load, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	s.load(load, 6)

	s.drain(30 * time.Second)
	s.reconcile()
	balances := map[string]int64{}
	for u := range s.users() {
		balances[u], err = s.booking.Balance(ctx, u)
		require.NoError(t, err)
	}

	empty()
	assert.ErrorIs(t, CheckWhole(ctx, state), ErrRedisNotWhole, "readyz fails while Redis is empty")
	// A running instance reloads its catalog into the empty Redis meanwhile.
	require.NoError(t, s.cat.Refresh(ctx))
	has, err := s.db.HasRecords(ctx)
	require.NoError(t, err)
	require.True(t, has)
	assert.ErrorIs(t, Startup(ctx, state, s.db, time.Now()), ErrRedisNotWhole, "a start detects the emptied Redis")

	rep, err := repair.Restore(ctx, s.rdb, s.db, s.prefix, false, time.Now())
	require.NoError(t, err)
	t.Logf("%+v", rep)
	assert.Empty(t, rep.Skipped)
	require.NoError(t, CheckWhole(ctx, state), "whole again")
	_, err = repair.Restore(ctx, s.rdb, s.db, s.prefix, false, time.Now())
	assert.ErrorIs(t, err, repair.ErrRedisWhole, "restore refuses a whole Redis")
	s.reconcile()

	for u, b := range balances {
		got, err := s.booking.Balance(ctx, u)
		require.NoError(t, err)
		assert.Equal(t, b, got, "balance of %s", u)
	}
	again, replayed, err := s.booking.Charge(ctx, "buyer", 5_000, "charge-key")
	require.NoError(t, err)
	assert.True(t, replayed, "a charge's Idempotency-Key survives")
	assert.Equal(t, first, again)
	p, created, err := s.booking.PayOnce(ctx, "buyer", bought.ID, "pay-key")
	require.NoError(t, err)
	assert.Equal(t, paid, p)
	assert.True(t, created, "a payment's Idempotency-Key replays the first answer, 201")
	_, _, err = s.booking.PayOnce(ctx, "buyer", held.ID, "pay-key")
	assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict)

	seats, err := s.booking.Seats(ctx, "thief", s.concert.ID, sched, join("thief"))
	require.NoError(t, err)
	status := map[string]ticketrush.SeatStatus{}
	for _, seat := range seats {
		status[seat.ID] = seat.Status
	}
	assert.Equal(t, ticketrush.SeatHeld, status["VIP-7"])
	assert.Equal(t, ticketrush.SeatSold, status["VIP-8"])
	_, err = s.booking.Hold(ctx, "thief", join("thief"), sched, "VIP-7")
	assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "still held")
	_, err = s.booking.Hold(ctx, "thief", join("thief"), sched, "VIP-8")
	assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "still sold")
	_, created, err = s.booking.PayOnce(ctx, "holder", held.ID, "")
	require.NoError(t, err, "the holder pays the restored hold")
	assert.True(t, created)
	_, _, err = s.booking.Charge(ctx, "short", 5_000, "")
	require.NoError(t, err)
	_, _, err = s.booking.PayOnce(ctx, "short", short.ID, "short-key")
	assert.ErrorIs(t, err, ticketrush.ErrInsufficientBalance, "a refused payment's Idempotency-Key survives: the first answer again")
	_, created, err = s.booking.PayOnce(ctx, "short", short.ID, "short-key-2")
	require.NoError(t, err, "another key pays")
	assert.True(t, created)

	// The sale goes on, and the record keeps up.
	load, stop = context.WithTimeout(ctx, time.Second)
	defer stop()
	s.load(load, 6)
	s.drain(30 * time.Second)
	s.checkClients()
	s.reconcile()
}
