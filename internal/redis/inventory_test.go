package redis

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// inventory reads the concert's inv hash and checks it against the seat maps it counts: every seat in
// no map is available.
func inventory(t *testing.T, s *Store, c rueidis.Client, concertID string, scheduleIDs ...string) Inventory {
	t.Helper()
	ctx := context.Background()
	var inv Inventory
	taken := int64(0)
	for _, sc := range scheduleIDs { // each seat slot's count, as its scripts keep it
		sk := slotOfConcert(t, s, concertID, sc)
		h, err := c.Do(ctx, c.B().Hgetall().Key(sk.Inventory()).Build()).AsStrMap()
		require.NoError(t, err)
		one, ok := decodeInventory(h)
		require.True(t, ok, "inv hash %v", h)
		inv.Seats, inv.Available, inv.Sold = inv.Seats+one.Seats, inv.Available+one.Available, inv.Sold+one.Sold
		n, err := c.Do(ctx, c.B().Hlen().Key(sk.Seats()).Build()).AsInt64()
		require.NoError(t, err)
		taken += n
	}
	inv.SoldOut = inv.Seats > 0 && inv.Sold >= inv.Seats
	assert.Equal(t, inv.Seats-taken, inv.Available, "the count agrees with the seat maps")
	return inv
}

// TestInventoryCount follows the AVAILABLE count through every seat script: a hold takes a seat, a
// cancel, a sweep and a late release give it back, taking another fan's lapsed hold of a seat changes
// nothing, and a sale counts as sold. Readers (the snapshot) add lapsed holds not swept yet.
func TestInventoryCount(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second; q.MaxHoldsPerUser = 4 },
			"alice", "bob")
		inv := func() Inventory { return inventory(t, s, c, cid, sA, sB) }
		assert.Equal(t, Inventory{Seats: 4, Available: 4}, inv(), "two schedules of two seats")

		r, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		assert.Equal(t, int64(3), inv().Available, "held")
		_, err = s.Seats.Cancel(ctx, "alice", r.ID, t0)
		require.NoError(t, err)
		assert.Equal(t, int64(4), inv().Available, "cancelled")

		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		// the concert's count, which the snapshot reads, is carried from the seat slots' by the tick
		_, err = s.Line.Tick(ctx, cid, t0.Add(9*time.Second), 10)
		require.NoError(t, err)
		snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0.Add(9*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(3), snap.SeatsAvailable, "held until its expiry")
		_, err = s.Line.Tick(ctx, cid, t0.Add(10*time.Second), 10)
		require.NoError(t, err)
		snap, err = s.Line.Snapshot(ctx, cid, 0, 10, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(4), snap.SeatsAvailable, "a lapsed hold not swept yet reads as available")
		assert.Equal(t, int64(3), inv().Available, "the stored count still has it taken")

		_, lapsed, err := s.Seats.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0.Add(10*time.Second))
		require.NoError(t, err)
		require.True(t, lapsed)
		assert.Equal(t, int64(3), inv().Available, "bob took alice's lapsed hold: one seat taken still")

		n, err := s.Seats.Sweep(ctx, cid, []string{sA, sB}, t0.Add(20*time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		assert.Equal(t, int64(4), inv().Available, "swept")

		r1, _, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 300, t0.Add(20*time.Second))
		require.NoError(t, err)
		r2, _, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-2", 300, t0.Add(20*time.Second))
		require.NoError(t, err)
		for _, id := range []string{r1.ID, r2.ID} {
			_, err = s.Seats.Claim(ctx, "alice", id, t0.Add(20*time.Second))
			require.NoError(t, err)
		}
		assert.Equal(t, int64(2), inv().Available, "being paid")
		_, err = s.Seats.Release(ctx, r1.ID, t0.Add(30*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(3), inv().Available, "released after its expiry: the seat is back")

		_, _, err = s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		d, err := s.Wallet.Debit(ctx, "alice", r2.ID, 300, t0)
		require.NoError(t, err)
		_, err = s.Seats.Complete(ctx, r2.ID, d, t0.Add(21*time.Second))
		require.NoError(t, err)
		_, err = s.Seats.Complete(ctx, r2.ID, d, t0.Add(21*time.Second))
		require.NoError(t, err)
		assert.Equal(t, Inventory{Seats: 4, Available: 3, Sold: 1}, inv(), "sold once, however often completed")
	})
}

