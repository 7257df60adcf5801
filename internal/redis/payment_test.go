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

func TestPaymentSteps(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second }, "alice", "bob")
		r, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 300, t0)
		require.NoError(t, err)

		_, err = s.Seats.Claim(ctx, "bob", r.ID, t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound, "not bob's")
		_, err = s.Seats.Claim(ctx, "alice", r.ID, t0.Add(10*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrReservationExpired, "lapsed before payment")

		claimed, err := s.Seats.Claim(ctx, "alice", r.ID, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaying, claimed.Status)
		again, err := s.Seats.Claim(ctx, "alice", r.ID, t0)
		require.NoError(t, err, "a second claim (a retry) succeeds")
		assert.Equal(t, ticketrush.ReservationPaying, again.Status)
		n, err := s.Seats.Sweep(ctx, cid, []string{sA, sB}, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		assert.Zero(t, n, "a claimed hold no longer lapses")
		stuck, err := s.Seats.StuckPayments(ctx, cid, t0, 10)
		require.NoError(t, err)
		assert.Equal(t, []string{r.ID}, stuck)

		_, err = s.Wallet.Debit(ctx, "alice", r.ID, 300, t0)
		assert.ErrorIs(t, err, ticketrush.ErrInsufficientBalance)
		_, _, err = s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		d, err := s.Wallet.Debit(ctx, "alice", r.ID, 300, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.Payment{ID: ticketrush.PaymentID(r.ID), ReservationID: r.ID, UserID: "alice", Amount: 300, Balance: 700, PaidAt: t0}, d)
		d2, err := s.Wallet.Debit(ctx, "alice", r.ID, 300, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, d, d2, "one debit per reservation")
		got, ok, err := s.Wallet.Debited(ctx, "alice", r.ID)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, d, got)

		paid, err := s.Seats.Complete(ctx, r.ID, d, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaid, paid.Status)
		assert.Equal(t, d.ID, paid.PaymentID)
		assert.Equal(t, int64(700), paid.Balance)
		again, err = s.Seats.Complete(ctx, r.ID, d, t0)
		require.NoError(t, err)
		assert.Equal(t, paid, again)
		replay, err := s.Seats.Claim(ctx, "alice", r.ID, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaid, replay.Status, "paying a PAID reservation replies with its payment")

		st, err := s.Line.TokenStatus(ctx, fans["alice"], t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusDone, st.Status, "her last open hold is paid")
		counts, err := s.Seats.ScheduleCounts(ctx, cid, []string{sA}, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 1, Sold: 1}}, counts)
		balance, err := s.Wallet.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(700), balance)

		assert.Equal(t, []string{"hold.create", "payment.claim", "sale"},
			filter(slotEventTypes(t, s, c, cid, sA), "hold.", "payment.", "sale", "queue.done"), "the seat slot's stream")
		assert.Equal(t, []string{"queue.done"},
			filter(eventTypes(t, c, s.keys.Concert(cid).Events()), "hold.", "payment.", "sale", "queue.done"), "the concert's")
		assert.Equal(t, []string{"point.charge", "point.debit"}, eventTypes(t, c, s.keys.Wallet("alice").Events()))
	})
}

