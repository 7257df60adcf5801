package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// In-memory fakes of the server's dependencies, one struct per interface, over one fixed set of
// fixtures, so that a table test can name a user, a queue token or a concert without building them.
// Each fake has an Err field: when set, its methods return it (a Redis or Postgres outage) once
// they are past the checks that need no store.
// To serve a new dependency: add its fake here, a field for it to fakes and to fakes.deps.

// Fixtures.
const (
	testAdminToken = "test-admin-token"

	// Users: the bearer token a fake user sends is "jwt-" + their id.
	userAlice = "alice"
	userBob   = "bob"
	userCarol = "carol"
	userDave  = "dave"

	concert1  = "c0ncert1" // on sale: two schedules, sections VIP (2 seats) and R (3 seats)
	concert2  = "c0ncert2" // on sale: one schedule, section A (1 seat)
	schedule1 = "s0ched1"  // concert1's first schedule
	schedule2 = "s0ched2"
	schedule3 = "s0ched3" // concert2's
	noConcert = "n0concert"

	// Queue tokens: the fake's tokens are opaque strings, the real ones are signed.
	qtAliceActive  = "qt-alice-c1-active"  // alice, concert1, ACTIVE
	qtBobWaiting   = "qt-bob-c1-waiting"   // bob, concert1, WAITING at position 1
	qtCarolExpired = "qt-carol-c1-expired" // carol, concert1, EXPIRED
	qtDaveDone     = "qt-dave-c1-done"     // dave, concert1, DONE
	qtBobSoldOut   = "qt-bob-c2-soldout"   // bob, concert2, SOLD_OUT
	qtAliceC2      = "qt-alice-c2-active"  // alice, concert2, ACTIVE
	qtForged       = "qt-forged"           // unknown to the queue

	// Reservations, all on concert1's schedule1 but resBobHeld.
	resAliceHeld      = "r0alice0held"      // VIP-1, HELD
	resAlicePaid      = "r0alice0paid"      // VIP-2, PAID by payment "p" + id
	resAliceExpired   = "r0alice0expired"   // R-1, EXPIRED
	resAliceCancelled = "r0alice0cancelled" // R-2, CANCELLED
	resBobHeld        = "r0bob0held"        // schedule2 R-3, HELD
	noReservation     = "r0none"

	// Balances: alice 500,000, bob nothing, carol 1,000 short of the limit; alice charged 10,000 with
	// key idemAlice before.
	idemAlice = "key-alice-1"
)

// testNow is the fakes' clock, the real time at start: the handlers read the real clock to tell a
// lapsed hold, so the fixtures' expiries are set around it.
var testNow = time.Now().UTC().Truncate(time.Second)

// bearerOf returns the Authorization header value of a fake user.
func bearerOf(user string) string { return "Bearer jwt-" + user }

// fakes is one set of dependencies over the fixtures; tests change it before building the server.
type fakes struct {
	Users   *fakeUsers
	Queue   *fakeQueue
	Catalog *fakeCatalog
	Booking *fakeBooking
	Ledger  *fakeLedger
	Ready   map[string]Check
}

func newFakes() *fakes {
	f := &fakes{
		Users:   newFakeUsers(userAlice, userBob, userCarol, userDave),
		Queue:   newFakeQueue(),
		Catalog: newFakeCatalog(),
		Ready: map[string]Check{
			"redis":    func(context.Context) error { return nil },
			"postgres": func(context.Context) error { return nil },
		},
	}
	f.Booking = newFakeBooking(f.Queue, f.Catalog)
	f.Ledger = &fakeLedger{entries: map[string][]ticketrush.LedgerEntry{userAlice: {
		{ID: "pay-1", UserID: userAlice, Type: "PAYMENT", Amount: -165000, BalanceAfter: 35000,
			ReservationID: "res-1", CreatedAt: testNow},
		{ID: "chg-1", UserID: userAlice, Type: "CHARGE", Amount: 200000, BalanceAfter: 200000, CreatedAt: testNow.Add(-time.Minute)},
	}}}
	return f
}

// fakeLedger is the durable ledger: entries by user, newest first.
type fakeLedger struct {
	entries map[string][]ticketrush.LedgerEntry
	Err     error
}

