package writebehind

import (
	"context"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/redis"
)

// fillCharges appends n point.charge events to the wallet streams under prefix, as points_charge.lua
// writes them, spread over users of every shard.
func fillCharges(tb testing.TB, rdb rueidis.Client, prefix string, n, round int) {
	tb.Helper()
	keys := redis.NewKeys(prefix)
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	cmds := make(rueidis.Commands, 0, 1000)
	flush := func() {
		for _, res := range rdb.DoMulti(context.Background(), cmds...) {
			require.NoError(tb, res.Error())
		}
		cmds = cmds[:0]
	}
	for i := range n {
		user := "user-" + strconv.Itoa(i%5000)
		cmds = append(cmds, rdb.B().Xadd().Key(keys.Wallet(user).Events()).Id("*").FieldValue().
			FieldValue("type", "point.charge").FieldValue("id", "c"+strconv.Itoa(round)+"x"+strconv.Itoa(i)).
			FieldValue("user", user).FieldValue("amount", "1000").FieldValue("balance", strconv.Itoa(1000*(1+i/5000))).
			FieldValue("at", at).Build())
		if len(cmds) == cap(cmds) {
			flush()
		}
	}
	flush()
}

// BenchmarkWorkerWrite measures how many events a second one worker writes into Postgres: a backlog
// of ledger events (point.charge, the bulk of a sale) is written, committed and acknowledged.
func BenchmarkWorkerWrite(b *testing.B) {
	s := sharedSale(b)
	const perRound = 100_000
	var events int
	var spent time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fillCharges(b, s.rdb, s.prefix, perRound, i)
		b.StartTimer()
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		w := s.worker(Config{}, prometheus.NewRegistry())
		done := make(chan struct{})
		go func() { defer close(done); w.Run(ctx) }()
		s.drain(5 * time.Minute)
		spent += time.Since(start)
		events += perRound
		b.StopTimer()
		cancel()
		<-done
		b.StartTimer()
	}
	b.ReportMetric(float64(events)/spent.Seconds(), "events/s")
}

// BenchmarkLagUnderPurchaseLoad measures the write-behind lag (age of the oldest event not yet
// acknowledged, sampled every 50 ms) while fans charge, hold and pay as fast as they can on the real
// purchase path, the worker running beside them on the same machine. It reports the lag's p50, p99
// and max, and the events/s the load produced.
func BenchmarkLagUnderPurchaseLoad(b *testing.B) {
	s := sharedSale(b)
	s.pace = -1
	run(b, s.worker(Config{}, prometheus.NewRegistry()))
	ctx := context.Background()
	var lags []float64
	for b.Loop() {
		load, stop := context.WithTimeout(ctx, 10*time.Second)
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-load.Done():
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
		s.load(load, 32)
		stop()
		<-sampled
		s.drain(time.Minute)
	}
	sort.Float64s(lags)
	pick := func(q float64) float64 { return lags[min(len(lags)-1, int(q*float64(len(lags))))] }
	b.ReportMetric(pick(0.5), "lag-p50-s")
	b.ReportMetric(pick(0.99), "lag-p99-s")
	b.ReportMetric(lags[len(lags)-1], "lag-max-s")
	var events int
	for _, stream := range s.streams() {
		n, err := s.rdb.Do(ctx, s.rdb.B().XinfoStream().Key(stream).Build()).AsMap()
		if err == nil {
			v := n["entries-added"]
			added, _ := v.AsInt64()
			events += int(added)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
