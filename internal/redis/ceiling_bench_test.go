package redis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// BenchmarkOneRedisThread is the ceiling of one concert: all its keys share a hash slot, so on a cluster
// it lives on one master, and one Redis thread runs every join and hold of it. On a private
// redis-server (nothing else counts), joins, winning holds, or the cancel, claim or sale of a hold from
// many goroutines; Redis' own time per script call (INFO commandstats) gives redis-us/op and the
// ceiling, ceiling/s = 1e6 / redis-us/op.
// Beside them, in the same run, the floor: a minimal EVALSHA (return 1) and a plain HSET. With -v it
// also logs where a script's time goes: its commands' own time per call, by command, and the rest
// (the Lua around them).
// `go test -run x -bench OneRedisThread -benchtime 20000x ./internal/redis`
func BenchmarkOneRedisThread(b *testing.B) {
	c := dbtest.Client(b, dbtest.PrivateRedis(b))
	ctx := context.Background()
	newConcert := func(b *testing.B, seats int) *Store { return benchConcert(b, c, seats, time.Hour) }
	measure := func(b *testing.B, run func(i int) error) {
		require.NoError(b, c.Do(ctx, c.B().ConfigResetstat().Build()).Error())
		var next, failed atomic.Int64
		b.SetParallelism(16) // 32 goroutines on 2 cores: rueidis pipelines their calls
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if run(int(next.Add(1)-1)) != nil {
					failed.Add(1)
				}
			}
		})
		b.StopTimer()
		require.Zero(b, failed.Load())
		us := usecPerEvalsha(b, c)
		b.ReportMetric(us, "redis-us/op")
		b.ReportMetric(1e6/us, "ceiling/s")
		logInner(b, c, us)
	}
	b.Run("floor-evalsha", func(b *testing.B) {
		sc := rueidis.NewLuaScript("return 1")
		measure(b, func(int) error { return sc.Exec(ctx, c, []string{"floor"}, nil).Error() })
	})
	b.Run("floor-hset", func(b *testing.B) {
		require.NoError(b, c.Do(ctx, c.B().ConfigResetstat().Build()).Error())
		var next atomic.Int64
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := strconv.FormatInt(next.Add(1), 10)
				require.NoError(b, c.Do(ctx, c.B().Hset().Key("floor:h").FieldValue().FieldValue(i, i).Build()).Error())
			}
		})
		b.StopTimer()
		st := commandStats(b, c)["hset"]
		require.Positive(b, st.calls)
		b.ReportMetric(st.usec/st.calls, "redis-us/op")
	})
	b.Run("join-waiting", func(b *testing.B) { // the common join of an on-sale: into a line that waits
		s := newConcert(b, 1)
		q := concert(cid, nil).Queue
		q.HoldTTL, q.AdmitPerSecond, q.ActiveCapacity, q.Paused = time.Hour, 1_000_000_000, 1_000_000_000, true
		require.NoError(b, s.Configure(ctx, cid, q, t0))
		measure(b, func(i int) error {
			_, err := s.Line.Join(ctx, cid, "fan-"+strconv.Itoa(i), t0)
			return err
		})
	})
	b.Run("join", func(b *testing.B) { // admitted at once: an empty line with room
		s := newConcert(b, 1)
		measure(b, func(i int) error {
			_, err := s.Line.Join(ctx, cid, "fan-"+strconv.Itoa(i), t0)
			return err
		})
	})
	// hold: a fan's first hold; hold-fourth: their fourth, three open already (the limit is four)
	for _, tt := range []struct {
		name string
		open int
	}{{"hold", 0}, {"hold-fourth", 3}} {
		b.Run(tt.name, func(b *testing.B) {
			per := tt.open + 1 // seats a fan holds
			s := newConcert(b, per*b.N)
			claims := make([]ticketrush.QueueClaims, b.N)
			for i := range claims {
				user := "fan-" + strconv.Itoa(i)
				j, err := s.Line.Join(ctx, cid, user, t0)
				require.NoError(b, err)
				claims[i] = ticketrush.QueueClaims{UserID: user, ConcertID: cid, Seq: j.Seq}
				for k := range tt.open {
					_, _, err := s.Seats.Hold(ctx, claims[i], sA, fmt.Sprintf("R-%d", per*i+k+1), 10, t0)
					require.NoError(b, err)
				}
			}
			measure(b, func(i int) error {
				_, _, err := s.Seats.Hold(ctx, claims[i], sA, fmt.Sprintf("R-%d", per*i+per), 10, t0)
				return err
			})
		})
	}
	// hold-refused: the commonest answer of a contended sale, a seat another fan holds (each fan holds one
	// seat and asks for the next fan's)
	b.Run("hold-refused", func(b *testing.B) {
		s := newConcert(b, b.N)
		claims := make([]ticketrush.QueueClaims, b.N)
		for i := range claims {
			user := "fan-" + strconv.Itoa(i)
			j, err := s.Line.Join(ctx, cid, user, t0)
			require.NoError(b, err)
			claims[i] = ticketrush.QueueClaims{UserID: user, ConcertID: cid, Seq: j.Seq}
			_, _, err = s.Seats.Hold(ctx, claims[i], sA, fmt.Sprintf("R-%d", i+1), 10, t0)
			require.NoError(b, err)
		}
		measure(b, func(i int) error {
			_, _, err := s.Seats.Hold(ctx, claims[i], sA, fmt.Sprintf("R-%d", (i+1)%b.N+1), 10, t0)
			if errors.Is(err, ticketrush.ErrSeatUnavailable) {
				return nil
			}
			return fmt.Errorf("a held seat: %w", err)
		})
	})
	// The steps that read a reservation's record and write it back (cjson.decode, cjson.encode): each
	// fan's hold cancelled, claimed, or sold (claimed and debited before the timer). The storm of make
	// bench measures the cancel under load; these give it, the claim and the sale a pipelined figure.
	for _, step := range []string{"cancel", "claim", "complete"} {
		b.Run(step, func(b *testing.B) {
			s := newConcert(b, b.N)
			ids := make([]string, b.N)
			debits := make([]ticketrush.Payment, b.N)
			for i := range ids {
				user := "fan-" + strconv.Itoa(i)
				j, err := s.Line.Join(ctx, cid, user, t0)
				require.NoError(b, err)
				r, _, err := s.Seats.Hold(ctx, ticketrush.QueueClaims{UserID: user, ConcertID: cid, Seq: j.Seq}, sA,
					fmt.Sprintf("R-%d", i+1), 10, t0)
				require.NoError(b, err)
				ids[i] = r.ID
				if step == "complete" {
					_, _, err = s.Wallet.Charge(ctx, user, 10, "", "", t0)
					require.NoError(b, err)
					_, err = s.Seats.Claim(ctx, user, r.ID, t0)
					require.NoError(b, err)
					debits[i], err = s.Wallet.Debit(ctx, user, r.ID, 10, t0)
					require.NoError(b, err)
				}
			}
			measure(b, func(i int) error {
				var err error
				switch step {
				case "cancel":
					_, err = s.Seats.Cancel(ctx, "fan-"+strconv.Itoa(i), ids[i], t0)
				case "claim":
					_, err = s.Seats.Claim(ctx, "fan-"+strconv.Itoa(i), ids[i], t0)
				default:
					_, err = s.Seats.Complete(ctx, ids[i], debits[i], t0)
				}
				return err
			})
		})
	}
}

