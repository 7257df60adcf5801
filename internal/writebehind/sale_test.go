package writebehind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketrush/ticketrush/internal/app"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/catalog"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// sale is the real purchase path (catalog, queue, booking over the Lua scripts) on a Redis and a fresh
// Postgres database: what produces the events the worker writes. Its load records what the clients
// were told, to check the record against.
type sale struct {
	t        testing.TB
	redisURL string
	dbURL    string
	prefix   string
	rdb      rueidis.Client
	db       *postgres.DB
	store    *redis.Store
	cat      *catalog.Service
	queue    *queue.Service
	booking  *booking.Service
	concert  ticketrush.Concert
	log      *slog.Logger

	pace  time.Duration // each fan's pause between two calls: 5-15 ms unless set; -1 for none
	ahead atomic.Int64  // how far (ns) the services' clock runs ahead of the wall's: a test moves it past a sale's opening

	mu       sync.Mutex
	charges  map[string]int64 // charge id -> amount, as answered
	payments map[string]ticketrush.Payment
	holds    map[string]ticketrush.Reservation
	failures []error
}

// newSale sets up a sale on the Redis at redisURL under prefix and on dbURL (migrated), with one concert
// of two schedules whose holds last holdTTL (short, so that holds lapse during a load), its queue
// settings changed by mods.
func newSale(t testing.TB, redisURL, prefix, dbURL string, holdTTL time.Duration, mods ...func(*ticketrush.QueueSettings)) *sale {
	t.Helper()
	ctx := context.Background()
	s := &sale{t: t, redisURL: redisURL, dbURL: dbURL, prefix: prefix, log: dbtest.Log(t),
		charges: map[string]int64{}, payments: map[string]ticketrush.Payment{}, holds: map[string]ticketrush.Reservation{}}
	s.rdb = dbtest.Client(t, redisURL)
	db, err := postgres.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Migrate(ctx)
	require.NoError(t, err)
	s.db = db
	s.store = redis.NewStore(s.rdb, prefix, prometheus.NewRegistry())
	graph := app.New(s.store, db, []byte("writebehind-test-queue-secret-0123456789"), s.now, s.log, prometheus.NewRegistry())
	s.cat, s.queue, s.booking = graph.Catalog, graph.Queue, graph.Booking
	q := ticketrush.DefaultQueueSettings()
	q.ActiveCapacity, q.AdmitPerSecond, q.HoldTTL, q.MaxHoldsPerUser = 100_000, 1_000_000, holdTTL, 3
	for _, mod := range mods {
		mod(&q)
	}
	at := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Hour)
	s.concert, _, err = s.cat.Create(ctx, ticketrush.Concert{Title: "write-behind", Venue: "test", Queue: q,
		Schedules: []ticketrush.Schedule{{StartsAt: at}, {StartsAt: at.Add(24 * time.Hour)}},
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 1500, Seats: 200}, {Name: "R", Price: 700, Seats: 1800}}}, "")
	require.NoError(t, err)
	require.NoError(t, Startup(ctx, redis.NewStateMarker(s.rdb, prefix), db, time.Now()))
	return s
}

// now is the clock the sale's services read.
func (s *sale) now() time.Time { return time.Now().Add(time.Duration(s.ahead.Load())) }

// sharedSale is a sale on the shared Redis under a fresh prefix.
func sharedSale(t testing.TB) *sale {
	t.Helper()
	_, prefix := dbtest.Redis(t)
	return newSale(t, dbtest.RedisURL(), prefix, dbtest.Postgres(t), 2*time.Second)
}

// worker returns an in-process worker of the sale, with cfg's changes to the defaults.
func (s *sale) worker(cfg Config, reg prometheus.Registerer) *Worker {
	w := New(s.rdb, s.db, s.prefix, s.cat.IDs, cfg, time.Now, s.log, reg)
	w.FollowPlacements(s.cat.Placement) // as serve wires it
	return w
}

