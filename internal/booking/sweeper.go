package booking

import (
	"context"
	"errors"
	"time"

	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

const (
	// sweepBatch bounds the holds one sweep call lapses. A call's Redis time grows with its holds, and
	// every other call of the concert's slot waits for it: measured on a private Redis with a wave of
	// 20,000 holds due at once, 500 a call took 12 ms a call, 100 about 1.7 ms (and less a hold).
	// A round calls again until a call finds fewer due.
	sweepBatch = 100
)

// StuckAfter is how long a payment may stay claimed before the sweeper finishes or undoes it: longer
// than any request can run (a request's deadline, the server's write timeout: TestNoRequestOutlivesStuckAfter),
// and shorter than redis.PayingGate by a sweep's pace at least (TestPayingGateOutlastsStuckPayments).
const StuckAfter = 30 * time.Second

// Sweep runs one round over every concert of the catalog (Sweeper.Sweep).
func (s *Service) Sweep(ctx context.Context) error {
	return s.NewSweeper(s.catalog.IDs, nil).Sweep(ctx)
}

// Sweeper sweeps the concerts that concerts lists: in production the awake ones (queue.Activity).
type Sweeper struct {
	s        *Service
	concerts func() []string
	busy     func(concertID string) // a no-op when nobody keeps track
}

// NewSweeper returns a sweeper over the concerts that concerts lists; busy, when not nil, is called with
// every concert that still has seats held or being paid after the round, or whose counts could not be
// read (queue.Activity.Busy keeps it awake, so that its holds are lapsed when they expire).
func (s *Service) NewSweeper(concerts func() []string, busy func(concertID string)) *Sweeper {
	if busy == nil {
		busy = func(string) {}
	}
	return &Sweeper{s: s, concerts: concerts, busy: busy}
}

// Sweep runs one round: lapse expired holds (in bounded batches, until none is due), finish or undo
// payments stuck in the middle, and refresh the seat gauges.
func (sw *Sweeper) Sweep(ctx context.Context) error {
	s := sw.s
	var errs []error
	now := s.now()
	for _, id := range sw.concerts() {
		c, ok := s.catalog.Concert(id)
		if !ok {
			continue
		}
		s.metrics.concertLoaded(id)
		schedules := c.ScheduleIDs()
		for {
			n, err := s.store.Sweep(ctx, id, schedules, now, sweepBatch)
			if err != nil {
				sw.busy(id) // holds may be due and not lapsed: the counts below would not show them
				errs = append(errs, err)
				break
			}
			s.metrics.lapsed.WithLabelValues(id).Add(float64(n))
			if n < sweepBatch {
				break
			}
		}
		errs = append(errs, s.Recover(ctx, id, now.Add(-StuckAfter)))
		if counts, err := s.store.ScheduleCounts(ctx, id, schedules, now); err == nil {
			s.metrics.observeSeats(c, counts)
			if inFlight(counts) {
				sw.busy(id)
			}
		} else {
			sw.busy(id) // not known to be idle: sweep again next round
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// inFlight reports whether any seat is held or being paid (taken but not sold).
func inFlight(counts []ticketrush.ScheduleCount) bool {
	for _, n := range counts {
		if n.Taken > n.Sold {
			return true
		}
	}
	return false
}

// Recover finishes or undoes every payment of a concert claimed before before: debited ones complete
// (or are refunded when the sale can no longer happen), the others are released.
func (s *Service) Recover(ctx context.Context, concertID string, before time.Time) error {
	ids, err := s.store.StuckPayments(ctx, concertID, before, sweepBatch)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		r, err := s.store.Reservation(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		debit, ok, err := s.wallet.Debited(ctx, r.UserID, id)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			if _, err := s.complete(ctx, r.UserID, id, debit); err != nil && !errors.Is(err, ticketrush.ErrReservationExpired) {
				errs = append(errs, err)
			}
		default:
			if _, err := s.store.Release(ctx, id, s.now()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// RunSweeper sweeps every interval until ctx ends.
func (s *Service) RunSweeper(ctx context.Context, interval time.Duration) {
	periodic.Run(ctx, interval, s.Sweep, s.log, "sweep")
}
