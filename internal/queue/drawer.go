package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/prom"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// DrawStore runs the draw's steps in Redis.
type DrawStore interface {
	SealDraw(ctx context.Context, concertID string, now time.Time) (ticketrush.DrawState, error)
	LeaseDraw(ctx context.Context, concertID, owner string, ttl time.Duration) (bool, error)
	PrequeueSize(ctx context.Context, concertID string) (int64, error)
	Entrants(ctx context.Context, concertID, cursor string, count int64) ([]string, string, error)
	PlaceDraw(ctx context.Context, concertID string, from int64, batch []draw.Entrant, digest string, now time.Time) (int64, bool, error)
}

// Draw batching: entrants read and placed per script call, so that no call holds Redis for long.
const (
	drawReadBatch  = 10_000
	drawPlaceBatch = 1_000
	drawLease      = 15 * time.Second
)

// Drawer runs the draw of every concert with a sale once its opening has passed: seal the pre-queue,
// compute every entrant's key in Go (draw.Seed.Draw, a pure function), and place the entrants in draw
// order in batches. Any number of drawers may run: the lease spares duplicate work, and draw_place's
// cursor makes each batch land once, so a drawer killed between batches is resumed by the next.
type Drawer struct {
	store    DrawStore
	concerts func() []string
	sales    Sales
	owner    string
	now      func() time.Time
	log      *slog.Logger
	metrics  *drawMetrics
	done     map[string]bool // concerts drawn, as far as this drawer knows
	lease    time.Duration
	read     int64                       // entrants asked for per page (drawReadBatch by default)
	awake    func(concertID string) bool // every concert is, unless Track
	busy     func(concertID string)      // a no-op unless Track
}

// Track makes the drawer read a pre-queue's size (a gauge, before the opening) only for the concerts
// awake says are (Activity.IsAwake), so that a sale nobody has joined yet costs nothing until its
// opening, and call busy with every concert it draws (Activity.Busy: its line is ticked at once).
func (d *Drawer) Track(awake func(concertID string) bool, busy func(concertID string)) *Drawer {
	d.awake, d.busy = awake, busy
	return d
}

// WithLease sets how long the drawer's lease lasts without renewal: how long a crashed drawer holds
// the others back (drawLease by default).
func (d *Drawer) WithLease(ttl time.Duration) *Drawer {
	d.lease = ttl
	return d
}

// WithReadBatch sets how many entrants the drawer reads per page of the pre-queue (drawReadBatch by
// default).
func (d *Drawer) WithReadBatch(n int64) *Drawer {
	d.read = n
	return d
}

type drawMetrics struct {
	placed   *prometheus.CounterVec
	duration *prometheus.GaugeVec
	prequeue *prometheus.GaugeVec
}

func newDrawMetrics(reg prometheus.Registerer) *drawMetrics {
	m := &drawMetrics{
		placed: prom.CounterVec("ticketrush_draw_placed_total",
			"Pre-queue entrants placed in line by this instance's draws.", "concert"),
		duration: prom.GaugeVec("ticketrush_draw_duration_seconds",
			"How long the last draw this instance completed took, from seal to the last place.", "concert"),
		prequeue: prom.GaugeVec("ticketrush_draw_prequeue_entrants",
			"Fans in a concert's pre-queue (until its draw is done).", "concert"),
	}
	reg.MustRegister(m.placed, m.duration, m.prequeue)
	return m
}

// NewDrawer returns a drawer over the concerts that concerts lists, registering its metrics with reg.
// owner names this drawer in the lease (unique per process).
func (s *Service) NewDrawer(store DrawStore, concerts func() []string, sales Sales, owner string, reg prometheus.Registerer) *Drawer {
	return &Drawer{store: store, concerts: concerts, sales: sales, owner: owner, now: s.now, log: s.log,
		metrics: newDrawMetrics(reg), done: map[string]bool{}, lease: drawLease, read: drawReadBatch,
		awake: func(string) bool { return true }, busy: func(string) {}}
}