// TestSoldOut: the sale of the last seat marks the concert sold out, once, at the next tick (which
// carries the seat slots' counts to the concert's); then a join is refused, a token in the line reads
// SOLD_OUT, nobody is admitted, and the active fan keeps their token.
func TestSoldOut(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 2; q.MaxHoldsPerUser = 2 })))
		alice := join(t, s, cid, "alice", ticketrush.StatusActive)
		carol := join(t, s, cid, "carol", ticketrush.StatusActive)
		bob := join(t, s, cid, "bob", ticketrush.StatusWaiting)

		_, _, err := s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		var held []ticketrush.Reservation
		for _, seat := range []string{"VIP-1", "VIP-2"} {
			r, _, err := s.Seats.Hold(ctx, alice, sA, seat, 100, t0)
			require.NoError(t, err)
			held = append(held, r)
		}
		for i, r := range held {
			pay(t, s, "alice", r.ID, 100)
			_, err := s.Line.Tick(ctx, cid, t0, 10)
			require.NoError(t, err)
			snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0)
			require.NoError(t, err)
			assert.Equal(t, i == 1, snap.SoldOut, "sold out after the last seat only (seat %d)", i+1)
			assert.Zero(t, snap.SeatsAvailable, "one held, one sold; then both sold")
		}
		assert.Equal(t, Inventory{Seats: 2, Sold: 2, SoldOut: true}, inventory(t, s, c, cid, sA))
		assert.Equal(t, []string{"concert.soldout"}, filter(eventTypes(t, c, s.keys.Concert(cid).Events()), "concert.soldout"))

		st, err := s.Line.TokenStatus(ctx, bob, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusSoldOut, st.Status, "bob's line is closed")
		_, err = s.Line.Join(ctx, cid, "dave", t0)
		assert.ErrorIs(t, err, ticketrush.ErrSoldOut)
		_, err = s.Line.Join(ctx, cid, "bob", t0)
		assert.ErrorIs(t, err, ticketrush.ErrSoldOut, "a waiting fan's rejoin too")
		again, err := s.Line.Join(ctx, cid, "carol", t0)
		require.NoError(t, err, "an ACTIVE fan keeps their session")
		assert.Equal(t, carol.Seq, again.Seq)

		_, err = s.Line.Leave(ctx, cid, "carol", carol.Seq, t0)
		require.NoError(t, err)
		r, err := s.Line.Tick(ctx, cid, t0.Add(time.Minute), 100)
		require.NoError(t, err)
		assert.Zero(t, r.Admitted, "a free slot, but nothing to sell")
	})
}

// TestOneShardTickCarriesTheCount: the tick of a line of one shard carries its seat slots' counts to the
// concert's in its own queue_tick call: the round after the last sale marks the concert sold out, with
// its event once, and no inventory_carry call is made on any tick.
func TestOneShardTickCarriesTheCount(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) { q.LineShards = 1; q.MaxHoldsPerUser = 2 })))
		alice := join(t, s, cid, "alice", ticketrush.StatusActive)
		_, _, err := s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		carries := func() float64 { return testutil.ToFloat64(s.inventoryCarry.calls) }
		before := carries()
		var held []ticketrush.Reservation
		for i, seat := range []string{"VIP-1", "VIP-2"} {
			r, _, err := s.Seats.Hold(ctx, alice, sA, seat, 100, t0)
			require.NoError(t, err)
			held = append(held, r)
			_, err = s.Line.Tick(ctx, cid, t0, 10)
			require.NoError(t, err)
			snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0)
			require.NoError(t, err)
			assert.Equal(t, int64(1-i), snap.SeatsAvailable, "the tick carried the hold of %s", seat)
		}
		for _, r := range held {
			pay(t, s, "alice", r.ID, 100)
		}
		_, err = s.Line.Tick(ctx, cid, t0, 10)
		require.NoError(t, err)
		snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0)
		require.NoError(t, err)
		assert.True(t, snap.SoldOut, "the tick after the last sale")
		_, err = s.Line.Tick(ctx, cid, t0, 10)
		require.NoError(t, err)
		assert.Equal(t, []string{"concert.soldout"}, filter(eventTypes(t, c, s.keys.Concert(cid).Events()), "concert.soldout"))
		assert.Equal(t, before, carries(), "no call of its own for the counts")
	})
}

