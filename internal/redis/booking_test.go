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

const (
	cid = "concert00001"
	sA  = "schedule000a"
	sB  = "schedule000b"
)

// sale loads a concert with two schedules and admits the given fans; it returns their claims.
func sale(t *testing.T, s *Store, mod func(*ticketrush.QueueSettings), fans ...string) map[string]ticketrush.QueueClaims {
	t.Helper()
	ctx := context.Background()
	c := concert(cid, mod)
	c.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}}
	mustLoad(t, s, c)
	out := map[string]ticketrush.QueueClaims{}
	for _, f := range fans {
		r, err := s.Join(ctx, cid, f, t0)
		require.NoError(t, err)
		out[f] = ticketrush.QueueClaims{UserID: f, ConcertID: cid, Seq: r.Seq}
	}
	return out
}

func TestHold(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 2; q.HoldTTL = 10 * time.Second }, "alice", "bob")

		r, lapsed, err := s.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		assert.False(t, lapsed)
		assert.Equal(t, ticketrush.ReservationHeld, r.Status)
		assert.Equal(t, t0.Add(10*time.Second), r.ExpiresAt)
		assert.Equal(t, t0, r.CreatedAt)
		concertID, scheduleID, ok := ticketrush.ParseReservationID(r.ID)
		require.True(t, ok)
		assert.Equal(t, cid, concertID)
		assert.Equal(t, sA, scheduleID)

		got, err := s.Reservation(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, r.ID, got.ID)
		assert.Equal(t, "alice", got.UserID)
		assert.Equal(t, int64(100), got.Price)

		_, _, err = s.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "held by alice")
		_, _, err = s.Hold(ctx, fans["bob"], sB, "VIP-1", 100, t0)
		assert.NoError(t, err, "the same seat of another schedule is another seat")

		_, _, err = s.Hold(ctx, fans["alice"], sA, "VIP-2", 100, t0)
		require.NoError(t, err)
		_, _, err = s.Hold(ctx, fans["alice"], sB, "VIP-2", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "two holds per fan per concert")

		_, lapsed, err = s.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0.Add(10*time.Second))
		require.NoError(t, err, "alice's hold lapsed: the seat is free before any sweep")
		assert.True(t, lapsed)
		old, err := s.Reservation(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, old.Status)

		_, _, err = s.Hold(ctx, fans["alice"], sB, "VIP-2", 100, t0.Add(10*time.Second))
		assert.NoError(t, err, "alice's lapsed holds no longer count against her limit")

		_, err = s.Reservation(ctx, ticketrush.NewReservationID(cid, sA))
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)
		_, err = s.Reservation(ctx, "garbage")
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)

		assert.Equal(t, []string{"hold.create", "hold.create", "hold.create", "hold.lapse", "hold.create", "hold.create"},
			filter(eventTypes(t, c, s.keys.Concert(cid).Events()), "hold."))
	})
}

func TestHoldNeedsActiveToken(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1; q.ActiveTTL = time.Minute }, "alice", "bob")
		_, _, err := s.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrQueueNotActive, "bob waits")
		_, _, err = s.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0.Add(time.Minute))
		assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "alice's session lapsed")
		stale := fans["alice"]
		stale.Seq = 99
		_, _, err = s.Hold(ctx, stale, sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "not alice's live token")
		_, _, err = s.Hold(ctx, ticketrush.QueueClaims{UserID: "x", ConcertID: "nope", Seq: 1}, sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)
	})
}

func TestCancelAndSweep(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second }, "alice", "bob")
		a, _, err := s.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		b, _, err := s.Hold(ctx, fans["bob"], sB, "VIP-2", 100, t0.Add(time.Second))
		require.NoError(t, err)

		_, err = s.Cancel(ctx, "bob", a.ID, t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound, "not bob's")
		got, err := s.Cancel(ctx, "alice", a.ID, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationCancelled, got.Status)
		_, err = s.Cancel(ctx, "alice", a.ID, t0)
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld)
		_, err = s.Cancel(ctx, "bob", b.ID, t0.Add(11*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld, "lapsed")

		counts, err := s.ScheduleCounts(ctx, cid, []string{sA, sB}, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA}, {ScheduleID: sB, Taken: 1}}, counts)
		counts, err = s.ScheduleCounts(ctx, cid, []string{sA, sB}, t0.Add(11*time.Second))
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA}, {ScheduleID: sB}}, counts, "a lapsed hold counts as available before the sweep")

		n, err := s.Sweep(ctx, cid, []string{sA, sB}, t0.Add(10*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 0, n, "bob's hold is not due until 11 s")
		n, err = s.Sweep(ctx, cid, []string{sA, sB}, t0.Add(11*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		got, err = s.Reservation(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, got.Status)
		seats, err := c.Do(ctx, c.B().Hlen().Key(s.keys.Concert(cid).Seats(sB)).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, seats, "the seat is AVAILABLE again")
		assert.Equal(t, []string{"hold.create", "hold.create", "hold.cancel", "hold.lapse"},
			filter(eventTypes(t, c, s.keys.Concert(cid).Events()), "hold."))
	})
}

