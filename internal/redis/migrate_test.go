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

// TestMigrateLayoutMovesSeatsOutOfTheConcertKeys: a concert of a layout before version 3 with its seats in
// its own keys (cfg sched empty: a held seat, one being paid, one sold) is moved by the layout migration
// into seat slots in its own slot, as SlotsTogether places them: each reservation readable, each seat
// taken as it was, the fans' gate entries counting (the hold limit holds), the counts kept, the concert's
// seat keys gone; and a second migration moves nothing but the seat slots' lists of open holds, which
// version 3 drops (the gate counts a fan's holds).
func TestMigrateLayoutMovesSeatsOutOfTheConcertKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mod := func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser, q.HoldTTL = 1, 10*time.Second }
		con := concert(cid, mod)
		con.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}}
		mustLoad(t, s, con)
		alice := join(t, s, cid, "alice", ticketrush.StatusActive)
		k := s.keys.Concert(cid)

		// A layout before version 3: every seat key in the concert's own, no seat slot, no gate.
		rec := func(user, sched, seat string, st ticketrush.ReservationStatus) ticketrush.Reservation {
			return ticketrush.Reservation{ID: ticketrush.NewReservationID(cid, sched), UserID: user, ConcertID: cid, ScheduleID: sched, SeatID: seat, Seq: 1,
				Price: 100, Status: st, ExpiresAt: t0.Add(10 * time.Second), CreatedAt: t0}
		}
		held := rec("alice", sA, "VIP-1", ticketrush.ReservationHeld)
		paying := rec("bob", sB, "VIP-1", ticketrush.ReservationPaying)
		sold := rec("carol", sA, "VIP-2", ticketrush.ReservationPaid)
		sold.PaymentID, sold.PaidAt = "p1", t0
		records := map[string]string{}
		for _, r := range []ticketrush.Reservation{held, paying, sold} {
			raw, err := encodeReservation(r)
			require.NoError(t, err)
			records[r.ID] = raw
		}
		var cmds rueidis.Commands
		for _, sc := range []string{sA, sB} {
			cmds = append(cmds, c.B().Del().Key(slotOfConcert(t, s, cid, sc).All()...).Build())
		}
		cmds = append(cmds,
			c.B().Hdel().Key(k.Cfg()).Field("sched", "lv").Build(),
			c.B().Del().Key(k.Gate()).Build(),
			c.B().Hset().Key(k.Reservations()).FieldValue().FieldValue(held.ID, records[held.ID]).
				FieldValue(paying.ID, records[paying.ID]).FieldValue(sold.ID, records[sold.ID]).Build(),
			c.B().Hset().Key(k.Seats(sA)).FieldValue().FieldValue("VIP-1", "H|"+held.ID+"|"+millis(held.ExpiresAt)).
				FieldValue("VIP-2", "S|"+sold.ID).Build(),
			c.B().Hset().Key(k.Seats(sB)).FieldValue().FieldValue("VIP-1", "P|"+paying.ID).Build(),
			c.B().Zadd().Key(k.Holds()).ScoreMember().ScoreMember(float64(msOf(held.ExpiresAt)), held.ID).Build(),
			c.B().Zadd().Key(k.Paying()).ScoreMember().ScoreMember(float64(msOf(t0.Add(time.Second))), paying.ID).Build(),
			c.B().Hset().Key(k.UserHolds()).FieldValue().FieldValue("alice", held.ID).FieldValue("bob", paying.ID).Build(),
			c.B().Hset().Key(k.Sold()).FieldValue().FieldValue(sA, "1").Build(),
			c.B().Hset().Key(k.Inventory()).FieldValue().FieldValue("seats", "4").FieldValue("avail", "1").
				FieldValue("sold", "1").FieldValue("soldout", "0").Build())
		for _, r := range c.DoMulti(ctx, cmds...) {
			require.NoError(t, r.Error())
		}
		s.forget(cid)

		m, err := s.MigrateLayout(ctx, con)
		require.NoError(t, err)
		assert.Equal(t, LayoutMigration{Seats: 3}, m)
		got, err := c.Do(ctx, c.B().Hmget().Key(k.Cfg()).Field("sched", "lv").Build()).ToArray()
		require.NoError(t, err)
		sched, _ := got[0].ToString()
		lv, _ := got[1].ToString()
		assert.Equal(t, joinSlots(SlotsTogether(k, con)), sched, "the seat slots in the concert's own slot")
		assert.Equal(t, itoa(LayoutVersion), lv)
		n, err := c.Do(ctx, c.B().Exists().Key(inSlotSeatKeys(k, con)...).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "the old keys are gone")

		for _, want := range []ticketrush.Reservation{held, paying, sold} {
			r, err := s.Seats.Reservation(ctx, want.ID)
			require.NoError(t, err, want.ID)
			assert.Equal(t, want.Status, r.Status, want.ID)
		}
		counts, err := s.Seats.ScheduleCounts(ctx, cid, []string{sA, sB}, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 2, Sold: 1}, {ScheduleID: sB, Taken: 1}}, counts)
		assert.Equal(t, Inventory{Seats: 4, Available: 1, Sold: 1}, inventory(t, s, c, cid, sA, sB))
		_, _, err = s.Seats.Hold(ctx, alice, sB, "VIP-2", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "alice's moved hold counts at the gate")
		for sc, seats := range map[string]map[string]string{
			sA: {"VIP-1": "H|" + held.ID + "|" + millis(held.ExpiresAt), "VIP-2": "S|" + sold.ID}, sB: {"VIP-1": "P|" + paying.ID}} {
			got, err := c.Do(ctx, c.B().Hgetall().Key(slotOfConcert(t, s, cid, sc).Seats()).Build()).AsStrMap()
			require.NoError(t, err)
			assert.Equal(t, seats, got, "the seats of %s, taken as they were", sc)
		}
		_, err = s.Seats.Cancel(ctx, "alice", held.ID, t0)
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, alice, sB, "VIP-2", 100, t0)
		assert.NoError(t, err, "the cancel gave her hold back")

		// a seat slot's list of open holds, kept beside the gate in layouts before version 3
		leftover := slotOfConcert(t, s, cid, sB).UserHolds()
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(leftover).FieldValue().FieldValue("bob", paying.ID).Build()).Error())
		again, err := s.MigrateLayout(ctx, con)
		require.NoError(t, err)
		assert.Zero(t, again, "a second migration moves nothing")
		n, err = c.Do(ctx, c.B().Exists().Key(leftover).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "and deletes the lists of open holds")
	})
}

