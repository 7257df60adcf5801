package queue_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// countingStore counts the store calls of the waiting room: snapshot refreshes and exact status reads.
type countingStore struct {
	*redis.Line
	snapshots, statuses atomic.Int64
}

func (s *countingStore) Snapshot(ctx context.Context, concertID string, afterLeave uint64, limit int, now time.Time) (ticketrush.QueueSnapshot, error) {
	s.snapshots.Add(1)
	return s.Line.Snapshot(ctx, concertID, afterLeave, limit, now)
}

func (s *countingStore) TokenStatus(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	s.statuses.Add(1)
	return s.Line.TokenStatus(ctx, c, now)
}

// commandStats sums the calls of INFO commandstats, leaving out INFO itself. Commands run inside Lua
// scripts count too (Redis 7 counts them under their own names), so a script call costs 1 + its
// commands here.
func commandStats(t *testing.T, c rueidis.Client) (total int64, byCommand map[string]int64) {
	t.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	byCommand = map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		require.NoError(t, err, line)
		byCommand[strings.TrimPrefix(name, "cmdstat_")] = n
		total += n
	}
	return total, byCommand
}

// TestPollCostInRedisCommands counts the Redis commands that 10,000 polls of WAITING tokens cost, on a
// redis-server of the test's own so that nothing else counts. The snapshot refresher runs at the
// production interval, and the test makes sure it runs at least once per 500 polls: far more often,
// per poll, than at a sale, so the figure is an upper bound of what polls cost. The liveness flush
// (abandonAfterSeconds is on: every poll marks its fan alive) runs at its production interval too,
// and its writes count.
// No cluster counterpart: a cluster runs the same scripts and reads, one per poll on the concert's
// master, and the shared cluster's counters count every other test too.
func TestPollCostInRedisCommands(t *testing.T) {
	const (
		fans      = 1000
		polls     = 10_000
		perWindow = 500 // polls between two refreshes at most
	)
	c := dbtest.Client(t, dbtest.PrivateRedis(t))
	full := redis.NewStore(c, "tr", prometheus.NewRegistry())
	store := &countingStore{Line: full.Line}
	in := newInstanceOver(t, full, store)
	ctx := context.Background()
	concert := loadConcert(t, in.store, settings(func(q *ticketrush.QueueSettings) { q.Paused = true }))

	cfg, err := config.Load(func(k string) string {
		return map[string]string{"JWT_SECRET": queueSecret, "QUEUE_TOKEN_SECRET": queueSecret, "ADMIN_TOKEN": queueSecret}[k]
	})
	require.NoError(t, err)
	loops, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { in.svc.RunRefresher(loops, cfg.SnapshotRefresh) })
	wg.Go(func() { in.svc.RunLiveness(loops, cfg.LivenessFlush) })
	defer func() { stop(); wg.Wait() }()

	users := make([]string, fans)
	tokens := make([]string, fans)
	for i := range fans {
		users[i] = fmt.Sprintf("fan-%04d", i)
		tk, created, err := in.svc.Join(ctx, users[i], concert)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, ticketrush.StatusWaiting, tk.Status)
		tokens[i] = tk.Token
	}

	viewPolls := func() float64 {
		return counter(t, in.reg, "ticketrush_queue_polls_total", map[string]string{"source": "view"})
	}
	refreshes := store.snapshots.Load
	refreshesBefore, statusBefore, viewBefore := refreshes(), store.statuses.Load(), viewPolls()
	before, beforeBy := commandStats(t, c)
	start := time.Now()
	for done := 0; done < polls; {
		for range perWindow {
			i := done % fans
			tk, err := in.svc.Status(ctx, users[i], tokens[i])
			require.NoError(t, err)
			require.Equal(t, ticketrush.StatusWaiting, tk.Status)
			require.EqualValues(t, i+1, tk.Position)
			done++
		}
		// Wait for the refresher to run once more before the next window.
		r := refreshes()
		require.Eventually(t, func() bool { return refreshes() > r }, 10*time.Second, 5*time.Millisecond)
	}
	elapsed := time.Since(start)
	after, afterBy := commandStats(t, c)

	commands := after - before
	var roundTrips int64 // what the client sent: script calls and anything else outside scripts
	for _, name := range []string{"evalsha", "evalsha_ro", "eval", "eval_ro", "script|load", "ping"} {
		roundTrips += afterBy[name] - beforeBy[name]
	}
	n := refreshes() - refreshesBefore
	perPoll := float64(commands) / polls
	t.Logf("%d polls of WAITING tokens in %v with %d snapshot refreshes (every %v): %d Redis commands "+
		"(%d sent by the client: snapshot scripts and liveness flushes; the rest run inside the scripts) = %.4f commands per poll, "+
		"%.4f round trips per poll", polls, elapsed.Round(time.Millisecond), n, cfg.SnapshotRefresh, commands,
		roundTrips, perPoll, float64(roundTrips)/polls)
	for _, name := range slices.Sorted(maps.Keys(afterBy)) {
		if d := afterBy[name] - beforeBy[name]; d > 0 {
			t.Logf("  %-14s %d", name, d)
		}
	}

	assert.LessOrEqual(t, perPoll, 0.05, "a poll of a WAITING token must not cost a Redis command")
	assert.Zero(t, store.statuses.Load()-statusBefore, "no poll fell back to queue_status")
	assert.EqualValues(t, polls, viewPolls()-viewBefore, "every poll was answered by the view")
	assert.GreaterOrEqual(t, n, int64(polls/perWindow), "the refresher ran throughout")
	assert.Positive(t, afterBy["setrange"]-beforeBy["setrange"], "the liveness flush (queue_seen) ran and is counted")
}

