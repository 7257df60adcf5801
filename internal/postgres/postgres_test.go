package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func open(t testing.TB) *DB {
	t.Helper()
	db, err := Open(context.Background(), dbtest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Migrate(context.Background())
	require.NoError(t, err)
	return db
}

func TestMigrateIsIdempotent(t *testing.T) {
	db := open(t)
	again, err := db.Migrate(context.Background())
	require.NoError(t, err)
	assert.Empty(t, again)
}

func TestCatalogRoundTrip(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	c := ticketrush.Concert{ID: "c1", Title: "IU 2026", Venue: "KSPO Dome", Queue: ticketrush.DefaultQueueSettings(),
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 165000, Seats: 3}, {Name: "R", Price: 143000, Seats: 2}},
		Schedules: []ticketrush.Schedule{{ID: "s1", StartsAt: at}, {ID: "s2", StartsAt: at.Add(24 * time.Hour)}}}
	c.Queue.LineShards = 3
	version := func() int64 {
		v, err := db.CatalogVersion(ctx)
		require.NoError(t, err)
		return v
	}
	v0 := version()
	require.NoError(t, db.CreateConcert(ctx, c))
	v1 := version()
	assert.Greater(t, v1, v0, "a create moves the catalog's version")
	assert.Error(t, db.CreateConcert(ctx, c), "the same id twice")
	assert.Equal(t, v1, version(), "a refused create does not")

	got, err := db.Concerts(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, c, got[0])

	var seats int
	require.NoError(t, db.pool.QueryRow(ctx, "SELECT count(*) FROM seats").Scan(&seats))
	assert.Equal(t, 10, seats, "every schedule gets every section's seats")

	paused, capacity := true, 7
	q, err := db.UpdateQueueSettings(ctx, "c1", ticketrush.QueuePatch{Paused: &paused, ActiveCapacity: &capacity})
	require.NoError(t, err)
	assert.True(t, q.Paused)
	assert.Equal(t, 7, q.ActiveCapacity)
	assert.Equal(t, 50, q.AdmitPerSecond)
	assert.Greater(t, version(), v1, "a change of the queue's settings moves it")
	for _, table := range []string{"sections", "schedules", "concert_sales"} { // the rest Concerts reads
		before := version()
		_, err := db.pool.Exec(ctx, "DELETE FROM "+table+" WHERE false")
		require.NoError(t, err)
		assert.Greater(t, version(), before, "a statement on %s moves it", table)
	}

	_, err = db.UpdateQueueSettings(ctx, "nope", ticketrush.QueuePatch{Paused: &paused})
	assert.ErrorIs(t, err, ticketrush.ErrNotFound)
}
