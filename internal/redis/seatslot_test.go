package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

const sC = "schedule000c"

var spreadSchedules = []string{sA, sB, sC}

// seatSlot is the keys of the seat slot that keeps seatID of schedule scheduleID of concert cid, where
// its placement put it (a schedule's seats may be kept in blocks, a slot each).
func seatSlot(t *testing.T, s *Store, scheduleID, seatID string) ScheduleKeys {
	t.Helper()
	w, err := s.ways(context.Background(), cid)
	require.NoError(t, err)
	require.NotEmpty(t, w.layout.Schedules, "the seats of %s are placed", cid)
	return s.keys.Concert(cid).Schedule(w.layout.Slot(scheduleID, seatID))
}

// scheduleBlocks is the keys of every seat slot of schedule scheduleID of concert cid.
func scheduleBlocks(t *testing.T, s *Store, scheduleID string) []ScheduleKeys {
	t.Helper()
	w, err := s.ways(context.Background(), cid)
	require.NoError(t, err)
	var out []ScheduleKeys
	for _, slot := range w.layout.Blocks(scheduleID) {
		out = append(out, s.keys.Concert(cid).Schedule(slot))
	}
	return out
}

// slotOfConcert is the keys of the seat slot of schedule scheduleID of concertID, where its placement put
// it: for a concert that keeps each schedule's seats in one slot (a line of one shard).
func slotOfConcert(t *testing.T, s *Store, concertID, scheduleID string) ScheduleKeys {
	t.Helper()
	w, err := s.ways(context.Background(), concertID)
	require.NoError(t, err)
	require.NotEmpty(t, w.layout.Schedules, "the seats of %s are placed", concertID)
	blocks := w.layout.Blocks(scheduleID)
	require.Len(t, blocks, 1, "%s's seats in one slot", scheduleID)
	return s.keys.Concert(concertID).Schedule(blocks[0])
}

// spreadSale loads a concert of three schedules whose line is spread over 3 shards (so its seats are
// spread over a slot per schedule), 2 seats a schedule, holds of 10 s, and admits the given fans.
func spreadSale(t *testing.T, s *Store, mod func(*ticketrush.QueueSettings), fans ...string) map[string]ticketrush.QueueClaims {
	t.Helper()
	c := concert(cid, func(q *ticketrush.QueueSettings) {
		q.LineShards, q.HoldTTL, q.ActiveTTL = 3, 10*time.Second, time.Hour
		if mod != nil {
			mod(q)
		}
	})
	c.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}, {ID: sC, StartsAt: t0}}
	mustLoad(t, s, c)
	return admittedAtOnce(t, s, fans...)
}

// admittedAtOnce joins each fan to concert cid, whose line has room for them all, and returns the
// claims of their ACTIVE tokens.
func admittedAtOnce(t *testing.T, s *Store, fans ...string) map[string]ticketrush.QueueClaims {
	t.Helper()
	out := map[string]ticketrush.QueueClaims{}
	for _, f := range fans {
		r, err := s.Line.Join(context.Background(), cid, f, t0)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, r.Status, "%s admitted at once", f)
		out[f] = ticketrush.QueueClaims{UserID: f, ConcertID: cid, Seq: r.Seq}
	}
	return out
}

// fanGate is where the gate steps of user's holds of concert cid run, as its layout has it.
func fanGate(t testing.TB, s *Store, user string) gateAt {
	t.Helper()
	w, err := s.ways(context.Background(), cid)
	require.NoError(t, err)
	seats, ok := w.seats.(seatSlots)
	require.True(t, ok)
	return seats.fanGate(user)
}

// sameShard is the first of name, name-1, name-2, ... whose line shard of n is user's.
func sameShard(user, name string, n int) string {
	for i := 0; ; i++ {
		try := name
		if i > 0 {
			try = name + "-" + itoa(i)
		}
		if LineShard(try, n) == LineShard(user, n) {
			return try
		}
	}
}

// gateEntries is the user's gate entry (the ugate hash of their gate: their shard's, or the concert's), raw.
func gateEntries(t *testing.T, c rueidis.Client, s *Store, user string) string {
	t.Helper()
	v, err := c.Do(context.Background(), c.B().Hget().Key(fanGate(t, s, user).key()).Field(user).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return ""
	}
	require.NoError(t, err)
	return v
}

var errCrash = errors.New("crashed here")

