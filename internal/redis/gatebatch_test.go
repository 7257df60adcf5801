package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestGateStepsOfABatch: the gate steps that arrive while a gate_apply call of their concert is in
// flight go in the next call, one for all of them, and each is decided as if alone, in the order they
// arrived: of a fan's two holds with a limit of one, the first queued gets it; a cancel queued behind
// them gives the fan's entry back.
func TestGateStepsOfABatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		bob := sameShard("alice", "bob", 3) // a batch is one shard's: the fan's gate is their shard
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1 }, "alice", bob)
		gate := fanGate(t, s, "alice").key()
		q := s.gates.inFlight(gate) // a call in flight: the steps queue behind it
		type hold struct {
			fan, schedule, seat string
			want                error
		}
		holds := []hold{{"alice", sA, "VIP-1", nil}, {"alice", sB, "VIP-1", ticketrush.ErrHoldLimitReached}, {bob, sC, "VIP-2", nil}}
		got := make([]ticketrush.Reservation, len(holds))
		var wg sync.WaitGroup
		for i, h := range holds {
			require.Eventually(t, func() bool { return s.gates.waiting(q) == i }, 5*time.Second, time.Millisecond,
				"each queued before the next: the batch's order is theirs")
			wg.Go(func() {
				r, _, err := s.Seats.Hold(ctx, fans[h.fan], h.schedule, h.seat, 100, t0)
				if h.want == nil {
					assert.NoError(t, err, "%s's hold of %s", h.fan, h.schedule)
				} else {
					assert.ErrorIs(t, err, h.want, "%s's hold of %s", h.fan, h.schedule)
				}
				got[i] = r
			})
		}
		require.Eventually(t, func() bool { return s.gates.waiting(q) == len(holds) }, 5*time.Second, time.Millisecond)
		calls := count(t, s.gateApply.calls)
		s.gates.flush(ctx, gate, q) // the call in flight returns: the next goes
		wg.Wait()
		assert.Equal(t, calls+1, count(t, s.gateApply.calls), "one call for the three holds")
		assert.Equal(t, got[0].ID+":"+millis(got[0].ExpiresAt), gateEntries(t, c, s, "alice"), "alice's first hold counts")
		assert.Zero(t, s.gates.queues(), "no call in flight, nobody waiting: the queue is gone")

		// A cancel's follow, queued behind a hold of the same fan: the hold sees the limit taken.
		q = s.gates.inFlight(gate)
		var cancelled ticketrush.Reservation
		wg.Go(func() {
			var err error
			cancelled, err = s.Seats.Cancel(ctx, "alice", got[0].ID, t0.Add(time.Second))
			assert.NoError(t, err)
		})
		require.Eventually(t, func() bool { return s.gates.waiting(q) == 1 }, 5*time.Second, time.Millisecond)
		wg.Go(func() {
			_, _, err := s.Seats.Hold(ctx, fans["alice"], sB, "VIP-2", 100, t0.Add(time.Second))
			assert.NoError(t, err, "the cancel's follow went first: alice's limit is free")
		})
		require.Eventually(t, func() bool { return s.gates.waiting(q) == 2 }, 5*time.Second, time.Millisecond)
		s.gates.flush(ctx, gate, q)
		wg.Wait()
		assert.Equal(t, ticketrush.ReservationCancelled, cancelled.Status)
	})
}

// TestConcurrentHoldsShareGateCalls: holds of many fans sent at once, each of a seat of its own, all
// stand, each fan's entry is theirs, and the concert's slot takes fewer gate calls than holds.
func TestConcurrentHoldsShareGateCalls(t *testing.T) {
	const fans = 48
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		users := make([]string, fans)
		for i := range users {
			users[i] = "fan-" + itoa(i)
		}
		con := concert(cid, func(q *ticketrush.QueueSettings) {
			q.LineShards, q.HoldTTL, q.ActiveTTL, q.ActiveCapacity, q.MaxHoldsPerUser = 3, 10*time.Second, time.Hour, fans, 1
		})
		con.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}, {ID: sC, StartsAt: t0}}
		con.Sections = []ticketrush.Section{{Name: "GEN", Price: 100, Seats: fans / 3}}
		mustLoad(t, s, con)
		claims := admittedAtOnce(t, s, users...)
		calls := count(t, s.gateApply.calls)
		ids := make([]string, fans)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Go(func() {
				<-start
				r, _, err := s.Seats.Hold(ctx, claims[u], spreadSchedules[i%3], "GEN-"+itoa(1+i/3), 100, t0)
				if assert.NoError(t, err, u) {
					ids[i] = r.ID
				}
			})
		}
		close(start)
		wg.Wait()
		for i, u := range users {
			assert.Contains(t, gateEntries(t, c, s, u), ids[i], "%s's entry is their hold's", u)
		}
		sent := count(t, s.gateApply.calls) - calls
		t.Logf("%d holds, %.0f gate_apply calls", fans, sent)
		assert.Less(t, sent, float64(fans), "holds in flight together share a call")
	})
}

