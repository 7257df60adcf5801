package writebehind

import (
	"time"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// source is a stream the worker reads, with what its reader keeps of it.
type source struct {
	redis.EventSource
	count   int       // entries to read from it next round (the worker's reader only)
	writer  int       // which of the worker's writers writes its events (modulo Writers)
	drained bool      // its last read found nothing new (the reader only)
	readAt  time.Time // when its last read was answered (the reader only)
	yielded time.Time // when a read last found entries in it (the reader only)
}

// entry is one stream entry read for the group.
type entry struct {
	src    *source
	id     string
	fields map[string]string
}

// decode adds what e means to b (redis.DecodeEvent).
func decode(e entry, b *ticketrush.RecordBatch) error {
	return redis.DecodeEvent(e.src.EventSource, e.id, e.fields, b)
}

// keepYielding is how long an unlisted concert's stream is still read after a read last found entries
// in it: events written by rounds this process does not see (another instance's sweeper) still reach
// Postgres while they come.
const keepYielding = 20 * time.Second

// keepSources drops the streams of the concerts no longer listed (their concert has gone idle, see
// queue.Activity) once a read of each has found nothing new, that read is fresh (the previous round's,
// at most the longest idle pause and a second ago) and none has found anything for keepYielding. A
// stream that still yields events is kept, and so is one whose last read is stale: while Postgres is
// away the writers wait and the reader waits for them, and an empty read from before an outage says
// nothing of the events written during it (TestPostgresUnreachable once lost sight of 30 s of them).
// the worker reads, claims and measures only the wallet shards and the listed concerts, so that its work
// grows with the concerts that have fans, not with the catalog. A dropped stream is read again (and its
// group made sure of) once its concert is listed again.
func (w *Worker) keepSources(listed map[string]bool) {
	kept := w.order[:0]
	for _, s := range w.order {
		stale := w.now().Sub(s.readAt) > w.cfg.IdleMax+time.Second
		if s.ConcertID == "" || listed[s.ConcertID] || !s.drained || stale || w.now().Sub(s.yielded) < keepYielding {
			kept = append(kept, s)
			continue
		}
		delete(w.sources, s.Stream)
		delete(w.grouped, s.Stream)
	}
	clear(w.order[len(kept):])
	w.order = kept
}
