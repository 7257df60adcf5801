package redis

import (
	"context"
	"fmt"
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
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// BenchmarkOneConcertSpreadOnCluster measures how one on-sale spreads over the masters of the local
// Redis Cluster (`make cluster`): a storm of 3,000 fans joining one concert of 3 schedules, admitted by
// the tick, then holding and cancelling a seat each, from 32 goroutines. It reports each master's share
// of the Redis CPU the storm cost (INFO commandstats usec, reset before it) and the busiest share: the
// figure that spreading a concert's line and seats over slots brings down. The concert is created as
// the service creates one on a cluster: its line over 8 shards per master (DefaultLineShards), and so
// its seats over a slot per schedule.
//
//	go test -run '^$' -bench OneConcertSpreadOnCluster -benchtime 1x ./internal/redis/
func BenchmarkOneConcertSpreadOnCluster(b *testing.B) {
	const fans, schedules, workers = 3000, 3, 32
	c, prefix := dbtest.Cluster(b)
	ctx := context.Background()
	masters := dbtest.Masters(c)
	require.Len(b, masters, 3, "the local cluster has 3 masters")
	for range b.N {
		s := NewStore(c, prefix, prometheus.NewRegistry())
		shards, err := s.DefaultLineShards(ctx) // 8 per master: the line, and so the seats, spread
		require.NoError(b, err)
		con := concert(ticketrush.NewID(), func(q *ticketrush.QueueSettings) {
			q.HoldTTL, q.AdmitPerSecond, q.ActiveCapacity, q.MaxHoldsPerUser = time.Hour, 1_000_000, 1_000_000, 1
			q.LineShards = shards
		})
		con.Sections = []ticketrush.Section{{Name: "R", Price: 10, Seats: fans / schedules}}
		con.Schedules = nil
		for i := range schedules {
			con.Schedules = append(con.Schedules, ticketrush.Schedule{ID: ticketrush.NewID(), StartsAt: t0.Add(time.Duration(i) * time.Hour)})
		}
		_, err = s.LoadConcert(ctx, con, t0)
		require.NoError(b, err)
		for _, m := range masters {
			require.NoError(b, m.Do(ctx, m.B().ConfigResetstat().Build()).Error())
		}

		claims := make([]ticketrush.QueueClaims, fans)
		storm(b, workers, fans, func(i int) error {
			r, err := s.Join(ctx, con.ID, fmt.Sprintf("fan-%04d", i), t0)
			claims[i] = ticketrush.QueueClaims{UserID: fmt.Sprintf("fan-%04d", i), ConcertID: con.ID, Seq: r.Seq}
			return err
		})
		for admitted := 0; admitted < fans; {
			r, err := s.Tick(ctx, con.ID, t0, 1000)
			require.NoError(b, err)
			if r.Admitted == 0 {
				break // every join found a free slot at once
			}
			admitted += r.Admitted
		}
		storm(b, workers, fans, func(i int) error {
			seat := fmt.Sprintf("R-%d", 1+i/schedules)
			r, _, err := s.Hold(ctx, claims[i], con.Schedules[i%schedules].ID, seat, 10, t0)
			if err != nil {
				return err
			}
			_, err = s.Cancel(ctx, claims[i].UserID, r.ID, t0)
			return err
		})

		var total float64
		usec := make([]float64, len(masters))
		for i, m := range masters {
			for _, st := range commandStats(b, m) {
				usec[i] += st.usec
			}
			total += usec[i]
		}
		require.Positive(b, total)
		busiest := 0.0
		for i, u := range usec {
			b.ReportMetric(100*u/total, fmt.Sprintf("master%d-%%", i))
			busiest = max(busiest, 100*u/total)
		}
		b.ReportMetric(busiest, "busiest-master-%")
		b.ReportMetric(total/float64(fans), "redis-us/fan")
	}
}

// storm runs do(0..n-1) from workers goroutines and fails the benchmark if any call failed.
func storm(b *testing.B, workers, n int, do func(i int) error) {
	var next, failed atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					failed.Add(1)
					once.Do(func() { first = err })
				}
			}
		})
	}
	wg.Wait()
	require.Zero(b, failed.Load(), "the first failure: %v", first)
}

type cmdStat struct{ calls, usec float64 }

// commandStats reads INFO commandstats of one node: calls and usec per command, without the
// measurement's own INFO and CONFIG RESETSTAT.
func commandStats(b testing.TB, c rueidis.Client) map[string]cmdStat {
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(b, err)
	out := map[string]cmdStat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" || name == "cmdstat_config|resetstat" {
			continue
		}
		var st cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				st.calls = f
			case "usec":
				st.usec = f
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out
}
