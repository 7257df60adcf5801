package http

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/app"
	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/catalog"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/pass"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The contract tests run over the real services: internal/catalog over Postgres and the Redis store,
// internal/queue, internal/booking and internal/auth, on the real Redis under a fresh key prefix per
// case (a private redis-server, shut down before the request, for the cases where Redis is down) and
// one fresh Postgres database per test. Each case gets a world of its own, built by the services' own
// calls (joins, holds, charges, payments), so no rule is re-implemented here. What must fail on demand
// and cannot be made to fail for real (an unexpected error, the ledger's Postgres down) is a stand-in
// that returns what the case says.
//
// A case names its fixtures by the placeholders below; the world replaces them in the path, the
// headers and the body with the ids it made.

const (
	testAdminToken = "test-admin-token-0123456789abcdefghij"
	testJWTSecret  = "contract-test-jwt-secret-0123456789abcdef"
	testQueueKey   = "contract-test-queue-secret-0123456789abc"
	testPassIssuer = "https://tickets.test"
	testPassTTL    = 300 * time.Second

	userAlice = "alice"
	userBob   = "bob"
	userCarol = "carol"
	userDave  = "dave"
	userErin  = "erin"
	userFrank = "frank" // never seen by the service

	// concert1: two schedules, sections VIP (2 seats, 165,000) and R (3 seats, 143,000), an active set
	// of 4 (full: carol's lapsed token still in it, alice, erin, gina), 4 holds a user.
	// concert2: one schedule, section A (2 seats, 1,000), one hold a user.
	concert1  = "{concert1}"
	concert2  = "{concert2}"
	schedule1 = "{schedule1}" // concert1's first schedule
	schedule2 = "{schedule2}" // concert1's second
	schedule3 = "{schedule3}" // concert2's
	noConcert = "n0concert"

	qtAliceActive  = "{qtAliceActive}"  // alice, concert1, ACTIVE
	qtBobWaiting   = "{qtBobWaiting}"   // bob, concert1, WAITING at position 1
	qtCarolExpired = "{qtCarolExpired}" // carol, concert1, EXPIRED (activeTtl passed)
	qtDaveDone     = "{qtDaveDone}"     // dave, concert1, DONE (paid his only hold)
	qtAliceC2      = "{qtAliceC2}"      // alice, concert2, ACTIVE, holding A-1 (her one hold there)
	qtHenrySoldOut = "{qtHenrySoldOut}" // henry, concert2, WAITING when concert2 sold out (soldOutC2)
	qtForged       = "qt-forged"

	resAliceHeld      = "{resAliceHeld}"      // schedule1 VIP-1, HELD
	resAlicePaid      = "{resAlicePaid}"      // schedule1 VIP-2, PAID
	resAliceExpired   = "{resAliceExpired}"   // schedule1 R-1, lapsed
	resAliceCancelled = "{resAliceCancelled}" // schedule1 R-2, CANCELLED
	resErinHeld       = "{resErinHeld}"       // schedule2 R-3, HELD by erin, who has no points
	noReservation     = "r0none"

	// Balances: alice 345,000 (charged 10,000 with key idemAlice, then 500,000, and paid 165,000),
	// bob, erin and frank nothing; carolNearLimit takes carol to 1,000 short of the limit.
	idemAlice = "key-alice-1"
)

// bearerOf returns the Authorization header value of user: a JWT the real verifier accepts.
func bearerOf(user string) string {
	tok, err := auth.Mint([]byte(testJWTSecret), user, 24*time.Hour, time.Now())
	if err != nil {
		panic(err)
	}
	return "Bearer " + tok
}

// errDown is an unexpected error of a dependency: the server must answer 500.
var errDown = errors.New("connection refused")

// contract is what the cases of one test share: the Postgres database (the catalog's record and the
// ledger), with alice's ledger history written once.
type contract struct {
	db *postgres.DB
}