// TestMigrateLayoutMovesTheGateIntoShards: a line over shards whose gate records version 3 kept on the
// concert's slot has each moved into the fan's shard, where the gate reads it: a fan at their hold limit
// stays at it; a record the shard has already is kept; a second run moves nothing.
func TestMigrateLayoutMovesTheGateIntoShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1 }, "alice", "bob")
		k := s.keys.Concert(cid)
		until := millis(t0.Add(time.Hour))
		old := "r-old:" + until
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(k.Gate()).FieldValue().FieldValue("alice", old).
			FieldValue("bob", "r-older:"+until).Build()).Error())
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(fanGate(t, s, "bob").key()).FieldValue().
			FieldValue("bob", "r-new:"+until).Build()).Error())
		m, err := s.MigrateLayout(ctx, concert(cid, nil))
		require.NoError(t, err)
		assert.Equal(t, 2, m.Gates)
		assert.Equal(t, old, gateEntries(t, c, s, "alice"), "alice's record in her shard")
		assert.Equal(t, "r-new:"+until, gateEntries(t, c, s, "bob"), "the shard's own record is newer")
		n, err := c.Do(ctx, c.B().Exists().Key(k.Gate()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "the concert's records are gone")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "alice's open hold still counts")
		m, err = s.MigrateLayout(ctx, concert(cid, nil))
		require.NoError(t, err)
		assert.Zero(t, m.Gates, "a second run moves nothing")
	})
}
