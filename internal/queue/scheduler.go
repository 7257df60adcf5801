package queue

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TickStore runs the admission tick.
type TickStore interface {
	Tick(ctx context.Context, concertID string, now time.Time, batch int) (ticketrush.TickResult, error)
}

// tickBatch bounds the lapses and admissions of one tick of one concert, so one script call stays short.
const tickBatch = 1000

// Scheduler admits the head of every concert's line and lapses active tokens. Any number of schedulers
// may run at once: each tick is one atomic script that checks capacity and the rate budget itself.
type Scheduler struct {
	store    TickStore
	concerts func() []string
	now      func() time.Time
	log      *slog.Logger
	metrics  *metrics
	busy     func(concertID string) // a no-op unless ReportBusy
}

// ReportBusy makes the scheduler call busy with every concert whose tick leaves fans waiting or active,
// or fails (Activity.LineBusy keeps it awake).
func (sc *Scheduler) ReportBusy(busy func(concertID string)) *Scheduler {
	sc.busy = busy
	return sc
}

// NewScheduler returns a scheduler over the concerts that concerts lists; it counts into the
// service's metrics.
func (s *Service) NewScheduler(store TickStore, concerts func() []string) *Scheduler {
	return &Scheduler{store: store, concerts: concerts, now: s.now, log: s.log, metrics: s.metrics, busy: func(string) {}}
}

// Tick runs one admission round over every concert.
func (sc *Scheduler) Tick(ctx context.Context) error {
	var errs []error
	for _, id := range sc.concerts() {
		sc.metrics.concertLoaded(id)
		r, err := sc.store.Tick(ctx, id, sc.now(), tickBatch)
		if err != nil {
			sc.busy(id) // not known to be idle: try again next tick
			errs = append(errs, err)
			continue
		}
		if r.Waiting+r.Active > 0 {
			sc.busy(id)
		}
		if r.Admitted > 0 {
			sc.metrics.admitted.WithLabelValues(id).Add(float64(r.Admitted))
		}
		if r.Lapsed > 0 {
			sc.metrics.lapsed.WithLabelValues(id).Add(float64(r.Lapsed))
		}
		sc.metrics.abandoned.WithLabelValues(id, "silent").Add(float64(r.Abandoned)) // at 0 from the first tick
		sc.metrics.abandoned.WithLabelValues(id, "noshow").Add(float64(r.NoShows))
	}
	return errors.Join(errs...)
}

// Run ticks every interval until ctx ends.
func (sc *Scheduler) Run(ctx context.Context, interval time.Duration) {
	periodic.Run(ctx, interval, sc.Tick, sc.log, "admission tick")
}