// benchConcert loads, through a new store on c, concert cid with one schedule (sA) of seats seats, holds
// of holdTTL, and a line that admits everyone at once.
func benchConcert(b *testing.B, c rueidis.Client, seats int, holdTTL time.Duration) *Store {
	s := NewStore(c, dbtest.Name("t"), prometheus.NewRegistry())
	con := concert(cid, func(q *ticketrush.QueueSettings) {
		q.HoldTTL, q.AdmitPerSecond, q.ActiveCapacity = holdTTL, 1_000_000_000, 1_000_000_000
	})
	con.Sections = []ticketrush.Section{{Name: "R", Price: 10, Seats: max(seats, 1)}}
	con.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}}
	_, err := s.LoadConcert(context.Background(), con, t0)
	require.NoError(b, err)
	return s
}

// logInner logs, with -v, each command's own time per script call since the last CONFIG RESETSTAT,
// and what is left of the script's us per call once they are taken out: the Lua around them.
func logInner(b *testing.B, c rueidis.Client, us float64) {
	if b.N < 100 {
		return // the benchmark's first run of one: its connection's set-up, not the script
	}
	stats := commandStats(b, c)
	calls := stats["evalsha"].calls + stats["eval"].calls
	inner := 0.0
	var parts []string
	for name, st := range stats {
		if name == "evalsha" || name == "eval" || name == "script|load" || st.calls == 0 {
			continue
		}
		inner += st.usec / calls
		parts = append(parts, fmt.Sprintf("%s %.2f µs (%.2f calls)", name, st.usec/calls, st.calls/calls))
	}
	sort.Strings(parts)
	b.Logf("%.2f µs a call: its commands %.2f (%s), the Lua around them %.2f", us, inner, strings.Join(parts, ", "), us-inner)
}

