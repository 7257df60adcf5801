package writebehind

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
)

// fillCharges appends n point.charge events to the wallet streams under prefix, as points_charge.lua
// writes them, spread over users of every shard.
func fillCharges(tb testing.TB, rdb rueidis.Client, prefix string, n, round int) {
	keys := redis.NewKeys(prefix)
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	pipelined(tb, rdb, n, func(i int) rueidis.Completed {
		user := "user-" + strconv.Itoa(i%5000)
		return rdb.B().Xadd().Key(keys.Wallet(user).Events()).Id("*").FieldValue().
			FieldValue("type", "point.charge").FieldValue("id", "c"+strconv.Itoa(round)+"x"+strconv.Itoa(i)).
			FieldValue("user", user).FieldValue("amount", "1000").FieldValue("balance", strconv.Itoa(1000*(1+i/5000))).
			FieldValue("at", at).Build()
	})
}

// pipelined sends the n commands cmd gives, in pipelines of 1,000, each answered without error.
func pipelined(tb testing.TB, rdb rueidis.Client, n int, cmd func(i int) rueidis.Completed) {
	tb.Helper()
	cmds := make(rueidis.Commands, 0, 1000)
	flush := func() {
		for _, res := range rdb.DoMulti(context.Background(), cmds...) {
			require.NoError(tb, res.Error())
		}
		cmds = cmds[:0]
	}
	for i := range n {
		if cmds = append(cmds, cmd(i)); len(cmds) == cap(cmds) {
			flush()
		}
	}
	flush()
}

// fillJoins appends n queue.join events to the concert stream of the sale: one stream takes every
// event, as in make bench's joins row.
func fillJoins(tb testing.TB, s *sale, n, round int) {
	addJoins(tb, s.rdb, redis.NewKeys(s.prefix).Concert(s.concert.ID).Events(), n, round*n)
}

// BenchmarkWorkerWrite measures how many events a second one worker writes into Postgres: a backlog
// of 100,000 events is written, committed and acknowledged. wallets: point.charge events (the bulk of a
// sale) over the 64 wallet streams; one-stream: queue.join events all in one concert's stream (a
// popular concert's line, where a backlog piles up in one stream).
func BenchmarkWorkerWrite(b *testing.B) {
	fills := []struct {
		name string
		fill func(tb testing.TB, s *sale, n, round int)
	}{
		{"wallets", func(tb testing.TB, s *sale, n, round int) { fillCharges(tb, s.rdb, s.prefix, n, round) }},
		{"one-stream", fillJoins},
	}
	for _, f := range fills {
		b.Run(f.name, func(b *testing.B) {
			s := sharedSale(b)
			const perRound = 100_000
			var events int
			var spent, cpu, pgCPU time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f.fill(b, s, perRound, i)
				b.StartTimer()
				start, cpu0, pg0 := time.Now(), dbtest.ProcessCPU(b), dbtest.PostgresCPU(b, s.db.Pool())
				ctx, cancel := context.WithCancel(context.Background())
				w := s.worker(Config{}, prometheus.NewRegistry())
				done := make(chan struct{})
				go func() { defer close(done); w.Run(ctx) }()
				s.drain(5 * time.Minute)
				spent += time.Since(start)
				cpu += dbtest.ProcessCPU(b) - cpu0
				pgCPU += dbtest.PostgresCPU(b, s.db.Pool()) - pg0
				events += perRound
				b.StopTimer()
				cancel()
				<-done
				b.StartTimer()
			}
			b.ReportMetric(float64(events)/spent.Seconds(), "events/s")
			// CPU per event: the worker's process (its drain poll included) and Postgres' backends.
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(events), "worker-cpu-µs/event")
			b.ReportMetric(float64(pgCPU.Nanoseconds())/1e3/float64(events), "pg-cpu-µs/event")
		})
	}
}

