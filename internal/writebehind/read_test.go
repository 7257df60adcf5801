package writebehind

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// addJoins appends n queue.join events to stream, as queue_join.lua writes them, with seqs after from,
// in pipelines of 1,000.
func addJoins(tb testing.TB, rdb rueidis.Client, stream string, n, from int) {
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	pipelined(tb, rdb, n, func(i int) rueidis.Completed {
		seq := strconv.Itoa(from + i + 1)
		return rdb.B().Xadd().Key(stream).Id("*").FieldValue().
			FieldValue("type", "queue.join").FieldValue("user", "u"+seq).FieldValue("seq", seq).FieldValue("at", at).Build()
	})
}

// A stream that fills its reads is read in growing rounds, up to MaxReadCount, and back down once
// its backlog is gone; the growth of every stream together is bounded per round.
func TestReadCountFollowsTheBacklog(t *testing.T) {
	tests := []struct {
		name      string
		concerts  int // streams with a backlog, besides the wallet shards'
		backlog   int // events in each of them
		readCount int
		maxRead   int
		want      []int // entries each round reads, over every stream
	}{
		{"one hot stream", 1, 2000, 100, 400, []int{100, 200, 400, 400, 400, 400, 100, 0}},
		{"too many hot streams to grow them all", 20, 1000, 10, 100,
			// round 2: every stream doubles (+10 each, 200 of the 400 the round may grow); round 3: 20 streams
			// would grow by 30 each, the budget (4 * 100) lets 13 grow by 30 and one by 10.
			[]int{200, 400, 600}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, prefix := dbtest.Redis(t)
			keys := redis.NewKeys(prefix)
			var concerts []string
			for i := range tt.concerts {
				id := "hot" + strconv.Itoa(i)
				concerts = append(concerts, id)
				addJoins(t, rdb, keys.Concert(id).Events(), tt.backlog, 0)
			}
			w := New(rdb, nil, prefix, func() []string { return concerts }, Config{ReadCount: tt.readCount, MaxReadCount: tt.maxRead},
				time.Now, dbtest.Log(t), prometheus.NewRegistry())
			ctx := context.Background()
			w.syncStreams(ctx)
			var got []int
			for range tt.want {
				got = append(got, len(w.read(ctx)))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// pendingEntries is how many entries of stream the group has delivered and not acknowledged (-1: unknown).
func pendingEntries(rdb rueidis.Client, stream string) int64 {
	parts, err := rdb.Do(context.Background(), rdb.B().Xpending().Key(stream).Group(DefaultConfig().Group).Build()).ToArray()
	if err != nil || len(parts) == 0 {
		return -1
	}
	n, _ := parts[0].AsInt64()
	return n
}

// gate is a record that holds every write until the test opens it, and records what it was given.
type gate struct {
	open   chan struct{}
	mu     sync.Mutex
	calls  int
	events int
}

func (g *gate) WriteRecords(ctx context.Context, b ticketrush.RecordBatch) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	g.events += b.Len()
	return nil
}

// The worker reads on while a batch is being written: with one writer held in Postgres, the next
// batch is read (delivered to the worker, pending) before the first is committed.
func TestWorkerReadsWhileWriting(t *testing.T) {
	rdb, prefix := dbtest.Redis(t)
	ctx := context.Background()
	require.NoError(t, redis.NewStateMarker(rdb, prefix).Write(ctx, "first-load", time.Now()))
	stream := redis.NewKeys(prefix).Concert("line").Events()
	addJoins(t, rdb, stream, 30, 0)
	g := &gate{open: make(chan struct{})}
	w := New(rdb, g, prefix, func() []string { return []string{"line"} },
		Config{Writers: 1, BatchSize: 10, ReadCount: 10, MaxReadCount: 10}, time.Now, dbtest.Log(t), prometheus.NewRegistry())
	run(t, w)
	pending := func() int64 { return pendingEntries(rdb, stream) }
	eventually(t, 10*time.Second, "a second batch is read while the first is being written", func() bool { return pending() >= 20 })
	g.mu.Lock()
	assert.Zero(t, g.calls, "nothing committed yet")
	g.mu.Unlock()
	close(g.open)
	eventually(t, 10*time.Second, "every event is written and acknowledged", func() bool { return pending() == 0 })
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, 30, g.events)
	assert.Equal(t, 3, g.calls)
}

// Each stream's events go to one writer, in the order they were read, so that they are committed in
// that order.
func TestEachStreamHasOneWriter(t *testing.T) {
	w := New(nil, nil, "tr", func() []string { return nil }, Config{Writers: 3, BatchSize: 4}, time.Now, dbtest.Log(t), prometheus.NewRegistry())
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		w.addSource(&source{EventSource: redis.EventSource{Stream: "tr:{c:" + id + "}:events", ConcertID: id}})
	}
	var entries []entry
	for i := range 40 {
		entries = append(entries, entry{src: w.order[i%len(w.order)], id: "1-" + strconv.Itoa(i),
			fields: map[string]string{"type": "queue.join", "user": "u", "seq": "1", "at": "1"}})
	}
	queues := make([]chan batch, 3)
	for i := range queues {
		queues[i] = make(chan batch, len(entries))
	}
	require.Equal(t, len(entries), w.process(context.Background(), entries, queues))
	writerOf := map[string]int{}
	last := map[string]int{}
	total := 0
	for i, q := range queues {
		close(q)
		for b := range q {
			assert.LessOrEqual(t, len(b.entries), 4)
			assert.Equal(t, len(b.entries), b.rb.Len(), "the batch's record is its entries'")
			for _, e := range b.entries {
				total++
				if wi, ok := writerOf[e.src.Stream]; ok {
					assert.Equal(t, wi, i, "every event of %s with one writer", e.src.Stream)
				}
				writerOf[e.src.Stream] = i
				seq, _ := strconv.Atoi(e.id[2:])
				assert.Greater(t, seq, last[e.src.Stream]-1, "%s in the order read", e.src.Stream)
				last[e.src.Stream] = seq + 1
			}
		}
	}
	assert.Equal(t, len(entries), total)
	assert.Len(t, map[int]bool{writerOf["tr:{c:a}:events"]: true, writerOf["tr:{c:b}:events"]: true, writerOf["tr:{c:c}:events"]: true}, 3,
		"streams spread over the writers")
}

// A concert created while the worker runs has its stream read from the next round on, not once a
// periodic refresh comes round: a sale's first events are its busiest.
func TestNewConcertIsReadAtTheNextRound(t *testing.T) {
	rdb, prefix := dbtest.Redis(t)
	concerts := []string{"old"}
	frozen := time.Now()
	w := New(rdb, nil, prefix, func() []string { return concerts }, Config{}, func() time.Time { return frozen },
		dbtest.Log(t), prometheus.NewRegistry())
	ctx := context.Background()
	w.syncStreams(ctx)
	fresh := redis.NewKeys(prefix).Concert("new").Events()
	addJoins(t, rdb, fresh, 3, 0)
	concerts = append(concerts, "new")
	w.syncStreams(ctx) // no time has passed
	got := 0
	for _, e := range w.read(ctx) {
		if e.src.Stream == fresh {
			got++
		}
	}
	assert.Equal(t, 3, got, "the new concert's events in the first read after it appeared")
}

// While Postgres holds a worker's writes, the entries it has read wait with its writers, some for far
// longer than ClaimIdle: neither its own claims nor another worker's take them (keepFlying keeps them
// claimed), and once Postgres answers every event is written once, by the worker that read it. In
// "one read", the reader holds two batches it has not sent yet while it waits for the writer.
func TestSlowWritesAreNotClaimedAgain(t *testing.T) {
	t.Run("reads of a batch", func(t *testing.T) { slowWritesNotClaimed(t, 30, 10) })
	t.Run("one read", func(t *testing.T) { slowWritesNotClaimed(t, 50, 50) })
}

func slowWritesNotClaimed(t *testing.T, events, readCount int) {
	rdb, prefix := dbtest.Redis(t)
	ctx := context.Background()
	require.NoError(t, redis.NewStateMarker(rdb, prefix).Write(ctx, "first-load", time.Now()))
	stream := redis.NewKeys(prefix).Concert("line").Events()
	addJoins(t, rdb, stream, events, 0)
	lines := func() []string { return []string{"line"} }
	cfg := Config{Writers: 1, BatchSize: 10, ReadCount: readCount, MaxReadCount: readCount, ClaimIdle: 2 * time.Second,
		ClaimEvery: 50 * time.Millisecond}
	pending := func() int64 { return pendingEntries(rdb, stream) }

	slow := &gate{open: make(chan struct{})}
	cfg.Consumer = "slow"
	run(t, New(rdb, slow, prefix, lines, cfg, time.Now, dbtest.Log(t), prometheus.NewRegistry()))
	eventually(t, 10*time.Second, "the slow worker has read every event", func() bool { return pending() == int64(events) })
	other := &gate{open: make(chan struct{})}
	close(other.open)
	cfg.Consumer = "other"
	run(t, New(rdb, other, prefix, lines, cfg, time.Now, dbtest.Log(t), prometheus.NewRegistry()))

	// Postgres stays slow for three ClaimIdles: time passing is what is under test.
	until := time.Now().Add(3 * cfg.ClaimIdle)
	eventually(t, time.Minute, "three ClaimIdles pass", func() bool { return time.Now().After(until) })
	close(slow.open)
	eventually(t, 10*time.Second, "every event is written and acknowledged", func() bool { return pending() == 0 })
	slow.mu.Lock()
	assert.Equal(t, events, slow.events, "each event written once by the worker that read it")
	slow.mu.Unlock()
	other.mu.Lock()
	assert.Zero(t, other.events, "the other worker claimed none")
	other.mu.Unlock()
}

// With ReplicaWait (a Redis Cluster), the entries of a read are written only once a replica of their
// master confirms them: on the cluster, from the read; on a single Redis, where no replica ever confirms,
// not from the read (they stay pending, for a claim after ClaimIdle). Runs on both in make test. The wait
// is 2 s, a bound a loaded machine's replica meets (50 ms did not, once in make test's cluster pass): a
// replica that confirms ends it at once.
func TestEntriesWaitForAReplica(t *testing.T) {
	rdb, prefix := dbtest.Redis(t)
	ctx := context.Background()
	stream := redis.NewKeys(prefix).Concert("line").Events()
	addJoins(t, rdb, stream, 5, 0)
	w := New(rdb, nil, prefix, func() []string { return []string{"line"} }, Config{ReplicaWait: 2 * time.Second},
		time.Now, dbtest.Log(t), prometheus.NewRegistry())
	w.syncStreams(ctx)
	got := w.read(ctx)
	if redis.IsCluster(rdb) {
		assert.Len(t, got, 5, "a replica confirmed them: written from the read")
		return
	}
	assert.Empty(t, got, "no replica confirmed them: not written from the read")
	assert.Equal(t, int64(5), pendingEntries(rdb, stream), "they stay pending, for a claim")
}
