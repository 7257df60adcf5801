package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// env is a purchase path on the real Redis with one concert; fans join through the real queue script.
type env struct {
	svc     *Service
	store   *redis.Store
	client  rueidis.Client
	keys    string // the key prefix
	concert ticketrush.Concert
	clock   *dbtest.Clock
	tokens  map[string]ticketrush.QueueClaims // token -> claims
	changed []string                          // "concert/user" of every TokenChanged, in order
	mu      sync.Mutex
}

// TokenChanged records the booking service's news for the waiting room.
func (e *env) TokenChanged(concertID, userID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.changed = append(e.changed, concertID+"/"+userID)
}

func (e *env) Concert(id string) (ticketrush.Concert, bool) {
	return e.concert, id == e.concert.ID
}
func (e *env) IDs() []string { return []string{e.concert.ID} }

func (e *env) ScheduleConcert(id string) (string, bool) {
	_, ok := e.concert.Schedule(id)
	return e.concert.ID, ok
}

// Check is the gate: the tests' tokens are the fans' user ids.
func (e *env) Verify(_ context.Context, userID, concertID, token string) (ticketrush.QueueClaims, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.tokens[token]
	if !ok || c.UserID != userID || (concertID != "" && c.ConcertID != concertID) {
		return c, ticketrush.ErrQueueTokenInvalid
	}
	return c, nil
}

func newEnv(t *testing.T, seats int, holdTTL time.Duration) *env {
	t.Helper()
	return newEnvHolds(t, seats, holdTTL, 2)
}

// newEnvHolds is newEnv with maxHolds holds per fan.
func newEnvHolds(t *testing.T, seats int, holdTTL time.Duration, maxHolds int) *env {
	t.Helper()
	client, prefix := dbtest.Redis(t)
	e := &env{client: client, keys: prefix, clock: dbtest.NewClock(time.Now()), tokens: map[string]ticketrush.QueueClaims{}}
	e.store = redis.NewStore(client, prefix, prometheus.NewRegistry())
	q := ticketrush.DefaultQueueSettings()
	q.ActiveCapacity, q.AdmitPerSecond, q.HoldTTL, q.MaxHoldsPerUser = 100_000, 1_000_000, holdTTL, maxHolds
	e.concert = ticketrush.Concert{ID: ticketrush.NewID(), Title: "T", Venue: "V", Queue: q,
		Sections:  []ticketrush.Section{{Name: "R", Price: 1000, Seats: seats}},
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID(), StartsAt: e.clock.Now()}}}
	_, err := e.store.LoadConcert(context.Background(), e.concert, e.clock.Now())
	require.NoError(t, err)
	e.svc = NewService(e.store.Seats, e.store.Wallet, e, e, e.clock.Now, dbtest.Log(t), prometheus.NewRegistry())
	return e
}

// watch gives the env a store and a service whose Redis client shows see every command (dbtest.Watched).
func (e *env) watch(see func(words []string)) {
	e.store = redis.NewStore(dbtest.Watched(e.client, see), e.keys, prometheus.NewRegistry())
	e.svc = NewService(e.store.Seats, e.store.Wallet, e, e, e.clock.Now, e.svc.log, prometheus.NewRegistry())
}

// fan admits a fan and returns their user id, which is also their token here.
func (e *env) fan(t testing.TB, name string) string {
	r, err := e.store.Line.Join(context.Background(), e.concert.ID, name, e.clock.Now())
	require.NoError(t, err)
	require.Equal(t, ticketrush.StatusActive, r.Status)
	e.mu.Lock()
	e.tokens[name] = ticketrush.QueueClaims{UserID: name, ConcertID: e.concert.ID, Seq: r.Seq}
	e.mu.Unlock()
	return name
}

func (e *env) schedule() string { return e.concert.Schedules[0].ID }