func newContract(t testing.TB) *contract {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, dbtest.Postgres(t))
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Migrate(ctx)
	require.NoError(t, err)
	at := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, db.WriteRecords(ctx, ticketrush.RecordBatch{Ledger: []ticketrush.LedgerEntry{
		{ID: "chg-1", UserID: userAlice, Type: ticketrush.LedgerCharge, Amount: 200000, BalanceAfter: 200000,
			CreatedAt: at.Add(-time.Minute), Event: ticketrush.EventID{Stream: "contract", Ms: 1, Seq: 0}},
		{ID: "pay-1", UserID: userAlice, Type: ticketrush.LedgerPayment, Amount: 165000, BalanceAfter: 35000,
			ReservationID: "res-1", CreatedAt: at, Event: ticketrush.EventID{Stream: "contract", Ms: 2, Seq: 0}},
	}}))
	return &contract{db: db}
}

// world is one case's services and fixtures.
type world struct {
	t       testing.TB
	offset  atomic.Int64 // the services' clock: the real time plus offset, for fixtures in the past
	db      *postgres.DB
	store   *redis.Store
	cat     *catalog.Service
	queue   *queue.Service
	booking *booking.Service
	deps    Deps
	ids     map[string]string // placeholder -> id
}

func (w *world) now() time.Time { return time.Now().Add(time.Duration(w.offset.Load())) }

// at runs f with the services' clock d from now.
func (w *world) at(d time.Duration, f func()) {
	w.offset.Store(int64(d))
	defer w.offset.Store(0)
	f()
}

// newWorld builds the services over the Redis of rc under prefix and the contract's Postgres, and
// the fixtures through them.
func (c *contract) newWorld(t testing.TB, rc rueidis.Client, prefix string) *world {
	t.Helper()
	w := &world{t: t, db: c.db, ids: map[string]string{}}
	log := dbtest.Log(t)
	w.store = redis.NewStore(rc, prefix, prometheus.NewRegistry())
	sale := app.New(w.store, c.db, []byte(testQueueKey), w.now, log, prometheus.NewRegistry())
	w.cat, w.queue, w.booking = sale.Catalog, sale.Queue, sale.Booking
	w.deps = Deps{
		API:        true,
		Queue:      w.queue,
		Catalog:    w.cat,
		Booking:    w.booking,
		Ledger:     c.db,
		Users:      auth.NewUsers([]byte(testJWTSecret)),
		AdminToken: testAdminToken,
		Challenges: auth.NewChallenges([]byte(testQueueKey)),
		Draws:      w.store.Draws,
		Ready:      map[string]Check{"redis": w.store.Ping, "postgres": c.db.Ping},
		Registry:   prometheus.NewRegistry(),
		Log:        log,
	}
	issuer := pass.NewIssuer(c.db, testPassIssuer, pass.Schedule{TTL: testPassTTL, Skew: 30 * time.Second,
		KeySetMaxAge: time.Minute}, w.now, log)
	require.NoError(t, issuer.Start(context.Background()))
	w.deps.Passes = issuer
	w.fixtures()
	return w
}

