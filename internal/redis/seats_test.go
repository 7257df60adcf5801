package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func TestHold(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 2; q.HoldTTL = 10 * time.Second }, "alice", "bob")

		r, lapsed, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		assert.False(t, lapsed)
		assert.Equal(t, ticketrush.ReservationHeld, r.Status)
		assert.Equal(t, t0.Add(10*time.Second), r.ExpiresAt)
		assert.Equal(t, t0, r.CreatedAt)
		concertID, scheduleID, ok := ticketrush.ParseReservationID(r.ID)
		require.True(t, ok)
		assert.Equal(t, cid, concertID)
		assert.Equal(t, sA, scheduleID)

		got, err := s.Seats.Reservation(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, r.ID, got.ID)
		assert.Equal(t, "alice", got.UserID)
		assert.Equal(t, int64(100), got.Price)

		_, _, err = s.Seats.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "held by alice")
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sB, "VIP-1", 100, t0)
		assert.NoError(t, err, "the same seat of another schedule is another seat")

		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-2", 100, t0)
		require.NoError(t, err)
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-2", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "two holds per fan per concert")

		_, lapsed, err = s.Seats.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0.Add(10*time.Second))
		require.NoError(t, err, "alice's hold lapsed: the seat is free before any sweep")
		assert.True(t, lapsed)
		old, err := s.Seats.Reservation(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, old.Status)

		_, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-2", 100, t0.Add(10*time.Second))
		assert.NoError(t, err, "alice's lapsed holds no longer count against her limit")

		_, err = s.Seats.Reservation(ctx, ticketrush.NewReservationID(cid, sA))
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)
		_, err = s.Seats.Reservation(ctx, "garbage")
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)

		assert.Equal(t, []string{"hold.create", "hold.create", "hold.lapse", "hold.create"},
			filter(slotEventTypes(t, s, c, cid, sA), "hold."), "schedule A's seat slot")
		assert.Equal(t, []string{"hold.create", "hold.create"}, filter(slotEventTypes(t, s, c, cid, sB), "hold."), "schedule B's")
	})
}

func TestHoldNeedsActiveToken(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1; q.ActiveTTL = time.Minute }, "alice", "bob")
		_, _, err := s.Seats.Hold(ctx, fans["bob"], sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrQueueNotActive, "bob waits")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0.Add(time.Minute))
		assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "alice's session lapsed")
		stale := fans["alice"]
		stale.Seq = 99
		_, _, err = s.Seats.Hold(ctx, stale, sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "not alice's live token")
		_, _, err = s.Seats.Hold(ctx, ticketrush.QueueClaims{UserID: "x", ConcertID: "nope", Seq: 1}, sA, "VIP-1", 100, t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)
	})
}

func TestCancelAndSweep(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second }, "alice", "bob")
		a, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		b, _, err := s.Seats.Hold(ctx, fans["bob"], sB, "VIP-2", 100, t0.Add(time.Second))
		require.NoError(t, err)

		_, err = s.Seats.Cancel(ctx, "bob", a.ID, t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound, "not bob's")
		got, err := s.Seats.Cancel(ctx, "alice", a.ID, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationCancelled, got.Status)
		_, err = s.Seats.Cancel(ctx, "alice", a.ID, t0)
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld)
		_, err = s.Seats.Cancel(ctx, "bob", b.ID, t0.Add(11*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld, "lapsed")

		counts, err := s.Seats.ScheduleCounts(ctx, cid, []string{sA, sB}, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA}, {ScheduleID: sB, Taken: 1}}, counts)
		counts, err = s.Seats.ScheduleCounts(ctx, cid, []string{sA, sB}, t0.Add(11*time.Second))
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA}, {ScheduleID: sB}}, counts, "a lapsed hold counts as available before the sweep")

		n, err := s.Seats.Sweep(ctx, cid, []string{sA, sB}, t0.Add(10*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 0, n, "bob's hold is not due until 11 s")
		n, err = s.Seats.Sweep(ctx, cid, []string{sA, sB}, t0.Add(11*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		got, err = s.Seats.Reservation(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationExpired, got.Status)
		seats, err := c.Do(ctx, c.B().Hlen().Key(slotOfConcert(t, s, cid, sB).Seats()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, seats, "the seat is AVAILABLE again")
		assert.Equal(t, append(filter(slotEventTypes(t, s, c, cid, sA), "hold."), filter(slotEventTypes(t, s, c, cid, sB), "hold.")...),
			[]string{"hold.create", "hold.cancel", "hold.create", "hold.lapse"})
	})
}

// threeDueHolds admits alice and bob to a sale whose holds last 10 s and has them hold three seats at
// t0: alice one on each schedule, bob one on sA. It returns the fans and the holds' ids.
func threeDueHolds(t *testing.T, s *Store) (map[string]ticketrush.QueueClaims, []string) {
	t.Helper()
	fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.HoldTTL = 10 * time.Second; q.MaxHoldsPerUser = 4 },
		"alice", "bob")
	var ids []string
	for _, h := range []struct{ fan, schedule, seat string }{
		{"alice", sA, "VIP-1"}, {"alice", sB, "VIP-1"}, {"bob", sA, "VIP-2"},
	} {
		r, _, err := s.Seats.Hold(context.Background(), fans[h.fan], h.schedule, h.seat, 100, t0)
		require.NoError(t, err)
		ids = append(ids, r.ID)
	}
	return fans, ids
}

