package writebehind

import (
	"context"

	"github.com/redis/rueidis"
)

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
