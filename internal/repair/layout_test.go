package repair

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestMigrateLayoutsMovesEachConcertOnce: the concerts Postgres lists below this build's layout version
// have their line moved (a fan in a sorted set of layout version 1 waits in places after it) and the
// version recorded, a concert not in Redis included; a second run finds none. A concert created by this
// build starts at the current version.
func TestMigrateLayoutsMovesEachConcertOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := dbtest.Redis(t)
	dbURL := dbtest.Postgres(t)
	db := migratedDB(t, dbURL)
	store := redis.NewStore(rdb, prefix, prometheus.NewRegistry())
	keys := redis.NewKeys(prefix)
	now := time.Now()

	newConcert := func() ticketrush.Concert {
		c := ticketrush.Concert{ID: ticketrush.NewID(), Title: "T", Venue: "V", Queue: ticketrush.DefaultQueueSettings(),
			Sections: []ticketrush.Section{{Name: "A", Price: 100, Seats: 2}}}
		c.Queue.Paused = true
		c.Schedules = []ticketrush.Schedule{{ID: c.ID + "-s1", StartsAt: now.Add(time.Hour)}}
		require.NoError(t, db.CreateConcert(ctx, c))
		return c
	}
	old, gone, current := newConcert(), newConcert(), newConcert()
	for _, c := range []ticketrush.Concert{old, current} {
		_, err := store.LoadConcert(ctx, c, now)
		require.NoError(t, err)
	}
	below, err := db.ConcertsBelowLayout(ctx, redis.LayoutVersion)
	require.NoError(t, err)
	require.Empty(t, below, "a concert created by this build is at its layout version")

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `UPDATE concerts SET layout_version = 1 WHERE id = ANY($1)`, []string{old.ID, gone.ID})
	require.NoError(t, err)
	k := keys.Concert(old.ID)
	require.NoError(t, rdb.Do(ctx, rdb.B().Zadd().Key(k.LegacyWait()).ScoreMember().ScoreMember(1, "fan-1").Build()).Error())
	require.NoError(t, rdb.Do(ctx, rdb.B().Set().Key(k.Seq()).Value("1").Build()).Error())

	var progress bytes.Buffer
	n, err := MigrateLayouts(ctx, store, db, &progress)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Contains(t, progress.String(), "concert "+old.ID+" (1 of 2): layout 4, 1 waiting fans, 0 liveness fields, 0 reservations and 0 gate records moved")
	assert.Contains(t, progress.String(), "concert "+gone.ID+" (2 of 2): layout 4, 0 waiting fans")
	st, err := store.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: old.ID, UserID: "fan-1", Seq: 1}, now)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: 1}, st)

	below, err = db.ConcertsBelowLayout(ctx, redis.LayoutVersion)
	require.NoError(t, err)
	assert.Empty(t, below, "every concert's version recorded")
	n, err = MigrateLayouts(ctx, store, db, nil)
	require.NoError(t, err)
	assert.Zero(t, n, "a second run finds nothing to migrate")
}