// usecPerEvalsha is Redis' time per EVALSHA since the last CONFIG RESETSTAT, the script's own commands
// included: they run within the call's time (and are counted again under their own names).
func usecPerEvalsha(b *testing.B, c rueidis.Client) float64 {
	var calls, usec float64
	for name, st := range commandStats(b, c) {
		if name == "evalsha" || name == "eval" {
			calls += st.calls
			usec += st.usec
		}
	}
	require.Positive(b, calls)
	return usec / calls
}

// BenchmarkTickRound is Redis's time for one admission round (queue_tick) that admits 1, 20 or 200
// fans: what a round costs whatever it admits, and what each fan adds; fans=20/lapsing also lapses the
// 20 fans the round before admitted (their ACTIVE tokens last 100 ms), fans=20/noshows expires them as
// no-shows (their deadline is 100 ms after admission); fans=20/shards=4 ticks a line of 4 shards, whose
// round is several script calls (line_heads and line_pop on each shard, line_admit), counted together. 32 concerts tick at once on a
// private redis-server, each round 100 ms after the last with a budget of exactly that many fans, so
// that Redis runs nothing but rounds; INFO commandstats gives redis-us/round and redis-us/fan, and with
// -v the round's commands and the Lua around them. make bench's storm ticks about 20 fans a round.
// `go test -run x -bench TickRound -benchtime 640x ./internal/redis`
func BenchmarkTickRound(b *testing.B) {
	c := dbtest.Client(b, dbtest.PrivateRedis(b))
	ctx := context.Background()
	for _, tt := range []struct {
		per int
		// ends: "lapsing", ACTIVE tokens last 100 ms; "noshows", the no-show deadline is 100 ms after
		// admission: either way each round also ends the sessions of the fans the round before admitted
		ends   string
		shards int // the line's shards (lineShards): a round is then line_heads, line_admit and line_pop calls
	}{{1, "", 1}, {20, "", 1}, {200, "", 1}, {20, "lapsing", 1}, {20, "noshows", 1}, {20, "", 4}} {
		name, per := "fans="+strconv.Itoa(tt.per), tt.per
		if tt.ends != "" {
			name += "/" + tt.ends
		}
		if tt.shards > 1 {
			name += "/shards=" + strconv.Itoa(tt.shards)
		}
		b.Run(name, func(b *testing.B) {
			const concerts = 32
			rounds := (b.N + concerts - 1) / concerts
			s := NewStore(c, dbtest.Name("t"), prometheus.NewRegistry())
			var wg sync.WaitGroup
			for k := range concerts {
				wg.Go(func() {
					id := "c" + strconv.Itoa(k)
					con := concert(id, func(q *ticketrush.QueueSettings) {
						q.AdmitPerSecond, q.ActiveCapacity, q.ActiveTTL, q.LineShards = per*10, 100_000_000, time.Hour, tt.shards
						switch tt.ends {
						case "lapsing":
							q.ActiveTTL = 100 * time.Millisecond
						case "noshows":
							q.NoShow = 100 * time.Millisecond
						}
					})
					_, err := s.LoadConcert(ctx, con, t0)
					require.NoError(b, err)
					for i := range rounds*per + per*11 { // the budget starts full: the first tick takes per*10
						_, err := s.Line.Join(ctx, id, "fan-"+strconv.Itoa(i), t0)
						require.NoError(b, err)
					}
					_, err = s.Line.Tick(ctx, id, t0, per*10) // spends the first budget
					require.NoError(b, err)
					if tt.ends != "" { // ends the first budget's sessions: from here on a round ends the last one's
						_, err = s.Line.Tick(ctx, id, t0.Add(100*time.Millisecond), per*10)
						require.NoError(b, err)
					}
				})
			}
			wg.Wait()
			require.NoError(b, c.Do(ctx, c.B().ConfigResetstat().Build()).Error())
			b.ResetTimer()
			for k := range concerts {
				wg.Go(func() {
					id := "c" + strconv.Itoa(k)
					first := 1
					if tt.ends != "" {
						first = 2
					}
					for j := first; j < first+rounds; j++ {
						r, err := s.Line.Tick(ctx, id, t0.Add(time.Duration(j)*100*time.Millisecond), 1000)
						require.NoError(b, err)
						require.Equal(b, per, r.Admitted, "round %d of %s", j, id)
						switch tt.ends {
						case "lapsing":
							require.Equal(b, per, r.Lapsed, "round %d of %s", j, id)
						case "noshows":
							require.Equal(b, per, r.NoShows, "round %d of %s", j, id)
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			us := usecPerEvalsha(b, c)
			if tt.shards > 1 { // a round is several script calls: their time together
				st := commandStats(b, c)
				us = (st["evalsha"].usec + st["evalsha_ro"].usec) / float64(concerts*rounds)
			}
			b.ReportMetric(us, "redis-us/round")
			b.ReportMetric(us/float64(per), "redis-us/fan")
			logInner(b, c, us)
		})
	}
}

// BenchmarkSweepWave is Redis's time to lapse a wave of holds that expire together (those of an
// opening's first minute): b.N holds of one concert, each by its own fan, all past their expiry, swept
// batch by batch as the sweeper does (internal/booking: 100 a call) on a private redis-server; INFO
// commandstats gives redis-us/hold and redis-us/call, and with -v the commands and the Lua around them.
// `go test -run x -bench SweepWave -benchtime 20000x ./internal/redis`
func BenchmarkSweepWave(b *testing.B) {
	const batch = 100
	c := dbtest.Client(b, dbtest.PrivateRedis(b))
	ctx := context.Background()
	s := benchConcert(b, c, b.N, time.Minute)
	for i := range b.N {
		user := "fan-" + strconv.Itoa(i)
		j, err := s.Line.Join(ctx, cid, user, t0)
		require.NoError(b, err)
		_, _, err = s.Seats.Hold(ctx, ticketrush.QueueClaims{UserID: user, ConcertID: cid, Seq: j.Seq}, sA, fmt.Sprintf("R-%d", i+1), 10, t0)
		require.NoError(b, err)
	}
	require.NoError(b, c.Do(ctx, c.B().ConfigResetstat().Build()).Error())
	b.ResetTimer()
	lapsed, calls := 0, 0
	for {
		n, err := s.Seats.Sweep(ctx, cid, []string{sA}, t0.Add(2*time.Minute), batch)
		require.NoError(b, err)
		lapsed, calls = lapsed+n, calls+1
		if n < batch {
			break
		}
	}
	b.StopTimer()
	require.Equal(b, b.N, lapsed)
	us := usecPerEvalsha(b, c)
	b.ReportMetric(us*float64(calls)/float64(lapsed), "redis-us/hold")
	b.ReportMetric(us, "redis-us/call")
	logInner(b, c, us)
}

// BenchmarkLinePlace is Redis's time to place the draw's entrants in a line of 4 shards: b.N entrants of
// one concert in their shards' pre-queues, placed in batches of 1,000 as the draw does (placeLine: a
// line_place call on each shard a batch), on a private redis-server; INFO commandstats gives
// redis-us/entrant, and with -v the commands and the Lua around them.
// `go test -run x -bench LinePlace -benchtime 20000x ./internal/redis`
func BenchmarkLinePlace(b *testing.B) {
	const shards, batch = 4, 1000
	c := dbtest.Client(b, dbtest.PrivateRedis(b))
	ctx := context.Background()
	s := NewStore(c, dbtest.Name("t"), prometheus.NewRegistry())
	k := s.keys.Concert(cid)
	entrants := make([]draw.Entrant, b.N)
	cmds := make(rueidis.Commands, 0, b.N)
	for i := range entrants {
		u := "fan-" + strconv.Itoa(i)
		entrants[i] = draw.Entrant{User: u}
		cmds = append(cmds, c.B().Zadd().Key(k.Shard(LineShard(u, shards)).Prequeue()).ScoreMember().ScoreMember(float64(i), u).Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		require.NoError(b, r.Error())
	}
	require.NoError(b, c.Do(ctx, c.B().ConfigResetstat().Build()).Error())
	b.ResetTimer()
	for from := 0; from < b.N; from += batch {
		require.NoError(b, s.Line.placeLine(ctx, lineOf(b, s, cid), 0, int64(from), entrants[from:min(from+batch, b.N)]))
	}
	b.StopTimer()
	us := commandStats(b, c)["evalsha"].usec / float64(b.N)
	b.ReportMetric(us, "redis-us/entrant")
	logInner(b, c, us)
}
