// Package writebehind makes Postgres the durable record of what the hot path does in Redis. Every Lua
// script appends its change to a stream in its own hash slot (the outbox); the worker reads every stream
// in one consumer group, writes batches to Postgres with idempotent inserts, commits, then acknowledges.
// The tools that prove and repair the agreement of the two, reconcile and restore, are internal/repair.
package writebehind

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Recorder is the durable record the worker writes to.
type Recorder interface {
	WriteRecords(ctx context.Context, b ticketrush.RecordBatch) error
}

// Worker is one write-behind consumer. Any number may run at once, in one process or many.
type Worker struct {
	rdb      rueidis.Client
	record   Recorder
	keys     redis.Keys
	state    Marker
	concerts func() []string
	cfg      Config
	now      func() time.Time
	log      *slog.Logger
	metrics  *metrics
	warnings *warnings // rate-limited in the log, every one counted

	sources  map[string]*source // by stream
	grouped  map[string]bool    // streams whose group this worker has made sure of
	order    []*source
	writerOf map[string]int // stream -> its writer, kept when the stream is dropped and read again
	// layouts is each listed concert's layout: a line shard's joins, and a seat slot's holds and
	// payments, are in a stream each. One that does not follow its concert's recorded placement (follow)
	// is read again.
	layouts  map[string]redis.Layout
	follow   func(concertID string) ticketrush.Placement
	lastSync time.Time

	// flight holds the entries taken for the writers and not yet acknowledged or dead-lettered, with
	// when each was last kept (claimed by this worker again, idle time reset): a claim must not hand them
	// out a second time, to this worker or another, while they wait behind a slow Postgres.
	fmu    sync.Mutex
	flight map[flightKey]time.Time

	mu          sync.Mutex
	streams     []string  // every stream with its group, for the stats loop
	lastAdvance time.Time // the last acknowledgement, or the last time there was nothing to do
	backlog     int64
	// quiet: the last measure found nothing waiting and no round read anything since (QuietEvery);
	// busy is set by a round that read something, and cleared by each measure.
	quiet, busy bool
}

// New returns a worker over the streams of the keys under prefix: the 64 wallet shards and every
// concert that concerts lists.
func New(rdb rueidis.Client, record Recorder, prefix string, concerts func() []string, cfg Config, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Worker {
	return &Worker{
		rdb: rdb, record: record, keys: redis.NewKeys(prefix), state: redis.NewStateMarker(rdb, prefix), concerts: concerts,
		cfg: cfg.withDefaults(), now: now, log: log, metrics: newMetrics(reg), warnings: newWarnings(log, now, reg),
		sources: map[string]*source{}, grouped: map[string]bool{}, writerOf: map[string]int{},
		layouts: map[string]redis.Layout{}, flight: map[flightKey]time.Time{},
	}
}

// FollowPlacements makes the worker read a concert's layout again when the one it holds does not follow
// recorded, the concert's placement as the record has it now (the catalog's), as the store does
// (redis.Store.FollowPlacements): restore writes the recorded placement, so the seat slots' streams are
// then other streams. Call it before Run.
func (w *Worker) FollowPlacements(recorded func(concertID string) ticketrush.Placement) {
	w.follow = recorded
}

// Run consumes until ctx ends. Entries it holds when it stops stay pending in the group; another
// worker (or this one's successor) claims them once they have been idle for ClaimIdle.
//
// Reading and writing overlap: Writers goroutines write and acknowledge batches while this one reads
// the next entries. Each stream has one writer, which writes its batches one after the other: a
// stream's events are committed in the order they were read, as when reading waited for writing (so
// of two events Postgres cannot both take, the later is the one refused). A writer holds the batch it
// writes and one more; the reader waits for it beyond that. Entries with the writers are kept claimed
// (keepFlying) however long Postgres takes, so that no claim hands them out again meanwhile.
func (w *Worker) Run(ctx context.Context) {
	w.mu.Lock()
	w.lastAdvance = w.now()
	w.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { w.runStats(ctx) })
	wg.Go(func() { periodic.Run(ctx, w.cfg.ClaimIdle/3, w.keepFlying, w.log, "writebehind keep") })
	defer wg.Wait()
	queues := make([]chan batch, w.cfg.Writers)
	for i := range queues {
		q := make(chan batch, 1)
		queues[i] = q
		wg.Go(func() {
			for b := range q {
				w.flush(ctx, b)
			}
		})
	}
	defer func() {
		for _, q := range queues {
			close(q)
		}
	}()

	var lastClaim time.Time
	idle := w.cfg.Idle
	for ctx.Err() == nil {
		if whole, err := w.state.Present(ctx); err != nil || !whole {
			if err != nil && ctx.Err() == nil {
				w.warnings.warn(warnRedis, "err", err)
			}
			w.grouped = map[string]bool{} // an emptied Redis lost the groups too
			sleep(ctx, time.Second)
			continue
		}
		w.syncStreams(ctx)
		n := 0
		if w.now().Sub(lastClaim) >= w.cfg.ClaimEvery && !w.isQuiet() {
			lastClaim = w.now()
			n += w.process(ctx, w.claim(ctx), queues)
		}
		n += w.process(ctx, w.read(ctx), queues)
		if n > 0 {
			w.mu.Lock()
			w.quiet, w.busy = false, true
			w.mu.Unlock()
		}
		if n == 0 {
			sleep(ctx, idle)
			idle = min(2*idle, w.cfg.IdleMax)
		} else {
			idle = w.cfg.Idle
		}
	}
}

