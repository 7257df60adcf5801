// Package writebehind makes Postgres the durable record of what the hot path does in Redis. Every Lua
// script appends its change to a stream in its own hash slot (the outbox); the worker reads every stream
// in one consumer group, writes batches to Postgres with idempotent inserts, commits, then acknowledges.
// The tools that prove and repair the agreement of the two, reconcile and restore, are internal/repair.
package writebehind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
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

// Config tunes the worker; zero fields take the defaults of DefaultConfig.
type Config struct {
	Group     string // consumer group, shared by every worker process
	Consumer  string // this process's name in the group; unique per process
	BatchSize int    // most events per Postgres transaction
	Writers   int    // batches written at once
	ReadCount int    // entries read from one stream per round, at first
	// MaxReadCount: a stream that filled its read doubles its count for the next round, up to this: a
	// backlog in one stream (a popular concert's line) drains in a few rounds, not in rounds of ReadCount.
	MaxReadCount int
	Idle         time.Duration // pause after a round that found nothing
	// IdleMax: each further round that finds nothing doubles the pause, up to this, so that a quiet
	// service does not poll its streams (64 wallet shards at least) 20 times a second; the first event
	// after a quiet spell waits IdleMax at most.
	IdleMax   time.Duration
	ClaimIdle time.Duration // an entry pending this long with another consumer is claimed (XAUTOCLAIM)
	// ReplicaWait, on a Redis Cluster, is how long the entries of a read wait for a replica of their
	// master before they are written (0: a single Redis, nothing to wait for): an event Postgres holds
	// must not be one a failover takes back.
	ReplicaWait time.Duration
	ClaimEvery  time.Duration // how often pending entries are looked for
	MaxFailures int           // an entry the database refuses this many times goes to the dead-letter stream
	// MaxDeliveries: an entry claimed after this many deliveries goes to the dead-letter stream without
	// another try (it keeps killing the workers that take it).
	MaxDeliveries int
	TrimEvery     time.Duration // how often acknowledged entries are trimmed
	StatsEvery    time.Duration // how often backlog and lag are measured
	StuckAfter    time.Duration // readiness fails when nothing was acknowledged for this long with a backlog
	RetryMax      time.Duration // longest pause between two tries of a batch Postgres did not take
}

// growthBudget is how many streams' worth of MaxReadCount one round may read beyond ReadCount a stream.
const growthBudget = 4

// DefaultConfig is the worker's configuration unless told otherwise.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		Group:         redis.WriteBehindGroup,
		Consumer:      host + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rand.Uint64()%1e6, 36),
		BatchSize:     4000,
		Writers:       2,
		ReadCount:     1000,
		MaxReadCount:  16000,
		Idle:          50 * time.Millisecond,
		IdleMax:       400 * time.Millisecond,
		ClaimIdle:     10 * time.Second,
		ClaimEvery:    2 * time.Second,
		MaxFailures:   5,
		MaxDeliveries: 20,
		TrimEvery:     5 * time.Second,
		StatsEvery:    time.Second,
		StuckAfter:    30 * time.Second,
		RetryMax:      2 * time.Second,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Group == "" {
		c.Group = d.Group
	}
	if c.Consumer == "" {
		c.Consumer = d.Consumer
	}
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&c.BatchSize, d.BatchSize)
	set(&c.Writers, d.Writers)
	set(&c.ReadCount, d.ReadCount)
	set(&c.MaxReadCount, d.MaxReadCount)
	c.MaxReadCount = max(c.MaxReadCount, c.ReadCount)
	set(&c.MaxFailures, d.MaxFailures)
	set(&c.MaxDeliveries, d.MaxDeliveries)
	setD(&c.Idle, d.Idle)
	setD(&c.IdleMax, d.IdleMax)
	c.IdleMax = max(c.IdleMax, c.Idle)
	setD(&c.ClaimIdle, d.ClaimIdle)
	setD(&c.ClaimEvery, d.ClaimEvery)
	setD(&c.TrimEvery, d.TrimEvery)
	setD(&c.StatsEvery, d.StatsEvery)
	setD(&c.StuckAfter, d.StuckAfter)
	setD(&c.RetryMax, d.RetryMax)
	return c
}

// Worker is one write-behind consumer. Any number may run at once, in one process or many.
type Worker struct {
	rdb      rueidis.Client
	record   Recorder
	keys     redis.Keys
	state    *State
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
}

