package writebehind

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

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