// run runs w until the test ends.
func run(t testing.TB, w *Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (s *sale) failed(err error) {
	s.mu.Lock()
	s.failures = append(s.failures, err)
	s.mu.Unlock()
}

// expected are the refusals of a busy sale; anything else is a failure of the test.
func expected(err error) bool {
	for _, e := range []error{ticketrush.ErrSeatUnavailable, ticketrush.ErrHoldLimitReached, ticketrush.ErrInsufficientBalance,
		ticketrush.ErrReservationExpired, ticketrush.ErrReservationNotHeld, ticketrush.ErrQueueTokenExpired,
		ticketrush.ErrQueueNotActive, ticketrush.ErrBalanceLimit} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// load runs fans that join, charge (some with an Idempotency-Key, retried), hold seats, pay (some with
// a key), cancel, leave the line and join again, until ctx ends; the sweeper runs meanwhile. It returns
// once every fan has stopped.
func (s *sale) load(ctx context.Context, fans int) {
	var wg sync.WaitGroup
	wg.Go(func() { s.booking.RunSweeper(ctx, 200*time.Millisecond) })
	var seq atomic.Int64
	for f := range fans {
		wg.Go(func() { s.fan(ctx, fmt.Sprintf("fan-%s-%d", s.concert.ID[:4], f), &seq) })
	}
	wg.Wait()
}

func (s *sale) fan(ctx context.Context, user string, seq *atomic.Int64) {
	rng := rand.New(rand.NewPCG(uint64(seq.Add(1)), uint64(time.Now().UnixNano())))
	token := ""
	// Fans pace themselves: the load is a sale, not a benchmark (unless the sale says otherwise).
	pace := s.pace
	if pace == 0 {
		pace = time.Duration(5+rng.IntN(10)) * time.Millisecond
	}
	var tick <-chan time.Time
	if pace > 0 {
		t := time.NewTicker(pace)
		defer t.Stop()
		tick = t.C
	}
	for ctx.Err() == nil {
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		}
		// Calls run to completion even when ctx ends meanwhile: a half-done payment would be the
		// sweeper's, and the load stops with the sweeper.
		call := context.WithoutCancel(ctx)
		if token == "" {
			t, _, err := s.queue.Join(call, user, s.concert.ID)
			if err != nil {
				s.failed(fmt.Errorf("join: %w", err))
				continue
			}
			token = t.Token
		}
		switch n := rng.IntN(100); {
		case n < 30:
			amount := int64(100 + rng.IntN(3000))
			key := ""
			if rng.IntN(3) == 0 {
				key = "k" + strconv.FormatUint(rng.Uint64(), 36)
			}
			for range 1 + min(len(key), 1) { // a keyed charge is sent twice: it counts once
				c, _, err := s.booking.Charge(call, user, amount, key)
				if err != nil {
					if !expected(err) {
						s.failed(fmt.Errorf("charge: %w", err))
					}
					break
				}
				s.mu.Lock()
				s.charges[c.ID] = c.Amount
				s.mu.Unlock()
			}
		case n < 70:
			sc := s.concert.Schedules[rng.IntN(len(s.concert.Schedules))]
			sec := s.concert.Sections[rng.IntN(len(s.concert.Sections))]
			seat := fmt.Sprintf("%s-%d", sec.Name, 1+rng.IntN(sec.Seats))
			r, err := s.booking.Hold(call, user, token, sc.ID, seat)
			if errors.Is(err, ticketrush.ErrQueueTokenExpired) {
				token = ""
				continue
			}
			if err != nil {
				if !expected(err) {
					s.failed(fmt.Errorf("hold: %w", err))
				}
				continue
			}
			s.mu.Lock()
			s.holds[r.ID] = r
			s.mu.Unlock()
			switch m := rng.IntN(10); {
			case m < 6:
				key := ""
				if m == 0 {
					key = "p" + strconv.FormatUint(rng.Uint64(), 36)
				}
				p, _, err := s.booking.PayOnce(call, user, r.ID, key)
				if err != nil {
					if !expected(err) {
						s.failed(fmt.Errorf("pay: %w", err))
					}
					continue
				}
				s.mu.Lock()
				s.payments[p.ID] = p
				s.mu.Unlock()
			case m < 8:
				if err := s.booking.Cancel(call, user, r.ID); err != nil && !expected(err) {
					s.failed(fmt.Errorf("cancel: %w", err))
				}
			}
			// else: left to lapse
		case n < 73:
			if err := s.queue.Leave(call, user, token); err != nil && !expected(err) {
				s.failed(fmt.Errorf("leave: %w", err))
			}
			token = ""
		}
	}
}

// drain waits until the group has acknowledged every event of the sale's streams.
func (s *sale) drain(timeout time.Duration) {
	s.t.Helper()
	eventually(s.t, timeout, "the write-behind drains", func() bool {
		n, _, err := Backlog(context.Background(), s.rdb, s.prefix, "", []string{s.concert.ID})
		return err == nil && n == 0
	})
}

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		<-tick.C
	}
}