// TestActivePerSeat: with activePerSeat 1 the tick and the join admit nobody past the AVAILABLE seats;
// a cancelled or lapsed hold re-offers its seat to the head of the line, one fan per seat; and the
// setting is live.
func TestActivePerSeat(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) {
			q.ActivePerSeat = 1
			q.ActiveTTL = 5 * time.Second
			q.HoldTTL = 20 * time.Second
		})))
		a := join(t, s, cid, "u1", ticketrush.StatusActive)
		b := join(t, s, cid, "u2", ticketrush.StatusActive)
		for _, u := range []string{"u3", "u4", "u5", "u6"} {
			join(t, s, cid, u, ticketrush.StatusWaiting)
		}
		r, err := s.Line.Tick(ctx, cid, t0, 100)
		require.NoError(t, err)
		assert.Equal(t, 0, r.Admitted, "two seats, two ACTIVE")

		ra, _, err := s.Seats.Hold(ctx, a, sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, b, sA, "VIP-2", 100, t0)
		require.NoError(t, err)
		r, err = s.Line.Tick(ctx, cid, t0.Add(5*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Lapsed: 2, Waiting: 4}, r,
			"both sessions lapse, but every seat is held: the line waits")

		_, err = s.Seats.Cancel(ctx, "u1", ra.ID, t0.Add(6*time.Second))
		require.NoError(t, err)
		r, err = s.Line.Tick(ctx, cid, t0.Add(6*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 1, Waiting: 3, Active: 1}, r, "a cancelled hold re-offers one seat")
		assertActive(t, s, cid, "u3", 3)

		r, err = s.Line.Tick(ctx, cid, t0.Add(20*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 2, Lapsed: 1, Waiting: 1, Active: 2}, r,
			"u3's session lapses and u2's hold lapses (not swept yet): two seats, one fan each")

		q := ticketrush.DefaultQueueSettings()
		q.ActivePerSeat = 2
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		r, err = s.Line.Tick(ctx, cid, t0.Add(21*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 1, Waiting: 0, Active: 3}, r, "activePerSeat 2, live: room for two more, one waits")
	})
}

func join(t *testing.T, s *Store, concertID, user string, want ticketrush.QueueStatus) ticketrush.QueueClaims {
	t.Helper()
	r, err := s.Line.Join(context.Background(), concertID, user, t0)
	require.NoError(t, err)
	require.Equal(t, want, r.Status, user)
	return ticketrush.QueueClaims{UserID: user, ConcertID: concertID, Seq: r.Seq}
}

func assertActive(t *testing.T, s *Store, concertID, user string, seq uint64) {
	t.Helper()
	st, err := s.Line.TokenStatus(context.Background(), ticketrush.QueueClaims{UserID: user, ConcertID: concertID, Seq: seq}, t0)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.StatusActive, st.Status, user)
}

// oneSchedule gives c one schedule whose id reservation ids can carry.
func oneSchedule(c ticketrush.Concert) ticketrush.Concert {
	c.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}}
	return c
}