// BenchmarkLagUnderPurchaseLoad measures the write-behind lag (age of the oldest event not yet
// acknowledged, sampled every 50 ms) while fans charge, hold and pay as fast as they can on the real
// purchase path, the worker running beside them on the same machine. It reports the lag's p50, p99
// and max, and the events/s the load produced.
func BenchmarkLagUnderPurchaseLoad(b *testing.B) {
	s := sharedSale(b)
	s.pace = -1
	run(b, s.worker(Config{}, prometheus.NewRegistry()))
	var lags []float64
	for b.Loop() {
		lags = append(lags, lagDuring(b, s, 10*time.Second, func(ctx context.Context) { s.load(ctx, 32) })...)
	}
	reportLag(b, s, lags)
}

// BenchmarkLagSaturated is the write-behind under make bench's saturation: the load as fast as the
// machine goes, on the real scripts, for 5 s each. joins: 64 clients join one concert's line, every
// call a new fan (make bench's joins row: one stream takes every event, about 19,000 a second on a
// quiet machine); purchase: 128 fans charge, hold, pay and cancel unpaced (every stream, every table).
// It reports the lag's p50, p99 and max over 50 ms samples, and the events/s the load produced.
func BenchmarkLagSaturated(b *testing.B) {
	loads := []struct {
		name string
		load func(s *sale, ctx context.Context)
	}{
		{"joins", func(s *sale, ctx context.Context) {
			var wg sync.WaitGroup
			var n atomic.Int64
			for range 64 {
				wg.Go(func() {
					for ctx.Err() == nil {
						user := "j" + strconv.FormatInt(n.Add(1), 36)
						if _, _, err := s.queue.Join(context.WithoutCancel(ctx), user, s.concert.ID); err != nil {
							s.failed(err)
						}
					}
				})
			}
			wg.Wait()
		}},
		{"purchase", func(s *sale, ctx context.Context) { s.pace = -1; s.load(ctx, 128) }},
	}
	for _, l := range loads {
		b.Run(l.name, func(b *testing.B) {
			s := sharedSale(b)
			run(b, s.worker(Config{}, prometheus.NewRegistry()))
			var lags []float64
			for b.Loop() {
				lags = append(lags, lagDuring(b, s, 5*time.Second, func(ctx context.Context) { l.load(s, ctx) })...)
			}
			s.mu.Lock()
			require.Empty(b, s.failures, "calls of the load failed")
			s.mu.Unlock()
			reportLag(b, s, lags)
		})
	}
}

// lagDuring runs load for d and samples the sale's write-behind lag every 50 ms meanwhile; then it
// waits until the worker has caught up.
func lagDuring(b *testing.B, s *sale, d time.Duration, load func(context.Context)) []float64 {
	ctx := context.Background()
	var lags []float64
	loadCtx, stop := context.WithTimeout(ctx, d)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			n, oldest, err := Backlog(ctx, s.rdb, s.prefix, "", []string{s.concert.ID})
			if err != nil {
				continue
			}
			lag := 0.0
			if n > 0 && !oldest.IsZero() {
				lag = max(0, time.Since(oldest).Seconds())
			}
			lags = append(lags, lag)
		}
	}()
	load(loadCtx)
	stop()
	<-sampled
	s.drain(time.Minute)
	return lags
}

func reportLag(b *testing.B, s *sale, lags []float64) {
	sort.Float64s(lags)
	pick := func(q float64) float64 { return lags[min(len(lags)-1, int(q*float64(len(lags))))] }
	b.ReportMetric(pick(0.5), "lag-p50-s")
	b.ReportMetric(pick(0.99), "lag-p99-s")
	b.ReportMetric(lags[len(lags)-1], "lag-max-s")
	var events int
	for _, src := range s.streams() {
		n, err := s.rdb.Do(context.Background(), s.rdb.B().XinfoStream().Key(src.Stream).Build()).AsMap()
		if err == nil {
			v := n["entries-added"]
			added, _ := v.AsInt64()
			events += int(added)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