// crashAt makes the store stop its chains at step, as a crash of the process there would.
func crashAt(s *Store, step string) {
	s.crash = func(at string) error {
		if at == step {
			return errCrash
		}
		return nil
	}
}

// TestSpreadSeatsEndToEnd: a hold, a cancel, a payment and a sweep of a concert whose seats are spread
// run on the schedules' slots (reservations, seats and events there, none on the concert's), the fan's
// open holds on the concert's gate, and the reads find them there.
func TestSpreadSeatsEndToEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, nil, "alice", "bob")
		k := s.keys.Concert(cid)

		r, lapsed, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0)
		require.NoError(t, err)
		assert.False(t, lapsed)
		assert.Equal(t, t0.Add(10*time.Second), r.ExpiresAt)
		assert.Equal(t, r.ID+":"+millis(r.ExpiresAt), gateEntries(t, c, s, "alice"))
		_, err = c.Do(ctx, c.B().Hget().Key(seatSlot(t, s, sB, "VIP-1").Reservations()).Field(r.ID).Build()).ToString()
		require.NoError(t, err, "the reservation is in its schedule's slot")
		n, err := c.Do(ctx, c.B().Hlen().Key(k.Reservations()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "and not in the concert's")
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sB, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable)
		assert.Empty(t, gateEntries(t, c, s, "bob"), "a refused hold gives its gate entry back")

		got, err := s.Seats.Reservation(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationHeld, got.Status)
		st, seats, err := s.Seats.GatedSeats(ctx, fans["bob"], sB, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status)
		assert.Equal(t, map[string]ticketrush.SeatStatus{"VIP-1": ticketrush.SeatHeld}, seats)
		st, counts, err := s.Seats.GatedScheduleCounts(ctx, fans["bob"], spreadSchedules, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA}, {ScheduleID: sB, Taken: 1}, {ScheduleID: sC}}, counts)
		taken, err := s.Seats.TakenSeats(ctx, cid, spreadSchedules)
		require.NoError(t, err)
		assert.Len(t, taken[1], 1)
		assert.Empty(t, taken[0])

		// Cancel: the seat back on its slot, the gate entry gone.
		_, err = s.Seats.Cancel(ctx, "alice", r.ID, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Empty(t, gateEntries(t, c, s, "alice"))

		// Bob's hold lapses: the sweep on the schedule's slot.
		rb, _, err := s.Seats.Hold(ctx, fans["bob"], sC, "VIP-2", 100, t0)
		require.NoError(t, err)
		n2, err := s.Seats.Sweep(ctx, cid, spreadSchedules, t0.Add(10*time.Second), 50)
		require.NoError(t, err)
		assert.Equal(t, 1, n2)
		lapsedRes, err := s.Seats.Reservation(ctx, rb.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, lapsedRes.Status)

		// Alice pays a hold: claim, debit, sale; her last open hold paid makes her token DONE.
		r, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-2", 100, t0.Add(2*time.Second))
		require.NoError(t, err)
		claimed, err := s.Seats.Claim(ctx, "alice", r.ID, t0.Add(3*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaying, claimed.Status)
		assert.Equal(t, r.ID+":"+millis(t0.Add(3*time.Second+PayingGate)), gateEntries(t, c, s, "alice"), "pinned while paid")
		stuck, err := s.Seats.StuckPayments(ctx, cid, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		assert.Equal(t, []string{r.ID}, stuck)
		_, _, err = s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		d, err := s.Wallet.Debit(ctx, "alice", r.ID, 100, t0.Add(3*time.Second))
		require.NoError(t, err)
		paid, err := s.Seats.Complete(ctx, r.ID, d, t0.Add(4*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaid, paid.Status)
		assert.Empty(t, gateEntries(t, c, s, "alice"))
		tok, err := s.Line.TokenStatus(ctx, fans["alice"], t0.Add(5*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusDone, tok.Status, "her last open hold is paid")

		counts, err = s.Seats.ScheduleCounts(ctx, cid, spreadSchedules, t0.Add(5*time.Second))
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 1, Sold: 1}, {ScheduleID: sB}, {ScheduleID: sC}}, counts)
		assert.Equal(t, []string{"hold.create", "payment.claim", "sale"},
			filter(eventTypes(t, c, seatSlot(t, s, sA, "VIP-2").Events()), "hold.", "payment.", "sale"))
		assert.Equal(t, []string{"hold.create", "hold.cancel"}, filter(eventTypes(t, c, seatSlot(t, s, sB, "VIP-1").Events()), "hold.", "payment.", "sale"))
		assert.Equal(t, []string{"hold.create", "hold.lapse"}, filter(eventTypes(t, c, seatSlot(t, s, sC, "VIP-2").Events()), "hold.", "payment.", "sale"))
		assert.Equal(t, []string{"queue.done"}, filter(eventTypes(t, c, k.Events()), "hold.", "payment.", "sale", "queue.done"),
			"the concert's stream has the fan's DONE, no seat event")
	})
}

