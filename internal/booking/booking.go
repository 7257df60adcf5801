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

// Store is the purchase state in Redis: a concert's side and a wallet's side, each in a hash slot of its
// own (a payment crosses from one to the other in idempotent steps).
type Store interface {
	ConcertStore
	WalletStore
}

// ConcertStore is the state of one concert (its hash slot): seats, holds and reservations.
type ConcertStore interface {
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
	store   Store
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
func NewService(store Store, catalog Catalog, gate Gate, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Service {
	m := newMetrics(reg)
	s := &Service{store: store, catalog: catalog, gate: gate, now: now, log: log, metrics: m,
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

// Balance returns the user's points.
func (s *Service) Balance(ctx context.Context, userID string) (int64, error) {
	return s.store.Balance(ctx, userID)
}

// Charge adds points. With an idempotency key, a retry with the same amount replies with the first
// charge (replayed) and the same key with another amount is refused.
func (s *Service) Charge(ctx context.Context, userID string, amount int64, idemKey string) (ticketrush.Charge, bool, error) {
	if amount < 1 || amount > ticketrush.MaxChargeAmount {
		return ticketrush.Charge{}, false, ticketrush.ErrInvalidAmount
	}
	c, replayed, err := s.store.Charge(ctx, userID, amount, idemKey, fmt.Sprintf("POST /v1/points/charges %d", amount), s.now())
	if err != nil {
		return c, false, err
	}
	if !replayed {
		s.metrics.charged.Add(float64(amount))
	}
	return c, replayed, nil
}

// PayOnce is Pay with an optional Idempotency-Key: a retry with the same key and reservation answers as
// the first request did without acting again, a refusal as much as a payment; the same key with
// another request is refused.
//
// The key is reserved before paying, in one script call that every other request with the key sees, so
// one key pays one reservation however many requests race with it. A request that finds the key
// reserved for the same reservation waits (up to keyWait) for the first request's answer and repeats
// it. A payment refused by the sale's rules (replayedRefusal) records its refusal under the key; one
// that failed otherwise (Redis did not answer) releases the key, so its retry acts. When the first
// request crashed before recording its answer, the request that waited for it in vain finishes the
// payment itself (Pay is idempotent per reservation: one debit) and records the answer; the first
// answer recorded stands.
func (s *Service) PayOnce(ctx context.Context, userID, resID, idemKey string) (ticketrush.Payment, bool, error) {
	if idemKey == "" {
		return s.Pay(ctx, userID, resID)
	}
	fingerprint := "POST /v1/payments " + resID
	reserved, done, ref, created, err := s.store.ReserveKey(ctx, userID, idemKey, fingerprint, ticketrush.PaymentID(resID), s.now())
	if err != nil {
		return ticketrush.Payment{}, false, err // a refusal the key recorded comes back here
	}
	if !reserved && !done {
		if reserved, done, ref, created, err = s.awaitKey(ctx, userID, idemKey, fingerprint, resID); err != nil {
			return ticketrush.Payment{}, false, err
		}
	}
	if done {
		p, err := s.Payment(ctx, userID, ref)
		return p, created, err
	}
	p, created, err := s.Pay(ctx, userID, resID)
	if err != nil {
		if code, ok := replayedRefusal(err); ok {
			a, rerr := s.store.RememberRefusal(ctx, userID, idemKey, fingerprint, code, s.now())
			if rerr != nil {
				s.log.Warn("idempotency key's refusal not recorded", "err", rerr)
				return p, false, err // the key stays reserved: a retry waits for it, then acts
			}
			return s.keyAnswer(ctx, userID, a)
		}
		if reserved {
			if rerr := s.store.ReleaseKey(ctx, userID, idemKey, fingerprint, s.now()); rerr != nil {
				s.log.Warn("idempotency key not released", "err", rerr)
			}
		}
		return p, false, err
	}
	a, err := s.store.Remember(ctx, userID, idemKey, fingerprint, p.ID, created, s.now())
	if err != nil {
		return ticketrush.Payment{}, false, err // paid; the retry with the key finds it and records the answer
	}
	if a.Refused != nil {
		return ticketrush.Payment{}, false, a.Refused
	}
	if a.Ref != p.ID {
		return ticketrush.Payment{}, false, fmt.Errorf("idempotency key recorded payment %s, not %s", a.Ref, p.ID)
	}
	// The key's answer is this payment, as the first request to record it said (created): the payment
	// is the one Pay has just read back from Redis, without reading it a second time.
	return p, a.Created, nil
}

// keyAnswer is the reply of the answer an Idempotency-Key recorded: its payment, or its refusal.
func (s *Service) keyAnswer(ctx context.Context, userID string, a ticketrush.KeyAnswer) (ticketrush.Payment, bool, error) {
	if a.Refused != nil {
		return ticketrush.Payment{}, false, a.Refused
	}
	p, err := s.Payment(ctx, userID, a.Ref)
	return p, a.Created, err
}

// replayedRefusal is the code of a payment's refusal by the sale's rules, which its Idempotency-Key
// answers every retry with: a code the error table marks as a refusal (for a payment: the reservation
// unknown or not the caller's, not held, expired, or the balance short). A failure that says nothing of
// the payment (Redis did not answer, the request was cut, the rate limit) is not one: its retry acts.
func replayedRefusal(err error) (ticketrush.Code, bool) {
	if errors.Is(err, ticketrush.ErrUnavailable) {
		return "", false
	}
	code := ticketrush.ErrorCode(err)
	info, ok := ticketrush.LookupCode(code)
	return code, ok && info.Refusal
}

// keyWait bounds how long a request waits for the answer of an earlier request with its
// Idempotency-Key; keyPoll is how often it looks.
const (
	keyWait = time.Second
	keyPoll = 10 * time.Millisecond
)

// awaitKey waits for the request that reserved an Idempotency-Key to record its answer: done is false
// when it did not within keyWait (it crashed) or released the key (it was refused: took is true, this
// request has the key now), and the caller acts itself.
func (s *Service) awaitKey(ctx context.Context, userID, key, fingerprint, resID string) (took, done bool, ref string, created bool, err error) {
	deadline := time.NewTimer(keyWait)
	defer deadline.Stop()
	tick := time.NewTicker(keyPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, false, "", false, fmt.Errorf("%w: %w", ticketrush.ErrUnavailable, ctx.Err())
		case <-deadline.C:
			return false, false, "", false, nil
		case <-tick.C:
		}
		reserved, done, ref, created, err := s.store.ReserveKey(ctx, userID, key, fingerprint, ticketrush.PaymentID(resID), s.now())
		if err != nil || done || reserved { // reserved: the first request was refused and released the key
			return reserved, done, ref, created, err
		}
	}
}

// Pay pays for a reservation from the user's points: claim the hold, debit the wallet once per
// reservation, complete the sale. created is false when the reservation was PAID already (the same
// payment is returned).
func (s *Service) Pay(ctx context.Context, userID, resID string) (ticketrush.Payment, bool, error) {
	r, err := s.store.Claim(ctx, userID, resID, s.now())
	if err != nil {
		s.refused(err)
		return ticketrush.Payment{}, false, err
	}
	if r.Status == ticketrush.ReservationPaid {
		return ticketrush.PaymentOf(r), false, nil
	}
	s.seats.existing(r.ScheduleID).changed(r.SeatID, &ticketrush.TakenSeat{Paying: true})
	s.changedSeats(ctx, r.ConcertID) // the claim, and the sale or release just after it
	if err := s.step(AfterClaim); err != nil {
		return ticketrush.Payment{}, false, err
	}
	debit, err := s.store.Debit(ctx, userID, resID, r.Price, s.now())
	if errors.Is(err, ticketrush.ErrInsufficientBalance) || errors.Is(err, ticketrush.ErrReservationNotHeld) {
		s.refused(err)
		released, rerr := s.store.Release(ctx, resID, s.now())
		if rerr != nil {
			return ticketrush.Payment{}, false, errors.Join(err, rerr) // the sweeper releases it
		}
		s.released(released)
		return ticketrush.Payment{}, false, err
	}
	if err != nil {
		return ticketrush.Payment{}, false, err
	}
	if err := s.step(AfterDebit); err != nil {
		return ticketrush.Payment{}, false, err
	}
	done, err := s.complete(ctx, userID, resID, debit)
	if err != nil {
		return ticketrush.Payment{}, false, err
	}
	if err := s.step(AfterComplete); err != nil {
		return ticketrush.Payment{}, false, err
	}
	// Two requests for one reservation at once may both get here: both answer 201 with the one payment.
	return ticketrush.PaymentOf(done), true, nil
}

// complete is step 3, with the compensating refund when the sale can no longer happen (the sweeper
// released the claim while this payment was debiting).
func (s *Service) complete(ctx context.Context, userID, resID string, debit ticketrush.Payment) (ticketrush.Reservation, error) {
	r, err := s.store.Complete(ctx, resID, debit, s.now())
	if errors.Is(err, ticketrush.ErrReservationNotHeld) {
		if _, rerr := s.store.Refund(ctx, userID, resID, s.now()); rerr != nil {
			return r, fmt.Errorf("refund after a failed sale: %w", rerr)
		}
		s.metrics.refunded.Add(float64(debit.Amount))
		s.refused(ticketrush.ErrReservationExpired)
		return r, ticketrush.ErrReservationExpired
	}
	if err != nil {
		return r, err
	}
	if r.PaymentID == debit.ID && r.Status == ticketrush.ReservationPaid {
		s.metrics.paid.WithLabelValues(r.ConcertID).Inc()
		s.metrics.debited.Add(float64(debit.Amount))
	}
	if r.Status == ticketrush.ReservationPaid {
		s.seats.existing(r.ScheduleID).changed(r.SeatID, &ticketrush.TakenSeat{Sold: true})
		s.seats.ended(r.ConcertID, userID) // DONE when it was the fan's last open hold
		if s.tokenChanged != nil {
			s.tokenChanged(r.ConcertID, userID)
		}
	}
	return r, nil
}

// released tells the seat view what a payment's release left: the hold again, or the seat free.
func (s *Service) released(r ticketrush.Reservation) {
	switch r.Status {
	case ticketrush.ReservationHeld:
		s.seats.existing(r.ScheduleID).changed(r.SeatID, &ticketrush.TakenSeat{HeldUntil: r.ExpiresAt.UnixMilli()})
	case ticketrush.ReservationExpired:
		s.seats.existing(r.ScheduleID).changed(r.SeatID, nil)
	}
}

// Payment returns one of the user's payments.
func (s *Service) Payment(ctx context.Context, userID, id string) (ticketrush.Payment, error) {
	resID, ok := ticketrush.ReservationOfPayment(id)
	if !ok {
		return ticketrush.Payment{}, ticketrush.ErrNotFound
	}
	r, err := s.Reservation(ctx, userID, resID)
	if err != nil {
		return ticketrush.Payment{}, err
	}
	if r.Status != ticketrush.ReservationPaid {
		return ticketrush.Payment{}, ticketrush.ErrNotFound
	}
	return ticketrush.PaymentOf(r), nil
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