func (w *world) fixtures() {
	t, ctx := w.t, context.Background()
	day := time.Now().UTC().Add(90 * 24 * time.Hour).Truncate(time.Hour)
	q1 := ticketrush.DefaultQueueSettings()
	q1.ActiveCapacity, q1.AdmitPerSecond, q1.ActiveTTL, q1.HoldTTL, q1.MaxHoldsPerUser = 4, 50, 1800*time.Second, 300*time.Second, 4
	c1, _, err := w.cat.Create(ctx, ticketrush.Concert{Title: "IU 2026", Venue: "KSPO Dome", Queue: q1,
		Schedules: []ticketrush.Schedule{{StartsAt: day}, {StartsAt: day.Add(24 * time.Hour)}},
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 165000, Seats: 2}, {Name: "R", Price: 143000, Seats: 3}}}, "")
	require.NoError(t, err)
	q2 := ticketrush.DefaultQueueSettings()
	q2.ActiveCapacity, q2.MaxHoldsPerUser = 1000, 1
	c2, _, err := w.cat.Create(ctx, ticketrush.Concert{Title: "Small", Venue: "Club", Queue: q2,
		Schedules: []ticketrush.Schedule{{StartsAt: day}},
		Sections:  []ticketrush.Section{{Name: "A", Price: 1000, Seats: 2}}}, "")
	require.NoError(t, err)
	w.ids[concert1], w.ids[concert2] = c1.ID, c2.ID
	w.ids[schedule1], w.ids[schedule2], w.ids[schedule3] = c1.Schedules[0].ID, c1.Schedules[1].ID, c2.Schedules[0].ID

	join := func(user, concertID string, want ticketrush.QueueStatus) string {
		tk, _, err := w.queue.Join(ctx, user, concertID)
		require.NoError(t, err, "%s joins", user)
		require.Equal(t, want, tk.Status, "%s joins", user)
		return tk.Token
	}
	hold := func(user, token, schedule, seat string) string {
		r, err := w.booking.Hold(ctx, user, token, schedule, seat)
		require.NoError(t, err, "%s holds %s", user, seat)
		return r.ID
	}
	charge := func(user string, amount int64, key string) {
		_, _, err := w.booking.Charge(ctx, user, amount, key)
		require.NoError(t, err, "charge %s %d", user, amount)
	}
	pay := func(user, resID string) {
		_, _, err := w.booking.PayOnce(ctx, user, resID, "")
		require.NoError(t, err, "%s pays %s", user, resID)
	}
	s1, s2 := w.ids[schedule1], w.ids[schedule2]

	w.at(-2000*time.Second, func() { w.ids[qtCarolExpired] = join(userCarol, c1.ID, ticketrush.StatusActive) })
	w.at(-400*time.Second, func() {
		w.ids[qtAliceActive] = join(userAlice, c1.ID, ticketrush.StatusActive)
		w.ids[resAliceExpired] = hold(userAlice, w.ids[qtAliceActive], s1, "R-1")
	})
	erin := join(userErin, c1.ID, ticketrush.StatusActive)
	w.ids[resErinHeld] = hold(userErin, erin, s2, "R-3")
	dave := join(userDave, c1.ID, ticketrush.StatusActive)
	charge(userDave, 143000, "")
	pay(userDave, hold(userDave, dave, s2, "R-1"))
	w.ids[qtDaveDone] = dave
	join("gina", c1.ID, ticketrush.StatusActive) // takes dave's slot: a paid fan leaves the active set
	w.ids[qtBobWaiting] = join(userBob, c1.ID, ticketrush.StatusWaiting)

	alice := w.ids[qtAliceActive]
	w.ids[resAliceHeld] = hold(userAlice, alice, s1, "VIP-1")
	w.ids[resAlicePaid] = hold(userAlice, alice, s1, "VIP-2")
	w.ids[resAliceCancelled] = hold(userAlice, alice, s1, "R-2")
	require.NoError(t, w.booking.Cancel(ctx, userAlice, w.ids[resAliceCancelled]))
	charge(userAlice, 10000, idemAlice)
	charge(userAlice, 500000, "")
	pay(userAlice, w.ids[resAlicePaid])

	w.ids[qtAliceC2] = join(userAlice, c2.ID, ticketrush.StatusActive)
	w.ids["{resAliceC2}"] = hold(userAlice, w.ids[qtAliceC2], w.ids[schedule3], "A-1")
}

