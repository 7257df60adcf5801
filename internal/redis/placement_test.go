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

// expectedLoads is each master's expected load as the placement counts it, in schedules: the concert's
// slot (ConcertSlotWeight a schedule), its share of the line's shards (LineWeight a schedule, over the
// shards) and its seat slots (a schedule over its blocks), and the even share of them all.
func expectedLoads(owners []string, k ConcertKeys, c ticketrush.Concert, slots []SeatSlot) (map[string]float64, float64) {
	s := float64(len(c.Schedules))
	load := map[string]float64{}
	for _, o := range owners {
		load[o] += 0
	}
	load[owners[slot(k.Cfg())]] += ConcertSlotWeight * s
	for n := range c.Queue.LineShards {
		load[owners[slot(k.Shard(n).Places())]] += LineWeight * s / float64(c.Queue.LineShards)
	}
	blocks := float64(len(slots)) / s
	for _, sl := range slots {
		load[owners[slot(k.Schedule(sl).Seats())]] += 1 / blocks
	}
	total := 0.0
	for _, l := range load {
		total += l
	}
	return load, total / float64(len(load))
}

// TestPlaceSeatSlots: on 3 masters, each of 200 concerts of 3 schedules gets its schedules' seat slots
// where the busiest master's expected load (the concert's slot, its shards, its seat slots:
// expectedLoads) is within one seat slot of the even share, the same for the same slot map; the plain
// tags miss that for many. A concert of one date gets its seats in a block per master, and one of 3
// dates on 6 masters two blocks a date: about a slot a master.
func TestPlaceSeatSlots(t *testing.T) {
	owners := thirds()
	missed := 0
	for i := range 200 {
		c := spreadConcert(fmt.Sprintf("c%011d", i), 3, 24)
		k := NewKeys("tr").Concert(c.ID)
		slots := placeSeatSlots(owners, k, c, 0)
		require.Len(t, slots, 3)
		plain := make([]SeatSlot, len(slots))
		for j, s := range slots {
			assert.Equal(t, SeatSlot(c.Schedules[j].ID), SeatSlot(s.ScheduleID()))
			assert.NotContains(t, string(s), "#", "one block a schedule")
			plain[j] = SeatSlot(c.Schedules[j].ID)
		}
		load, even := expectedLoads(owners, k, c, slots)
		assert.LessOrEqual(t, maxLoad(load), even+1+1e-9, "concert %s: %v", c.ID, load)
		if load, even := expectedLoads(owners, k, c, plain); maxLoad(load) > even+1+1e-9 {
			missed++
		}
		assert.Equal(t, slots, placeSeatSlots(owners, k, c, 0), "the same placement for the same slot map")
	}
	assert.Greater(t, missed, 20, "plain tags put the busiest master past a slot over the even share")

	// One date: a block per master.
	c := spreadConcert("c-one-date", 1, 24)
	k := NewKeys("tr").Concert(c.ID)
	slots := placeSeatSlots(owners, k, c, 0)
	require.Len(t, slots, 3)
	for b, s := range slots {
		assert.Equal(t, b, s.Block())
	}
	load, even := expectedLoads(owners, k, c, slots)
	assert.LessOrEqual(t, maxLoad(load), even+1.0/3+1e-9, "one date: %v", load)

	// Three dates on six masters: two blocks a date.
	sixths := make([]string, 16384)
	for s := range sixths {
		sixths[s] = fmt.Sprintf("m%d", min(5, s*6/16384))
	}
	c = spreadConcert("c-three-dates", 3, 48)
	slots = placeSeatSlots(sixths, NewKeys("tr").Concert(c.ID), c, 0)
	require.Len(t, slots, 6, "%v", slots)
	for j, s := range slots {
		assert.Equal(t, c.Schedules[j/2].ID, s.ScheduleID())
		assert.Equal(t, j%2, s.Block())
	}

	// Many schedules: spread evenly over the masters, counting the concert's slot and its shards.
	c = spreadConcert("c-many", 12, 24)
	k = NewKeys("tr").Concert(c.ID)
	slots = placeSeatSlots(owners, k, c, 0)
	load, even = expectedLoads(owners, k, c, slots)
	assert.LessOrEqual(t, maxLoad(load), even+1+1e-9, "12 schedules: %v", load)
}

func maxLoad(load map[string]float64) float64 {
	m := 0.0
	for _, l := range load {
		m = max(m, l)
	}
	return m
}

// sixMasters is a slot map of 6 masters, a sixth of the slots each.
func sixMasters() []string {
	owners := make([]string, 16384)
	for s := range owners {
		owners[s] = fmt.Sprintf("m%d", min(5, s*6/16384))
	}
	return owners
}

// lineLoads is each master's expected load of concert k's line shards at at on the masters of owners, in
// shards: its shards, and on the concert's own master the arrivals' weight (LineArriveWeight).
func lineLoads(owners []string, k ConcertKeys, shards int, at []int) map[string]float64 {
	load := map[string]float64{owners[slot(k.Cfg())]: LineArriveWeight * float64(shards)}
	for n := range shards {
		load[owners[slot(k.Placed(at).Shard(n).Places())]]++
	}
	return load
}

