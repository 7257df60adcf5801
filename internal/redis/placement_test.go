package redis

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// thirds is the slot map redis-cli --cluster create makes of 3 masters: a third of the slots each.
func thirds() []string {
	owners := make([]string, 16384)
	for s := range owners {
		owners[s] = []string{"m0", "m1", "m2"}[min(2, s*3/16384)]
	}
	return owners
}

func spreadConcert(id string, schedules, shards int) ticketrush.Concert {
	c := ticketrush.Concert{ID: id, Queue: ticketrush.QueueSettings{LineShards: shards}}
	for i := range schedules {
		c.Schedules = append(c.Schedules, ticketrush.Schedule{ID: fmt.Sprintf("sched%07d", i)})
	}
	return c
}

// TestPlaceSeatSlots: on 3 masters, each of 200 concerts of 3 schedules gets its schedules' seat slots
// off the concert's own master (whose slot weighs about two schedules), at most two on one master, the
// same for the same slot map. Without the placement the plain tags put a schedule on the concert's
// master for about a third of the schedules.
func TestPlaceSeatSlots(t *testing.T) {
	owners := thirds()
	plain := 0
	for i := range 200 {
		c := spreadConcert(fmt.Sprintf("c%011d", i), 3, 24)
		k := NewKeys("tr").Concert(c.ID)
		home := owners[slot(k.Cfg())]
		slots := placeSeatSlots(owners, k, c)
		require.Len(t, slots, 3)
		per := map[string]int{}
		for j, s := range slots {
			assert.Equal(t, c.Schedules[j].ID, s.ScheduleID())
			per[owners[slot(k.Schedule(s).Seats())]]++
			if owners[slot(k.Schedule(SeatSlot(c.Schedules[j].ID)).Seats())] == home {
				plain++
			}
		}
		assert.Zero(t, per[home], "concert %s: a schedule on the concert's master %s: %v", c.ID, home, slots)
		for m, n := range per {
			assert.LessOrEqual(t, n, 2, "concert %s: %d schedules on %s", c.ID, n, m)
		}
		assert.Equal(t, slots, placeSeatSlots(owners, k, c), "the same placement for the same slot map")
	}
	assert.Greater(t, plain, 150, "plain tags put about a third of the 600 schedules on the concert's master")

	// Many schedules: the concert's own slot weighs 0.6 schedule per schedule, more than a master's
	// share of the rest, so they go to the other masters, evenly.
	c := spreadConcert("c-many", 12, 24)
	k := NewKeys("tr").Concert(c.ID)
	per := map[string]int{}
	for _, s := range placeSeatSlots(owners, k, c) {
		per[owners[slot(k.Schedule(s).Seats())]]++
	}
	assert.Zero(t, per[owners[slot(k.Cfg())]], "12 schedules: %v", per)
	for m, n := range per {
		assert.InDelta(t, 6, n, 1, "12 schedules over two masters, %s: %v", m, per)
	}
}

// TestPlaceSeatSlotsOnCluster: on the local cluster, a concert loaded as the service loads it keeps the
// placement in its settings, its seat slots off its own master, and the placement recorded for it is
// that one.
func TestPlaceSeatSlotsOnCluster(t *testing.T) {
	c, prefix := dbtest.Cluster(t)
	ctx := context.Background()
	s := NewStore(c, prefix, prometheus.NewRegistry())
	con := concert(ticketrush.NewID(), func(q *ticketrush.QueueSettings) { q.LineShards = 24 })
	con.Schedules = spreadConcert("", 3, 0).Schedules
	_, err := s.LoadConcert(ctx, con, t0)
	require.NoError(t, err)
	l, found, err := s.keys.ReadLayout(ctx, c, con.ID)
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, l.Schedules, 3)
	owners, err := slotOwners(ctx, c)
	require.NoError(t, err)
	k := s.keys.Concert(con.ID)
	for i, sl := range l.Schedules {
		assert.Equal(t, con.Schedules[i].ID, sl.ScheduleID())
		assert.NotEqual(t, owners[slot(k.Cfg())], owners[slot(k.Schedule(sl).Seats())], "seat slot %s on the concert's master", sl)
	}
	raw, err := c.Do(ctx, c.B().Hget().Key(k.Cfg()).Field("sched").Build()).ToString()
	require.NoError(t, err)
	kept, err := SeatPlacement(ctx, c, k, con)
	require.NoError(t, err)
	assert.Equal(t, raw, kept, "the placement recorded for a concert Redis holds is the one its settings name")
}
