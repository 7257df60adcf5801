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
// Redis Cluster (`make cluster`): a storm of 3,000 fans joining one concert of 3 schedules whose line is
// spread as the service spreads it (lineShards 8 per master), into a paused line (they arrive faster than
// it is admitted, as at an opening), admitted by the tick, then holding and
// cancelling a seat each, from 32 goroutines. It reports each master's share of the Redis time the
// storm's scripts cost (INFO commandstats usec of EVALSHA and EVAL, which include the commands they run;
// the few plain reads the store sends are left out, and a script's inner commands are not counted twice)
// and the busiest share, over the whole storm and for the joins (with the ticks) and the holds (with the
// cancels) apart. Created as the service creates a concert on a cluster, its seats too are spread, a slot
// per schedule, placed on the masters (placement.go). It fails when the busiest master carries more
// than 45% of the storm.
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
		shards, err := s.DefaultLineShards(ctx)
		require.NoError(b, err)
		con := concert(ticketrush.NewID(), func(q *ticketrush.QueueSettings) {
			q.HoldTTL, q.AdmitPerSecond, q.ActiveCapacity, q.MaxHoldsPerUser = time.Hour, 1_000_000, 1_000_000, 1
			q.LineShards = shards
			q.Paused = true // fans arrive faster than the line is admitted, as at an opening
		})
		con.Sections = []ticketrush.Section{{Name: "R", Price: 10, Seats: fans / schedules}}
		con.Schedules = nil
		for i := range schedules {
			con.Schedules = append(con.Schedules, ticketrush.Schedule{ID: ticketrush.NewID(), StartsAt: t0.Add(time.Duration(i) * time.Hour)})
		}
		_, err = s.LoadConcert(ctx, con, t0)
		require.NoError(b, err)
		scripts := func() []float64 { // each master's script usec so far
			out := make([]float64, len(masters))
			for i, m := range masters {
				for name, st := range commandStats(b, m) {
					if strings.HasPrefix(name, "eval") {
						out[i] += st.usec
					}
				}
			}
			return out
		}
		start := scripts()

		claims := make([]ticketrush.QueueClaims, fans)
		storm(b, workers, fans, func(i int) error {
			r, err := s.Line.Join(ctx, con.ID, fmt.Sprintf("fan-%04d", i), t0)
			claims[i] = ticketrush.QueueClaims{UserID: fmt.Sprintf("fan-%04d", i), ConcertID: con.ID, Seq: r.Seq}
			return err
		})
		joined := scripts()
		q := con.Queue
		q.Paused = false
		require.NoError(b, s.Configure(ctx, con.ID, q, t0))
		for admitted := 0; admitted < fans; {
			r, err := s.Line.Tick(ctx, con.ID, t0, 1000)
			require.NoError(b, err)
			if r.Admitted == 0 {
				break // every join found a free slot at once
			}
			admitted += r.Admitted
		}
		storm(b, workers, fans, func(i int) error {
			seat := fmt.Sprintf("R-%d", 1+i/schedules)
			r, _, err := s.Seats.Hold(ctx, claims[i], con.Schedules[i%schedules].ID, seat, 10, t0)
			if err != nil {
				return err
			}
			_, err = s.Seats.Cancel(ctx, claims[i].UserID, r.ID, t0)
			return err
		})

		end := scripts()
		share := func(from, to []float64) (busiest, total float64) {
			for i := range from {
				total += to[i] - from[i]
			}
			require.Positive(b, total)
			for i := range from {
				busiest = max(busiest, 100*(to[i]-from[i])/total)
			}
			return busiest, total
		}
		for i := range masters {
			b.ReportMetric(100*(end[i]-start[i])/max(1, sumOf(end)-sumOf(start)), fmt.Sprintf("master%d-%%", i))
		}
		busiest, total := share(start, end)
		b.ReportMetric(busiest, "busiest-master-%")
		// The bar of one sale across the cluster (docs/scaleout.md): no master carries more than 45%.
		// On one slot it carried 98-99%; with the seat slots where their tags fell, 47-67%.
		require.LessOrEqual(b, busiest, 45.0, "the busiest master's share of the storm's Redis time")
		b.ReportMetric(total/float64(fans), "redis-us/fan")
		joins, _ := share(start, joined)
		holds, _ := share(joined, end)
		b.ReportMetric(joins, "joins-busiest-%")
		b.ReportMetric(holds, "holds-busiest-%")
	}
}

func sumOf(v []float64) (s float64) {
	for _, x := range v {
		s += x
	}
	return s
}

// storm runs do(0..n-1) from workers goroutines and fails the benchmark if any call failed.
func storm(b testing.TB, workers, n int, do func(i int) error) {
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
