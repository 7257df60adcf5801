package redis

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// paidAndHeld loads the test sale, in which alice charges 1000 and buys VIP-1 of sA for 300 (paid) and
// bob holds VIP-2 of sB (held).
func paidAndHeld(t *testing.T, s *Store) (paid, held ticketrush.Reservation) {
	t.Helper()
	ctx := context.Background()
	fans := sale(t, s, nil, "alice", "bob")
	paid, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 300, t0)
	require.NoError(t, err)
	held, _, err = s.Seats.Hold(ctx, fans["bob"], sB, "VIP-2", 100, t0)
	require.NoError(t, err)
	_, _, err = s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
	require.NoError(t, err)
	pay(t, s, "alice", paid.ID, 300)
	return paid, held
}

// pay claims, debits and completes the payment of reservation resID of userID at t0.
func pay(t *testing.T, s *Store, userID, resID string, amount int64) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Seats.Claim(ctx, userID, resID, t0)
	require.NoError(t, err)
	d, err := s.Wallet.Debit(ctx, userID, resID, amount, t0)
	require.NoError(t, err)
	_, err = s.Seats.Complete(ctx, resID, d, t0)
	require.NoError(t, err)
}

// The inspector reads back what the scripts wrote: the reservations with their ids, the seats taken,
// each reservation's debit and refund, and balances (0 for a user without a wallet entry).
func TestInspector(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		paid, held := paidAndHeld(t, s)

		in := NewInspector(c, s.keys.prefix)
		res, err := in.Reservations(ctx, cid)
		require.NoError(t, err)
		require.Len(t, res, 2)
		assert.Equal(t, paid.ID, res[paid.ID].ID)
		assert.Equal(t, ticketrush.ReservationPaid, res[paid.ID].Status)
		assert.Equal(t, ticketrush.ReservationHeld, res[held.ID].Status)

		seats, err := in.SeatStates(ctx, cid, sA)
		require.NoError(t, err)
		assert.Equal(t, map[string]SeatState{"VIP-1": {Kind: SeatSold, Reservation: paid.ID}}, seats)
		seats, err = in.SeatStates(ctx, cid, sB)
		require.NoError(t, err)
		assert.Equal(t, SeatHeld, seats["VIP-2"].Kind)

		money, err := in.Money(ctx, []ticketrush.Reservation{res[paid.ID], res[held.ID]})
		require.NoError(t, err)
		require.Len(t, money, 2)
		require.NotNil(t, money[0].Debit)
		assert.EqualValues(t, 300, money[0].Debit.Amount)
		assert.Nil(t, money[0].Refund)
		assert.Equal(t, Money{}, money[1], "bob paid nothing")

		bal, err := in.Balances(ctx, []string{"alice", "bob"})
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"alice": 700, "bob": 0}, bal)
	})
}

// A concert's slot and a wallet shard's read at one moment: the reservations, the seats taken, the
// seat count kept and the one the seats give, the balances, and the last entry of each stream; a
// stream without entries is cut just before Redis' clock.
func TestInspectorSlots(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		paid, held := paidAndHeld(t, s)

		in := NewInspector(c, s.keys.prefix)
		con := concert(cid, nil)
		con.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}}
		slots, err := in.SeatSlots(ctx, con)
		require.NoError(t, err)
		require.Len(t, slots, 2, "a seat slot per schedule")
		a, b := slots[0], slots[1]
		require.Len(t, a.Reservations, 1)
		require.Len(t, b.Reservations, 1)
		assert.Equal(t, ticketrush.ReservationPaid, a.Reservations[paid.ID].Status)
		assert.Equal(t, ticketrush.ReservationHeld, b.Reservations[held.ID].Status)
		assert.Equal(t, map[string]SeatState{"VIP-1": {Kind: SeatSold, Reservation: paid.ID}}, a.Seats[sA])
		assert.Equal(t, SeatHeld, b.Seats[sB]["VIP-2"].Kind)
		slot := a
		assert.True(t, slot.InventoryOK)
		assert.EqualValues(t, 1, slot.Counted.Sold)
		assert.EqualValues(t, slot.Counted.Seats-1, slot.Counted.Available, "schedule A's one seat sold")
		assert.Equal(t, slot.Counted, slot.Inventory, "the seat count kept is the one the seats give")
		events := slotOfConcert(t, s, cid, sA).Events()
		last, err := c.Do(ctx, c.B().Xrevrange().Key(events).End("+").Start("-").Count(1).Build()).AsXRange()
		require.NoError(t, err)
		require.Len(t, last, 1)
		assert.Equal(t, events, slot.Cut.Stream)
		assert.Equal(t, last[0].ID, slot.Cut.Entry(), "the seat slot's last event")

		w, err := in.WalletSlot(ctx, WalletShard("alice"))
		require.NoError(t, err)
		assert.Equal(t, int64(700), w.Balances["alice"])
		assert.Equal(t, s.keys.WalletShard(WalletShard("alice")).Events(), w.Cut.Stream)
		assert.NotEqualValues(t, 1<<62-1, w.Cut.Seq, "alice's shard has events")

		other := (WalletShard("alice") + 1) % WalletShards
		if other == WalletShard("bob") {
			other = (other + 1) % WalletShards
		}
		w, err = in.WalletSlot(ctx, other)
		require.NoError(t, err)
		assert.Empty(t, w.Balances)
		assert.EqualValues(t, 1<<62-1, w.Cut.Seq, "a shard without events is cut at Redis' clock")
		assert.Positive(t, w.Cut.Ms)
	})
}
