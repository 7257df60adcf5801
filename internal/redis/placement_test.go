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
// master for about a third of the schedules. A concert of one date gets its seats in a block per master,
// and one of 3 dates on 6 masters two blocks a date: about a slot a master.
func TestPlaceSeatSlots(t *testing.T) {
	owners := thirds()
	plain := 0
	for i := range 200 {
		c := spreadConcert(fmt.Sprintf("c%011d", i), 3, 24)
		k := NewKeys("tr").Concert(c.ID)
		home := owners[slot(k.Cfg())]
		slots := placeSeatSlots(owners, k, c, 0)
		require.Len(t, slots, 3)
		per := map[string]int{}
		for j, s := range slots {
			assert.Equal(t, SeatSlot(c.Schedules[j].ID), SeatSlot(s.ScheduleID()))
			assert.NotContains(t, string(s), "#", "one block a schedule")
			per[owners[slot(k.Schedule(s).Seats())]]++
			if owners[slot(k.Schedule(SeatSlot(c.Schedules[j].ID)).Seats())] == home {
				plain++
			}
		}
		assert.Zero(t, per[home], "concert %s: a schedule on the concert's master %s: %v", c.ID, home, slots)
		for m, n := range per {
			assert.LessOrEqual(t, n, 2, "concert %s: %d schedules on %s", c.ID, n, m)
		}
		assert.Equal(t, slots, placeSeatSlots(owners, k, c, 0), "the same placement for the same slot map")
	}
	assert.Greater(t, plain, 150, "plain tags put about a third of the 600 schedules on the concert's master")

	// One date: a block per master, none on the concert's: its three blocks over the two others.
	c := spreadConcert("c-one-date", 1, 24)
	k := NewKeys("tr").Concert(c.ID)
	per := map[string]int{}
	for b, s := range placeSeatSlots(owners, k, c, 0) {
		assert.Equal(t, b, s.Block())
		per[owners[slot(k.Schedule(s).Seats())]]++
	}
	assert.Zero(t, per[owners[slot(k.Cfg())]], "one date: %v", per)
	assert.Len(t, per, 2, "one date over the two other masters: %v", per)

	// Three dates on six masters: two blocks a date.
	sixths := make([]string, 16384)
	for s := range sixths {
		sixths[s] = fmt.Sprintf("m%d", min(5, s*6/16384))
	}
	c = spreadConcert("c-three-dates", 3, 48)
	slots := placeSeatSlots(sixths, NewKeys("tr").Concert(c.ID), c, 0)
	require.Len(t, slots, 6, "%v", slots)
	for j, s := range slots {
		assert.Equal(t, c.Schedules[j/2].ID, s.ScheduleID())
		assert.Equal(t, j%2, s.Block())
	}

	// Many schedules: the concert's own slot weighs 0.6 schedule per schedule, more than a master's
	// share of the rest, so they go to the other masters, evenly.
	c = spreadConcert("c-many", 12, 24)
	k = NewKeys("tr").Concert(c.ID)
	per = map[string]int{}
	for _, s := range placeSeatSlots(owners, k, c, 0) {
		per[owners[slot(k.Schedule(s).Seats())]]++
	}
	assert.Zero(t, per[owners[slot(k.Cfg())]], "12 schedules: %v", per)
	for m, n := range per {
		assert.InDelta(t, 6, n, 1, "12 schedules over two masters, %s: %v", m, per)
	}
}

// TestSeatBlocks: a seat's block is a stable function of its id, every block keeps about its share of a
// section's seats, and a reservation id names the block it was made for.
func TestSeatBlocks(t *testing.T) {
	c := ticketrush.Concert{Sections: []ticketrush.Section{{Name: "A", Seats: 3000}}}
	slots := []SeatSlot{"schedule0001#0@4", "schedule0001#1", "schedule0001#2@17"}
	var total int64
	for b, sl := range slots {
		n := blocksBySchedule(slots).seats(c, sl)
		assert.InDelta(t, 1000, n, 100, "block %d", b)
		total += n
	}
	assert.EqualValues(t, 3000, total)
	assert.Equal(t, blocksBySchedule(slots).seat("schedule0001", "A-17"), blocksBySchedule(slots).seat("schedule0001", "A-17"))
	for b := range slots {
		id := ticketrush.NewReservationIDInBlock("c0ncert0001x", "schedule0001", b)
		_, sched, ok := ticketrush.ParseReservationID(id)
		require.True(t, ok, id)
		assert.Equal(t, "schedule0001", sched)
		assert.Equal(t, slots[b], blocksBySchedule(slots).reservation("schedule0001", id), id)
	}
	assert.Equal(t, SeatSlot("s1"), blocksBySchedule([]SeatSlot{"s1"}).reservation("s1", ticketrush.NewReservationID("c0ncert0001x", "s1")))
	assert.Equal(t, "s1", SeatSlot("s1#2@17").ScheduleID())
	assert.Equal(t, 2, SeatSlot("s1#2@17").Block())
	assert.Equal(t, 0, SeatSlot("s1@17").Block())
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

	// A concert of one date being created (PlaceSeats): a block of its seats per master, each off the
	// concert's own master where there is room.
	masters := map[string]bool{}
	for _, o := range owners {
		masters[o] = true
	}
	date := concert(ticketrush.NewID(), func(q *ticketrush.QueueSettings) { q.LineShards = 24 })
	date.Schedules = spreadConcert("", 1, 0).Schedules
	placed, err := s.PlaceSeats(ctx, date)
	require.NoError(t, err)
	blocks := splitSchedules(placed)
	require.Len(t, blocks, len(masters), placed)
	for b, sl := range blocks {
		assert.Equal(t, b, sl.Block(), placed)
		assert.NotEqual(t, owners[slot(s.keys.Concert(date.ID).Cfg())], owners[slot(s.keys.Concert(date.ID).Schedule(sl).Seats())], placed)
	}

	// The same concert placed again without a record (created before placements were recorded, Redis
	// lost): one block a schedule, so that its reservations, whose ids name no block, are restored where
	// their seats are looked for.
	placed, err = SeatPlacement(ctx, c, s.keys.Concert(date.ID), date)
	require.NoError(t, err)
	require.Len(t, splitSchedules(placed), 1, placed)
	assert.NotContains(t, placed, "#")
}
