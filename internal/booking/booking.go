// Package booking is what an admitted fan does: list schedules and seats, hold a seat, charge points and
// pay. State lives in Redis behind Store, one Lua script per state change; a payment crosses the
// concert's and the wallet's hash slots as a short sequence of idempotent steps keyed by the
// reservation id (claim, debit, complete), with a compensating refund, and the sweeper finishes or
// undoes any payment a crash left in the middle.
package booking

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// SeatStore is the seat side of the sale: the seat maps, holds, reservations and their payments. A
// payment crosses from it to the wallet's side (WalletStore), each in hash slots of its own, in
// idempotent steps.
type SeatStore interface {
	SeatViewStore
	GatedScheduleCounts(ctx context.Context, c ticketrush.QueueClaims, scheduleIDs []string, now time.Time) (ticketrush.TokenState, []ticketrush.ScheduleCount, error)
	GatedSeats(ctx context.Context, c ticketrush.QueueClaims, scheduleID string, now time.Time) (ticketrush.TokenState, map[string]ticketrush.SeatStatus, error)
	ScheduleCounts(ctx context.Context, concertID string, scheduleIDs []string, now time.Time) ([]ticketrush.ScheduleCount, error)
	Hold(ctx context.Context, c ticketrush.QueueClaims, scheduleID, seatID string, price int64, now time.Time) (ticketrush.Reservation, bool, error)
	Reservation(ctx context.Context, id string) (ticketrush.Reservation, error)
	Cancel(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error)
	Sweep(ctx context.Context, concertID string, scheduleIDs []string, now time.Time, batch int) (int, error)
	Claim(ctx context.Context, userID, id string, now time.Time) (ticketrush.Reservation, error)
	Complete(ctx context.Context, id string, d ticketrush.Payment, now time.Time) (ticketrush.Reservation, error)
	Release(ctx context.Context, id string, now time.Time) (ticketrush.Reservation, error)
	StuckPayments(ctx context.Context, concertID string, before time.Time, limit int) ([]string, error)
}

// WalletStore is the state of the fans' wallets (one hash slot per wallet shard): balances, debits,
// refunds and Idempotency-Key records.
type WalletStore interface {
	Debit(ctx context.Context, userID, resID string, amount int64, now time.Time) (ticketrush.Payment, error)
	Debited(ctx context.Context, userID, resID string) (ticketrush.Payment, bool, error)
	Refund(ctx context.Context, userID, resID string, now time.Time) (bool, error)
	Balance(ctx context.Context, userID string) (int64, error)
	Charge(ctx context.Context, userID string, amount int64, idemKey, fingerprint string, now time.Time) (ticketrush.Charge, bool, error)
	ReserveKey(ctx context.Context, userID, key, fingerprint, ref string, now time.Time) (reserved, done bool, doneRef string, created bool, err error)
	Remember(ctx context.Context, userID, key, fingerprint, ref string, created bool, now time.Time) (ticketrush.KeyAnswer, error)
	RememberRefusal(ctx context.Context, userID, key, fingerprint string, code ticketrush.Code, now time.Time) (ticketrush.KeyAnswer, error)
	ReleaseKey(ctx context.Context, userID, key, fingerprint string, now time.Time) error
}

// Catalog is the concert catalog.
type Catalog interface {
	Concert(id string) (ticketrush.Concert, bool)
	IDs() []string
	ScheduleConcert(scheduleID string) (string, bool)
}

// Gate verifies queue tokens: genuine, the user's, for the concert; a pre-queue token as the place its
// entrant was drawn to (the waiting room's Verify).
type Gate interface {
	Verify(ctx context.Context, userID, concertID, token string) (ticketrush.QueueClaims, error)
}

// Step names a payment step boundary, for crash-injection tests.
type Step string

// The payment's step boundaries.
const (
	AfterClaim    Step = "claim"
	AfterDebit    Step = "debit"
	AfterComplete Step = "complete"
)

// Service is the purchase path.
type Service struct {
	store   SeatStore
	wallet  WalletStore
	catalog Catalog
	gate    Gate
	now     func() time.Time
	log     *slog.Logger
	metrics *metrics
	seats   *seatView // the instance's seat view, while RunSeatView runs
	// seatsChanged, when set, is told of every concert whose seats a hold, a cancel or a payment
	// changed here (queue.Activity.SeatsChanged wakes it for every process).
	seatsChanged func(ctx context.Context, concertID string)
	// tokenChanged, when set, is told of every fan whose payment completed here: their event streams on
	// this instance check their token at once (the last paid hold makes it DONE).
	tokenChanged func(concertID, userID string)

	// crash, when set, is called at each payment step boundary; an error stops the payment there as a
	// crash would. Tests only.
	crash func(Step) error
}

