package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// saleSetup is a concert with a sale on a private Redis, its pre-queue filled with n entrants.
type saleSetup struct {
	rc    rueidis.Client
	store *redis.Store
	svc   *queue.Service
	clk   *dbtest.Clock
	c     ticketrush.Concert
	sales queue.Sales
}

// newSale is a concert with a sale whose pre-queue is open, on the Redis of rc under prefix, with the
// queue service's on-sale enabled and a clock of the test's.
func newSale(tb testing.TB, rc rueidis.Client, prefix string) saleSetup {
	tb.Helper()
	return newSaleOfShards(tb, rc, prefix, 1)
}

// newSaleOfShards is newSale with a line of shards line shards.
func newSaleOfShards(tb testing.TB, rc rueidis.Client, prefix string, shards int) saleSetup {
	tb.Helper()
	store := redis.NewStore(rc, prefix, prometheus.NewRegistry())
	t0 := time.Now().Truncate(time.Millisecond)
	clk := dbtest.NewClock(t0.Add(time.Second))
	svc := queue.NewService(store.Line, auth.NewQueueTokens([]byte(queueSecret)), clk.Now, quietLog(), prometheus.NewRegistry())
	seed, err := draw.NewSeed()
	require.NoError(tb, err)
	sale := &ticketrush.Sale{PrequeueOpensAt: t0, OpensAt: t0.Add(time.Minute), Seed: seed}
	c := ticketrush.Concert{ID: ticketrush.NewID(), Title: "T", Venue: "V", Sale: sale, Queue: ticketrush.DefaultQueueSettings(),
		Sections:  []ticketrush.Section{{Name: "R", Price: 1000, Seats: 10}},
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID(), StartsAt: t0.Add(24 * time.Hour)}}}
	c.Queue.LineShards = shards
	_, err = store.LoadConcert(context.Background(), c, clk.Now())
	require.NoError(tb, err)
	sales := func(id string) *ticketrush.Sale {
		if id == c.ID {
			return sale
		}
		return nil
	}
	svc.EnableOnSale(store.Draws, sales)
	return saleSetup{rc: rc, store: store, svc: svc, clk: clk, c: c, sales: sales}
}

// newSaleSetup is newSale on a private Redis with n entrants in its pre-queue: joined through the
// script, or (join false) written straight into the pre-queue set.
func newSaleSetup(b *testing.B, n int, join bool) saleSetup {
	b.Helper()
	rc := dbtest.Client(b, dbtest.PrivateRedis(b))
	s := newSale(b, rc, "tr")
	store, svc, clk, c, ctx := s.store, s.svc, s.clk, s.c, context.Background()
	if join {
		for i := range n {
			_, _, err := svc.Join(ctx, fmt.Sprintf("fan-%07d", i), c.ID)
			require.NoError(b, err)
		}
	} else {
		// A million joins through the script take minutes; the draw reads only the pre-queue set, so
		// fill it directly (its layout is the join's: member user, score entry time).
		key := store.Keys().Concert(c.ID).Prequeue()
		for start := 0; start < n; start += 10_000 {
			cmd := rc.B().Zadd().Key(key).ScoreMember()
			for i := start; i < min(start+10_000, n); i++ {
				cmd = cmd.ScoreMember(float64(clk.Now().UnixMilli()), fmt.Sprintf("fan-%07d", i))
			}
			require.NoError(b, rc.Do(ctx, cmd.Build()).Error())
		}
	}
	return s
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)*99/100]
}

