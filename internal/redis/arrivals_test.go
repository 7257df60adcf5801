package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestArrivalsOfABatch: the joins that arrive while a line_arrive call of their concert is in flight go
// in the next call, one for all of them, and each is answered as if alone, in the order they arrived:
// a fan ACTIVE already gets their token back, the others consecutive seqs.
func TestArrivalsOfABatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("ab", 4, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }))
		first, err := s.Line.Join(ctx, "ab", "fan-0", t0) // nobody waits and there is room: admitted at once
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, first.Status)

		// A call in flight: the joins queue behind it.
		q := s.arrivals.inFlight("ab") // a call in flight
		users := []string{"fan-1", "fan-0", "fan-2", "fan-3"}
		got := make([]arrival, len(users))
		var wg sync.WaitGroup
		for i, u := range users {
			require.Eventually(t, func() bool { // each queued before the next: the batch's order is theirs
				return s.arrivals.waiting(q) == i
			}, 5*time.Second, time.Millisecond)
			wg.Go(func() {
				a, err := s.Line.arrive(ctx, "ab", u, "", t0.Add(time.Second))
				assert.NoError(t, err, u)
				got[i] = a
			})
		}
		require.Eventually(t, func() bool {
			return s.arrivals.waiting(q) == len(users)
		}, 5*time.Second, time.Millisecond)
		calls := count(t, s.lineArrive.calls)
		s.arrivals.flush(ctx, "ab", q) // the call in flight returns: the next goes
		wg.Wait()
		assert.Equal(t, calls+1, count(t, s.lineArrive.calls), "one call for the four joins")
		for i, want := range []struct {
			status ticketrush.QueueStatus
			seq    uint64
		}{{"ARRIVE", 2}, {ticketrush.StatusActive, first.Seq}, {"ARRIVE", 3}, {"ARRIVE", 4}} {
			assert.Equal(t, want.status, got[i].status, users[i])
			assert.Equal(t, want.seq, got[i].seq, users[i])
		}
		assert.Zero(t, s.arrivals.queues(), "no call in flight, nobody waiting: the queue is gone")
	})
}

// TestConcurrentJoinsShareArrivalCalls: joins to a sharded line sent at once each get a distinct seq, one
// after the other, every fan waits in the line, and the concert's slot takes fewer calls than joins.
func TestConcurrentJoinsShareArrivalCalls(t *testing.T) {
	const fans = 300
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("cj", 8, func(q *ticketrush.QueueSettings) { q.Paused = true }))
		calls := count(t, s.lineArrive.calls)
		seqs := make([]uint64, fans)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range fans {
			wg.Go(func() {
				<-start
				r, err := s.Line.Join(ctx, "cj", fmt.Sprintf("fan-%03d", i), t0)
				if assert.NoError(t, err) {
					assert.Equal(t, ticketrush.StatusWaiting, r.Status)
					seqs[i] = r.Seq
				}
			})
		}
		close(start)
		wg.Wait()
		seen := map[uint64]bool{}
		for _, seq := range seqs {
			assert.False(t, seen[seq], "seq %d twice", seq)
			seen[seq] = true
		}
		for seq := uint64(1); seq <= fans; seq++ {
			assert.True(t, seen[seq], "no fan holds seq %d", seq)
		}
		snap, err := s.Line.Snapshot(ctx, "cj", 0, 0, t0)
		require.NoError(t, err)
		assert.EqualValues(t, fans, snap.Tail, "the newest arrival")
		sent := count(t, s.lineArrive.calls) - calls
		t.Logf("%d joins, %.0f line_arrive calls", fans, sent)
		assert.Less(t, sent, float64(fans), "joins in flight together share a call")
	})
}

// count reads a counter's value.
func count(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

// BenchmarkShardedJoins: joins to a line of 8 shards on a Redis of its own, from 32 goroutines at once
// (a storm through one instance); reports Redis's CPU per join (INFO cpu, its main thread's user and
// system time) and the line_arrive calls per join.
//
//	go test -run '^$' -bench BenchmarkShardedJoins -benchtime 20000x ./internal/redis/
func BenchmarkShardedJoins(b *testing.B) {
	c := dbtest.Client(b, dbtest.PrivateRedis(b))
	s := NewStore(c, "bench", prometheus.NewRegistry())
	ctx := context.Background()
	con := shardedConcert("sj", 8, func(q *ticketrush.QueueSettings) { q.Paused = true })
	_, err := s.LoadConcert(ctx, con, t0)
	require.NoError(b, err)
	cpu := func() float64 {
		info, err := c.Do(ctx, c.B().Info().Section("cpu").Build()).ToString()
		require.NoError(b, err)
		var sum float64
		for _, line := range strings.Split(info, "\n") {
			for _, f := range []string{"used_cpu_sys_main_thread:", "used_cpu_user_main_thread:"} {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), f); ok {
					x, err := strconv.ParseFloat(v, 64)
					require.NoError(b, err)
					sum += x
				}
			}
		}
		return sum
	}
	calls, before := count(b, s.lineArrive.calls), cpu()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if _, err := s.Line.Join(ctx, "sj", "fan-"+strconv.FormatInt(i, 10), t0); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric((cpu()-before)*1e6/float64(b.N), "redis-cpu-µs/join")
	b.ReportMetric((count(b, s.lineArrive.calls)-calls)/float64(b.N), "arrive-calls/join")
}