// Tick advances the draw of every concert whose opening has passed and that is not drawn yet.
func (d *Drawer) Tick(ctx context.Context) error {
	var errs []error
	for _, id := range d.concerts() {
		sale := d.sales(id)
		if sale == nil || d.done[id] || sale.ClosedAt(d.now()) {
			continue
		}
		if d.now().Before(sale.OpensAt) {
			if !d.awake(id) {
				continue
			}
			if n, err := d.store.PrequeueSize(ctx, id); err == nil {
				d.metrics.prequeue.WithLabelValues(id).Set(float64(n))
			}
			continue
		}
		if err := d.Run(ctx, id, *sale); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Soon reports whether a sale this drawer has not drawn yet opens within d (or has opened): its loop
// keeps the admission tick's pace until the draw is done.
func (d *Drawer) Soon(within time.Duration) bool {
	horizon := d.now().Add(within)
	for _, id := range d.concerts() {
		if sale := d.sales(id); sale != nil && !d.done[id] && !sale.ClosedAt(d.now()) && sale.OpensAt.Before(horizon) {
			return true
		}
	}
	return false
}

// Run draws one concert, or resumes its draw, if this drawer can take the lease; it returns when the
// draw is done, another drawer holds the lease, or ctx ends (between batches: the next run resumes).
func (d *Drawer) Run(ctx context.Context, concertID string, sale ticketrush.Sale) error {
	st, err := d.store.SealDraw(ctx, concertID, d.now())
	if err != nil {
		return err
	}
	if !st.Sealed {
		return nil
	}
	if st.Drawn() {
		d.done[concertID] = true
		return nil
	}
	mine, err := d.store.LeaseDraw(ctx, concertID, d.owner, d.lease)
	if err != nil || !mine {
		return err
	}
	start := time.Now()
	// The pages may repeat an entrant (see the store's Entrants), never skip one; the draw counts each
	// user once. Distinct users other than the sealed count would publish keys that are not the
	// entrants': the run stops before placing anything (its next run reads again).
	users := make([]string, 0, st.Entrants)
	for cursor := ""; ; {
		page, next, err := d.store.Entrants(ctx, concertID, cursor, d.read)
		if err != nil {
			return err
		}
		users = append(users, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	order := draw.Seed(sale.Seed).Draw(concertID, users)
	if int64(len(order)) != st.Entrants {
		return fmt.Errorf("draw %s: read %d entrants, sealed with %d", concertID, len(order), st.Entrants)
	}
	digest := draw.DigestOf(order)
	d.log.Info("draw started", "concert", concertID, "entrants", len(order), "placed", st.Placed)
	placed := st.Placed
	for placed < st.Entrants || (st.Entrants == 0 && placed == 0) {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(placed+drawPlaceBatch, st.Entrants)
		next, applied, err := d.store.PlaceDraw(ctx, concertID, placed, order[placed:end], digest, d.now())
		if err != nil {
			return err
		}
		if applied {
			d.metrics.placed.WithLabelValues(concertID).Add(float64(end - placed))
		}
		if next <= placed && !applied {
			return fmt.Errorf("draw %s: cursor at %d did not move", concertID, next)
		}
		placed = next
		if placed%(100*drawPlaceBatch) == 0 || placed == st.Entrants {
			d.log.Info("draw progress", "concert", concertID, "placed", placed, "entrants", st.Entrants)
			if _, err := d.store.LeaseDraw(ctx, concertID, d.owner, d.lease); err != nil {
				return err
			}
		}
		if st.Entrants == 0 {
			break
		}
	}
	d.done[concertID] = true
	d.busy(concertID) // the line's first admissions are due
	d.metrics.duration.WithLabelValues(concertID).Set(time.Since(start).Seconds())
	d.metrics.prequeue.WithLabelValues(concertID).Set(0)
	d.log.Info("draw done", "concert", concertID, "entrants", st.Entrants, "seconds",
		strconv.FormatFloat(time.Since(start).Seconds(), 'f', 3, 64))
	return nil
}

// RunLoop advances the draws every interval until ctx ends.
func (d *Drawer) RunLoop(ctx context.Context, interval time.Duration) {
	periodic.Run(ctx, interval, d.Tick, d.log, "draw")
}