func TestThousandFansOneSeat(t *testing.T) {
	e := newEnv(t, 10, time.Minute)
	fans := make([]string, 1000)
	for i := range fans {
		fans[i] = e.fan(t, fmt.Sprintf("fan-%d", i))
	}
	var wins, unavailable atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, f := range fans {
		wg.Go(func() {
			<-start
			_, err := e.svc.Hold(context.Background(), f, f, e.schedule(), "R-1")
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ticketrush.ErrSeatUnavailable):
				unavailable.Add(1)
			default:
				t.Errorf("hold: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), wins.Load(), "exactly one fan holds the seat")
	assert.Equal(t, int64(999), unavailable.Load())
}

func TestFiveHundredFansFiftySeats(t *testing.T) {
	const seats = 50
	e := newEnv(t, seats, time.Minute)
	var mu sync.Mutex
	holder := map[string]string{} // seat -> fan
	var wg sync.WaitGroup
	for i := 0; i < 500; i++ {
		f := e.fan(t, fmt.Sprintf("fan-%d", i))
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(len(f)), uint64(time.Now().UnixNano())))
			for attempt := 0; attempt < 200; attempt++ {
				seat := fmt.Sprintf("R-%d", 1+rng.IntN(seats))
				r, err := e.svc.Hold(context.Background(), f, f, e.schedule(), seat)
				if errors.Is(err, ticketrush.ErrSeatUnavailable) {
					mu.Lock()
					full := len(holder) == seats
					mu.Unlock()
					if full {
						return
					}
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				noteHolder(t, &mu, holder, r.SeatID, f)
				return // one seat each
			}
		})
	}
	wg.Wait()
	assert.Len(t, holder, seats, "every seat went to exactly one fan")
	list, err := e.svc.Seats(context.Background(), "fan-0", e.concert.ID, e.schedule(), "fan-0")
	require.NoError(t, err)
	for _, s := range list {
		assert.Equal(t, ticketrush.SeatHeld, s.Status, "the seat map says the schedule is sold out: %s", s.ID)
	}
}

// TestMoneyIsConserved runs fans that charge, hold, pay (each payment sent twice at once) and cancel,
// all at once, then checks every balance against its charges, payments and refunds, every SOLD seat
// against exactly one payment, and that no balance ever went below zero.
func TestMoneyIsConserved(t *testing.T) {
	const fans, seats = 60, 80
	e := newEnv(t, seats, time.Minute)
	ctx := context.Background()
	charged := make([]atomic.Int64, fans)
	var negative atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < fans; i++ {
		f := e.fan(t, fmt.Sprintf("fan-%d", i))
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for c := 0; c < 2; c++ {
				amount := int64(500 + rng.IntN(1500))
				key := ""
				if c == 0 {
					key = "first-charge"
				}
				for range 2 { // the first charge is retried with its idempotency key: it counts once
					ch, replayed, err := e.svc.Charge(ctx, f, amount, key)
					if !assert.NoError(t, err) {
						return
					}
					if !replayed {
						charged[i].Add(amount)
					}
					if ch.Balance < 0 {
						negative.Add(1)
					}
					if key == "" {
						break
					}
				}
			}
			for h := 0; h < 2; h++ {
				var r ticketrush.Reservation
				var err error
				for attempt := 0; attempt < 50; attempt++ {
					r, err = e.svc.Hold(ctx, f, f, e.schedule(), fmt.Sprintf("R-%d", 1+rng.IntN(seats)))
					if !errors.Is(err, ticketrush.ErrSeatUnavailable) {
						break
					}
				}
				if err != nil {
					continue
				}
				if rng.IntN(4) == 0 {
					assert.NoError(t, e.svc.Cancel(ctx, f, r.ID))
					continue
				}
				var pays sync.WaitGroup
				for range 2 {
					pays.Go(func() {
						p, _, err := e.svc.Pay(ctx, f, r.ID)
						if err != nil && !errors.Is(err, ticketrush.ErrInsufficientBalance) {
							t.Errorf("pay: %v", err)
						}
						if err == nil && p.Balance < 0 {
							negative.Add(1)
						}
					})
				}
				pays.Wait()
			}
		})
	}
	wg.Wait()
	require.NoError(t, e.svc.Sweep(ctx))

	assert.Zero(t, negative.Load(), "no balance was ever negative")
	sold := e.soldSeats(t)
	paid := 0
	for i := 0; i < fans; i++ {
		f := fmt.Sprintf("fan-%d", i)
		debits, refunds := e.walletEntries(t, f, "debits"), e.walletEntries(t, f, "refunds")
		var debited, refunded int64
		for res, amount := range debits {
			debited += amount
			r, err := e.store.Seats.Reservation(ctx, res)
			require.NoError(t, err)
			if back, ok := refunds[res]; ok {
				refunded += back
				assert.Equal(t, amount, back)
				assert.NotEqual(t, ticketrush.ReservationPaid, r.Status, "a refunded payment is not a sale")
				continue
			}
			assert.Equal(t, ticketrush.ReservationPaid, r.Status, "a debit without a sale: %s", res)
			assert.Equal(t, res, sold[r.SeatID], "the seat of a payment is SOLD to it")
			paid++
		}
		for res := range refunds {
			assert.Contains(t, debits, res, "a refund without a debit")
		}
		balance, err := e.store.Wallet.Balance(ctx, f)
		require.NoError(t, err)
		assert.Equal(t, charged[i].Load()-debited+refunded, balance, "%s: balance = charges - payments + refunds", f)
		assert.GreaterOrEqual(t, balance, int64(0))
	}
	assert.Equal(t, len(sold), paid, "every SOLD seat has exactly one payment")
	assert.Positive(t, paid, "the test sold something")
}