// TestAGoneJoinIsDropped: a join whose request ends while its batch is waiting returns at once, and the
// batch then sends nothing for it: it takes no seq, so the next fan takes the first and reads the place
// it has.
func TestAGoneJoinIsDropped(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("gj", 4, func(q *ticketrush.QueueSettings) { q.Paused = true }))
		q := s.arrivals.inFlight("gj") // a call in flight
		gone, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() {
			_, err := s.Line.Join(gone, "gj", "gone-fan", t0)
			done <- err
		}()
		require.Eventually(t, func() bool {
			return s.arrivals.waiting(q) == 1
		}, 5*time.Second, time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		calls := count(t, s.lineArrive.calls)
		s.arrivals.flush(ctx, "gj", q)
		assert.Equal(t, calls, count(t, s.lineArrive.calls), "nothing sent for a join that is gone")

		next, err := s.Line.Join(ctx, "gj", "next-fan", t0)
		require.NoError(t, err)
		require.EqualValues(t, 1, next.Seq, "the gone join took no seq")
		st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "gj", UserID: "next-fan", Seq: next.Seq}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: 1}, st)
	})
}

// TestAnUndialledStepWasNotSent: a step whose connection could not be dialled never reached Redis, so
// its join's seq is a gap to log; any other unavailability may hide a step that ran.
func TestAnUndialledStepWasNotSent(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("i/o timeout")}
	assert.False(t, lost(errors.Join(ticketrush.ErrUnavailable, dial)), "not dialled: not sent")
	assert.True(t, lost(errors.Join(ticketrush.ErrUnavailable, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("reset")})),
		"a read that failed: the step may have run")
	assert.True(t, lost(context.DeadlineExceeded))
}

// BenchmarkArriveBatch: line_arrive alone, batches of 128 joins of fans new to the line, on a Redis of
// its own; reports Redis's time per join (INFO commandstats' evalsha usec): what a join costs the
// concert's own slot, the part of a join that no number of masters spreads.
//
//	go test -run '^$' -bench BenchmarkArriveBatch -benchtime 200x ./internal/redis/
func BenchmarkArriveBatch(b *testing.B) {
	const batch = 128
	c := dbtest.Client(b, dbtest.PrivateRedis(b))
	s := NewStore(c, "bench", prometheus.NewRegistry())
	ctx := context.Background()
	_, err := s.LoadConcert(ctx, shardedConcert("ar", 8, func(q *ticketrush.QueueSettings) { q.Paused = true }), t0)
	require.NoError(b, err)
	k := s.keys.Concert("ar")
	joins := make([]joinArgs, batch)
	before := commandStats(b, c)["evalsha"].usec
	b.ResetTimer()
	for i := range b.N {
		for j := range joins {
			joins[j] = joinArgs{user: "fan-" + strconv.Itoa(i*batch+j)}
		}
		keys, args := k.lineArrive(joins, t0)
		if _, err := s.exec(ctx, s.lineArrive, keys, args); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric((commandStats(b, c)["evalsha"].usec-before)/float64(b.N*batch), "redis-µs/join")
}

// TestArrivalsLapseATokenOnce: a fan whose ACTIVE token has lapsed, twice in one batch (a retry beside
// the join it retries), has the token lapsed once, and each of the two a seq of its own.
func TestArrivalsLapseATokenOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("lo", 4, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }))
		first, err := s.Line.Join(ctx, "lo", "fan-0", t0)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, first.Status)
		later := first.ActiveUntil.Add(time.Second)
		keys, args := s.keys.Concert("lo").lineArrive([]joinArgs{{user: "fan-0"}, {user: "fan-0"}}, later)
		msg, err := s.exec(ctx, s.lineArrive, keys, args)
		require.NoError(t, err)
		res, err := arrivalsReply(msg, 2)
		require.NoError(t, err)
		require.NoError(t, res[0].err)
		require.NoError(t, res[1].err)
		assert.Equal(t, []uint64{2, 3}, []uint64{res[0].res.seq, res[1].res.seq}, "a seq each")
		entries, err := c.Do(ctx, c.B().Xrange().Key(s.keys.Concert("lo").Events()).Start("-").End("+").Build()).AsXRange()
		require.NoError(t, err)
		lapses := 0
		for _, e := range entries {
			if e.FieldValues["type"] == "queue.lapse" {
				lapses++
			}
		}
		assert.Equal(t, 1, lapses, "the token lapsed once")
	})
}

