package repair

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// migratedDB opens the database at url, migrated, closed at the end of the test.
func migratedDB(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Migrate(context.Background())
	require.NoError(t, err)
	return db
}

// TestRestoreKeepsTheRecordedPlacement: restore of an emptied Redis puts every concert's seats in the
// slots of its recorded placement, whatever the slot map now gives. The concerts' placements are those
// an earlier slot map gave at their create (suffixes no placement on the current map chooses: on a single
// Redis it chooses none), as a failover that renames a master, or a reshard, leaves them. A concert
// with no placement recorded gets one recorded once, before restore writes it: the one its
// Redis copy names while Redis holds it (what the running processes read), else a new one; and a second
// restore keeps that too. Run it on the cluster with TEST_REDIS_URL="$(scripts/cluster.sh)".
func TestRestoreKeepsTheRecordedPlacement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := dbtest.Redis(t)
	db := migratedDB(t, dbtest.Postgres(t))
	keys := redis.NewKeys(prefix)

	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	concert := func(n int, placement func(schedules []string) string) ticketrush.Concert {
		c := ticketrush.Concert{ID: fmt.Sprintf("c%03d-%s", n, ticketrush.NewID()), Title: "T", Venue: "V",
			Queue: ticketrush.DefaultQueueSettings(), Sections: []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 2}}}
		c.Queue.LineShards = 4
		var ids []string
		for i := range 3 {
			id := fmt.Sprintf("%s-s%d", c.ID, i)
			ids = append(ids, id)
			c.Schedules = append(c.Schedules, ticketrush.Schedule{ID: id, StartsAt: at.Add(time.Duration(i) * time.Hour)})
		}
		if placement != nil {
			c.Placement = ticketrush.Placement{Slots: placement(ids), Recorded: true}
		}
		return c
	}
	earlierMap := func(n int) func([]string) string {
		return func(ids []string) string {
			for i := range ids {
				ids[i] += fmt.Sprintf("@%d", 100+3*n+i)
			}
			return strings.Join(ids, ",")
		}
	}
	want := map[string]string{} // concert -> the placement restore must write
	var all []ticketrush.Concert
	for n := range 20 {
		c := concert(n, earlierMap(n))
		require.NoError(t, db.CreateConcert(ctx, c))
		want[c.ID] = c.Placement.Slots
		all = append(all, c)
	}
	// Two concerts of before placements were recorded: one that Redis holds, placed by an earlier slot
	// map, and one that it does not.
	held := concert(20, nil)
	require.NoError(t, db.CreateConcert(ctx, held))
	inRedis := held
	inRedis.Placement = ticketrush.Placement{Slots: earlierMap(20)(held.ScheduleIDs()), Recorded: true}
	_, err := redis.RestoreConcert(ctx, rdb, keys.Concert(held.ID), inRedis, nil, ticketrush.QueueMark{})
	require.NoError(t, err)
	want[held.ID] = inRedis.Placement.Slots
	gone := concert(21, nil)
	require.NoError(t, db.CreateConcert(ctx, gone))
	all = append(all, held, gone)

	require.NoError(t, RecordPlacements(ctx, rdb, db, prefix), "a process's start")
	recorded := func() map[string]ticketrush.Placement {
		concerts, err := db.Concerts(ctx)
		require.NoError(t, err)
		out := map[string]ticketrush.Placement{}
		for _, c := range concerts {
			out[c.ID] = c.Placement
		}
		return out
	}
	assert.Equal(t, ticketrush.Placement{Slots: want[held.ID], Recorded: true}, recorded()[held.ID],
		"a concert Redis holds: the placement its processes read")
	require.True(t, recorded()[gone.ID].Recorded, "a concert Redis does not hold: a new one")
	want[gone.ID] = recorded()[gone.ID].Slots

	for round := range 2 {
		dbtest.DeletePrefix(rdb, prefix) // Redis emptied
		_, err = Restore(ctx, rdb, db, prefix, false, time.Now())
		require.NoError(t, err)
		rec := recorded()
		for _, c := range all {
			assert.Equal(t, ticketrush.Placement{Slots: want[c.ID], Recorded: true}, rec[c.ID], "round %d: %s recorded", round, c.ID)
			l, found, err := keys.ReadLayout(ctx, rdb, c.ID)
			require.NoError(t, err)
			require.True(t, found, "round %d: %s restored", round, c.ID)
			var names []string
			for _, s := range l.Schedules {
				names = append(names, string(s))
				seats, err := rdb.Do(ctx, rdb.B().Hget().Key(keys.Concert(c.ID).Schedule(s).Inventory()).Field("seats").Build()).AsInt64()
				if assert.NoError(t, err, "round %d: %s: the seat count of slot %s", round, c.ID, s) {
					assert.EqualValues(t, 2, seats)
				}
			}
			assert.Equal(t, want[c.ID], strings.Join(names, ","), "round %d: %s: the seat slots restore wrote", round, c.ID)
		}
	}
}
