package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/prom"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The on-sale (docs/api.md, "On-sale"): pre-queue tokens, the drawn places of entrants, and the drawer that
// runs each concert's draw once, resumably, off the request path.

// OnSaleStore is the on-sale's state in Redis.
type OnSaleStore interface {
	PrequeueStatus(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.TokenState, uint64, error)
	DrawState(ctx context.Context, concertID string) (ticketrush.DrawState, error)
	LeavePrequeue(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.QueueStatus, error)
	DrawPlaceOf(ctx context.Context, concertID string, key draw.Key, n int64) (int64, error)
}

// leavePrequeue gives back a pre-queue token (seq 0): before the seal the fan leaves the pre-queue; once
// the draw placed them, they leave their place in line. Between the two (the pre-queue sealed at the
// opening, this entrant's batch not placed yet) there is nothing yet to leave: the leave waits for the
// place, asking again every placeRetry, and answers ErrUnavailable (503, retry) if ctx ends first, so
// that a leave that answers at all has taken the fan out.
func (s *Service) leavePrequeue(ctx context.Context, claims ticketrush.QueueClaims) (ticketrush.QueueStatus, uint64, error) {
	if s.onSale == nil {
		return "", 0, nil
	}
	from, err := s.onSale.store.LeavePrequeue(ctx, claims.ConcertID, claims.UserID, s.now())
	if err != nil || from != "" {
		return from, 0, err
	}
	retry := time.NewTicker(placeRetry)
	defer retry.Stop()
	for { // sealed (a pre-queue never opens again) or no entrant: only the place can come
		st, seq, err := s.onSale.store.PrequeueStatus(ctx, claims.ConcertID, claims.UserID, s.now())
		if err != nil {
			return "", 0, err
		}
		if seq > 0 {
			from, err = s.store.Leave(ctx, claims.ConcertID, claims.UserID, seq, s.now())
			return from, seq, err
		}
		if st.Status != ticketrush.StatusPrequeue {
			return "", 0, nil // no entrant (any more): nothing to give back
		}
		select {
		case <-ctx.Done():
			return "", 0, ticketrush.WithDetail(ticketrush.ErrUnavailable,
				"the draw is still placing the pre-queue's entrants: leave again in a moment")
		case <-retry.C:
		}
	}
}

// placeRetry is how often a leave between the seal and the entrant's place asks whether the place came.
const placeRetry = 50 * time.Millisecond

// Sales returns a concert's sale, nil for a concert without one (or unknown).
type Sales func(concertID string) *ticketrush.Sale

// onSale is what the service needs for concerts with a sale; nil until EnableOnSale.
type onSale struct {
	store OnSaleStore
	sales Sales
}

// EnableOnSale lets the service answer pre-queue tokens and show draw keys, over store and the
// catalog's sales. Call it before serving.
func (s *Service) EnableOnSale(store OnSaleStore, sales Sales) {
	s.onSale = &onSale{store: store, sales: sales}
}

func (s *Service) sale(concertID string) *ticketrush.Sale {
	if s.onSale == nil {
		return nil
	}
	return s.onSale.sales(concertID)
}

// askPlace asks Redis for a pre-queue token's state and the arrival seq the draw gave its entrant (0
// while they have none), and keeps a place in the view, so that this instance asks once per entrant.
func (s *Service) askPlace(ctx context.Context, claims ticketrush.QueueClaims, v *view) (ticketrush.TokenState, uint64, error) {
	if s.onSale == nil {
		return ticketrush.TokenState{}, 0, errors.New("pre-queue token without an on-sale store")
	}
	st, seq, err := s.onSale.store.PrequeueStatus(ctx, claims.ConcertID, claims.UserID, s.now())
	if err == nil && seq > 0 {
		v.placed(claims.UserID, seq)
	}
	return st, seq, err
}