// BenchmarkGateBatch: gate_apply alone on a Redis of its own, batches of 128 steps of fans each holding
// once (hold) and then giving it back (follow, the cancel's), each fan's token ACTIVE; reports Redis's
// time per step (INFO commandstats' evalsha usec): what a hold and a cancel cost the fan's shard of a
// concert whose line is over shards and whose seat slots are elsewhere.
//
//	go test -run '^$' -bench BenchmarkGateBatch -benchtime 100x ./internal/redis/
func BenchmarkGateBatch(b *testing.B) {
	const batch = 128
	for _, kind := range []string{gateHoldStep, gateFollowStep} {
		b.Run(map[string]string{gateHoldStep: "hold", gateFollowStep: "follow"}[kind], func(b *testing.B) {
			c := dbtest.Client(b, dbtest.PrivateRedis(b))
			s := NewStore(c, "bench", prometheus.NewRegistry())
			s.LimitUsers(UserLimit{Rate: 20, Burst: 40})
			ctx := context.Background()
			_, err := s.LoadConcert(ctx, shardedConcert("gb", 8, func(q *ticketrush.QueueSettings) {
				q.HoldTTL, q.MaxHoldsPerUser = time.Hour, 4
			}), t0)
			require.NoError(b, err)
			w, err := s.ways(ctx, "gb")
			require.NoError(b, err)
			g := w.seats.(seatSlots).fanGate("fan-1") // every step of the bench at fan-1's shard, as a batch is
			steps := make([][]gateStep, b.N)
			next := 0
			for i := range steps {
				cmds := make(rueidis.Commands, 0, batch)
				for j := range batch {
					for next++; LineShard("fan-"+itoa(next), 8) != LineShard("fan-1", 8); next++ {
					}
					seq := uint64(i*batch + j + 1)
					st := gateStep{at: g, kind: gateHoldStep, user: "fan-" + itoa(next), id: "r" + utoa(seq), seq: seq, now: t0}
					steps[i] = append(steps[i], st)
					// the token the round that admitted the fan left in their shard (line_pop), shown up
					cmds = append(cmds, c.B().Hset().Key(g.shard.Token()).FieldValue().
						FieldValue(st.user, utoa(seq)+":"+millis(t0.Add(time.Hour))+":0").Build())
				}
				for _, r := range c.DoMulti(ctx, cmds...) {
					require.NoError(b, r.Error())
				}
			}
			run := func(steps []gateStep) {
				keys, args := g.gateApply(steps, s.limit)
				msg, err := s.exec(ctx, s.gateApply, keys, args)
				require.NoError(b, err)
				items, err := msg.ToArray()
				require.NoError(b, err)
				for _, it := range items {
					require.True(b, it.IsInt64(), "a step refused: %v", it)
				}
			}
			if kind == gateFollowStep { // the holds first, not timed
				for i := range steps {
					run(steps[i])
					for j := range steps[i] {
						steps[i][j].kind, steps[i][j].status = gateFollowStep, string(ticketrush.ReservationCancelled)
					}
				}
			}
			before := commandStats(b, c)["evalsha"].usec
			b.ResetTimer()
			for i := range b.N {
				run(steps[i])
			}
			b.StopTimer()
			b.ReportMetric((commandStats(b, c)["evalsha"].usec-before)/float64(b.N*batch), "redis-µs/step")
		})
	}
}