// TestPlaceLineShards: a new concert's line shards go to the masters with the least expected load, the
// concert's own master counted as carrying its arrivals (LineArriveWeight of the shards): on 6 masters
// (48 shards) and on 3 (24), over 50 concerts, the busiest master's load is within one shard of the even
// share, the same for the same slot map. With plain tags the busiest carried up to 10 shards past it (7
// on 3 masters). The placement reads back from its string, and a layout that names other shards' tags
// does not follow it.
func TestPlaceLineShards(t *testing.T) {
	for _, tc := range []struct {
		owners  []string
		masters int
		shards  int
	}{{sixMasters(), 6, 48}, {thirds(), 3, 24}} {
		even := (1 + LineArriveWeight) * float64(tc.shards) / float64(tc.masters)
		worstPlain := 0.0
		for i := range 50 {
			k := NewKeys("tr").Concert(fmt.Sprintf("c%011d", i))
			at := placeLineShards(tc.owners, k, tc.shards)
			require.Len(t, at, tc.shards)
			load := lineLoads(tc.owners, k, tc.shards, at)
			for m, l := range load {
				assert.LessOrEqual(t, l, even+1, "concert %d, master %s: %v", i, m, load)
			}
			for _, l := range lineLoads(tc.owners, k, tc.shards, nil) {
				worstPlain = max(worstPlain, l-even)
			}
			assert.Equal(t, at, placeLineShards(tc.owners, k, tc.shards), "the same placement for the same slot map")
		}
		t.Logf("%d shards on %d masters: even %.1f a master; plain tags up to %.1f past it", tc.shards, tc.masters, even, worstPlain)
	}
	assert.Nil(t, placeLineShards(make([]string, 16384), NewKeys("tr").Concert("c1"), 8), "one master: nothing to place")

	slots, at := []SeatSlot{"s1#0@4", "s1#1"}, []int{0, 7, 12}
	raw := formatPlacement(slots, at)
	assert.Equal(t, "s1#0@4,s1#1|0,7,12", raw)
	assert.Equal(t, slots, splitSchedules(raw))
	assert.Equal(t, at, splitShardAt(raw))
	assert.Nil(t, splitShardAt("s1#0@4,s1#1"))
	rec := ticketrush.Placement{Slots: raw, Recorded: true}
	assert.True(t, Layout{Shards: 3, Schedules: slots, ShardAt: at}.Follows(rec))
	assert.False(t, Layout{Shards: 3, Schedules: slots}.Follows(rec), "shards not placed")
	assert.False(t, Layout{Shards: 3, Schedules: slots, ShardAt: []int{0, 7, 13}}.Follows(rec), "another shard's tag")
	assert.False(t, Layout{Shards: 3, Schedules: slots, ShardAt: at}.Follows(ticketrush.Placement{Slots: "s1#0@4,s1#1", Recorded: true}))
	assert.Equal(t, "tr:{c:c1:q2@12}:places", NewKeys("tr").Concert("c1").Placed(at).Shard(2).Places())
	assert.Equal(t, "tr:{c:c1:q0}:places", NewKeys("tr").Concert("c1").Placed(at).Shard(0).Places())
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
// placement in its settings, its seat slots where the busiest master's expected load is within a seat
// slot of the even share, and the placement recorded for it is that one.
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
	}
	load, even := expectedLoads(owners, k.Placed(l.ShardAt), con, l.Schedules)
	assert.LessOrEqual(t, maxLoad(load), even+1+1e-9, "the busiest master within a seat slot of the even share: %v", load)
	raw, err := c.Do(ctx, c.B().Hget().Key(k.Cfg()).Field("sched").Build()).ToString()
	require.NoError(t, err)
	kept, err := SeatPlacement(ctx, c, k, con)
	require.NoError(t, err)
	assert.Equal(t, raw, kept, "the placement recorded for a concert Redis holds is the one its settings name")

	// A concert of one date being created (PlaceSeats): a block of its seats per master, the busiest
	// master's expected load within a block of the even share.
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
	}
	load, even = expectedLoads(owners, s.keys.Concert(date.ID).Placed(splitShardAt(placed)), date, blocks)
	assert.LessOrEqual(t, maxLoad(load), even+1/float64(len(blocks))+1e-9, "%s: %v", placed, load)

	// The same concert placed again without a record (created before placements were recorded, Redis
	// lost): one block a schedule, so that its reservations, whose ids name no block, are restored where
	// their seats are looked for.
	placed, err = SeatPlacement(ctx, c, s.keys.Concert(date.ID), date)
	require.NoError(t, err)
	require.Len(t, splitSchedules(placed), 1, placed)
	assert.NotContains(t, placed, "#")
	assert.Nil(t, splitShardAt(placed), "its line's shards keep their plain tags")

	// Created, its line's shards are placed too: no master past the even share and one.
	placed, err = s.PlaceSeats(ctx, date)
	require.NoError(t, err)
	at := splitShardAt(placed)
	require.Len(t, at, 24, placed)
	lines := lineLoads(owners, s.keys.Concert(date.ID), 24, at)
	for m, l := range lines {
		assert.LessOrEqual(t, l, (1+LineArriveWeight)*24/float64(len(masters))+1, "master %s: %v", m, lines)
	}
	date.Placement = ticketrush.Placement{Slots: placed, Recorded: true}
	_, err = s.LoadConcert(ctx, date, t0)
	require.NoError(t, err)
	l, _, err = s.keys.ReadLayout(ctx, c, date.ID)
	require.NoError(t, err)
	assert.Equal(t, at, l.ShardAt, "the settings name the shards' tags")
	assert.True(t, l.Follows(date.Placement))
}