// TestAbandonment: with abandonAfter 2 s, the tick drops the fans at the head of the line who were
// last seen (joined, rejoined or marked alive by an instance) 2 s or more ago, admits the others in
// order, and moves the head past both; the dropped read EXPIRED and are counted.
func TestAbandonment(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		q := ticketrush.DefaultQueueSettings()
		q.Paused, q.AbandonAfter = true, 2*time.Second
		mustLoad(t, s, oneSchedule(concert(cid, func(qs *ticketrush.QueueSettings) { *qs = q })))
		var fans []ticketrush.QueueClaims
		for i := 1; i <= 6; i++ {
			fans = append(fans, join(t, s, cid, "u"+strconv.Itoa(i), ticketrush.StatusWaiting))
		}
		require.NoError(t, s.Line.MarkAlive(ctx, cid, []ticketrush.Arrival{{UserID: fans[1].UserID, Seq: fans[1].Seq}, {UserID: fans[3].UserID, Seq: fans[3].Seq}}, t0.Add(1500*time.Millisecond)))
		_, err := s.Line.Join(ctx, cid, "u6", t0.Add(1500*time.Millisecond))
		require.NoError(t, err, "a rejoin is a sign of life too")

		q.Paused = false
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		r, err := s.Line.Tick(ctx, cid, t0.Add(3*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 3, Waiting: 0, Active: 3, Abandoned: 3}, r)
		for i, f := range fans {
			st, err := s.Line.TokenStatus(ctx, f, t0.Add(3*time.Second))
			require.NoError(t, err)
			want := ticketrush.StatusExpired
			if i%2 == 1 {
				want = ticketrush.StatusActive
			}
			assert.Equal(t, want, st.Status, "u%d", i+1)
		}
		var dropped, admitted []string
		entries, err := c.Do(ctx, c.B().Xrange().Key(s.keys.Concert(cid).Events()).Start("-").End("+").Build()).AsXRange()
		require.NoError(t, err)
		for _, e := range entries {
			if e.FieldValues["type"] == "queue.abandons" {
				fans, err := EventFans(e.FieldValues)
				require.NoError(t, err)
				for _, f := range fans {
					dropped = append(dropped, f.User)
				}
			}
		}
		for _, f := range admissions(t, entries) {
			admitted = append(admitted, f.User)
		}
		assert.Equal(t, []string{"u1", "u3", "u5"}, dropped, "in arrival order")
		assert.Equal(t, []string{"u2", "u4", "u6"}, admitted, "in arrival order")
		snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0.Add(3*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(3), snap.Abandoned)
		assert.Equal(t, fans[5].Seq, snap.Head, "the head is past everyone who left the line")
		n, err := c.Do(ctx, c.B().Exists().Key(s.keys.Concert(cid).Seen(), s.keys.Concert(cid).Alive()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "nothing kept for fans who left the line: the line is empty, so seen starts afresh")

		q.Paused = true
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		quiet := join(t, s, cid, "u7", ticketrush.StatusWaiting)
		q.Paused, q.AbandonAfter = false, 0
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		r, err = s.Line.Tick(ctx, cid, t0.Add(time.Hour), 100)
		require.NoError(t, err)
		assert.Equal(t, 1, r.Admitted, "abandonAfter 0: silence is no reason to drop a fan")
		assertActive(t, s, cid, "u7", quiet.Seq)
	})
}

// TestNoShowsOfOneRound: the tick expires every no-show of its round at once, one queue.noshows event
// naming them in order, and passes over a fan on the watch who is no longer ACTIVE (one who gave their
// slot back) and one who showed up.
func TestNoShowsOfOneRound(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) {
			q.ActiveCapacity, q.NoShow, q.AbandonAfter = 5, 2*time.Second, 0
		})))
		var fans []ticketrush.QueueClaims
		for _, u := range []string{"a", "b", "c", "d", "e"} {
			fans = append(fans, join(t, s, cid, u, ticketrush.StatusActive))
		}
		_, _, err := s.Seats.GatedSeats(ctx, fans[1], sA, t0.Add(time.Second)) // b shows up
		require.NoError(t, err)
		_, err = s.Line.Leave(ctx, cid, "c", fans[2].Seq, t0.Add(time.Second)) // c gives the slot back
		require.NoError(t, err)
		r, err := s.Line.Tick(ctx, cid, t0.Add(2*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Active: 1, NoShows: 3}, r, "a, d and e expired; b stays")
		for i, f := range fans {
			st, err := s.Line.TokenStatus(ctx, f, t0.Add(2*time.Second))
			require.NoError(t, err)
			want := ticketrush.StatusExpired
			if i == 1 {
				want = ticketrush.StatusActive
			}
			assert.Equal(t, want, st.Status, f.UserID)
		}
		entries, err := c.Do(ctx, c.B().Xrange().Key(s.keys.Concert(cid).Events()).Start("-").End("+").Build()).AsXRange()
		require.NoError(t, err)
		last := entries[len(entries)-1].FieldValues
		assert.Equal(t, map[string]string{"type": "queue.noshows", "users": "a,d,e",
			"seqs": fmt.Sprintf("%d,%d,%d", fans[0].Seq, fans[3].Seq, fans[4].Seq),
			"at":   strconv.FormatInt(t0.Add(2*time.Second).UnixMilli(), 10)}, last)
		seqs, err := c.Do(ctx, c.B().Hgetall().Key(s.keys.Concert(cid).ActiveSeq()).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"b": strconv.FormatUint(fans[1].Seq, 10)}, seqs, "the expired fans' seqs are gone")
		snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0.Add(2*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(3), snap.Abandoned)
	})
}