// TestSweepLapsesEachDueHoldOnce: one sweep call that lapses several holds takes each out of the HELD
// set and gives each seat back (hold_sweep does both once for the whole call), so the next call finds
// nothing due and the counts agree with the seat maps.
func TestSweepLapsesEachDueHoldOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		threeDueHolds(t, s)
		assert.Equal(t, int64(1), inventory(t, s, c, cid, sA, sB).Available)

		later := t0.Add(11 * time.Second)
		n, err := s.Seats.Sweep(ctx, cid, []string{sA, sB}, later, 100)
		require.NoError(t, err)
		assert.Equal(t, 3, n, "all three are due")
		n, err = s.Seats.Sweep(ctx, cid, []string{sA, sB}, later, 100)
		require.NoError(t, err)
		assert.Zero(t, n, "a lapsed hold is not due again")
		assert.Equal(t, int64(4), inventory(t, s, c, cid, sA, sB).Available, "every seat is back")
		counts, err := s.Seats.ScheduleCounts(ctx, cid, []string{sA, sB}, later)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA}, {ScheduleID: sB}}, counts)
		assert.Equal(t, []string{"hold.lapse", "hold.lapse", "hold.lapse"},
			append(filter(slotEventTypes(t, s, c, cid, sA), "hold.lapse"), filter(slotEventTypes(t, s, c, cid, sB), "hold.lapse")...))
	})
}

// TestSweepEndsEachDueHoldOfAFan: one sweep lapses a fan's two due holds on two schedules and another
// fan's one: each record EXPIRED, each seat free again, and the hold that is not due kept.
func TestSweepEndsEachDueHoldOfAFan(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans, due := threeDueHolds(t, s)
		kept, _, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-2", 100, t0.Add(5*time.Second))
		require.NoError(t, err)

		n, err := s.Seats.Sweep(ctx, cid, []string{sA, sB}, t0.Add(11*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 3, n)
		for _, id := range due {
			r, err := s.Seats.Reservation(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, ticketrush.ReservationExpired, r.Status, id)
		}
		kept, err = s.Seats.Reservation(ctx, kept.ID)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.ReservationHeld, kept.Status, "the hold not due is kept")
		for _, sc := range []string{sA, sB} {
			seats, err := c.Do(ctx, c.B().Hkeys().Key(slotOfConcert(t, s, cid, sc).Seats()).Build()).AsStrSlice()
			require.NoError(t, err)
			want := []string{}
			if sc == sB {
				want = []string{"VIP-2"}
			}
			assert.ElementsMatch(t, want, seats, "the seats still taken in %s", sc)
		}
	})
}

func TestGatedReads(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1; q.HoldTTL = 10 * time.Second }, "alice", "bob")
		_, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)

		st, seats, err := s.Seats.GatedSeats(ctx, fans["alice"], sA, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status)
		assert.Equal(t, map[string]ticketrush.SeatStatus{"VIP-1": ticketrush.SeatHeld}, seats)
		_, seats, err = s.Seats.GatedSeats(ctx, fans["alice"], sA, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Empty(t, seats, "a hold past its expiry reads as AVAILABLE")

		st, counts, err := s.Seats.GatedScheduleCounts(ctx, fans["alice"], []string{sA, sB}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 1}, {ScheduleID: sB}}, counts)
		st, counts, err = s.Seats.GatedScheduleCounts(ctx, fans["bob"], []string{sA, sB}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, st.Status)
		assert.Nil(t, counts, "a WAITING token's answer is its refusal")
	})
}

// TestGatedSeatsRefusalFirst: an entry of the seats hash that is no seat state is an error of the seat
// map, but only for a token the gate lets through: a refused token gets its refusal, not a 500.
func TestGatedSeatsRefusalFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := sale(t, s, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }, "alice", "bob")
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(slotOfConcert(t, s, cid, sA).Seats()).FieldValue().FieldValue("VIP-2", "garbage").Build()).Error())
		st, seats, err := s.Seats.GatedSeats(ctx, fans["bob"], sA, t0)
		require.NoError(t, err, "a WAITING token's answer is its refusal")
		assert.Equal(t, ticketrush.StatusWaiting, st.Status)
		assert.Nil(t, seats)
		_, _, err = s.Seats.GatedSeats(ctx, fans["alice"], sA, t0)
		assert.Error(t, err, "an ACTIVE token's seat map with an entry that is no seat state")
	})
}

