package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// BenchmarkJoinPow prices the join script on the real Redis for a new fan each time, the concert asking
// for no proof, and asking for 20 bits with a checked proof whose single use the script records (the
// Go-side check of the proof is auth's BenchmarkChallengeCheck; the difficulty changes neither). Run
// with -cpu 1 and 8 parallel callers:
//
//	go test -run '^$' -bench BenchmarkJoinPow -count 5 ./internal/redis/
func BenchmarkJoinPow(b *testing.B) {
	c, prefix := dbtest.Redis(b)
	s := NewStore(c, prefix, prometheus.NewRegistry())
	s.LimitUsers(UserLimit{Rate: 20, Burst: 40})
	ctx := context.Background()
	for _, bits := range []int{0, 20} {
		b.Run("joinPowBits="+strconv.Itoa(bits), func(b *testing.B) {
			cc := concert(ticketrush.NewID(), func(q *ticketrush.QueueSettings) { q.JoinPowBits = bits })
			if _, err := s.LoadConcert(ctx, cc, time.Now()); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(4) // 8 callers on 2 cores: what an instance's handlers do
			b.RunParallel(func(pb *testing.PB) {
				prefix := ticketrush.NewID()
				i := 0
				for pb.Next() {
					i++
					pass := ticketrush.JoinPass{}
					if bits > 0 {
						pass = ticketrush.JoinPass{PowID: prefix + strconv.Itoa(i), PowBits: bits, PowExpires: time.Now().Add(time.Minute)}
					}
					if _, err := s.Line.JoinWith(ctx, cc.ID, "fan-"+prefix+strconv.Itoa(i), pass, time.Now()); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