func TestGatedReads(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1; q.HoldTTL = 10 * time.Second }, "alice", "bob")
		_, _, err := s.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)

		st, seats, err := s.GatedSeats(ctx, fans["alice"], sA, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status)
		assert.Equal(t, map[string]ticketrush.SeatStatus{"VIP-1": ticketrush.SeatHeld}, seats)
		_, seats, err = s.GatedSeats(ctx, fans["alice"], sA, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Empty(t, seats, "a hold past its expiry reads as AVAILABLE")

		st, counts, err := s.GatedScheduleCounts(ctx, fans["bob"], []string{sA, sB}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, st.Status)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 1}, {ScheduleID: sB}}, counts)
	})
}

func TestPaymentSteps(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second }, "alice", "bob")
		r, _, err := s.Hold(ctx, fans["alice"], sA, "VIP-1", 300, t0)
		require.NoError(t, err)

		_, err = s.Claim(ctx, "bob", r.ID, t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound, "not bob's")
		_, err = s.Claim(ctx, "alice", r.ID, t0.Add(10*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrReservationExpired, "lapsed before payment")

		claimed, err := s.Claim(ctx, "alice", r.ID, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaying, claimed.Status)
		again, err := s.Claim(ctx, "alice", r.ID, t0)
		require.NoError(t, err, "a second claim (a retry) succeeds")
		assert.Equal(t, ticketrush.ReservationPaying, again.Status)
		n, err := s.Sweep(ctx, cid, []string{sA, sB}, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		assert.Zero(t, n, "a claimed hold no longer lapses")
		stuck, err := s.StuckPayments(ctx, cid, t0, 10)
		require.NoError(t, err)
		assert.Equal(t, []string{r.ID}, stuck)

		_, err = s.Debit(ctx, "alice", r.ID, 300, t0)
		assert.ErrorIs(t, err, ticketrush.ErrInsufficientBalance)
		_, _, err = s.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		d, err := s.Debit(ctx, "alice", r.ID, 300, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.Payment{ID: ticketrush.PaymentID(r.ID), ReservationID: r.ID, UserID: "alice", Amount: 300, Balance: 700, PaidAt: t0}, d)
		d2, err := s.Debit(ctx, "alice", r.ID, 300, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, d, d2, "one debit per reservation")
		got, ok, err := s.Debited(ctx, "alice", r.ID)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, d, got)

		paid, err := s.Complete(ctx, r.ID, d, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaid, paid.Status)
		assert.Equal(t, d.ID, paid.PaymentID)
		assert.Equal(t, int64(700), paid.Balance)
		again, err = s.Complete(ctx, r.ID, d, t0)
		require.NoError(t, err)
		assert.Equal(t, paid, again)
		replay, err := s.Claim(ctx, "alice", r.ID, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaid, replay.Status, "paying a PAID reservation replies with its payment")

		st, err := s.TokenStatus(ctx, fans["alice"], t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusDone, st.Status, "her last open hold is paid")
		counts, err := s.ScheduleCounts(ctx, cid, []string{sA}, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 1, Sold: 1}}, counts)
		balance, err := s.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(700), balance)

		assert.Equal(t, []string{"hold.create", "payment.claim", "sale", "queue.done"},
			filter(eventTypes(t, c, s.keys.Concert(cid).Events()), "hold.", "payment.", "sale", "queue.done"))
		assert.Equal(t, []string{"point.charge", "point.debit"}, eventTypes(t, c, s.keys.Wallet("alice").Events()))
	})
}

func TestReleaseAndRefund(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second }, "alice")
		r1, _, err := s.Hold(ctx, fans["alice"], sA, "VIP-1", 300, t0)
		require.NoError(t, err)
		r2, _, err := s.Hold(ctx, fans["alice"], sA, "VIP-2", 300, t0)
		require.NoError(t, err)
		_, err = s.Claim(ctx, "alice", r1.ID, t0)
		require.NoError(t, err)
		_, err = s.Claim(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)

		back, err := s.Release(ctx, r1.ID, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationHeld, back.Status, "released before its expiry: HELD again")
		_, err = s.Cancel(ctx, "alice", r1.ID, t0.Add(time.Second))
		assert.NoError(t, err, "and cancellable again")

		gone, err := s.Release(ctx, r2.ID, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, gone.Status, "released after its expiry: EXPIRED")
		unchanged, err := s.Release(ctx, r2.ID, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, gone, unchanged)
		_, err = s.Complete(ctx, r2.ID, ticketrush.Payment{ID: ticketrush.PaymentID(r2.ID), PaidAt: t0}, t0)
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld, "no sale once released")

		refunded, err := s.Refund(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)
		assert.False(t, refunded, "nothing was debited")
		_, _, err = s.Charge(ctx, "alice", 500, "", "", t0)
		require.NoError(t, err)
		_, err = s.Debit(ctx, "alice", r2.ID, 300, t0)
		require.NoError(t, err)
		refunded, err = s.Refund(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)
		assert.True(t, refunded)
		refunded, err = s.Refund(ctx, "alice", r2.ID, t0)
		require.NoError(t, err)
		assert.True(t, refunded, "the same refund again, not a second one")
		balance, err := s.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(500), balance)
		_, err = s.Debit(ctx, "alice", r2.ID, 300, t0)
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld, "a refunded reservation is never debited again")
		assert.Equal(t, []string{"point.charge", "point.debit", "point.refund"}, eventTypes(t, c, s.keys.Wallet("alice").Events()))
	})
}