// isQuiet reports whether the worker is quiet (see Config.QuietEvery).
func (w *Worker) isQuiet() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quiet
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// syncStreams refreshes the list of streams (a new concert brings some, a changed placement its seat
// slots' new ones; the old ones are read while the concert is listed) and makes sure the group
// exists on each, reading from the stream's first entry: no event is ever skipped. A new concert's
// stream is taken at the next round (its first events are a sale opening: they should not wait);
// groups are made again every 2 s, or at once where one is missing.
func (w *Worker) syncStreams(ctx context.Context) {
	if len(w.sources) == 0 {
		for _, src := range w.keys.EventSources(nil) { // the wallet shards'
			w.addSource(&source{EventSource: src})
		}
	}
	listed := map[string]bool{}
	added := false
	for _, id := range w.concerts() {
		listed[id] = true
		l, ok := w.layouts[id]
		if !ok || w.follow != nil && !l.Follows(w.follow(id)) {
			var found bool
			var err error
			if l, found, err = w.keys.ReadLayout(ctx, w.rdb, id); err != nil {
				w.warnings.warn(warnCreateGroup, "stream", id, "err", err)
				continue // listed again next round
			}
			if found { // a concert not in Redis yet is read again next round
				w.layouts[id] = l
			}
		}
		for _, src := range w.keys.ConcertSources(id, l) {
			if w.sources[src.Stream] == nil {
				w.addSource(&source{EventSource: src})
				added = true
			}
		}
	}
	w.keepSources(listed)
	if !added && w.now().Sub(w.lastSync) < 2*time.Second && len(w.grouped) == len(w.order) {
		return
	}
	w.lastSync = w.now()
	var cmds rueidis.Commands
	var streams []string
	for _, s := range w.order {
		if !w.grouped[s.Stream] {
			cmds = append(cmds, w.rdb.B().XgroupCreate().Key(s.Stream).Group(w.cfg.Group).Id("0").Mkstream().Build())
			streams = append(streams, s.Stream)
		}
	}
	for i, res := range w.rdb.DoMulti(ctx, cmds...) {
		err := res.Error()
		if rerr, ok := rueidis.IsRedisErr(err); ok && rerr.IsBusyGroup() {
			err = nil
		}
		if err != nil {
			if ctx.Err() == nil {
				w.warnings.warn(warnCreateGroup, "stream", streams[i], "err", err)
			}
			continue
		}
		w.grouped[streams[i]] = true
	}
	list := w.groupedStreams()
	w.mu.Lock()
	w.streams = list
	w.mu.Unlock()
}

func (w *Worker) addSource(s *source) {
	if _, ok := w.sources[s.Stream]; ok {
		return
	}
	// Streams take the writers in turn; a stream read again after it was dropped keeps its writer, which
	// may still hold its earlier batches: its events still commit in order.
	writer, ok := w.writerOf[s.Stream]
	if !ok {
		writer = len(w.writerOf)
		w.writerOf[s.Stream] = writer
	}
	s.writer = writer
	w.sources[s.Stream] = s
	w.order = append(w.order, s)
}
