package writebehind

import (
	"context"

	"github.com/redis/rueidis"
)

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