// BenchmarkDrawMillion times the draw of 1,000,000 entrants (seal, read, key and sort in Go, place in
// batches) and, while it runs, the p99 of WAITING polls answered by the instance (GET /v1/queue's path:
// no Redis round trip) and of the view refresh that does go to Redis (queue_snapshot, every 200 ms per
// instance in production). Run with -benchtime 1x: one iteration is one whole draw.
//
//	go test -run '^$' -bench BenchmarkDrawMillion -benchtime 1x ./internal/queue
func BenchmarkDrawMillion(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		b.StopTimer()
		s := newSaleSetup(b, n, false)
		ctx := context.Background()
		s.clk.Set(s.sales(s.c.ID).OpensAt.Add(time.Second))
		concerts := func() []string { return []string{s.c.ID} }
		// A post-opening arrival, whose polls the view answers.
		late, _, err := s.svc.Join(ctx, "late-fan", s.c.ID)
		require.NoError(b, err)
		require.Equal(b, ticketrush.StatusWaiting, late.Status)
		timed := &timedDrawStore{DrawStore: s.store.Draws}
		drawer := s.svc.NewDrawer(timed, concerts, s.sales, "bench", prometheus.NewRegistry())

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var polls, refreshes []time.Duration
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				t := time.Now()
				if _, err := s.svc.Status(ctx, "late-fan", late.Token); err != nil {
					b.Error(err)
					return
				}
				polls = append(polls, time.Since(t))
				time.Sleep(100 * time.Microsecond) // a steady poll load, not a CPU hog on a 2-core machine
			}
		})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				t := time.Now()
				if err := s.svc.Refresh(ctx); err != nil {
					b.Error(err)
					return
				}
				refreshes = append(refreshes, time.Since(t))
			}
		})
		b.StartTimer()
		start := time.Now()
		require.NoError(b, drawer.Run(ctx, s.c.ID, *s.sales(s.c.ID)))
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		wg.Wait()
		st, err := s.store.Draws.DrawState(ctx, s.c.ID)
		require.NoError(b, err)
		require.True(b, st.Drawn())
		require.EqualValues(b, n, st.Entrants)
		b.ReportMetric(took.Seconds(), "draw-s")
		b.ReportMetric(float64(p99(polls).Microseconds()), "poll-p99-µs")
		b.ReportMetric(float64(p99(refreshes).Microseconds()), "refresh-p99-µs")
		b.ReportMetric(float64(len(polls)), "polls")
		b.ReportMetric(timed.read.Seconds(), "read-s")
		b.ReportMetric(timed.place.Seconds(), "place-s")
		b.StartTimer()
	}
}

// BenchmarkPrequeueBytes measures the Redis memory of the pre-queue per entrant, joined through the
// join script: the pre-queue set (MEMORY USAGE), and after the draw the place in line (the wait set)
// and the key in the keys string. The outbox entries are not counted: the write-behind trims them.
//
//	go test -run '^$' -bench BenchmarkPrequeueBytes -benchtime 1x ./internal/queue
func BenchmarkPrequeueBytes(b *testing.B) {
	const n = 100_000
	for range b.N {
		s := newSaleSetup(b, n, true)
		ctx := context.Background()
		k := s.store.Keys().Concert(s.c.ID)
		usage := func(key string) float64 {
			v, err := s.rc.Do(ctx, s.rc.B().MemoryUsage().Key(key).Samples(0).Build()).AsInt64()
			require.NoError(b, err)
			return float64(v) / n
		}
		b.ReportMetric(usage(k.Prequeue()), "prequeue-B/entrant")
		s.clk.Set(s.sales(s.c.ID).OpensAt.Add(time.Second))
		drawer := s.svc.NewDrawer(s.store.Draws, func() []string { return []string{s.c.ID} }, s.sales, "bench", prometheus.NewRegistry())
		require.NoError(b, drawer.Run(ctx, s.c.ID, *s.sales(s.c.ID)))
		b.ReportMetric(usage(k.Places())+usage(k.Drawn()), "line-B/entrant")
		b.ReportMetric(usage(k.DrawKeys()), "keys-B/entrant")
	}
}

// timedDrawStore adds up the time the drawer spends reading entrants and placing batches; the rest of a
// draw is computing keys and sorting in Go.
type timedDrawStore struct {
	queue.DrawStore
	read, place time.Duration
}

func (t *timedDrawStore) Entrants(ctx context.Context, concertID, cursor string, count int64) ([]string, string, error) {
	start := time.Now()
	defer func() { t.read += time.Since(start) }()
	return t.DrawStore.Entrants(ctx, concertID, cursor, count)
}

func (t *timedDrawStore) PlaceDraw(ctx context.Context, concertID string, from int64, batch []draw.Entrant, digest string, now time.Time) (int64, bool, error) {
	start := time.Now()
	defer func() { t.place += time.Since(start) }()
	return t.DrawStore.PlaceDraw(ctx, concertID, from, batch, digest, now)
}