func TestCharge(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		ctx := context.Background()
		balance, err := s.Balance(ctx, "nobody")
		require.NoError(t, err)
		assert.Zero(t, balance, "a user never seen has 0")

		c1, replayed, err := s.Charge(ctx, "alice", 100, "k1", "fp-100", t0)
		require.NoError(t, err)
		assert.False(t, replayed)
		assert.Equal(t, int64(100), c1.Balance)
		c2, replayed, err := s.Charge(ctx, "alice", 100, "k1", "fp-100", t0.Add(time.Second))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, c1, c2, "the same key and body: the first response again")
		_, _, err = s.Charge(ctx, "alice", 200, "k1", "fp-200", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict)
		_, replayed, err = s.Charge(ctx, "bob", 100, "k1", "fp-100", t0)
		require.NoError(t, err)
		assert.False(t, replayed, "keys are scoped to the user")

		_, _, err = s.Charge(ctx, "alice", ticketrush.MaxBalance-100, "", "", t0)
		require.NoError(t, err)
		_, _, err = s.Charge(ctx, "alice", 1, "", "", t0)
		assert.ErrorIs(t, err, ticketrush.ErrBalanceLimit)
		balance, err = s.Balance(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, int64(ticketrush.MaxBalance), balance)
	})
}

func TestRemember(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		reserved, done, _, _, err := s.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.True(t, reserved, "the first request takes the key")
		assert.False(t, done)
		reserved, done, _, _, err = s.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.False(t, reserved || done, "a request with the same fingerprint sees the key reserved")
		_, _, _, _, err = s.ReserveKey(ctx, "alice", "k", "fp2", "p2", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a reserved key refuses another request")
		_, _, err = s.Remember(ctx, "alice", "k", "fp2", "p2", true, t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "nor can another request record its answer")
		assert.Empty(t, eventTypes(t, c, s.keys.Wallet("alice").Events()), "a reservation is not durable")

		ref, created, err := s.Remember(ctx, "alice", "k", "fp", "p1", true, t0)
		require.NoError(t, err)
		assert.Equal(t, []any{"p1", true}, []any{ref, created})
		ref, created, err = s.Remember(ctx, "alice", "k", "fp", "p1", false, t0)
		require.NoError(t, err)
		assert.Equal(t, []any{"p1", true}, []any{ref, created}, "the first answer recorded stands")
		require.NoError(t, s.ReleaseKey(ctx, "alice", "k", "fp", t0))
		reserved, done, ref, created, err = s.ReserveKey(ctx, "alice", "k", "fp", "p1", t0)
		require.NoError(t, err)
		assert.Equal(t, []any{false, true, "p1", true}, []any{reserved, done, ref, created}, "a recorded key is not released")
		assert.Equal(t, []string{"idem.remember"}, eventTypes(t, c, s.keys.Wallet("alice").Events()), "one event per key")

		reserved, _, _, _, err = s.ReserveKey(ctx, "bob", "k", "fp", "p1", t0)
		require.NoError(t, err)
		require.True(t, reserved, "keys are scoped to the user")
		require.NoError(t, s.ReleaseKey(ctx, "bob", "k", "fp-other", t0))
		_, _, _, _, err = s.ReserveKey(ctx, "bob", "k", "fp-other", "p9", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "another request cannot release the key")
		require.NoError(t, s.ReleaseKey(ctx, "bob", "k", "fp", t0))
		reserved, _, _, _, err = s.ReserveKey(ctx, "bob", "k", "fp-other", "p9", t0)
		require.NoError(t, err)
		assert.True(t, reserved, "a released key is free for any request")

		_, _, err = s.Charge(ctx, "carol", 100, "k", "POST /v1/points/charges 100", t0)
		require.NoError(t, err)
		_, _, _, _, err = s.ReserveKey(ctx, "carol", "k", "fp", "p1", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a key used on a charge cannot pay")
		_, _, _, _, err = s.ReserveKey(ctx, "dave", "k", "fp", "p1", t0)
		require.NoError(t, err)
		_, _, err = s.Charge(ctx, "dave", 100, "k", "POST /v1/points/charges 100", t0)
		assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a key reserved by a payment cannot charge")
	})
}

func filter(types []string, prefixes ...string) []string {
	var out []string
	for _, t := range types {
		for _, p := range prefixes {
			if len(t) >= len(p) && t[:len(p)] == p {
				out = append(out, t)
				break
			}
		}
	}
	return out
}