// TestOneShardConcertHoldsInOneCall: a concert whose line has one shard keeps each schedule's seat slot
// in its own slot, where a hold (seat_hold) and a cancel (its follow in it) are one call each: no step of
// the chain runs (a crash hook at each would fail them), and the fan's gate entry is written by the hold
// and gone with the cancel.
func TestOneShardConcertHoldsInOneCall(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, nil, "alice")
		k := s.keys.Concert(cid)
		for _, sc := range []string{sA, sB} {
			assert.Equal(t, slot(k.Cfg()), slot(slotOfConcert(t, s, cid, sc).Seats()), "%s's seats in the concert's slot", sc)
		}
		s.crash = func(step string) error { return fmt.Errorf("the chain ran its step %s", step) }
		r, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		gate, err := c.Do(ctx, c.B().Hget().Key(k.Gate()).Field("alice").Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, r.ID+":"+millis(r.ExpiresAt), gate, "the hold's gate entry")
		_, err = s.Seats.Cancel(ctx, "alice", r.ID, t0)
		require.NoError(t, err)
		n, err := c.Do(ctx, c.B().Hexists().Key(k.Gate()).Field("alice").Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "the cancel's follow took the entry out")
		raw, err := c.Do(ctx, c.B().Hget().Key(slotOfConcert(t, s, cid, sA).Reservations()).Field(r.ID).Build()).ToString()
		require.NoError(t, err, "the reservation in the seat slot")
		assert.Contains(t, raw, `"status":"CANCELLED"`)
	})
}

// TestOneCallHoldRefusedLeavesTheLimit: a hold in one call (seat_hold) that the seat refuses writes
// nothing of the fan's gate: a fan at a limit of one may hold another seat at once.
func TestOneCallHoldRefusedLeavesTheLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1; q.LineShards = 1 }, "alice", "bob")
		_, _, err := s.Seats.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.ErrorIs(t, err, ticketrush.ErrSeatUnavailable)
		n, err := c.Do(ctx, c.B().Hexists().Key(s.keys.Concert(cid).Gate()).Field("alice").Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "no gate entry for the refused hold")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-2", 100, t0)
		require.NoError(t, err, "the limit of one is still free")
	})
}

// TestSpreadHoldLimitAcrossSchedules: maxHoldsPerUser counts a fan's open holds over every schedule's
// slot, exactly: held, being paid, and not once cancelled, lapsed or refused.
func TestSpreadHoldLimitAcrossSchedules(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 2 }, "alice", "bob")
		a, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		b, _, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0)
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sC, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "a third hold in a third schedule")
		_, err = s.Seats.Claim(ctx, "alice", b.ID, t0.Add(time.Second))
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sC, "VIP-1", 100, t0.Add(time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "a hold being paid counts")
		_, err = s.Seats.Cancel(ctx, "alice", a.ID, t0.Add(time.Second))
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sC, "VIP-1", 100, t0.Add(time.Second))
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sC, "VIP-1", 100, t0.Add(time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable)
		c2, _, err := s.Seats.Hold(ctx, fans["alice"], sC, "VIP-2", 100, t0.Add(time.Second))
		require.NoError(t, err, "a cancelled and a refused hold count no more")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-2", 100, t0.Add(2*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached)
		// At c2's expiry (unswept) it counts no more; the claimed one still does (PayingGate).
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-2", 100, c2.ExpiresAt)
		require.NoError(t, err, "a lapsed hold counts no more")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-2", 100, c2.ExpiresAt)
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached)
	})
}