// TestLapsedHoldsCountedWithoutTheirRecords: a hold past its expiry that the sweeper has not lapsed yet
// counts as available. With one schedule schedule_counts counts those in the HELD set alone and reads no
// record (a wave of 20,000 lapsed holds cost 89 ms a call when each was decoded); here the lapsed
// hold's record is garbage, which a read would fail on. With several schedules it reads each one's
// schedule field, and a record with escapes in it is decoded whole.
func TestLapsedHoldsCountedWithoutTheirRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		load := func(id string, schedules ...string) ticketrush.QueueClaims {
			con := concert(id, func(q *ticketrush.QueueSettings) { q.HoldTTL, q.MaxHoldsPerUser = 10*time.Second, 4 })
			con.Sections = []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 4}}
			con.Schedules = nil
			for _, sc := range schedules {
				con.Schedules = append(con.Schedules, ticketrush.Schedule{ID: sc, StartsAt: t0})
			}
			mustLoad(t, s, con)
			return join(t, s, id, "alice", ticketrush.StatusActive)
		}
		hold := func(f ticketrush.QueueClaims, schedule, seat string, at time.Time) ticketrush.Reservation {
			r, _, err := s.Seats.Hold(ctx, f, schedule, seat, 100, at)
			require.NoError(t, err)
			return r
		}
		later := t0.Add(11 * time.Second)

		one := load("one", sA)
		lapsed := hold(one, sA, "VIP-1", t0)
		hold(one, sA, "VIP-2", t0.Add(5*time.Second))
		hold(one, sA, "VIP-3", t0.Add(5*time.Second))
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(slotOfConcert(t, s, "one", sA).Reservations()).FieldValue().
			FieldValue(lapsed.ID, "not a record").Build()).Error())
		counts, err := s.Seats.ScheduleCounts(ctx, "one", []string{sA}, later)
		require.NoError(t, err, "one schedule: the lapsed hold's record is not read")
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA, Taken: 2}}, counts)

		two := load("two", sA, "sched/b")
		hold(two, sA, "VIP-1", t0)
		escaped := hold(two, "sched/b", "VIP-1", t0)
		hold(two, "sched/b", "VIP-2", t0.Add(5*time.Second))
		key := slotOfConcert(t, s, "two", "sched/b").Reservations()
		raw, err := c.Do(ctx, c.B().Hget().Key(key).Field(escaped.ID).Build()).ToString()
		require.NoError(t, err)
		raw = strings.NewReplacer(`"schedule":"sched/b"`, `"schedule":"sched\u002fb"`, `"schedule":"sched\/b"`,
			`"schedule":"sched\u002fb"`).Replace(raw) // the same record, its schedule written with an escape
		require.Contains(t, raw, `"schedule":"sched\u002fb"`)
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(key).FieldValue().FieldValue(escaped.ID, raw).Build()).Error())
		counts, err = s.Seats.ScheduleCounts(ctx, "two", []string{sA, "sched/b"}, later)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.ScheduleCount{{ScheduleID: sA}, {ScheduleID: "sched/b", Taken: 1}}, counts)
	})
}

// TestRestoredHoldCountsAtTheGate: restore writes a fan's open hold into the gate with its expiry, and
// the scripts go on from there: the restored hold counts against the limit until it runs out.
func TestRestoredHoldCountsAtTheGate(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mod := func(q *ticketrush.QueueSettings) {
			q.MaxHoldsPerUser, q.HoldTTL, q.ActiveTTL = 1, 10*time.Second, time.Hour
		}
		fans := sale(t, s, mod, "alice")
		held, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		recs, err := NewInspector(c, s.keys.prefix).Reservations(ctx, cid)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		_, err = RestoreConcert(ctx, c, s.keys.Concert(cid), concert(cid, mod),
			[]ticketrush.ReservationRecord{{Reservation: recs[held.ID]}}, ticketrush.QueueMark{MaxSeq: 10})
		require.NoError(t, err)
		gate, err := c.Do(ctx, c.B().Hget().Key(s.keys.Concert(cid).Gate()).Field("alice").Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, held.ID+":"+millis(held.ExpiresAt), gate)

		j, err := s.Line.Join(ctx, cid, "alice", t0.Add(time.Second))
		require.NoError(t, err)
		alice := ticketrush.QueueClaims{UserID: "alice", ConcertID: cid, Seq: j.Seq}
		_, _, err = s.Seats.Hold(ctx, alice, sA, "VIP-2", 100, t0.Add(time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrHoldLimitReached, "the restored hold counts")
		_, _, err = s.Seats.Hold(ctx, alice, sA, "VIP-2", 100, t0.Add(11*time.Second))
		assert.NoError(t, err, "until it runs out")
	})
}
