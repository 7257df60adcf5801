package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// blockSale loads a concert of one date whose seats are kept in three blocks (its placement names them:
// sA#0, sA#1, sA#2), 12 seats, a line over 3 shards, holds of 10 s, and admits the given fans. It
// returns the claims and a seat of each block.
func blockSale(t *testing.T, s *Store, mod func(*ticketrush.QueueSettings), fans ...string) (map[string]ticketrush.QueueClaims, []string) {
	t.Helper()
	c := concert(cid, func(q *ticketrush.QueueSettings) {
		q.LineShards, q.HoldTTL, q.ActiveTTL = 3, 10*time.Second, time.Hour
		if mod != nil {
			mod(q)
		}
	})
	c.Sections = []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 12}}
	c = oneSchedule(c)
	c.Placement = ticketrush.Placement{Recorded: true, Slots: sA + "#0," + sA + "#1," + sA + "#2"}
	mustLoad(t, s, c)
	seats := make([]string, 3)
	for i := 1; i <= 12; i++ {
		seat := fmt.Sprintf("VIP-%d", i)
		if b := seatBlock(seat, 3); seats[b] == "" {
			seats[b] = seat
		}
	}
	for b, seat := range seats {
		require.NotEmpty(t, seat, "no seat of the 12 in block %d", b)
	}
	out := map[string]ticketrush.QueueClaims{}
	for _, f := range fans {
		r, err := s.Line.Join(context.Background(), cid, f, t0)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, r.Status, "%s admitted at once", f)
		out[f] = ticketrush.QueueClaims{UserID: f, ConcertID: cid, Seq: r.Seq}
	}
	return out, seats
}

// TestOneDateInBlocks: a date whose seats are kept in blocks of slots sells as one: each hold lands in
// its seat's block and each step finds it from the reservation id alone; the hold limit, the seat map,
// the counts, the sweep, the concert's count and a restore see every block.
func TestOneDateInBlocks(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans, seats := blockSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 2 }, "alice", "bob")
		k := s.keys.Concert(cid)
		blocks := []SeatSlot{SeatSlot(sA + "#0"), SeatSlot(sA + "#1"), SeatSlot(sA + "#2")}
		inBlock := func(b int, id string) bool {
			n, err := c.Do(ctx, c.B().Hexists().Key(k.Schedule(blocks[b]).Reservations()).Field(id).Build()).AsInt64()
			require.NoError(t, err)
			return n == 1
		}

		r0, _, err := s.Seats.Hold(ctx, fans["alice"], sA, seats[0], 100, t0)
		require.NoError(t, err)
		r1, _, err := s.Seats.Hold(ctx, fans["alice"], sA, seats[1], 100, t0)
		require.NoError(t, err)
		assert.True(t, inBlock(0, r0.ID) && inBlock(1, r1.ID), "each hold in its seat's block")
		assert.False(t, inBlock(1, r0.ID) || inBlock(0, r1.ID))
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, seats[2], 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "the limit counts the holds of every block")
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sA, seats[0], 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable)

		st, states, err := s.Seats.GatedSeats(ctx, fans["bob"], sA, t0)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, st.Status)
		assert.Equal(t, map[string]ticketrush.SeatStatus{seats[0]: ticketrush.SeatHeld, seats[1]: ticketrush.SeatHeld}, states,
			"one seat map of every block")
		taken, err := s.Seats.TakenSeats(ctx, cid, []string{sA})
		require.NoError(t, err)
		assert.Len(t, taken[0], 2)
		counts, err := s.Seats.ScheduleCounts(ctx, cid, []string{sA}, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 2}}, counts)

		got, err := s.Seats.Reservation(ctx, r1.ID)
		require.NoError(t, err)
		assert.Equal(t, seats[1], got.SeatID, "read from the block its id names")
		_, err = s.Seats.Cancel(ctx, "alice", r1.ID, t0)
		require.NoError(t, err)
		_, _, err = s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		pay(t, s, "alice", r0.ID, 100)
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sA, seats[2], 100, t0)
		require.NoError(t, err)
		n, err := s.Seats.Sweep(ctx, cid, []string{sA}, t0.Add(11*time.Second), 10)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "bob's hold in block 2 lapsed")

		_, err = s.Line.Tick(ctx, cid, t0.Add(11*time.Second), 10)
		require.NoError(t, err)
		snap, err := s.Line.Snapshot(ctx, cid, 0, 10, t0.Add(11*time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(11), snap.SeatsAvailable, "the concert's count from every block: one sold")
		counts, err = s.Seats.ScheduleCounts(ctx, cid, []string{sA}, t0.Add(11*time.Second))
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 1, Sold: 1}}, counts)

		// Restore: every reservation back in its block, each block's count its own seats'.
		in := NewInspector(c, s.keys.prefix)
		con := oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) { q.LineShards = 3 }))
		con.Sections = []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 12}}
		con.Placement = ticketrush.Placement{Recorded: true, Slots: sA + "#0," + sA + "#1," + sA + "#2"}
		before, err := in.SeatSlots(ctx, con)
		require.NoError(t, err)
		require.Len(t, before, 3)
		var recs []ticketrush.ReservationRecord
		var seatsTotal int64
		for _, slot := range before {
			assert.Equal(t, slot.Counted, slot.Inventory, "a block's count is its seats'")
			seatsTotal += slot.Inventory.Seats
			for _, r := range slot.Reservations {
				recs = append(recs, ticketrush.ReservationRecord{Reservation: r, PaidAmount: -1})
			}
		}
		assert.EqualValues(t, 12, seatsTotal, "the blocks' seats are the date's")
		require.Len(t, recs, 3)
		// a record whose id names another block than its seat's: restored, its seat would read free
		stray := ticketrush.ReservationRecord{Reservation: ticketrush.Reservation{ID: ticketrush.NewReservationIDInBlock(cid, sA, 1),
			UserID: "carol", ConcertID: cid, ScheduleID: sA, SeatID: seats[0], Seq: 9, Price: 100, Status: ticketrush.ReservationHeld,
			ExpiresAt: t0.Add(time.Minute), CreatedAt: t0}, PaidAmount: -1}
		rep, err := RestoreConcert(ctx, c, k, con, append(recs, stray), ticketrush.QueueMark{ConcertID: cid, MaxSeq: 10})
		require.NoError(t, err)
		assert.Equal(t, []string{stray.ID}, rep.Skipped, "skipped: its id names block 1, its seat is in block 0")
		after, err := in.SeatSlots(ctx, con)
		require.NoError(t, err)
		for i := range before {
			assert.Equal(t, before[i].Reservations, after[i].Reservations, "block %d", i)
			assert.Equal(t, before[i].Seats, after[i].Seats, "block %d", i)
			assert.Equal(t, after[i].Counted, after[i].Inventory, "block %d", i)
		}
	})
}