// TestALostEnterIsSettled: a join whose step in its shard was lost (the request's deadline passed before
// its answer, here before it was sent) has that step asked again past the deadline, so that its seq is
// never an unlogged gap: the fan's retry finds their place, and the fans behind read exact positions.
func TestALostEnterIsSettled(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("le", 4, func(q *ticketrush.QueueSettings) { q.Paused = true }))
		s.crash = func(at string) error {
			if at == "enter" {
				return context.DeadlineExceeded
			}
			return nil
		}
		_, err := s.Line.Join(ctx, "le", "alice", t0)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		s.crash = nil
		s.settling.Wait() // the settle runs past the join's answer
		bob, err := s.Line.Join(ctx, "le", "bob", t0)
		require.NoError(t, err)
		alice, err := s.Line.Join(ctx, "le", "alice", t0) // the client's retry
		require.NoError(t, err)
		for want, f := range []struct {
			user string
			seq  uint64
		}{{"alice", alice.Seq}, {"bob", bob.Seq}} {
			st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "le", UserID: f.user, Seq: f.seq}, t0)
			require.NoError(t, err)
			assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: int64(want + 1)}, st, f.user)
		}
	})
}

// TestJoinsOfAShardInOneCall: the joins of one shard that arrive while its line_enter is in flight go to
// it together in the next call, each decided as if alone, in their order: a join refused (a proof of
// work missing) is refused alone, a fan's second join in the batch keeps the place the first took (its
// own seq a gap), and the others wait in seq order.
func TestJoinsOfAShardInOneCall(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const n = 4
		mustLoad(t, s, shardedConcert("eb", n, func(q *ticketrush.QueueSettings) { q.Paused = true; q.JoinPowBits = 8 }))
		alice := "alice"
		bob, carol := sameShard(alice, "bob", n), sameShard(alice, "carol", n)
		sh := s.keys.Concert("eb").Shard(LineShard(alice, n))
		proof := func(id string) ticketrush.JoinPass {
			return ticketrush.JoinPass{PowID: id, PowBits: 8, PowExpires: t0.Add(time.Minute)}
		}
		q := s.enters.inFlight(sh.Places())
		joins := []struct {
			user string
			pass ticketrush.JoinPass
		}{{alice, proof("p1")}, {bob, ticketrush.JoinPass{}}, {alice, proof("p2")}, {carol, proof("p3")}}
		got := make([]ticketrush.JoinResult, len(joins))
		errs := make([]error, len(joins))
		var wg sync.WaitGroup
		for i, j := range joins {
			require.Eventually(t, func() bool { return s.enters.waiting(q) == i }, 5*time.Second, time.Millisecond)
			wg.Go(func() {
				got[i], errs[i] = s.Line.JoinWith(ctx, "eb", j.user, j.pass, t0.Add(time.Duration(i)*time.Millisecond))
			})
		}
		require.Eventually(t, func() bool { return s.enters.waiting(q) == len(joins) }, 5*time.Second, time.Millisecond)
		calls := count(t, s.lineEnter.calls)
		s.enters.flush(ctx, sh.Places(), q)
		wg.Wait()
		assert.Equal(t, calls+1, count(t, s.lineEnter.calls), "one line_enter for the four joins")
		require.NoError(t, errs[0])
		assert.ErrorIs(t, errs[1], ticketrush.ErrPowRequired, "bob, without a proof, alone refused")
		require.NoError(t, errs[2])
		require.NoError(t, errs[3])
		assert.Equal(t, ticketrush.StatusWaiting, got[0].Status)
		assert.Equal(t, got[0].Seq, got[2].Seq, "alice's second join keeps her place")
		assert.NotZero(t, got[2].Skipped, "the seq it took is a gap")
		assert.Equal(t, ticketrush.StatusWaiting, got[3].Status)
		order, err := c.Do(ctx, c.B().Lrange().Key(sh.Order()).Start(0).Stop(-1).Build()).AsStrSlice()
		require.NoError(t, err)
		assert.Equal(t, []string{utoa(got[0].Seq) + "|" + alice, utoa(got[3].Seq) + "|" + carol}, order)
		st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "eb", UserID: carol, Seq: got[3].Seq}, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(2), st.Position, "carol behind alice: bob's and alice's second seqs are gaps")
	})
}