// prequeueStatus answers a poll of a pre-queue token (seq 0). Once the draw placed the entrant, the
// ticket carries a fresh token of their place (both work); the place is kept in the view, so a poll with
// the old token costs a Redis round trip once per instance, not once per poll.
//
// Once the concert is sold out, the old token reads what the fresh one does: SOLD_OUT while the entrant
// is still unplaced or waiting (the line is closed), and ACTIVE, DONE or EXPIRED as they are.
func (s *Service) prequeueStatus(ctx context.Context, token string, claims ticketrush.QueueClaims, v *view) (ticketrush.Ticket, error) {
	if seq, ok := v.placeOf(claims.UserID); ok {
		if seq == 0 { // drawn without this fan: they left the pre-queue before its seal
			s.metrics.fromView.Inc()
			return s.ticket(token, claims, ticketrush.TokenState{Status: ticketrush.StatusExpired}, v), nil
		}
		placed := auth.NewClaims(claims.ConcertID, claims.UserID, seq)
		if st, pos, ok := v.lookup(seq); ok {
			if st == ticketrush.StatusWaiting {
				s.alive(claims.ConcertID, claims.UserID, seq) // a poll with the pre-queue token is a sign of life too
			}
			s.metrics.fromView.Inc()
			return s.ticket(s.tokens.Sign(placed), placed, ticketrush.TokenState{Status: st, Position: pos}, v), nil
		}
		s.metrics.fromRedis.Inc()
		st, err := s.store.TokenStatus(ctx, placed, s.now())
		if err != nil {
			return ticketrush.Ticket{}, err
		}
		if st.Status == ticketrush.StatusWaiting {
			s.alive(claims.ConcertID, claims.UserID, seq)
		}
		return s.ticket(s.tokens.Sign(placed), placed, st, v), nil
	}
	s.metrics.fromRedis.Inc()
	st, seq, err := s.askPlace(ctx, claims, v)
	if err == nil && seq == 0 && st.Status == ticketrush.StatusExpired {
		st, seq, err = s.formerPlace(ctx, claims, v, st)
	}
	if err != nil {
		return ticketrush.Ticket{}, err
	}
	if v.isSoldOut() && (st.Status == ticketrush.StatusPrequeue || st.Status == ticketrush.StatusWaiting) {
		st = ticketrush.TokenState{Status: ticketrush.StatusSoldOut} // the line is closed: nobody waiting is admitted
	}
	if seq > 0 {
		if err := s.refreshDraw(ctx, claims.ConcertID, v); err != nil { // the draw key shows as soon as it is done
			return ticketrush.Ticket{}, err
		}
		if st.Status == ticketrush.StatusWaiting { // the first poll of the old token here counts as polling too
			s.alive(claims.ConcertID, claims.UserID, seq)
		}
		placed := auth.NewClaims(claims.ConcertID, claims.UserID, seq)
		return s.ticket(s.tokens.Sign(placed), placed, st, v), nil
	}
	return s.ticket(token, claims, st, v), nil
}

// formerPlace is the state of a drawn entrant who is neither waiting nor ACTIVE any more (the pre-queue
// state reads EXPIRED): the draw gave them a place, which their key finds among the draw's keys, and the
// token of that place says whether they left, lapsed or finished (DONE), as it does for the fresh
// token. A fan who was never drawn (who left the pre-queue before the seal) stays EXPIRED, which the view
// keeps: their later polls cost no search.
func (s *Service) formerPlace(ctx context.Context, claims ticketrush.QueueClaims, v *view, expired ticketrush.TokenState) (ticketrush.TokenState, uint64, error) {
	sale := s.sale(claims.ConcertID)
	if sale == nil {
		return expired, 0, nil
	}
	if err := s.refreshDraw(ctx, claims.ConcertID, v); err != nil {
		return expired, 0, err
	}
	d, drawn := v.drawState()
	if !drawn {
		return expired, 0, nil
	}
	place, err := s.onSale.store.DrawPlaceOf(ctx, claims.ConcertID, draw.Seed(sale.Seed).KeyOf(claims.ConcertID, claims.UserID), d.Entrants)
	if err != nil {
		return expired, 0, err
	}
	if place == 0 {
		v.placed(claims.UserID, 0) // not an entrant of a complete draw, for good: the view answers next time
		return expired, 0, nil
	}
	seq := uint64(d.Base + place)
	st, err := s.store.TokenStatus(ctx, auth.NewClaims(claims.ConcertID, claims.UserID, seq), s.now())
	if err != nil {
		return expired, 0, err
	}
	v.placed(claims.UserID, seq)
	return st, seq, nil
}

// prequeuePacing is the estimated wait and poll interval of a PREQUEUE token at now: the wait counts down
// to the opening; polls spread at random over up to a minute while the opening is far, and come back
// within a few seconds after it (the draw of a large pre-queue takes seconds).
func prequeuePacing(opensAt, now time.Time) (wait, pollAfter time.Duration) {
	until := opensAt.Sub(now)
	if until < 0 {
		return 0, time.Second
	}
	secs := math.Ceil(until.Seconds())
	jitter := time.Duration(rand.IntN(3)+1) * time.Second
	if until > 2*time.Minute {
		// Far from the opening: one poll somewhere in the next 30-60 s, so a million entrants spread out.
		return time.Duration(secs) * time.Second, time.Duration(30+rand.IntN(31)) * time.Second
	}
	return time.Duration(secs) * time.Second, time.Duration(secs)*time.Second + jitter
}

// drawKey is the draw key of a token's fan once the pre-queue they joined is drawn, else "": a fan who
// joined after the opening was never drawn and has none (their key would be in no keys file). A
// pre-queue token (seq 0) stands for the place this instance learnt for its entrant.
func (s *Service) drawKey(c ticketrush.QueueClaims, v *view) string {
	sale := s.sale(c.ConcertID)
	if sale == nil {
		return ""
	}
	seq := c.Seq
	if seq == 0 {
		seq, _ = v.placeOf(c.UserID)
	}
	if !v.drawnEntrant(seq) {
		return ""
	}
	return draw.Seed(sale.Seed).KeyOf(c.ConcertID, c.UserID).Hex()
}

// refreshDraw learns whether a sale's draw is done (once it is, never asked again).
func (s *Service) refreshDraw(ctx context.Context, concertID string, v *view) error {
	if s.sale(concertID) == nil || v.isDrawn() {
		return nil
	}
	st, err := s.onSale.store.DrawState(ctx, concertID)
	if err != nil {
		return err
	}
	if st.Drawn() {
		v.setDrawn(st)
	}
	return nil
}

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