// TestSpreadHoldCrashBetweenSteps: a hold whose process died after gate_apply's hold step (step 1) and before
// seat_take leaves a gate entry that counts against the fan's limit until the expiry the hold would
// have had, and not after; one that died after seat_take refused, before the give-back, the same.
func TestSpreadHoldCrashBetweenSteps(t *testing.T) {
	for _, step := range []string{"gate", "take"} {
		t.Run(step, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
				ctx := context.Background()
				fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1 }, "alice", "bob")
				if step == "take" {
					_, _, err := s.Seats.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0)
					require.NoError(t, err)
				}
				crashAt(s, step)
				_, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
				require.ErrorIs(t, err, errCrash)
				s.crash = nil
				assert.NotEmpty(t, gateEntries(t, c, s, "alice"), "step 1 ran")
				n, err := c.Do(ctx, c.B().Hlen().Key(seatSlot(t, s, sA, "VIP-1").Reservations()).Build()).AsInt64()
				require.NoError(t, err)
				assert.Equal(t, map[string]int64{"gate": 0, "take": 1}[step], n, "no reservation of alice's")

				_, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0.Add(9999*time.Millisecond))
				assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "the transient: until the hold's expiry")
				r, _, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0.Add(10*time.Second))
				require.NoError(t, err, "at the expiry the stale entry counts no more")
				assert.Equal(t, r.ID+":"+millis(r.ExpiresAt), gateEntries(t, c, s, "alice"), "and is dropped")
			})
		})
	}
}

// TestSpreadPaymentCrashBetweenSteps: a claim whose gate step was lost still counts the hold until its
// expiry, and the sweeper's release (no debit) sets the entry to what the hold became; a sale whose
// follow was lost is completed by the payment's retry (the claim of a PAID reservation), which
// makes the fan DONE.
func TestSpreadPaymentCrashBetweenSteps(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1 }, "alice", "bob")
		r, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		crashAt(s, "follow")
		_, err = s.Seats.Claim(ctx, "alice", r.ID, t0.Add(time.Second))
		require.ErrorIs(t, err, errCrash)
		s.crash = nil
		assert.Equal(t, r.ID+":"+millis(r.ExpiresAt), gateEntries(t, c, s, "alice"), "the entry as the hold left it")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0.Add(2*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached)
		// The sweeper finds the claim stuck, without a debit: it releases it (booking.Recover).
		stuck, err := s.Seats.StuckPayments(ctx, cid, t0.Add(31*time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, []string{r.ID}, stuck)
		rel, err := s.Seats.Release(ctx, r.ID, t0.Add(31*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, rel.Status)
		assert.Empty(t, gateEntries(t, c, s, "alice"))

		// A sale whose concert side (its follow) never ran.
		r, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0.Add(32*time.Second))
		require.NoError(t, err)
		_, err = s.Seats.Claim(ctx, "alice", r.ID, t0.Add(32*time.Second))
		require.NoError(t, err)
		_, _, err = s.Wallet.Charge(ctx, "alice", 1000, "", "", t0)
		require.NoError(t, err)
		d, err := s.Wallet.Debit(ctx, "alice", r.ID, 100, t0.Add(33*time.Second))
		require.NoError(t, err)
		crashAt(s, "follow")
		_, err = s.Seats.Complete(ctx, r.ID, d, t0.Add(33*time.Second))
		require.ErrorIs(t, err, errCrash)
		s.crash = nil
		tok, err := s.Line.TokenStatus(ctx, fans["alice"], t0.Add(34*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, tok.Status, "not DONE yet")
		again, err := s.Seats.Claim(ctx, "alice", r.ID, t0.Add(34*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationPaid, again.Status)
		tok, err = s.Line.TokenStatus(ctx, fans["alice"], t0.Add(34*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusDone, tok.Status, "the retry finished the sale's concert side")
		assert.Empty(t, gateEntries(t, c, s, "alice"))
	})
}

// TestSpreadSoldOut: the tick carries the schedules' counts onto the concert's inv; once every seat of
// every schedule is sold, that tick marks the concert sold out (its event on the concert's stream), and
// a join is refused SOLD_OUT.
func TestSpreadSoldOut(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		users := []string{"f1", "f2", "f3", "f4", "f5", "f6"}
		fans := spreadSale(t, s, nil, users...)
		i := 0
		var last ticketrush.Reservation
		for _, sched := range spreadSchedules {
			for _, seat := range []string{"VIP-1", "VIP-2"} {
				u := users[i]
				i++
				r, _, err := s.Seats.Hold(ctx, fans[u], sched, seat, 100, t0)
				require.NoError(t, err)
				if u == "f6" {
					last = r
					break
				}
				payCharged(t, s, u, r.ID)
			}
		}
		_, err := s.Line.Tick(ctx, cid, t0.Add(time.Second), 50)
		require.NoError(t, err)
		inv, err := c.Do(ctx, c.B().Hgetall().Key(s.keys.Concert(cid).Inventory()).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"seats": "6", "avail": "0", "sold": "5", "soldout": "0"}, inv)
		payCharged(t, s, "f6", last.ID)
		_, err = s.Line.Join(ctx, cid, "late", t0.Add(2*time.Second))
		require.NoError(t, err, "the concert's count trails the sale until the next tick")
		_, err = s.Line.Tick(ctx, cid, t0.Add(2*time.Second), 50)
		require.NoError(t, err)
		inv, err = c.Do(ctx, c.B().Hgetall().Key(s.keys.Concert(cid).Inventory()).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, "1", inv["soldout"])
		assert.Equal(t, "6", inv["sold"])
		_, err = s.Line.Join(ctx, cid, "later", t0.Add(3*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrSoldOut)
		assert.Contains(t, eventTypes(t, c, s.keys.Concert(cid).Events()), "concert.soldout")
	})
}