// heldSnapshots holds every snapshot read until release is closed, and counts the joins that reached
// Redis, so that a test can have every join of a burst wait on a cold view at once.
type heldSnapshots struct {
	countingStore
	joined  atomic.Int64
	release chan struct{}
}

func (s *heldSnapshots) JoinWith(ctx context.Context, concertID, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error) {
	defer s.joined.Add(1)
	return s.Line.JoinWith(ctx, concertID, userID, pass, now)
}

func (s *heldSnapshots) Snapshot(ctx context.Context, concertID string, afterLeave uint64, limit int, now time.Time) (ticketrush.QueueSnapshot, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ticketrush.QueueSnapshot{}, ctx.Err()
	}
	return s.countingStore.Snapshot(ctx, concertID, afterLeave, limit, now)
}

// TestABurstOnAColdViewReadsOneSnapshot sends a burst of joins to an instance that has no view of the
// concert yet (the first fans of a sale at a fresh instance): the view is read once for all of them, not
// once by each, which at an opening put hundreds of snapshot reads on Redis at once and past the
// requests' deadline.
func TestABurstOnAColdViewReadsOneSnapshot(t *testing.T) {
	const fans = 50
	c, _ := dbtest.Redis(t)
	full := redis.NewStore(c, "tr", prometheus.NewRegistry())
	store := &heldSnapshots{countingStore: countingStore{Line: full.Line}, release: make(chan struct{})}
	in := newInstanceOver(t, full, store)
	concert := loadConcert(t, in.store, settings(func(q *ticketrush.QueueSettings) { q.Paused = true }))

	var wg sync.WaitGroup
	errs := make(chan error, fans)
	for i := range fans {
		wg.Go(func() {
			tk, _, err := in.svc.Join(context.Background(), fmt.Sprintf("fan-%02d", i), concert)
			if err == nil && tk.Status != ticketrush.StatusWaiting {
				err = fmt.Errorf("fan %d: %s", i, tk.Status)
			}
			errs <- err
		})
	}
	require.Eventually(t, func() bool { return store.joined.Load() == fans }, 10*time.Second, time.Millisecond)
	close(store.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, store.snapshots.Load(), "snapshot reads for %d joins on a cold view", fans)
}