// replace puts the world's ids in place of the placeholders in s.
func (w *world) replace(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	for k, v := range w.ids {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// adminCreate creates a concert through the admin endpoint, with an Idempotency-Key when key is set.
func (w *world) adminCreate(body, key string) {
	h := jsonBody(hdr("Authorization", "Bearer "+testAdminToken))
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	r := httptest.NewRequest("POST", "/admin/v1/concerts", strings.NewReader(body))
	r.Header = h
	rec := httptest.NewRecorder()
	d := w.deps
	d.Registry = prometheus.NewRegistry() // the case's server registers on the world's
	NewServer(d).ServeHTTP(rec, r)
	require.Equal(w.t, http.StatusCreated, rec.Code, rec.Body.String())
}

// soldOutC2 sells concert2 out through the real services: alice pays her A-1, frank buys A-2, while
// henry waits (the line paused) with the token qtHenrySoldOut.
func soldOutC2(w *world) {
	t, ctx, c2 := w.t, context.Background(), w.ids[concert2]
	frank, _, err := w.queue.Join(ctx, "frank", c2)
	require.NoError(t, err)
	require.Equal(t, ticketrush.StatusActive, frank.Status)
	r, err := w.booking.Hold(ctx, "frank", frank.Token, w.ids[schedule3], "A-2")
	require.NoError(t, err)
	paused := true
	_, err = w.cat.PatchQueue(ctx, c2, ticketrush.QueuePatch{Paused: &paused})
	require.NoError(t, err)
	henry, _, err := w.queue.Join(ctx, "henry", c2)
	require.NoError(t, err)
	require.Equal(t, ticketrush.StatusWaiting, henry.Status)
	w.ids[qtHenrySoldOut] = henry.Token
	_, _, err = w.booking.Charge(ctx, "frank", 1000, "")
	require.NoError(t, err)
	for user, res := range map[string]string{userAlice: w.ids["{resAliceC2}"], "frank": r.ID} {
		_, _, err = w.booking.PayOnce(ctx, user, res, "")
		require.NoError(t, err, "%s pays", user)
	}
	// A scheduler's tick, as one runs within a second: a concert whose seats are spread over slots (on a
	// cluster) learns it is sold out from the tick, which carries the schedules' counts to the line.
	_, err = w.store.Line.Tick(ctx, c2, w.now(), 1000)
	require.NoError(t, err)
}

// realWorld is a fresh world over the real Redis and Postgres, for tests that need a working server and
// its fixtures but no particular case; realDeps its server's dependencies.
func realWorld(t testing.TB) *world {
	rc, prefix := dbtest.Redis(t)
	return newContract(t).newWorld(t, rc, prefix)
}

func realDeps(t testing.TB) Deps { return realWorld(t).deps }

// joinCounter passes joins to the real queue and counts the calls that reach it.
type joinCounter struct {
	Queue
	calls atomic.Int64
}

func (q *joinCounter) Join(ctx context.Context, userID, concertID string) (ticketrush.Ticket, bool, error) {
	q.calls.Add(1)
	return q.Queue.Join(ctx, userID, concertID)
}

func (q *joinCounter) JoinWith(ctx context.Context, userID, concertID string, pass ticketrush.JoinPass) (ticketrush.Ticket, bool, error) {
	q.calls.Add(1)
	return q.Queue.JoinWith(ctx, userID, concertID, pass)
}

// server builds the real server over the world.
func (w *world) server() *Server { return NewServer(w.deps) }

// Setups: what a case changes in its world before the request.

// noConcerts gives the server a catalog with no concert in it.
func noConcerts(w *world) {
	w.deps.Catalog = catalog.NewService(w.db, app.CatalogLive(w.store), w.now, w.deps.Log)
}

// carolNearLimit charges carol to 1,000 points short of the balance limit.
func carolNearLimit(w *world) {
	for left := int64(ticketrush.MaxBalance - 1000); left > 0; {
		amount := min(left, ticketrush.MaxChargeAmount)
		_, _, err := w.booking.Charge(context.Background(), userCarol, amount, "")
		require.NoError(w.t, err)
		left -= amount
	}
}

// alicePaidHeldWithKey pays alice's held reservation with Idempotency-Key pay-1.
func alicePaidHeldWithKey(w *world) {
	_, created, err := w.booking.PayOnce(context.Background(), userAlice, w.ids[resAliceHeld], "pay-1")
	require.NoError(w.t, err)
	require.True(w.t, created)
}

// ledgerDown makes the ledger's Postgres unreachable.
func ledgerDown(w *world) { w.deps.Ledger = &downLedger{err: ticketrush.ErrUnavailable} }

// replicaSyncing makes readyz say what the service cannot promise while a master has no replica in sync.
func replicaSyncing(w *world) {
	w.deps.Degraded = func() []string { return []string{"redis: 1 slot(s) whose master has no replica in sync"} }
}

// redisDownAtReady makes readyz's Redis check fail.
func redisDownAtReady(w *world) {
	w.deps.Ready["redis"] = func(context.Context) error { return errDown }
}

// broken makes every call of the services that reaches a store, and the ledger, fail with an
// unexpected error.
func broken(w *world) {
	w.deps.Queue = brokenQueue{w.queue}
	w.deps.Catalog = brokenCatalog{w.cat}
	w.deps.Booking = brokenBooking{w.booking}
	w.deps.Ledger = &downLedger{err: errDown}
	w.deps.Draws = brokenDraws{}
}

// downLedger stands in for the ledger when Postgres is down or fails: it records the calls and
// returns err.
type downLedger struct {
	err   error
	mu    sync.Mutex
	calls int
}

func (l *downLedger) History(context.Context, string, int) ([]ticketrush.LedgerEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	return nil, l.err
}

// brokenQueue, brokenCatalog and brokenBooking stand in for the services in the 500 cases: every call
// that reaches Redis fails with errDown; the catalog's in-memory reads are the real ones.
type brokenQueue struct{ Queue }

func (brokenQueue) Join(context.Context, string, string) (ticketrush.Ticket, bool, error) {
	return ticketrush.Ticket{}, false, errDown
}
func (brokenQueue) JoinWith(context.Context, string, string, ticketrush.JoinPass) (ticketrush.Ticket, bool, error) {
	return ticketrush.Ticket{}, false, errDown
}
func (brokenQueue) Watch(context.Context, time.Duration, string, string, func(ticketrush.Ticket) error) error {
	return errDown
}
func (brokenQueue) Status(context.Context, string, string) (ticketrush.Ticket, error) {
	return ticketrush.Ticket{}, errDown
}
func (brokenQueue) Leave(context.Context, string, string) error { return errDown }

type brokenCatalog struct{ Catalog }

func (brokenCatalog) IssueAccessCodes(context.Context, string, int) ([]string, error) {
	return nil, errDown
}

func (brokenCatalog) Create(context.Context, ticketrush.Concert, string) (ticketrush.Concert, bool, error) {
	return ticketrush.Concert{}, false, errDown
}
func (brokenCatalog) PatchQueue(context.Context, string, ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	return ticketrush.QueueSettings{}, errDown
}
func (brokenCatalog) QueueState(context.Context, string) (ticketrush.QueueState, error) {
	return ticketrush.QueueState{}, errDown
}

// brokenDraws fails every read of the draw.
type brokenDraws struct{}

func (brokenDraws) DrawState(context.Context, string) (ticketrush.DrawState, error) {
	return ticketrush.DrawState{}, errDown
}
func (brokenDraws) WriteDrawKeys(context.Context, string, int64, time.Duration, io.Writer) error {
	return errDown
}

type brokenBooking struct{ Booking }

func (brokenBooking) Schedules(context.Context, string, string, string) ([]ticketrush.ScheduleAvailability, error) {
	return nil, errDown
}
func (brokenBooking) SeatMap(context.Context, string, string, string, string) (*ticketrush.SeatMap, error) {
	return nil, errDown
}
func (brokenBooking) Hold(context.Context, string, string, string, string) (ticketrush.Reservation, error) {
	return ticketrush.Reservation{}, errDown
}
func (brokenBooking) Reservation(context.Context, string, string) (ticketrush.Reservation, error) {
	return ticketrush.Reservation{}, errDown
}
func (brokenBooking) Cancel(context.Context, string, string) error { return errDown }
func (brokenBooking) Balance(context.Context, string) (int64, error) {
	return 0, errDown
}
func (brokenBooking) Charge(context.Context, string, int64, string) (ticketrush.Charge, bool, error) {
	return ticketrush.Charge{}, false, errDown
}
func (brokenBooking) PayOnce(context.Context, string, string, string) (ticketrush.Payment, bool, error) {
	return ticketrush.Payment{}, false, errDown
}
func (brokenBooking) Payment(context.Context, string, string) (ticketrush.Payment, error) {
	return ticketrush.Payment{}, errDown
}

var (
	_ Queue   = brokenQueue{}
	_ Catalog = brokenCatalog{}
	_ Booking = brokenBooking{}
	_ Ledger  = (*downLedger)(nil)
)