// streams lists the sale's streams: its concert's and the 64 wallet shards'.
func (s *sale) streams() []redis.EventSource {
	k := redis.NewKeys(s.prefix)
	out := []redis.EventSource{k.ConcertEvents(s.concert.ID)}
	for i := range redis.WalletShards {
		out = append(out, k.WalletEvents(i))
	}
	return out
}

// checkExactlyOnce checks that every event each stream ever had is in Postgres, once (the home rows
// have the event id as primary key, so once is counting), but for the dead letters dead expects
// (stream -> how many; none elsewhere).
func (s *sale) checkExactlyOnce(dead map[string]int) {
	t := s.t
	t.Helper()
	ctx := context.Background()
	total := 0
	for _, src := range s.streams() {
		stream := src.Stream
		info, err := s.rdb.Do(ctx, s.rdb.B().XinfoStream().Key(stream).Build()).AsMap()
		if err != nil {
			continue // no such stream: nothing happened there
		}
		v := info["entries-added"]
		added, err := v.AsInt64()
		require.NoError(t, err)
		var written int
		require.NoError(t, s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM written_events WHERE stream = $1`, stream).Scan(&written))
		assert.Equal(t, int(added)-dead[stream], written, "events of %s in postgres", stream)
		n, err := s.rdb.Do(ctx, s.rdb.B().Xlen().Key(src.DeadLetters).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, dead[stream], int(n), "dead letters of %s", stream)
		total += written
	}
	t.Logf("%d events in postgres", total)
}

// checkClients checks the record against what the clients were told: every charge and payment in the
// ledger with its amount, every payment in payments, every hold in reservations.
func (s *sale) checkClients() {
	t := s.t
	t.Helper()
	ctx := context.Background()
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Empty(t, s.failures, "calls of the load failed")
	ids := make([]string, 0, len(s.charges)+len(s.payments))
	for id := range s.charges {
		ids = append(ids, id)
	}
	for id := range s.payments {
		ids = append(ids, id)
	}
	amounts, err := s.db.LedgerAmounts(ctx, ids)
	require.NoError(t, err)
	for id, a := range s.charges {
		assert.Equal(t, a, amounts[id], "charge %s in the ledger", id)
	}
	for id, p := range s.payments {
		assert.Equal(t, p.Amount, amounts[id], "payment %s in the ledger", id)
	}
	var payments, holds int
	resIDs := make([]string, 0, len(s.holds))
	for id := range s.holds {
		resIDs = append(resIDs, id)
	}
	payIDs := make([]string, 0, len(s.payments))
	for id := range s.payments {
		payIDs = append(payIDs, id)
	}
	require.NoError(t, s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM payments WHERE id = ANY($1)`, payIDs).Scan(&payments))
	require.NoError(t, s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM reservations WHERE id = ANY($1)`, resIDs).Scan(&holds))
	assert.Equal(t, len(s.payments), payments, "payments in postgres")
	assert.Equal(t, len(s.holds), holds, "reservations in postgres")
	t.Logf("clients saw %d charges, %d holds, %d payments", len(s.charges), len(s.holds), len(s.payments))
}

// reconcile runs Reconcile and requires that it finds nothing.
func (s *sale) reconcile() {
	s.t.Helper()
	diffs, err := repair.Reconcile(context.Background(), s.rdb, s.db, s.prefix, "", 30*time.Second)
	require.NoError(s.t, err)
	assert.Empty(s.t, diffs, "reconcile")
}

// users lists the fans the load made, by the charges and holds the clients saw.
func (s *sale) users() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, r := range s.holds {
		out[r.UserID] = true
	}
	return out
}