// NewService returns the purchase path.
func NewService(store SeatStore, wallet WalletStore, catalog Catalog, gate Gate, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Service {
	m := newMetrics(reg)
	s := &Service{store: store, wallet: wallet, catalog: catalog, gate: gate, now: now, log: log, metrics: m,
		seats: newSeatView(store, now, m)}
	if g, ok := gate.(interface {
		OnLeave(func(concertID, userID string))
	}); ok {
		g.OnLeave(s.left) // the waiting room: a leave here ends what this instance proved of the token
	}
	if g, ok := gate.(interface {
		TokenChanged(concertID, userID string)
	}); ok {
		s.tokenChanged = g.TokenChanged // the waiting room: a payment may make the token DONE
	}
	return s
}

// TrackActivity tells seatsChanged of every concert whose seats a hold, a cancel or a payment changed
// on this instance (each wrote events to the concert's stream): queue.Activity.SeatsChanged, so that
// the scheduler sweeps the hold and the write-behind reads the stream in whatever process they run.
func (s *Service) TrackActivity(seatsChanged func(ctx context.Context, concertID string)) {
	s.seatsChanged = seatsChanged
}

// changedSeats tells the activity tracker that the concert's seats changed here.
func (s *Service) changedSeats(ctx context.Context, concertID string) {
	if s.seatsChanged != nil {
		s.seatsChanged(ctx, concertID)
	}
}

// Schedules lists a concert's schedules with their available seats, for an ACTIVE token.
func (s *Service) Schedules(ctx context.Context, userID, concertID, token string) ([]ticketrush.ScheduleAvailability, error) {
	c, claims, err := s.authorize(ctx, userID, concertID, token)
	if err != nil {
		return nil, err
	}
	st, counts, err := s.store.GatedScheduleCounts(ctx, claims, c.ScheduleIDs(), s.now())
	if err != nil {
		return nil, err
	}
	if err := st.Status.GateError(); err != nil {
		return nil, err
	}
	total := int64(c.TotalSeats())
	out := make([]ticketrush.ScheduleAvailability, len(c.Schedules))
	for i, sc := range c.Schedules {
		out[i] = ticketrush.ScheduleAvailability{Schedule: sc, Available: total - counts[i].Taken, Total: total}
	}
	return out, nil
}

// Seats returns the seat map of a schedule, for an ACTIVE token (see SeatMap; the seats are shared and
// must not be modified).
func (s *Service) Seats(ctx context.Context, userID, concertID, scheduleID, token string) ([]ticketrush.Seat, error) {
	m, err := s.SeatMap(ctx, userID, concertID, scheduleID, token)
	if err != nil {
		return nil, err
	}
	return m.Seats, nil
}

// SeatMap returns the seat map of a schedule, for an ACTIVE token, whatever its size. While the seat view
// runs, the map is the view's, shared by every reader until the view sees a change (as of its last
// refresh, or this instance's own changes since), and the token check is a round trip only when no gated
// call on this instance proved the token ACTIVE within the last second (the first read of a schedule the
// view has not loaded reads its seats too, a second round trip). Without the view, one round trip checks
// the token and reads the seats.
func (s *Service) SeatMap(ctx context.Context, userID, concertID, scheduleID, token string) (*ticketrush.SeatMap, error) {
	c, claims, err := s.authorize(ctx, userID, concertID, token)
	if err != nil {
		return nil, err
	}
	if _, ok := c.Schedule(scheduleID); !ok {
		return nil, noSchedule(c, scheduleID)
	}
	now := s.now()
	if v := s.seats.schedule(c, scheduleID); v != nil {
		// The token check: answered from this instance's proof when a gated call here found the token
		// ACTIVE within the last second (and before its activeUntil); that call also marked the fan as
		// shown up. Otherwise the gate runs in Redis and leaves a proof for the next second's reads.
		if !s.seats.active(claims, now) {
			st, err := s.store.Gate(ctx, claims, now)
			if err != nil {
				return nil, err
			}
			if err := st.Status.GateError(); err != nil {
				s.seats.refuted(claims)
				return nil, err
			}
			s.seats.proven(claims, now, st.ActiveUntil)
		}
		if err := s.seats.loadFirst(ctx, v); err != nil {
			return nil, err
		}
		return v.seatMap(ctx, s.now)
	}
	st, taken, err := s.store.GatedSeats(ctx, claims, scheduleID, now)
	if err != nil {
		return nil, err
	}
	if err := st.Status.GateError(); err != nil {
		return nil, err
	}
	seats := baseSeats(c)
	for i := range seats {
		if status, ok := taken[seats[i].ID]; ok {
			seats[i].Status = status
		}
	}
	return &ticketrush.SeatMap{ScheduleID: scheduleID, Seats: seats, AsOf: now}, nil
}

// Hold holds a seat for an ACTIVE token.
func (s *Service) Hold(ctx context.Context, userID, token, scheduleID, seat string) (ticketrush.Reservation, error) {
	c, claims, err := s.authorize(ctx, userID, "", token)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	if _, ok := c.Schedule(scheduleID); !ok {
		if _, elsewhere := s.catalog.ScheduleConcert(scheduleID); elsewhere {
			return ticketrush.Reservation{}, ticketrush.WithDetail(ticketrush.ErrQueueTokenInvalid,
				"the queue token is for another concert; join this concert's line for a token of its own")
		}
		return ticketrush.Reservation{}, noSchedule(c, scheduleID)
	}
	sec, ok := c.Seat(seat)
	if !ok {
		return ticketrush.Reservation{}, noSeat(c, scheduleID, seat)
	}
	now := s.now()
	v := s.seats.schedule(c, scheduleID)
	if v != nil && v.refuses(seat, now.UnixMilli()) && s.seats.active(claims, now) {
		// The view shows the seat sold, or held past now, and the token was ACTIVE a moment ago: the
		// script would refuse it too (see seatview.go for the windows where it may not).
		s.metrics.holdsRefused.WithLabelValues(refusal(ticketrush.ErrSeatUnavailable)).Inc()
		s.metrics.refusedInMemory.Inc()
		return ticketrush.Reservation{}, ticketrush.ErrSeatUnavailable
	}
	r, lapsed, err := s.store.Hold(ctx, claims, scheduleID, seat, sec.Price, now)
	s.seats.learn(claims, now, err)
	if err != nil {
		if errors.Is(err, ticketrush.ErrSeatUnavailable) || errors.Is(err, ticketrush.ErrHoldLimitReached) {
			s.metrics.holdsRefused.WithLabelValues(refusal(err)).Inc()
		}
		return r, err
	}
	v.changed(seat, &ticketrush.TakenSeat{HeldUntil: r.ExpiresAt.UnixMilli()})
	s.changedSeats(ctx, c.ID)
	s.metrics.held.WithLabelValues(c.ID).Inc()
	if lapsed {
		s.metrics.lapsed.WithLabelValues(c.ID).Inc()
	}
	return r, nil
}

// Reservation returns one of the user's reservations.
func (s *Service) Reservation(ctx context.Context, userID, id string) (ticketrush.Reservation, error) {
	r, err := s.store.Reservation(ctx, id)
	if err != nil {
		return r, err
	}
	if r.UserID != userID {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	return r, nil
}

// Cancel gives back one of the user's HELD seats.
func (s *Service) Cancel(ctx context.Context, userID, id string) error {
	r, err := s.store.Cancel(ctx, userID, id, s.now())
	if err != nil {
		return err
	}
	s.seats.existing(r.ScheduleID).changed(r.SeatID, nil)
	s.changedSeats(ctx, r.ConcertID)
	s.metrics.cancelled.WithLabelValues(r.ConcertID).Inc()
	return nil
}

func (s *Service) step(st Step) error {
	if s.crash == nil {
		return nil
	}
	return s.crash(st)
}

func (s *Service) refused(err error) {
	if r := refusal(err); r != "" {
		s.metrics.paymentsRefused.WithLabelValues(r).Inc()
	}
}

// left forgets what this instance proved of a fan's token that has just ended here (they left the
// line): the next seat map or hold with it asks Redis, which answers 410.
func (s *Service) left(concertID, userID string) { s.seats.ended(concertID, userID) }

// authorize verifies a gated call's queue token and returns its concert: the token's own when
// concertID is "". (Admission is the queue's business; this only reads the token it issued.)
func (s *Service) authorize(ctx context.Context, userID, concertID, token string) (ticketrush.Concert, ticketrush.QueueClaims, error) {
	claims, err := s.gate.Verify(ctx, userID, concertID, token)
	if err != nil {
		return ticketrush.Concert{}, claims, err
	}
	c, ok := s.catalog.Concert(claims.ConcertID)
	if !ok {
		return c, claims, ticketrush.ErrNotFound
	}
	return c, claims, nil
}

// noSchedule is the 404 of a schedule id the concert does not have, saying which and where its dates are.
func noSchedule(c ticketrush.Concert, scheduleID string) error {
	return ticketrush.WithDetail(ticketrush.ErrNotFound, fmt.Sprintf(
		"concert %s has no schedule %.64q; GET /v1/concerts/%s/schedules lists its dates", c.ID, scheduleID, c.ID))
}

// noSeat is the 404 of a seat id the concert does not have, saying which and where its seats are.
func noSeat(c ticketrush.Concert, scheduleID, seat string) error {
	return ticketrush.WithDetail(ticketrush.ErrNotFound, fmt.Sprintf(
		"schedule %s has no seat %.64q; seat ids are <section>-<number> from 1, as GET /v1/concerts/%s/schedules/%s/seats lists them",
		scheduleID, seat, c.ID, scheduleID))
}