// seatSlot is the keys of the seat slot of the concert's schedule, where its layout placed it.
func (e *env) seatSlot(t *testing.T) redis.ScheduleKeys {
	t.Helper()
	keys := redis.NewKeys(e.prefix())
	l, found, err := keys.ReadLayout(context.Background(), e.client, e.concert.ID)
	require.NoError(t, err)
	require.True(t, found)
	blocks := l.Blocks(e.schedule())
	require.Len(t, blocks, 1, "a line of one shard keeps a schedule's seats in one slot")
	return keys.Concert(e.concert.ID).Schedule(blocks[0])
}

// soldSeats returns seat -> reservation of every SOLD seat.
func (e *env) soldSeats(t *testing.T) map[string]string {
	t.Helper()
	states, err := e.client.Do(context.Background(), e.client.B().Hgetall().Key(e.seatSlot(t).Seats()).Build()).AsStrMap()
	require.NoError(t, err)
	out := map[string]string{}
	for seat, st := range states {
		if res, ok := strings.CutPrefix(st, "S|"); ok {
			out[seat] = res
		}
	}
	return out
}

// walletEntries returns the user's debits or refunds (which: "debits" or "refunds"): reservation -> amount.
func (e *env) walletEntries(t *testing.T, user, which string) map[string]int64 {
	t.Helper()
	w := redis.NewKeys(e.prefix()).Wallet(user)
	key := w.Debits()
	if which == "refunds" {
		key = w.Refunds()
	}
	all, err := e.client.Do(context.Background(), e.client.B().Hgetall().Key(key).Build()).AsStrMap()
	require.NoError(t, err)
	out := map[string]int64{}
	for res, raw := range all {
		var entry struct {
			User   string `json:"user"`
			Amount int64  `json:"amount"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &entry))
		if entry.User == user {
			out[res] = entry.Amount
		}
	}
	return out
}

func (e *env) prefix() string {
	k := e.store.Keys().Concert("x").Meta()
	return k[:strings.Index(k, ":{")]
}

// noteHolder records that fan holds seat, failing the test if another fan already held it.
func noteHolder(t *testing.T, mu *sync.Mutex, holder map[string]string, seat, fan string) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if prev, taken := holder[seat]; taken {
		t.Errorf("seat %s held twice: by %s and %s", seat, prev, fan)
	}
	holder[seat] = fan
}