// TestSpreadHoldRateInTheGateRecord: the holds of a fan of a concert whose seats are elsewhere are held
// to the user's rate by a bucket kept in their gate record while they have open holds, and in its
// self-expiring key once they have none (a cancel, a refused hold): across batches, across that move, and
// a fan left without open holds leaves no record behind; another fan's bucket is theirs.
func TestSpreadHoldRateInTheGateRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 4 }, "alice", "bob")
		s.LimitUsers(UserLimit{Rate: 1, Burst: 2})
		bucket := func(user string) string {
			v, err := c.Do(ctx, c.B().Get().Key(fanGate(t, s, user).shard.UserRate(user)).Build()).ToString()
			if rueidis.IsRedisNil(err) {
				return ""
			}
			require.NoError(t, err)
			return v
		}
		first, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		assert.Regexp(t, `^~[0-9.]+,`+first.ID+`:`, gateEntries(t, c, s, "alice"), "the bucket first in the record")
		_, err = s.Seats.Cancel(ctx, "alice", first.ID, t0)
		require.NoError(t, err)
		assert.Empty(t, gateEntries(t, c, s, "alice"), "no open hold: no record")
		assert.NotEmpty(t, bucket("alice"), "the bucket in its key, while its time is to come")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0)
		require.NoError(t, err, "the burst's second call")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sC, "VIP-1", 100, t0)
		require.ErrorIs(t, err, ticketrush.ErrRateLimited, "a third within the burst")
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sB, "VIP-1", 100, t0)
		require.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "alice has it")
		assert.Empty(t, gateEntries(t, c, s, "bob"), "a refused hold leaves no record")
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sC, "VIP-1", 100, t0)
		require.NoError(t, err, "bob's bucket is his own")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sC, "VIP-2", 100, t0.Add(time.Second))
		require.NoError(t, err, "a second later: one more")
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sA, "VIP-2", 100, t0.Add(time.Second))
		require.ErrorIs(t, err, ticketrush.ErrRateLimited)
	})
}

// TestAGoneHoldStepIsDropped: a hold whose request ends while its gate step waits for a batch returns
// at once, and its step is not sent: the fan's limit is not taken by a hold that never came, so their
// retry holds (with a limit of one).
func TestAGoneHoldStepIsDropped(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1 }, "alice")
		gate := fanGate(t, s, "alice").key()
		q := s.gates.inFlight(gate)
		gone, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() {
			_, _, err := s.Seats.Hold(gone, fans["alice"], sA, "VIP-1", 100, t0)
			done <- err
		}()
		require.Eventually(t, func() bool { return s.gates.waiting(q) == 1 }, 5*time.Second, time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		s.gates.flush(ctx, gate, q)
		assert.Empty(t, gateEntries(t, c, s, "alice"), "no entry for a step never sent")
		_, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		assert.NoError(t, err, "the retry holds")
	})
}

// TestAHoldGoneInFlightGivesItsEntryBack: a hold whose request ends while its gate step's call is in
// flight returns at once; the step ran, so its entry is given back (a follow of its own), and the fan's
// retry holds (with a limit of one).
func TestAHoldGoneInFlightGivesItsEntryBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 1 }, "alice")
		gone, cancel := context.WithCancel(ctx)
		done := make(chan error)
		send := s.gates.send
		var armed atomic.Bool
		armed.Store(true)
		s.gates.send = func(ctx context.Context, concertID string, steps []gateStep) ([]batchResult[int64], error) {
			if steps[0].kind == gateHoldStep && armed.CompareAndSwap(true, false) {
				cancel()
				assert.ErrorIs(t, <-done, context.Canceled, "the hold returned before its step's answer")
			}
			return send(ctx, concertID, steps)
		}
		gate := fanGate(t, s, "alice").key()
		q := s.gates.inFlight(gate) // the hold waits for a batch, which this goroutine then sends
		go func() {
			_, _, err := s.Seats.Hold(gone, fans["alice"], sA, "VIP-1", 100, t0)
			done <- err
		}()
		require.Eventually(t, func() bool { return s.gates.waiting(q) == 1 }, 5*time.Second, time.Millisecond)
		s.gates.flush(ctx, gate, q)
		require.Eventually(t, func() bool { return gateEntries(t, c, s, "alice") == "" && s.gates.queues() == 0 },
			5*time.Second, time.Millisecond, "the entry the step reserved is given back")
		_, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		assert.NoError(t, err, "the retry holds")
	})
}