// payCharged charges user the price of reservation id, then pays it (pay).
func payCharged(t *testing.T, s *Store, user, id string) {
	t.Helper()
	_, _, err := s.Wallet.Charge(context.Background(), user, 100, "", "", t0)
	require.NoError(t, err)
	pay(t, s, user, id, 100)
}

// TestSpreadConcurrentHoldsNeverSellASeatTwice: many fans hold, cancel and pay at once over the 6
// seats of 3 schedules; every seat ends with at most one sale, every schedule's count matches its
// seats, and no fan ever has more open holds than the limit.
func TestSpreadConcurrentHoldsNeverSellASeatTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		var users []string
		for i := range 24 {
			users = append(users, fmt.Sprintf("fan-%02d", i))
		}
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 2 }, users...)
		var wg sync.WaitGroup
		var mu sync.Mutex
		sold := map[string]int{}
		for i, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []string
				for j := range 6 {
					sched, seat := spreadSchedules[(i+j)%3], []string{"VIP-1", "VIP-2"}[(i/3+j)%2]
					r, _, err := s.Seats.Hold(ctx, fans[u], sched, seat, 100, t0)
					if err != nil {
						continue
					}
					mine = append(mine, r.ID)
					if j%2 == 0 {
						_, err = s.Seats.Cancel(ctx, u, r.ID, t0)
						assert.NoError(t, err)
						mine = mine[:len(mine)-1]
					}
				}
				assert.LessOrEqual(t, len(mine), 2, "%s holds more than the limit", u)
				for _, id := range mine {
					r, err := s.Seats.Claim(ctx, u, id, t0)
					if !assert.NoError(t, err) {
						continue
					}
					if _, _, err = s.Wallet.Charge(ctx, u, 100, "", "", t0); !assert.NoError(t, err) {
						continue
					}
					d, err := s.Wallet.Debit(ctx, u, id, 100, t0)
					if !assert.NoError(t, err) {
						continue
					}
					p, err := s.Seats.Complete(ctx, id, d, t0)
					if assert.NoError(t, err) && p.Status == ticketrush.ReservationPaid {
						mu.Lock()
						sold[r.ScheduleID+"/"+r.SeatID]++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		for seat, n := range sold {
			assert.Equal(t, 1, n, "seat %s sold %d times", seat, n)
		}
		in := NewInspector(c, s.keys.prefix)
		for _, sched := range spreadSchedules {
			states, err := in.SeatStates(ctx, cid, sched)
			require.NoError(t, err)
			avail := 0
			for _, b := range scheduleBlocks(t, s, sched) {
				res, err := c.Do(ctx, c.B().Hget().Key(b.Inventory()).Field("avail").Build()).AsInt64()
				require.NoError(t, err)
				avail += int(res)
			}
			assert.Equal(t, 2-len(states), avail, "schedule %s: avail against its seats", sched)
			for seat, st := range states {
				assert.Equal(t, SeatSold, st.Kind, "%s/%s", sched, seat)
				assert.Equal(t, 1, sold[sched+"/"+seat])
			}
		}
	})
}

