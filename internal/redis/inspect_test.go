package redis

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The inspector reads back what the scripts wrote: the reservations with their ids, the seats taken,
// each reservation's debit and refund, and balances (0 for a user without a wallet entry).
func TestInspector(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, nil, "alice", "bob")
		paid, _, err := s.Hold(ctx, fans["alice"], sA, "VIP-1", 300, t0)
		require.NoError(t, err)
		held, _, err := s.Hold(ctx, fans["bob"], sB, "VIP-2", 100, t0)
		require.NoError(t, err)
		_, _, err = s.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		_, err = s.Claim(ctx, "alice", paid.ID, t0)
		require.NoError(t, err)
		d, err := s.Debit(ctx, "alice", paid.ID, 300, t0)
		require.NoError(t, err)
		_, err = s.Complete(ctx, paid.ID, d, t0)
		require.NoError(t, err)

		in := s.Inspector()
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