func (l *fakeLedger) History(_ context.Context, userID string, limit int) ([]ticketrush.LedgerEntry, error) {
	if l.Err != nil {
		return nil, l.Err
	}
	e := l.entries[userID]
	return e[:min(limit, len(e))], nil
}

// deps returns the server's dependencies: the fakes, a fresh registry and a silent log.
func (f *fakes) deps() Deps {
	return Deps{
		API:        true,
		Queue:      f.Queue,
		Catalog:    f.Catalog,
		Booking:    f.Booking,
		Ledger:     f.Ledger,
		Users:      f.Users,
		AdminToken: testAdminToken,
		Ready:      f.Ready,
		Registry:   prometheus.NewRegistry(),
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// server builds the real server over the fakes.
func (f *fakes) server() *Server { return NewServer(f.deps()) }

// fakeUsers accepts "jwt-<user>" for each of its users.
type fakeUsers struct {
	byToken map[string]string
}

var _ Users = (*fakeUsers)(nil)

func newFakeUsers(ids ...string) *fakeUsers {
	u := &fakeUsers{byToken: map[string]string{}}
	for _, id := range ids {
		u.byToken["jwt-"+id] = id
	}
	return u
}

func (u *fakeUsers) Verify(token string) (string, error) {
	id, ok := u.byToken[token]
	if !ok {
		return "", fmt.Errorf("%w: unknown test token", ticketrush.ErrUnauthenticated)
	}
	return id, nil
}

// fakeToken is a queue token's state in fakeQueue.
type fakeToken struct {
	user, concert string
	seq           int
	status        ticketrush.QueueStatus
}

// fakeQueue is a waiting room that admits nobody by itself: a join finds the user ACTIVE when the
// concert has nobody WAITING, as the real one does with room to spare.
type fakeQueue struct {
	Err error

	mu     sync.Mutex
	tokens map[string]*fakeToken
	seq    int
}

var _ Queue = (*fakeQueue)(nil)

func newFakeQueue() *fakeQueue {
	q := &fakeQueue{tokens: map[string]*fakeToken{}}
	q.add(qtAliceActive, userAlice, concert1, ticketrush.StatusActive)
	q.add(qtBobWaiting, userBob, concert1, ticketrush.StatusWaiting)
	q.add(qtCarolExpired, userCarol, concert1, ticketrush.StatusExpired)
	q.add(qtDaveDone, userDave, concert1, ticketrush.StatusDone)
	q.add(qtAliceC2, userAlice, concert2, ticketrush.StatusActive)
	q.add(qtBobSoldOut, userBob, concert2, ticketrush.StatusSoldOut)
	return q
}

func (q *fakeQueue) add(token, user, concert string, st ticketrush.QueueStatus) {
	q.seq++
	q.tokens[token] = &fakeToken{user: user, concert: concert, seq: q.seq, status: st}
}

// Watch emits the token's status once, as Status answers it.
func (q *fakeQueue) Watch(ctx context.Context, userID, token string, emit func(ticketrush.Ticket) error) error {
	t, err := q.Status(ctx, userID, token)
	if err != nil {
		return err
	}
	return emit(t)
}

func (q *fakeQueue) Join(_ context.Context, userID, concertID string) (ticketrush.Ticket, bool, error) {
	if q.Err != nil {
		return ticketrush.Ticket{}, false, q.Err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	waiting := false
	for tok, t := range q.tokens {
		if t.concert != concertID {
			continue
		}
		live := t.status == ticketrush.StatusWaiting || t.status == ticketrush.StatusActive
		if live && t.user == userID {
			return q.ticket(tok, t), false, nil
		}
		waiting = waiting || t.status == ticketrush.StatusWaiting
	}
	st := ticketrush.StatusActive
	if waiting {
		st = ticketrush.StatusWaiting
	}
	tok := fmt.Sprintf("qt-%s-%s-%d", userID, concertID, q.seq+1)
	q.add(tok, userID, concertID, st)
	return q.ticket(tok, q.tokens[tok]), true, nil
}

func (q *fakeQueue) Status(_ context.Context, userID, token string) (ticketrush.Ticket, error) {
	if q.Err != nil {
		return ticketrush.Ticket{}, q.Err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	t, err := q.claims(userID, token)
	if err != nil {
		return ticketrush.Ticket{}, err
	}
	return q.ticket(token, t), nil
}

func (q *fakeQueue) Leave(_ context.Context, userID, token string) error {
	if q.Err != nil {
		return q.Err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	t, err := q.claims(userID, token)
	if err != nil {
		return err
	}
	if t.status == ticketrush.StatusWaiting || t.status == ticketrush.StatusActive {
		t.status = ticketrush.StatusExpired
	}
	return nil
}

func (q *fakeQueue) Authorize(_ context.Context, userID, concertID, token string) (ticketrush.QueueClaims, error) {
	if q.Err != nil {
		return ticketrush.QueueClaims{}, q.Err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	t, err := q.claims(userID, token)
	if err != nil {
		return ticketrush.QueueClaims{}, err
	}
	c := ticketrush.QueueClaims{UserID: t.user, ConcertID: t.concert, Seq: uint64(t.seq)}
	switch {
	case concertID != "" && t.concert != concertID:
		return c, fmt.Errorf("%w: token is for another concert", ticketrush.ErrQueueTokenInvalid)
	case t.status == ticketrush.StatusWaiting:
		return c, ticketrush.ErrQueueNotActive
	case t.status != ticketrush.StatusActive:
		return c, ticketrush.ErrQueueTokenExpired
	}
	return c, nil
}

func (q *fakeQueue) claims(userID, token string) (*fakeToken, error) {
	t, ok := q.tokens[token]
	if !ok || t.user != userID {
		return nil, ticketrush.ErrQueueTokenInvalid
	}
	return t, nil
}

// ticket shows t as the API does; q.mu is held.
func (q *fakeQueue) ticket(token string, t *fakeToken) ticketrush.Ticket {
	out := ticketrush.Ticket{Token: token, ConcertID: t.concert, Status: t.status, PollAfter: time.Second}
	switch t.status {
	case ticketrush.StatusWaiting:
		for _, o := range q.tokens {
			if o.concert == t.concert && o.status == ticketrush.StatusWaiting && o.seq <= t.seq {
				out.Position++
			}
		}
		out.EstimatedWait = time.Duration(out.Position) * time.Second
	case ticketrush.StatusActive:
		out.ActiveUntil = testNow.Add(30 * time.Minute)
	}
	return out
}

// fakeCatalog keeps concerts in memory and applies the domain's own validation.
type fakeCatalog struct {
	Err error

	mu       sync.Mutex
	concerts map[string]ticketrush.Concert
	ids      int
}

var _ Catalog = (*fakeCatalog)(nil)

func newFakeCatalog() *fakeCatalog {
	c := &fakeCatalog{concerts: map[string]ticketrush.Concert{}}
	c.concerts[concert1] = ticketrush.Concert{
		ID: concert1, Title: "IU 2026", Venue: "KSPO Dome",
		Schedules: []ticketrush.Schedule{
			{ID: schedule1, StartsAt: time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)},
			{ID: schedule2, StartsAt: time.Date(2026, 12, 25, 10, 0, 0, 0, time.UTC)},
		},
		Sections: []ticketrush.Section{{Name: "VIP", Price: 165000, Seats: 2}, {Name: "R", Price: 143000, Seats: 3}},
		Queue:    ticketrush.DefaultQueueSettings(),
	}
	c.concerts[concert2] = ticketrush.Concert{
		ID: concert2, Title: "Small hall", Venue: "Rolling Hall",
		Schedules: []ticketrush.Schedule{{ID: schedule3, StartsAt: time.Date(2027, 1, 10, 11, 0, 0, 0, time.UTC)}},
		Sections:  []ticketrush.Section{{Name: "A", Price: 50000, Seats: 1}},
		Queue:     ticketrush.DefaultQueueSettings(),
	}
	return c
}

func (c *fakeCatalog) Create(_ context.Context, in ticketrush.Concert) (ticketrush.Concert, error) {
	if err := in.Validate(); err != nil {
		return in, err
	}
	if c.Err != nil {
		return in, fmt.Errorf("create concert: %w", c.Err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids++
	in.ID = fmt.Sprintf("new%d", c.ids)
	in.Schedules = slices.Clone(in.Schedules)
	for i := range in.Schedules {
		in.Schedules[i].ID = fmt.Sprintf("new%ds%d", c.ids, i+1)
	}
	c.concerts[in.ID] = in
	return in, nil
}

func (c *fakeCatalog) List() []ticketrush.ConcertSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ticketrush.ConcertSummary, 0, len(c.concerts))
	for _, k := range slices.Sorted(maps.Keys(c.concerts)) {
		x := c.concerts[k]
		out = append(out, ticketrush.ConcertSummary{ID: x.ID, Title: x.Title, Venue: x.Venue})
	}
	return out
}

func (c *fakeCatalog) Concert(id string) (ticketrush.Concert, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x, ok := c.concerts[id]
	return x, ok
}

func (c *fakeCatalog) PatchQueue(_ context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x, ok := c.concerts[concertID]
	if !ok {
		return ticketrush.QueueSettings{}, ticketrush.ErrNotFound
	}
	q := p.Apply(x.Queue)
	if err := q.Validate(); err != nil {
		return ticketrush.QueueSettings{}, err
	}
	if c.Err != nil {
		return ticketrush.QueueSettings{}, c.Err
	}
	x.Queue = q
	c.concerts[concertID] = x
	return q, nil
}

func (c *fakeCatalog) QueueState(_ context.Context, concertID string) (ticketrush.QueueState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x, ok := c.concerts[concertID]
	if !ok {
		return ticketrush.QueueState{}, ticketrush.ErrNotFound
	}
	if c.Err != nil {
		return ticketrush.QueueState{}, c.Err
	}
	return ticketrush.QueueState{
		Waiting: 1, Active: 1, ActiveCapacity: x.Queue.ActiveCapacity, AdmitPerSecond: x.Queue.AdmitPerSecond,
		Paused: x.Queue.Paused,
		Seats:  ticketrush.SeatCounts{Available: int64(x.TotalSeats() * len(x.Schedules))},
	}, nil
}

// fakeBooking is the purchase path in memory: it gates with the fake queue and reads concerts from the
// fake catalog, as the real one does with its own gate and catalog.
type fakeBooking struct {
	Err error

	queue   *fakeQueue
	catalog *fakeCatalog

	mu           sync.Mutex
	reservations map[string]ticketrush.Reservation
	balances     map[string]int64
	idem         map[string]fakeIdem // by user + " " + key
	ids          int
}

// fakeIdem is what an Idempotency-Key was first used for.
type fakeIdem struct {
	fingerprint string
	charge      ticketrush.Charge
}

var _ Booking = (*fakeBooking)(nil)

func newFakeBooking(q *fakeQueue, c *fakeCatalog) *fakeBooking {
	b := &fakeBooking{
		queue: q, catalog: c,
		reservations: map[string]ticketrush.Reservation{},
		balances:     map[string]int64{userAlice: 500_000, userCarol: ticketrush.MaxBalance - 1_000},
		idem:         map[string]fakeIdem{},
	}
	hold := func(id, user, schedule, seat string, price int64, st ticketrush.ReservationStatus) {
		r := ticketrush.Reservation{ID: id, UserID: user, ConcertID: concert1, ScheduleID: schedule, SeatID: seat,
			Price: price, Status: st, CreatedAt: testNow.Add(-time.Minute), ExpiresAt: testNow.Add(4 * time.Minute)}
		switch st {
		case ticketrush.ReservationPaid:
			r.PaymentID, r.PaidAt, r.Balance = ticketrush.PaymentID(id), testNow, 500_000
		case ticketrush.ReservationExpired:
			r.ExpiresAt = testNow.Add(-time.Minute)
		}
		b.reservations[id] = r
	}
	hold(resAliceHeld, userAlice, schedule1, "VIP-1", 165000, ticketrush.ReservationHeld)
	hold(resAlicePaid, userAlice, schedule1, "VIP-2", 165000, ticketrush.ReservationPaid)
	hold(resAliceExpired, userAlice, schedule1, "R-1", 143000, ticketrush.ReservationExpired)
	hold(resAliceCancelled, userAlice, schedule1, "R-2", 143000, ticketrush.ReservationCancelled)
	hold(resBobHeld, userBob, schedule2, "R-3", 143000, ticketrush.ReservationHeld)
	b.idem[userAlice+" "+idemAlice] = fakeIdem{fingerprint: "charge 10000",
		charge: ticketrush.Charge{ID: "ch0alice1", Amount: 10_000, Balance: 500_000, CreatedAt: testNow.Add(-time.Hour)}}
	return b
}

// admit gates a call as the real purchase path does: the token's concert when concertID is "".
func (b *fakeBooking) admit(ctx context.Context, userID, concertID, token string) (ticketrush.Concert, error) {
	claims, err := b.queue.Authorize(ctx, userID, concertID, token)
	if err != nil {
		return ticketrush.Concert{}, err
	}
	c, ok := b.catalog.Concert(claims.ConcertID)
	if !ok {
		return c, ticketrush.ErrNotFound
	}
	return c, nil
}

// seatStatus is a seat's status; b.mu is held.
func (b *fakeBooking) seatStatus(scheduleID, seatID string) ticketrush.SeatStatus {
	for _, r := range b.reservations {
		if r.ScheduleID != scheduleID || r.SeatID != seatID {
			continue
		}
		switch r.PublicStatus(testNow) {
		case ticketrush.ReservationHeld:
			return ticketrush.SeatHeld
		case ticketrush.ReservationPaid:
			return ticketrush.SeatSold
		}
	}
	return ticketrush.SeatAvailable
}

func (b *fakeBooking) Schedules(ctx context.Context, userID, concertID, token string) ([]ticketrush.ScheduleAvailability, error) {
	if b.Err != nil {
		return nil, b.Err
	}
	c, err := b.admit(ctx, userID, concertID, token)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	total := int64(c.TotalSeats())
	out := make([]ticketrush.ScheduleAvailability, 0, len(c.Schedules))
	for _, sc := range c.Schedules {
		a := ticketrush.ScheduleAvailability{Schedule: sc, Available: total, Total: total}
		for _, sec := range c.Sections {
			for n := 1; n <= sec.Seats; n++ {
				if b.seatStatus(sc.ID, fmt.Sprintf("%s-%d", sec.Name, n)) != ticketrush.SeatAvailable {
					a.Available--
				}
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func (b *fakeBooking) Seats(ctx context.Context, userID, concertID, scheduleID, token string) ([]ticketrush.Seat, error) {
	if b.Err != nil {
		return nil, b.Err
	}
	c, err := b.admit(ctx, userID, concertID, token)
	if err != nil {
		return nil, err
	}
	if _, ok := c.Schedule(scheduleID); !ok {
		return nil, ticketrush.ErrNotFound
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []ticketrush.Seat
	for _, sec := range c.Sections {
		for n := 1; n <= sec.Seats; n++ {
			id := fmt.Sprintf("%s-%d", sec.Name, n)
			out = append(out, ticketrush.Seat{ID: id, Section: sec.Name, Price: sec.Price, Status: b.seatStatus(scheduleID, id)})
		}
	}
	return out, nil
}

func (b *fakeBooking) Hold(ctx context.Context, userID, token, scheduleID, seatID string) (ticketrush.Reservation, error) {
	if b.Err != nil {
		return ticketrush.Reservation{}, b.Err
	}
	c, err := b.admit(ctx, userID, "", token)
	if err != nil {
		return ticketrush.Reservation{}, err
	}
	sec, ok := c.Seat(seatID)
	if _, found := c.Schedule(scheduleID); !found || !ok {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seatStatus(scheduleID, seatID) != ticketrush.SeatAvailable {
		return ticketrush.Reservation{}, ticketrush.ErrSeatUnavailable
	}
	holds := 0
	for _, r := range b.reservations {
		if r.UserID == userID && r.ConcertID == c.ID && r.PublicStatus(testNow) == ticketrush.ReservationHeld {
			holds++
		}
	}
	if holds >= c.Queue.MaxHoldsPerUser {
		return ticketrush.Reservation{}, ticketrush.ErrHoldLimitReached
	}
	b.ids++
	r := ticketrush.Reservation{ID: fmt.Sprintf("r0new%d", b.ids), UserID: userID, ConcertID: c.ID, ScheduleID: scheduleID,
		SeatID: seatID, Price: sec.Price, Status: ticketrush.ReservationHeld, CreatedAt: testNow,
		ExpiresAt: testNow.Add(c.Queue.HoldTTL)}
	b.reservations[r.ID] = r
	return r, nil
}

func (b *fakeBooking) Reservation(_ context.Context, userID, id string) (ticketrush.Reservation, error) {
	if b.Err != nil {
		return ticketrush.Reservation{}, b.Err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reservation(userID, id)
}

// reservation returns the user's reservation id; b.mu is held.
func (b *fakeBooking) reservation(userID, id string) (ticketrush.Reservation, error) {
	r, ok := b.reservations[id]
	if !ok || r.UserID != userID {
		return ticketrush.Reservation{}, ticketrush.ErrNotFound
	}
	return r, nil
}

func (b *fakeBooking) Cancel(_ context.Context, userID, id string) error {
	if b.Err != nil {
		return b.Err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.reservation(userID, id)
	if err != nil {
		return err
	}
	if r.PublicStatus(testNow) != ticketrush.ReservationHeld {
		return ticketrush.ErrReservationNotHeld
	}
	r.Status = ticketrush.ReservationCancelled
	b.reservations[id] = r
	return nil
}

func (b *fakeBooking) Balance(_ context.Context, userID string) (int64, error) {
	if b.Err != nil {
		return 0, b.Err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.balances[userID], nil
}

func (b *fakeBooking) Charge(_ context.Context, userID string, amount int64, idemKey string) (ticketrush.Charge, bool, error) {
	if b.Err != nil {
		return ticketrush.Charge{}, false, b.Err
	}
	if amount < 1 || amount > ticketrush.MaxChargeAmount {
		return ticketrush.Charge{}, false, ticketrush.ErrInvalidAmount
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fingerprint := fmt.Sprintf("charge %d", amount)
	if prior, ok := b.idem[userID+" "+idemKey]; ok && idemKey != "" {
		if prior.fingerprint != fingerprint {
			return ticketrush.Charge{}, false, ticketrush.ErrIdempotencyConflict
		}
		return prior.charge, true, nil
	}
	if b.balances[userID]+amount > ticketrush.MaxBalance {
		return ticketrush.Charge{}, false, ticketrush.ErrBalanceLimit
	}
	b.balances[userID] += amount
	b.ids++
	c := ticketrush.Charge{ID: fmt.Sprintf("ch0new%d", b.ids), Amount: amount, Balance: b.balances[userID], CreatedAt: testNow}
	if idemKey != "" {
		b.idem[userID+" "+idemKey] = fakeIdem{fingerprint: fingerprint, charge: c}
	}
	return c, false, nil
}

func (b *fakeBooking) PayOnce(_ context.Context, userID, resID, idemKey string) (ticketrush.Payment, bool, error) {
	if b.Err != nil {
		return ticketrush.Payment{}, false, b.Err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if prior, ok := b.idem[userID+" "+idemKey]; ok && idemKey != "" && prior.fingerprint != "pay "+resID {
		return ticketrush.Payment{}, false, ticketrush.ErrIdempotencyConflict
	}
	r, err := b.reservation(userID, resID)
	if err != nil {
		return ticketrush.Payment{}, false, err
	}
	switch r.PublicStatus(testNow) {
	case ticketrush.ReservationPaid:
		return ticketrush.PaymentOf(r), false, nil
	case ticketrush.ReservationExpired:
		return ticketrush.Payment{}, false, ticketrush.ErrReservationExpired
	case ticketrush.ReservationCancelled:
		return ticketrush.Payment{}, false, ticketrush.ErrReservationNotHeld
	}
	if b.balances[userID] < r.Price {
		return ticketrush.Payment{}, false, ticketrush.ErrInsufficientBalance
	}
	b.balances[userID] -= r.Price
	r.Status, r.PaymentID, r.PaidAt, r.Balance = ticketrush.ReservationPaid, ticketrush.PaymentID(r.ID), testNow, b.balances[userID]
	b.reservations[r.ID] = r
	if idemKey != "" {
		b.idem[userID+" "+idemKey] = fakeIdem{fingerprint: "pay " + resID}
	}
	return ticketrush.PaymentOf(r), true, nil
}

func (b *fakeBooking) Payment(_ context.Context, userID, id string) (ticketrush.Payment, error) {
	if b.Err != nil {
		return ticketrush.Payment{}, b.Err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	resID, ok := strings.CutPrefix(id, "p")
	if !ok {
		return ticketrush.Payment{}, ticketrush.ErrNotFound
	}
	r, err := b.reservation(userID, resID)
	if err != nil || r.Status != ticketrush.ReservationPaid {
		return ticketrush.Payment{}, ticketrush.ErrNotFound
	}
	return ticketrush.PaymentOf(r), nil
}

// errDown is a dependency that does not answer.
var errDown = errors.New("connection refused")