func TestReleaseAndRefund(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second }, "alice")
		r1, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 300, t0)
		require.NoError(t, err)
		r2, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-2", 300, t0)
		require.NoError(t, err)
		_, err = s.Seats.Claim(ctx, "alice", r1.ID, t0)
		require.NoError(t, err)
		_, err = s.Seats.Claim(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)

		back, err := s.Seats.Release(ctx, r1.ID, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationHeld, back.Status, "released before its expiry: HELD again")
		_, err = s.Seats.Cancel(ctx, "alice", r1.ID, t0.Add(time.Second))
		assert.NoError(t, err, "and cancellable again")

		gone, err := s.Seats.Release(ctx, r2.ID, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, gone.Status, "released after its expiry: EXPIRED")
		unchanged, err := s.Seats.Release(ctx, r2.ID, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, gone, unchanged)
		_, err = s.Seats.Complete(ctx, r2.ID, ticketrush.Payment{ID: ticketrush.PaymentID(r2.ID), PaidAt: t0}, t0)
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld, "no sale once released")

		refunded, err := s.Wallet.Refund(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)
		assert.False(t, refunded, "nothing was debited")
		_, _, err = s.Wallet.Charge(ctx, "alice", 500, "", "", t0)
		require.NoError(t, err)
		_, err = s.Wallet.Debit(ctx, "alice", r2.ID, 300, t0)
		require.NoError(t, err)
		refunded, err = s.Wallet.Refund(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)
		assert.True(t, refunded)
		refunded, err = s.Wallet.Refund(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)
		assert.True(t, refunded, "the same refund again, not a second one")
		balance, err := s.Wallet.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(500), balance)
		_, err = s.Wallet.Debit(ctx, "alice", r2.ID, 300, t0)
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld, "a refunded reservation is never debited again")
		assert.Equal(t, []string{"point.charge", "point.debit", "point.refund"}, eventTypes(t, c, s.keys.Wallet("alice").Events()))
	})
}

// TestSaleEndsTheTokenWhenNoOtherHoldIsOpen: a sale makes its fan DONE exactly when no other hold of
// theirs is open: HELD and unexpired, or being paid (lib/open.lua, read from the HELD and PAYING sets).
// A hold past its expiry that the sweeper has not lapsed yet is not open; another being paid is.
func TestSaleEndsTheTokenWhenNoOtherHoldIsOpen(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) {
			q.HoldTTL, q.ActiveTTL, q.MaxHoldsPerUser = 10*time.Second, time.Hour, 4
		}, "alice", "bob")
		hold := func(user, seat string, at time.Time) string {
			r, _, err := s.Seats.Hold(ctx, fans[user], sA, seat, 100, at)
			require.NoError(t, err)
			return r.ID
		}
		claim := func(user, id string, at time.Time) {
			_, err := s.Seats.Claim(ctx, user, id, at)
			require.NoError(t, err)
		}
		pay := func(user, id string, at time.Time) ticketrush.QueueStatus {
			d, err := s.Wallet.Debit(ctx, user, id, 100, at)
			require.NoError(t, err)
			_, err = s.Seats.Complete(ctx, id, d, at)
			require.NoError(t, err)
			st, err := s.Line.TokenStatus(ctx, fans[user], at)
			require.NoError(t, err)
			return st.Status
		}
		for _, u := range []string{"alice", "bob"} {
			_, _, err := s.Wallet.Charge(ctx, u, 1000, "", "", t0)
			require.NoError(t, err)
		}

		// alice: one hold lapsed but not swept, one unexpired, one paid at a time.
		lapsed := hold("alice", "VIP-1", t0)
		held := hold("alice", "VIP-2", t0.Add(8*time.Second))
		paid := hold("alice", "VIP-3", t0.Add(8*time.Second))
		claim("alice", paid, t0.Add(11*time.Second))
		assert.Equal(t, ticketrush.StatusActive, pay("alice", paid, t0.Add(11*time.Second)), "VIP-2 is still held")
		claim("alice", held, t0.Add(12*time.Second))
		assert.Equal(t, ticketrush.StatusDone, pay("alice", held, t0.Add(12*time.Second)),
			"VIP-1 ran out at 10 s: not open, though the sweeper has not lapsed it")
		r, err := s.Seats.Reservation(ctx, lapsed)
		require.NoError(t, err)
		require.Equal(t, ticketrush.ReservationHeld, r.Status, "not swept")

		// bob: two claimed at once; the first sale leaves the other being paid.
		first := hold("bob", "VIP-5", t0)
		second := hold("bob", "VIP-6", t0)
		claim("bob", first, t0)
		claim("bob", second, t0)
		assert.Equal(t, ticketrush.StatusActive, pay("bob", first, t0), "VIP-6 is being paid")
		assert.Equal(t, ticketrush.StatusDone, pay("bob", second, t0))
	})
}