// New returns a worker over the streams of the keys under prefix: the 64 wallet shards and every
// concert that concerts lists.
func New(rdb rueidis.Client, record Recorder, prefix string, concerts func() []string, cfg Config, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Worker {
	return &Worker{
		rdb: rdb, record: record, keys: redis.NewKeys(prefix), state: NewState(rdb, prefix), concerts: concerts,
		cfg: cfg.withDefaults(), now: now, log: log, metrics: newMetrics(reg), warnings: newWarnings(log, now, reg),
		sources: map[string]*source{}, grouped: map[string]bool{}, writerOf: map[string]int{},
		flight: map[flightKey]time.Time{},
	}
}

type flightKey struct{ stream, id string }

// fly records entries the reader took (read or claimed) for its writers, kept (claimed) now.
func (w *Worker) fly(es []entry) {
	now := w.now()
	w.fmu.Lock()
	defer w.fmu.Unlock()
	for _, e := range es {
		w.flight[flightKey{e.src.Stream, e.id}] = now
	}
}

// landed forgets entries a writer is done with (acknowledged, dead-lettered, or left pending as the
// worker stops).
func (w *Worker) landed(es []entry) {
	w.fmu.Lock()
	defer w.fmu.Unlock()
	for _, e := range es {
		delete(w.flight, flightKey{e.src.Stream, e.id})
	}
}

// flying reports whether an entry of stream is with a writer of this worker.
func (w *Worker) flying(stream, id string) bool {
	w.fmu.Lock()
	defer w.fmu.Unlock()
	_, ok := w.flight[flightKey{stream, id}]
	return ok
}

// keepFlying resets the idle time of the entries with the writers that were last kept ClaimIdle/3 ago
// or more (all of them waiting behind a slow or absent Postgres), so that no claim, this worker's or
// another's, takes them while they wait. Run calls it every ClaimIdle/3, apart from the reader and the
// writers (either may be the one waiting).
func (w *Worker) keepFlying(ctx context.Context) error {
	now := w.now()
	due := map[string][]string{} // stream -> ids
	w.fmu.Lock()
	for k, kept := range w.flight {
		if now.Sub(kept) >= w.cfg.ClaimIdle/3 {
			w.flight[k] = now
			due[k.stream] = append(due[k.stream], k.id)
		}
	}
	w.fmu.Unlock()
	w.keep(ctx, due)
	return nil
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
		if whole, err := w.state.Whole(ctx); err != nil || !whole {
			if err != nil && ctx.Err() == nil {
				w.warnings.warn(warnRedis, "err", err)
			}
			w.grouped = map[string]bool{} // an emptied Redis lost the groups too
			sleep(ctx, time.Second)
			continue
		}
		w.syncStreams(ctx)
		n := 0
		if w.now().Sub(lastClaim) >= w.cfg.ClaimEvery {
			lastClaim = w.now()
			n += w.process(ctx, w.claim(ctx), queues)
		}
		n += w.process(ctx, w.read(ctx), queues)
		if n == 0 {
			sleep(ctx, idle)
			idle = min(2*idle, w.cfg.IdleMax)
		} else {
			idle = w.cfg.Idle
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// syncStreams refreshes the list of streams (a new concert brings one) and makes sure the group
// exists on each, reading from the stream's first entry: no event is ever skipped. A new concert's
// stream is taken at the next round (its first events are a sale opening: they should not wait);
// groups are made again every 2 s, or at once where one is missing.
func (w *Worker) syncStreams(ctx context.Context) {
	if len(w.sources) == 0 {
		for i := range redis.WalletShards {
			w.addSource(&source{EventSource: w.keys.WalletEvents(i)})
		}
	}
	listed := map[string]bool{}
	added := false
	for _, id := range w.concerts() {
		listed[id] = true
		if src := w.keys.ConcertEvents(id); w.sources[src.Stream] == nil {
			w.addSource(&source{EventSource: src})
			added = true
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

// read takes the new entries of every stream, in one pipeline: up to each stream's count, which
// doubles (up to MaxReadCount) while the stream fills its reads and halves back (down to ReadCount)
// once it does not. What the streams read beyond ReadCount each is bounded per round (growthBudget
// MaxReadCounts), so that a backlog in every stream (Postgres back after an outage) reads no more per
// round than ReadCount a stream and a few hot streams' worth.
func (w *Worker) read(ctx context.Context) []entry {
	cmds := make(rueidis.Commands, 0, len(w.order))
	srcs := make([]*source, 0, len(w.order))
	budget := growthBudget * w.cfg.MaxReadCount
	for _, s := range w.order {
		if !w.grouped[s.Stream] {
			continue
		}
		extra := min(max(s.count, w.cfg.ReadCount), w.cfg.MaxReadCount) - w.cfg.ReadCount
		extra = min(extra, budget)
		budget -= extra
		s.count = w.cfg.ReadCount + extra
		cmds = append(cmds, w.rdb.B().Xreadgroup().Group(w.cfg.Group, w.cfg.Consumer).Count(int64(s.count)).
			Streams().Key(s.Stream).Id(">").Build())
		srcs = append(srcs, s)
	}
	var out []entry
	read := map[*source][]entry{}
	for i, res := range w.rdb.DoMulti(ctx, cmds...) {
		s := srcs[i]
		streams, err := res.AsXRead()
		if err != nil && !rueidis.IsRedisNil(err) { // nil: nothing new
			w.readFailed(ctx, s, err)
			continue
		}
		got := streams[s.Stream]
		s.drained, s.readAt = len(got) == 0, w.now()
		if !s.drained {
			s.yielded = w.now()
		}
		switch {
		case len(got) >= s.count:
			s.count *= 2
		case len(got) < s.count/2:
			s.count /= 2
		}
		for _, xe := range got {
			read[s] = append(read[s], entry{src: s, id: xe.ID, fields: xe.FieldValues})
		}
	}
	withheld := map[*source]bool{}
	if w.cfg.ReplicaWait > 0 { // every stream's wait at once
		var mu sync.Mutex
		var wg sync.WaitGroup
		for s, es := range read {
			wg.Go(func() {
				if !w.replicated(ctx, s, es) {
					mu.Lock()
					withheld[s] = true // pending: claimed after ClaimIdle, by then on a replica or on a master without one
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	for _, s := range srcs { // in the order read
		if !withheld[s] {
			out = append(out, read[s]...)
		}
	}
	return out
}

// replicated reports whether a replica of the stream's master has entries just read: an XCLAIM JUSTID
// of them (a write after theirs on that master) and WAIT 1 in one round trip on one connection, so
// that WAIT covers them. An event is written to Postgres only once a failover can no longer take it
// back from Redis (the step that wrote it waited for the replica too, but the worker may read it
// first).
func (w *Worker) replicated(ctx context.Context, s *source, es []entry) bool {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.id
	}
	res := w.rdb.DoMulti(ctx,
		w.rdb.B().Xclaim().Key(s.Stream).Group(w.cfg.Group).Consumer(w.cfg.Consumer).MinIdleTime("0").Id(ids...).Justid().Build(),
		w.rdb.B().Wait().Numreplicas(1).Timeout(max(1, w.cfg.ReplicaWait.Milliseconds())).Build())
	n, err := res[1].AsInt64()
	if err != nil && ctx.Err() == nil {
		w.warnings.warn(warnReadStream, "stream", s.Stream, "err", err)
	}
	return err == nil && n >= 1
}

// readFailed handles a stream that could not be read: a missing group (Redis lost it) is made again.
func (w *Worker) readFailed(ctx context.Context, s *source, err error) {
	if rerr, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(rerr.Error(), "NOGROUP") {
		delete(w.grouped, s.Stream)
		return
	}
	if ctx.Err() == nil {
		w.warnings.warn(warnReadStream, "stream", s.Stream, "err", err)
	}
}

// batch is entries written in one transaction, with what they add to the record.
type batch struct {
	entries []entry
	rb      ticketrush.RecordBatch
}

// process decodes entries (dead-lettering those that are not events) and hands them to the writers,
// each stream's to its own writer, in batches of BatchSize; it returns how many it handled once every
// batch is with a writer.
func (w *Worker) process(ctx context.Context, entries []entry, queues []chan batch) int {
	// In flight from now: the reader may wait for a writer (behind a slow Postgres) with entries it
	// holds in batches not sent yet, which keepFlying keeps claimed too.
	w.fly(entries)
	open := make([]batch, len(queues))
	send := func(i int) {
		if len(open[i].entries) == 0 {
			return
		}
		select {
		case queues[i] <- open[i]:
		case <-ctx.Done():
			w.landed(open[i].entries) // left pending: claimed after ClaimIdle
		}
		open[i] = batch{}
	}
	for k, e := range entries {
		if ctx.Err() != nil {
			w.landed(entries[k:]) // left pending: claimed after ClaimIdle
			break
		}
		i := e.src.writer % len(queues)
		b := &open[i]
		if err := decode(e, &b.rb); err != nil {
			// decode may have added part of the entry before finding it bad: the batch's record is
			// made again from its entries so far.
			w.deadLetter(ctx, e, err.Error())
			w.landed([]entry{e})
			b.rb = decodeAll(b.entries)
			continue
		}
		b.entries = append(b.entries, e)
		if len(b.entries) == w.cfg.BatchSize {
			send(i)
		}
	}
	for i := range open {
		send(i)
	}
	return len(entries)
}

// decodeAll is the record of entries that decode already accepted.
func decodeAll(entries []entry) ticketrush.RecordBatch {
	var rb ticketrush.RecordBatch
	for _, e := range entries {
		_ = decode(e, &rb) // decoded once already: cannot fail
	}
	return rb
}

// flush writes a batch and acknowledges it. A batch the database refuses is split in halves until the
// entries it refuses are alone; such an entry is tried MaxFailures times and then dead-lettered, and
// the others go through.
func (w *Worker) flush(ctx context.Context, b batch) {
	defer w.landed(b.entries)
	start := w.now()
	err := w.write(ctx, b)
	if err == nil {
		w.ack(ctx, b.entries)
		w.metrics.batchSize.Observe(float64(len(b.entries)))
		w.metrics.flush.Observe(w.now().Sub(start).Seconds())
		return
	}
	if !errors.Is(err, ticketrush.ErrRecordRefused) {
		return // ctx ended
	}
	if len(b.entries) > 1 {
		half := len(b.entries) / 2
		w.flush(ctx, batch{entries: b.entries[:half], rb: decodeAll(b.entries[:half])})
		w.flush(ctx, batch{entries: b.entries[half:], rb: decodeAll(b.entries[half:])})
		return
	}
	for fails := 1; fails < w.cfg.MaxFailures; fails++ {
		if err = w.write(ctx, b); err == nil {
			w.ack(ctx, b.entries)
			return
		}
		if !errors.Is(err, ticketrush.ErrRecordRefused) {
			return
		}
	}
	w.deadLetter(ctx, b.entries[0], fmt.Sprintf("refused %d times: %v", w.cfg.MaxFailures, err))
}

// write writes a batch, trying again while Postgres does not answer (not counted as failures: the
// entries are not at fault; keepFlying keeps them claimed meanwhile). It returns nil, an error wrapping
// ErrRecordRefused, or ctx's error.
func (w *Worker) write(ctx context.Context, b batch) error {
	pause := 50 * time.Millisecond
	for {
		err := w.record.WriteRecords(ctx, b.rb)
		if err == nil || errors.Is(err, ticketrush.ErrRecordRefused) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.warnings.warn(warnFlush, "events", len(b.entries), "err", err)
		sleep(ctx, pause)
		pause = min(2*pause, w.cfg.RetryMax)
	}
}

// keep resets the idle time of entries this worker is still trying to write (ids by stream), so that no
// other worker claims them meanwhile (XCLAIM JUSTID does not count a delivery).
func (w *Worker) keep(ctx context.Context, ids map[string][]string) {
	if len(ids) == 0 {
		return
	}
	var cmds rueidis.Commands
	for stream, ids := range ids {
		cmds = append(cmds, w.rdb.B().Xclaim().Key(stream).Group(w.cfg.Group).Consumer(w.cfg.Consumer).MinIdleTime("0").
			Id(ids...).Justid().Build())
	}
	for _, res := range w.rdb.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil && ctx.Err() == nil {
			w.warnings.warn(warnKeepPending, "err", err)
		}
	}
}

func byStream(batch []entry) map[string][]string {
	out := map[string][]string{}
	for _, e := range batch {
		out[e.src.Stream] = append(out[e.src.Stream], e.id)
	}
	return out
}

// ack acknowledges a written batch. An acknowledgement that fails leaves the entries pending: they are
// claimed and written again later, which changes nothing.
func (w *Worker) ack(ctx context.Context, batch []entry) {
	var cmds rueidis.Commands
	for stream, ids := range byStream(batch) {
		cmds = append(cmds, w.rdb.B().Xack().Key(stream).Group(w.cfg.Group).Id(ids...).Build())
	}
	failed := false
	for _, res := range w.rdb.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			failed = true
			if ctx.Err() == nil {
				w.warnings.warn(warnAck, "err", err)
			}
		}
	}
	w.metrics.events.Add(float64(len(batch)))
	if !failed {
		w.mu.Lock()
		w.lastAdvance = w.now()
		w.mu.Unlock()
	}
}

// deadLetter moves an entry to its stream's dead-letter stream (same hash slot) with the reason, and
// acknowledges it, in one MULTI.
func (w *Worker) deadLetter(ctx context.Context, e entry, reason string) {
	fv := w.rdb.B().Xadd().Key(e.src.DeadLetters).Id("*").FieldValue().
		FieldValue("stream", e.src.Stream).FieldValue("id", e.id).FieldValue("reason", reason)
	for k, v := range e.fields {
		fv = fv.FieldValue(k, v)
	}
	err := w.rdb.Dedicated(func(c rueidis.DedicatedClient) error {
		res := c.DoMulti(ctx,
			c.B().Multi().Build(),
			fv.Build(),
			c.B().Xack().Key(e.src.Stream).Group(w.cfg.Group).Id(e.id).Build(),
			c.B().Exec().Build())
		for _, r := range res {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			w.warnings.warn(warnDeadLetter, "stream", e.src.Stream, "id", e.id, "err", err)
		}
		return
	}
	w.metrics.deadLetters.Inc()
	w.log.Error("writebehind: event dead-lettered", "stream", e.src.Stream, "id", e.id, "reason", reason)
}

// claim takes over entries other consumers left pending for ClaimIdle (crashed, or gone). An entry
// delivered MaxDeliveries times already goes to the dead-letter stream.
func (w *Worker) claim(ctx context.Context) []entry {
	var out []entry
	cursors := map[*source]string{}
	for _, s := range w.order {
		if w.grouped[s.Stream] {
			cursors[s] = "0-0"
		}
	}
	minIdle := strconv.FormatInt(w.cfg.ClaimIdle.Milliseconds(), 10)
	for round := 0; round < 10 && len(cursors) > 0; round++ {
		srcs := make([]*source, 0, len(cursors))
		cmds := make(rueidis.Commands, 0, len(cursors))
		for s, start := range cursors {
			srcs = append(srcs, s)
			cmds = append(cmds, w.rdb.B().Xautoclaim().Key(s.Stream).Group(w.cfg.Group).Consumer(w.cfg.Consumer).
				MinIdleTime(minIdle).Start(start).Count(int64(w.cfg.ReadCount)).Build())
		}
		for i, res := range w.rdb.DoMulti(ctx, cmds...) {
			s := srcs[i]
			delete(cursors, s)
			parts, err := res.ToArray()
			if err != nil || len(parts) < 2 {
				if err != nil {
					w.readFailed(ctx, s, err)
				}
				continue
			}
			entries, err := parts[1].AsXRange()
			if err != nil {
				continue
			}
			if next, _ := parts[0].ToString(); next != "0-0" && next != "" && len(entries) > 0 {
				cursors[s] = next // a page of entries all in flight here still leads to the next page
			}
			entries = slices.DeleteFunc(entries, func(x rueidis.XRangeEntry) bool { return w.flying(s.Stream, x.ID) })
			out = append(out, w.dropOverdelivered(ctx, s, entries)...)
		}
	}
	if len(out) > 0 {
		w.log.Info("writebehind: claimed pending entries", "entries", len(out))
	}
	return out
}

func (w *Worker) dropOverdelivered(ctx context.Context, s *source, xs []rueidis.XRangeEntry) []entry {
	out := make([]entry, 0, len(xs))
	if len(xs) == 0 {
		return out
	}
	deliveries := map[string]int64{}
	pend, err := w.rdb.Do(ctx, w.rdb.B().Xpending().Key(s.Stream).Group(w.cfg.Group).Start(xs[0].ID).End(xs[len(xs)-1].ID).
		Count(int64(len(xs))).Consumer(w.cfg.Consumer).Build()).ToArray()
	if err == nil {
		for _, p := range pend {
			if row, err := p.ToArray(); err == nil && len(row) == 4 {
				id, _ := row[0].ToString()
				n, _ := row[3].AsInt64()
				deliveries[id] = n
			}
		}
	}
	for _, x := range xs {
		e := entry{src: s, id: x.ID, fields: x.FieldValues}
		if x.FieldValues == nil {
			continue // deleted from the stream meanwhile: XAUTOCLAIM dropped it from the pending list
		}
		if n := deliveries[x.ID]; n > int64(w.cfg.MaxDeliveries) {
			w.deadLetter(ctx, e, fmt.Sprintf("delivered %d times without being written", n))
			continue
		}
		out = append(out, e)
	}
	return out
}