// TestRestoreSpreadConcert: restore writes a spread concert's reservations into their schedules' seat
// slots and its fans' open holds into the gate; the Inspector reads each slot's count as its seats give
// it, and the scripts go on from there (a restored hold keeps its seat and counts against its fan).
func TestRestoreSpreadConcert(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1 }, "alice", "bob")
		held, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		sold, _, err := s.Seats.Hold(ctx, fans["bob"], sB, "VIP-2", 100, t0)
		require.NoError(t, err)
		payCharged(t, s, "bob", sold.ID)

		in := NewInspector(c, s.keys.prefix)
		recs, err := in.Reservations(ctx, cid)
		require.NoError(t, err)
		require.Len(t, recs, 2)
		var records []ticketrush.ReservationRecord
		for _, r := range recs {
			records = append(records, ticketrush.ReservationRecord{Reservation: r})
		}
		con := concert(cid, func(q *ticketrush.QueueSettings) {
			q.LineShards, q.HoldTTL, q.ActiveTTL, q.MaxHoldsPerUser = 3, 10*time.Second, time.Hour, 1
		})
		con.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}, {ID: sC, StartsAt: t0}}
		rep, err := RestoreConcert(ctx, c, s.keys.Concert(cid), con, records, ticketrush.QueueMark{MaxSeq: 10})
		require.NoError(t, err)
		assert.Equal(t, RestoredConcert{Reservations: 2, Held: 1, Sold: 1}, rep)

		slots, err := in.SeatSlots(ctx, con)
		require.NoError(t, err)
		per := map[string]Inventory{} // each schedule's count, summed over its blocks
		kept := map[string]int{}      // each schedule's reservations
		for i, slot := range slots {
			assert.True(t, slot.InventoryOK)
			assert.Equal(t, slot.Counted, slot.Inventory, "seat slot %d", i)
			for sched := range slot.Seats {
				p := per[sched]
				p.Seats, p.Available, p.Sold = p.Seats+slot.Inventory.Seats, p.Available+slot.Inventory.Available, p.Sold+slot.Inventory.Sold
				per[sched] = p
				kept[sched] += len(slot.Reservations)
			}
		}
		assert.Equal(t, Inventory{Seats: 2, Available: 1}, per[sA])
		assert.Equal(t, Inventory{Seats: 2, Available: 1, Sold: 1}, per[sB])
		assert.Equal(t, 1, kept[sB])
		assert.Equal(t, held.ID+":"+millis(held.ExpiresAt), gateEntries(t, c, s, "alice"))

		// The line restarts empty: alice joins again, and her restored hold still counts.
		j, err := s.Line.Join(ctx, cid, "alice", t0.Add(time.Second))
		require.NoError(t, err)
		alice := ticketrush.QueueClaims{UserID: "alice", ConcertID: cid, Seq: j.Seq}
		_, _, err = s.Seats.Hold(ctx, alice, sC, "VIP-1", 100, t0.Add(time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached)
		_, err = s.Seats.Cancel(ctx, "alice", held.ID, t0.Add(time.Second))
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, alice, sB, "VIP-2", 100, t0.Add(time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "the restored sale")
		_, _, err = s.Seats.Hold(ctx, alice, sA, "VIP-1", 100, t0.Add(time.Second))
		assert.NoError(t, err)
	})
}

// TestSpreadHoldTakesALapsedSeat: a seat whose hold is past its expiry, not swept yet, is taken by the
// next hold on the schedule's slot (seat_take): the old hold lapses there as the sweep would lapse it
// (EXPIRED, out of the HELD set, a hold.lapse event), and the seat is
// counted taken once.
func TestSpreadHoldTakesALapsedSeat(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, nil, "alice", "bob")
		slot := seatSlot(t, s, sB, "VIP-1")
		old, _, err := s.Seats.Hold(ctx, fans["bob"], sB, "VIP-1", 100, t0)
		require.NoError(t, err)

		later := t0.Add(11 * time.Second) // bob's hold ran out at 10 s
		r, lapsed, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, later)
		require.NoError(t, err)
		assert.True(t, lapsed, "another fan's expired hold of the seat was lapsed")
		got, err := s.Seats.Reservation(ctx, old.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, got.Status)
		held, err := c.Do(ctx, c.B().Zrange().Key(slot.Holds()).Min("0").Max("-1").Build()).AsStrSlice()
		require.NoError(t, err)
		assert.Equal(t, []string{r.ID}, held, "only alice's hold is HELD")
		assert.Equal(t, []string{"hold.create", "hold.lapse", "hold.create"}, filter(eventTypes(t, c, slot.Events()), "hold."))
		avail := int64(0)
		for _, b := range scheduleBlocks(t, s, sB) {
			n, err := c.Do(ctx, c.B().Hget().Key(b.Inventory()).Field("avail").Build()).AsInt64()
			require.NoError(t, err)
			avail += n
		}
		assert.EqualValues(t, 1, avail, "2 seats, VIP-1 taken once")
	})
}
