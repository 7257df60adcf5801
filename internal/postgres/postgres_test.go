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

// TestPlacementIsRecordedOnce: a concert's placement is written with the concert and read back with
// it; a concert created without one (before placements were recorded) gets the first one recorded, and
// no later one is written over it. Each recording moves the catalog's version, so every instance reads it.
func TestPlacementIsRecordedOnce(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	placed := ticketrush.Concert{ID: "placed", Title: "T", Venue: "V", Queue: ticketrush.DefaultQueueSettings(),
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 1}},
		Schedules: []ticketrush.Schedule{{ID: "p1", StartsAt: at}, {ID: "p2", StartsAt: at}},
		Placement: ticketrush.Placement{Slots: "p1@4,p2", Recorded: true}}
	placed.Queue.LineShards = 3
	legacy := placed
	legacy.ID, legacy.Schedules = "legacy", []ticketrush.Schedule{{ID: "l1", StartsAt: at}}
	legacy.Placement = ticketrush.Placement{}
	require.NoError(t, db.CreateConcert(ctx, placed))
	require.NoError(t, db.CreateConcert(ctx, legacy))
	placement := func(id string) ticketrush.Placement {
		all, err := db.Concerts(ctx)
		require.NoError(t, err)
		for _, c := range all {
			if c.ID == id {
				return c.Placement
			}
		}
		t.Fatalf("no concert %s", id)
		return ticketrush.Placement{}
	}
	assert.Equal(t, placed.Placement, placement("placed"), "written with the concert")
	assert.Equal(t, ticketrush.Placement{}, placement("legacy"), "none recorded")

	v0, err := db.CatalogVersion(ctx)
	require.NoError(t, err)
	got, err := db.RecordPlacement(ctx, "legacy", "l1@2")
	require.NoError(t, err)
	assert.Equal(t, ticketrush.Placement{Slots: "l1@2", Recorded: true}, got)
	v1, err := db.CatalogVersion(ctx)
	require.NoError(t, err)
	assert.Greater(t, v1, v0, "a recording moves the catalog's version")
	got, err = db.RecordPlacement(ctx, "legacy", "l1@9")
	require.NoError(t, err)
	assert.Equal(t, ticketrush.Placement{Slots: "l1@2", Recorded: true}, got, "the first recording stands")
	got, err = db.RecordPlacement(ctx, "placed", "p1,p2")
	require.NoError(t, err)
	assert.Equal(t, placed.Placement, got, "the create's placement stands")
	assert.Equal(t, ticketrush.Placement{Slots: "l1@2", Recorded: true}, placement("legacy"))
	assert.Equal(t, placed.Placement, placement("placed"))
	_, err = db.RecordPlacement(ctx, "nope", "x")
	assert.ErrorIs(t, err, ticketrush.ErrNotFound)
}
