package redis

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// BenchmarkTickRound is Redis's time for one admission round (queue_tick) that admits 1, 20 or 200
// fans: what a round costs whatever it admits, and what each fan adds. 32 concerts tick at once on a
// private redis-server, each round 100 ms after the last with a budget of exactly that many fans, so
// that Redis runs nothing but rounds; INFO commandstats gives redis-us/round and redis-us/fan, and with
// -v the round's commands and the Lua around them. make bench's storm ticks about 20 fans a round.
// `go test -run x -bench TickRound -benchtime 640x ./internal/redis`
func BenchmarkTickRound(b *testing.B) {
	c := dbtest.Client(b, dbtest.PrivateRedis(b))
	ctx := context.Background()
	for _, per := range []int{1, 20, 200} {
		b.Run("fans="+strconv.Itoa(per), func(b *testing.B) {
			const concerts = 32
			rounds := (b.N + concerts - 1) / concerts
			s := NewStore(c, dbtest.Name("t"), prometheus.NewRegistry())
			var wg sync.WaitGroup
			for k := range concerts {
				wg.Go(func() {
					id := "c" + strconv.Itoa(k)
					con := concert(id, func(q *ticketrush.QueueSettings) {
						q.AdmitPerSecond, q.ActiveCapacity, q.ActiveTTL = per*10, 100_000_000, time.Hour
					})
					_, err := s.LoadConcert(ctx, con, t0)
					require.NoError(b, err)
					for i := range rounds*per + per*10 { // the budget starts full: the first tick takes per*10
						_, err := s.Join(ctx, id, "fan-"+strconv.Itoa(i), t0)
						require.NoError(b, err)
					}
					_, err = s.Tick(ctx, id, t0, per*10) // spends the first budget
					require.NoError(b, err)
				})
			}
			wg.Wait()
			require.NoError(b, c.Do(ctx, c.B().ConfigResetstat().Build()).Error())
			b.ResetTimer()
			for k := range concerts {
				wg.Go(func() {
					id := "c" + strconv.Itoa(k)
					for j := 1; j <= rounds; j++ {
						r, err := s.Tick(ctx, id, t0.Add(time.Duration(j)*100*time.Millisecond), 1000)
						require.NoError(b, err)
						require.Equal(b, per, r.Admitted, "round %d of %s", j, id)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			us := usecPerEvalsha(b, c)
			b.ReportMetric(us, "redis-us/round")
			b.ReportMetric(us/float64(per), "redis-us/fan")
			logInner(b, c, us)
		})
	}
}