// TestNoShow: with noShow 2 s an admitted fan who makes no gated call by then is EXPIRED by the tick,
// freeing the slot for the next fan; a gated read or a hold is showing up.
func TestNoShow(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) {
			q.ActiveCapacity, q.NoShow, q.AbandonAfter = 3, 2*time.Second, 0
		})))
		reader := join(t, s, cid, "reader", ticketrush.StatusActive)
		holder := join(t, s, cid, "holder", ticketrush.StatusActive)
		quiet := join(t, s, cid, "quiet", ticketrush.StatusActive)
		next := join(t, s, cid, "next", ticketrush.StatusWaiting)

		_, _, err := s.Seats.GatedSeats(ctx, reader, sA, t0.Add(time.Second))
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, holder, sA, "VIP-1", 100, t0.Add(time.Second))
		require.NoError(t, err)
		r, err := s.Line.Tick(ctx, cid, t0.Add(1999*time.Millisecond), 100)
		require.NoError(t, err)
		assert.Zero(t, r.NoShows, "before the deadline")
		r, err = s.Line.Tick(ctx, cid, t0.Add(2*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 1, Waiting: 0, Active: 3, NoShows: 1}, r)
		for _, f := range []ticketrush.QueueClaims{reader, holder, quiet, next} {
			st, err := s.Line.TokenStatus(ctx, f, t0.Add(2*time.Second))
			require.NoError(t, err)
			want := ticketrush.StatusActive
			if f.UserID == "quiet" {
				want = ticketrush.StatusExpired
			}
			assert.Equal(t, want, st.Status, f.UserID)
		}
		entries, err := c.Do(ctx, c.B().Xrange().Key(s.keys.Concert(cid).Events()).Start("-").End("+").Build()).AsXRange()
		require.NoError(t, err)
		var noshows []map[string]string
		for _, e := range entries {
			if e.FieldValues["type"] == "queue.noshows" {
				noshows = append(noshows, e.FieldValues)
			}
		}
		assert.Equal(t, []map[string]string{{"type": "queue.noshows", "users": "quiet", "seqs": strconv.FormatUint(quiet.Seq, 10),
			"at": strconv.FormatInt(t0.Add(2*time.Second).UnixMilli(), 10)}}, noshows, "one event for the round's no-shows")
		snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0.Add(2*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(1), snap.Abandoned)

		r, err = s.Line.Tick(ctx, cid, t0.Add(4*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 1, r.NoShows, "next, admitted by the tick at 2 s, never showed either")
	})
}

// slotEventTypes is the event types of schedule scheduleID's seat slot stream, in order.
func slotEventTypes(t *testing.T, s *Store, c rueidis.Client, concertID, scheduleID string) []string {
	t.Helper()
	return eventTypes(t, c, slotOfConcert(t, s, concertID, scheduleID).Events())
}

// TestActivePerSeatCountsTheSeatsAsTheyAre: on a line of one shard, whose seat slots are in the concert's
// own slot, the tick's activePerSeat counts the seats there at the instant it admits, not the count the
// last carry left: with every seat held since that carry, a fan who gave back their slot frees no room.
func TestActivePerSeatCountsTheSeatsAsTheyAre(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mod := func(q *ticketrush.QueueSettings) { q.ActivePerSeat, q.ActiveCapacity = 1, 10 }
		con := oneSchedule(concert(cid, mod))
		mustLoad(t, s, con)
		var holders []ticketrush.QueueClaims
		for _, f := range []string{"a", "b"} {
			holders = append(holders, join(t, s, cid, f, ticketrush.StatusActive))
		}
		waiter := join(t, s, cid, "w", ticketrush.StatusWaiting)
		_, err := s.Line.Tick(ctx, cid, t0, 10) // the carry: two seats AVAILABLE
		require.NoError(t, err)
		for i, h := range holders { // both seats held, and both fans give back their slot, after that carry
			_, _, err := s.Seats.Hold(ctx, h, sA, fmt.Sprintf("VIP-%d", i+1), 100, t0)
			require.NoError(t, err)
			_, err = s.Line.Leave(ctx, cid, h.UserID, h.Seq, t0)
			require.NoError(t, err)
		}
		w, err := s.ways(ctx, cid)
		require.NoError(t, err)
		_, err = w.line.tick(ctx, t0, 10) // the line's round alone, the carry two seats behind
		require.NoError(t, err)
		st, err := s.Line.TokenStatus(ctx, waiter, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, st.Status, "no seat is AVAILABLE: nobody is admitted")
	})
}
