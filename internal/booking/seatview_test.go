package booking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestSeatViewNeverRefusesWhatTheScriptGives runs random sequences of holds, cancels, payments (and
// payments released), sweeps and time passing on the real seat scripts, half of them through this
// instance's Service (which tells its view) and half straight to the store (another instance), with view
// refreshes at random points. At every hold through the Service that the view refuses, the real
// seat_hold script is asked the same at the same instant: it must refuse too, unless another instance
// freed the seat since the view's last refresh (the documented window), which the test tracks. After
// every refresh the view's seat map must equal the one read from Redis at the same instant.
func TestSeatViewNeverRefusesWhatTheScriptGives(t *testing.T) {
	for round := range 4 {
		seed := uint64(time.Now().UnixNano()) + uint64(round)
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) { seatViewRound(t, seed) })
	}
}

func seatViewRound(t *testing.T, seed uint64) {
	const seats, fans, steps = 24, 6, 1500
	rng := rand.New(rand.NewPCG(seed, 17))
	e := newEnvHolds(t, seats, 5*time.Second, 3)
	e.clock.Set(time.UnixMilli(e.clock.Now().UnixMilli()).Truncate(time.Second)) // whole seconds: now meets expiries exactly
	ctx := context.Background()
	sv := e.svc.seats
	sv.enabled.Store(true)
	sched := e.schedule()
	names := make([]string, fans)
	for i := range names {
		names[i] = e.fan(t, fmt.Sprint("fan-", i))
		_, _, err := e.store.Wallet.Charge(ctx, names[i], 1_000_000, "", "", e.clock.Now())
		require.NoError(t, err)
	}
	type hold struct{ user, id, seat string }
	var open []hold                 // reservations that may still be HELD
	window := map[string]bool{}     // seats another instance freed since the last refresh
	ended := map[string]time.Time{} // fan -> when another instance may have ended their token (paid)
	checked, sold, windowed := 0, 0, 0
	claims := func(user string) ticketrush.QueueClaims {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.tokens[user]
	}
	pick := func() (hold, int) {
		i := rng.IntN(len(open))
		return open[i], i
	}
	drop := func(i int) { open = append(open[:i], open[i+1:]...) }
	seatOf := func(n int) string { return fmt.Sprint("R-", n) }

	for step := 0; step < steps; step++ {
		now := e.clock.Now()
		switch op := rng.IntN(100); {
		case op < 10:
			e.clock.Advance(time.Duration(rng.IntN(3)) * time.Second)
		case op < 20:
			require.NoError(t, sv.Refresh(ctx))
			clear(window)
			v := sv.existing(sched)
			if v == nil {
				break
			}
			_, truth, err := e.store.Seats.GatedSeats(ctx, claims(names[0]), sched, now)
			require.NoError(t, err)
			m, err := v.seatMap(ctx, e.clock.Now)
			require.NoError(t, err)
			for _, s := range m.Seats {
				want := ticketrush.SeatAvailable
				if st, ok := truth[s.ID]; ok {
					want = st
				}
				require.Equal(t, want, s.Status, "step %d: seat %s in the map just after a refresh", step, s.ID)
			}
		case op < 55: // a hold through this instance
			user, seat := names[rng.IntN(fans)], seatOf(1+rng.IntN(seats))
			c := claims(user)
			v := sv.schedule(e.concert, sched)
			memory := v.refuses(seat, now.UnixMilli()) && sv.active(c, now)
			before := inMemory(t, e.svc.metrics.refusedInMemory)
			r, err := e.svc.Hold(ctx, user, user, sched, seat)
			if !memory {
				if err == nil {
					open = append(open, hold{user, r.ID, seat})
				}
				if errors.Is(err, ticketrush.ErrQueueTokenExpired) {
					e.fan(t, user) // paid their last hold: a new token
				}
				break
			}
			require.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "step %d: the view refuses", step)
			require.Equal(t, before+1, inMemory(t, e.svc.metrics.refusedInMemory), "step %d: counted", step)
			// Would the script have refused it too, at the same instant?
			checked++
			// the seat's state first: the script answers the fan's hold limit before the seat
			states, err := redis.NewInspector(e.client, e.prefix()).SeatStates(ctx, e.concert.ID, sched)
			require.NoError(t, err)
			st, taken := states[seat]
			free := !taken || (st.Kind == redis.SeatHeld && st.Expires <= now.UnixMilli())
			r, _, err = e.store.Seats.Hold(ctx, c, sched, seat, 1000, now)
			switch {
			case err == nil, errors.Is(err, ticketrush.ErrHoldLimitReached) && free: // the seat was free to the script
				require.True(t, window[seat], "step %d (seed %d): the view refused %s, which the script gave (not freed elsewhere since the refresh)", step, seed, seat)
				windowed++
				if err == nil {
					open = append(open, hold{user, r.ID, seat})
				}
			case errors.Is(err, ticketrush.ErrQueueTokenExpired):
				at, ok := ended[user]
				require.True(t, ok && now.Before(at.Add(activeProofFor)), "step %d: the view refused for a token that ended over %s ago", step, activeProofFor)
				e.fan(t, user)
			case errors.Is(err, ticketrush.ErrHoldLimitReached): // and the seat was taken to the script too
			default:
				require.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "step %d", step)
			}
		case op < 65: // a hold on another instance
			user, seat := names[rng.IntN(fans)], seatOf(1+rng.IntN(seats))
			r, _, err := e.store.Seats.Hold(ctx, claims(user), sched, seat, 1000, now)
			if err == nil {
				open = append(open, hold{user, r.ID, seat})
			}
			if errors.Is(err, ticketrush.ErrQueueTokenExpired) {
				e.fan(t, user)
			}
		case op < 75 && len(open) > 0: // a cancel, here or elsewhere
			h, i := pick()
			drop(i)
			if rng.IntN(2) == 0 {
				_ = e.svc.Cancel(ctx, h.user, h.id) // this instance's view frees it at once
			} else if _, err := e.store.Seats.Cancel(ctx, h.user, h.id, now); err == nil {
				window[h.seat] = true
			}
		case op < 85 && len(open) > 0 && sold < seats/2: // a payment, here or elsewhere (half the seats at most: a sold-out line takes no fan back)
			h, i := pick()
			drop(i)
			if rng.IntN(2) == 0 {
				if _, _, err := e.svc.Pay(ctx, h.user, h.id); err == nil {
					sold++
				}
			} else if r, err := e.store.Seats.Claim(ctx, h.user, h.id, now); err == nil && r.Status == ticketrush.ReservationPaying {
				d, err := e.store.Wallet.Debit(ctx, h.user, h.id, r.Price, now)
				require.NoError(t, err)
				_, err = e.store.Seats.Complete(ctx, h.id, d, now)
				require.NoError(t, err)
				sold++
				ended[h.user] = now // DONE when it was their last hold, and this instance does not know
			}
		case op < 90 && len(open) > 0: // a payment claimed elsewhere, then released (a short balance)
			h, _ := pick()
			if r, err := e.store.Seats.Claim(ctx, h.user, h.id, now); err == nil && r.Status == ticketrush.ReservationPaying {
				r, err := e.store.Seats.Release(ctx, h.id, now)
				require.NoError(t, err)
				if r.Status != ticketrush.ReservationHeld {
					window[h.seat] = true
				}
			}
		case op < 95:
			_, err := e.store.Seats.Sweep(ctx, e.concert.ID, []string{sched}, now, 100)
			require.NoError(t, err)
		}
	}
	t.Logf("%d refusals from memory, each checked against the script (%d in the window after a free elsewhere)", checked, windowed)
	assert.Positive(t, checked, "the view refused something")
}

// TestSeatViewKeepsTheTokenAnswers: a refusal from memory needs the token proven ACTIVE by a script's
// answer on this instance, so a token that never was, or ended longer than activeProofFor ago, gets the
// script's 410, not 409, even for a sold seat.
func TestSeatViewKeepsTheTokenAnswers(t *testing.T) {
	e := newEnvHolds(t, 4, time.Minute, 2)
	ctx := context.Background()
	sv := e.svc.seats
	sv.enabled.Store(true)
	sched := e.schedule()
	owner, fan := e.fan(t, "owner"), e.fan(t, "fan")
	_, err := e.svc.Hold(ctx, owner, owner, sched, "R-1")
	require.NoError(t, err)
	require.NoError(t, sv.Refresh(ctx))

	_, err = e.svc.Hold(ctx, fan, fan, sched, "R-1")
	require.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "the script's answer (the token is proven by it)")
	before := inMemory(t, e.svc.metrics.refusedInMemory)
	_, err = e.svc.Hold(ctx, fan, fan, sched, "R-1")
	require.ErrorIs(t, err, ticketrush.ErrSeatUnavailable)
	require.Equal(t, before+1, inMemory(t, e.svc.metrics.refusedInMemory), "from memory")

	// The fan leaves the line on another instance: the proof lasts activeProofFor at most.
	_, err = e.store.Line.Leave(ctx, e.concert.ID, fan, e.tokens[fan].Seq, e.clock.Now())
	require.NoError(t, err)
	e.clock.Advance(activeProofFor)
	_, err = e.svc.Hold(ctx, fan, fan, sched, "R-1")
	require.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "past the proof, the script answers")

	// A token this instance never saw ACTIVE goes to the script, sold seat or not.
	e.mu.Lock()
	e.tokens["ghost"] = ticketrush.QueueClaims{UserID: "ghost", ConcertID: e.concert.ID, Seq: 424242}
	e.mu.Unlock()
	_, err = e.svc.Hold(ctx, "ghost", "ghost", sched, "R-1")
	require.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired)
}

// TestSeatMapTokenCheckFromTheProof: while the seat view runs, a seat map read whose token a gated call on
// this instance proved ACTIVE within activeProofFor is answered without Redis; a token that ended through
// another instance reads the map for that long at most (the documented window), and one that ended through
// this instance (Left) is asked of Redis at once.
func TestSeatMapTokenCheckFromTheProof(t *testing.T) {
	e := newEnvHolds(t, 4, time.Minute, 2)
	ctx := context.Background()
	e.svc.seats.enabled.Store(true)
	sched := e.schedule()
	elsewhere, here := e.fan(t, "elsewhere"), e.fan(t, "here")
	for _, fan := range []string{elsewhere, here} {
		_, err := e.svc.SeatMap(ctx, fan, e.concert.ID, sched, fan) // the gate in Redis: the proof
		require.NoError(t, err)
	}

	_, err := e.store.Line.Leave(ctx, e.concert.ID, elsewhere, e.tokens[elsewhere].Seq, e.clock.Now())
	require.NoError(t, err)
	_, err = e.svc.SeatMap(ctx, elsewhere, e.concert.ID, sched, elsewhere)
	require.NoError(t, err, "within the proof the map is served from this instance's proof")
	e.clock.Advance(activeProofFor)
	_, err = e.svc.SeatMap(ctx, elsewhere, e.concert.ID, sched, elsewhere)
	require.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "past the proof, Redis answers")

	_, err = e.svc.SeatMap(ctx, here, e.concert.ID, sched, here) // a fresh proof
	require.NoError(t, err)
	_, err = e.store.Line.Leave(ctx, e.concert.ID, here, e.tokens[here].Seq, e.clock.Now())
	require.NoError(t, err)
	e.svc.left(e.concert.ID, here)
	_, err = e.svc.SeatMap(ctx, here, e.concert.ID, sched, here)
	require.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "a token that ended here is asked of Redis at once")
}

// TestSeatViewForgetsIdleSchedules: a schedule nobody read or held here for idleAfter leaves the view,
// and is read again (from Redis) by the next seat map.
func TestSeatViewForgetsIdleSchedules(t *testing.T) {
	e := newEnvHolds(t, 4, time.Minute, 2)
	ctx := context.Background()
	sv := e.svc.seats
	sv.enabled.Store(true)
	fan := e.fan(t, "fan")
	m, err := e.svc.SeatMap(ctx, fan, e.concert.ID, e.schedule(), fan)
	require.NoError(t, err)
	require.Len(t, m.Seats, 4)
	require.NoError(t, sv.Refresh(ctx))
	require.NotNil(t, sv.existing(e.schedule()), "in use")
	e.clock.Advance(sv.idleAfter + time.Millisecond)
	require.NoError(t, sv.Refresh(ctx))
	assert.Nil(t, sv.existing(e.schedule()), "idle: forgotten, refreshed no more")

	_, _, err = e.store.Seats.Hold(ctx, e.tokens[fan], e.schedule(), "R-2", 1000, e.clock.Now())
	require.NoError(t, err)
	m, err = e.svc.SeatMap(ctx, fan, e.concert.ID, e.schedule(), fan)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.SeatHeld, m.Seats[1].Status, "the first read loads it again")
}

// inMemory reads a counter.
func inMemory(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

// slowSeats is a SeatViewStore whose reads take took on the test's clock; it counts them.
type slowSeats struct {
	clock   *dbtest.Clock
	took    time.Duration  // each read's time on the test clock
	entries map[string]int // taken seats per schedule (held till far ahead)
	fail    error          // reads fail with it
	reads   map[string]int // reads per schedule
}

func (f *slowSeats) Gate(context.Context, ticketrush.QueueClaims, time.Time) (ticketrush.TokenState, error) {
	return ticketrush.TokenState{Status: ticketrush.StatusActive}, nil
}

func (f *slowSeats) TakenSeats(_ context.Context, _ string, ids []string) ([]map[string]ticketrush.TakenSeat, error) {
	f.clock.Advance(f.took)
	if f.fail != nil {
		return nil, f.fail
	}
	out := make([]map[string]ticketrush.TakenSeat, len(ids))
	for i, id := range ids {
		f.reads[id]++
		out[i] = map[string]ticketrush.TakenSeat{}
		for n := range f.entries[id] {
			out[i][fmt.Sprintf("R-%d", n+1)] = ticketrush.TakenSeat{HeldUntil: math.MaxInt64}
		}
	}
	return out, nil
}

// TestSeatViewReadsBigSchedulesLessOften: a schedule whose read costs Redis much (many entries) is read
// again after readShare times that cost at the earliest, so that the view's share of Redis stays
// bounded; a small schedule is read at every refresh, even beside a big one of the same concert and
// even when its reads take long (a Redis stall is no reason to stop refreshing).
func TestSeatViewReadsBigSchedulesLessOften(t *testing.T) {
	big := int(2 * time.Second / (readShare * seatReadCost)) // a read costing Redis 2 s / readShare
	for _, tt := range []struct {
		name      string
		took      time.Duration
		entries   map[string]int
		wantReads map[string]int
	}{
		{"small, quick read: every refresh", 5 * time.Millisecond, map[string]int{"s1": 3}, map[string]int{"s1": 10}},
		{"small, reads stalled 2 s: every refresh", 2 * time.Second, map[string]int{"s1": 3}, map[string]int{"s1": 10}},
		{"big: every readShare x its cost", 5 * time.Millisecond, map[string]int{"s1": big}, map[string]int{"s1": 1 + 1}}, // at 0, then at 2 s
		{"big beside small", 5 * time.Millisecond, map[string]int{"s1": 3, "s2": big}, map[string]int{"s1": 10, "s2": 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dbtest.NewClock(time.Time{})
			c.Set(time.Unix(1_800_000_000, 0))
			store := &slowSeats{clock: c, took: tt.took, entries: tt.entries, reads: map[string]int{}}
			sv := newSeatView(store, c.Now, newMetrics(prometheus.NewRegistry()))
			sv.enabled.Store(true)
			sv.interval.Store(int64(200 * time.Millisecond))
			concert := ticketrush.Concert{ID: "c1", Sections: []ticketrush.Section{{Name: "R", Price: 1, Seats: big}},
				Schedules: []ticketrush.Schedule{{ID: "s1"}, {ID: "s2"}}}
			for range 10 { // 10 refreshes 250 ms apart (the reads' own time on top): 2.25 s and more
				for id := range tt.entries {
					sv.schedule(concert, id) // in use
				}
				require.NoError(t, sv.Refresh(context.Background()))
				c.Advance(250 * time.Millisecond)
			}
			assert.Equal(t, tt.wantReads, store.reads)
		})
	}
}

// TestSeatViewDistrustsAnOldRead: while its reads fail, a view refuses from memory only for trustReads
// refreshes after its last read; then every hold goes to the script again.
func TestSeatViewDistrustsAnOldRead(t *testing.T) {
	c := dbtest.NewClock(time.Time{})
	c.Set(time.Unix(1_800_000_000, 0))
	store := &slowSeats{clock: c, entries: map[string]int{"s1": 1}, reads: map[string]int{}}
	sv := newSeatView(store, c.Now, newMetrics(prometheus.NewRegistry()))
	sv.enabled.Store(true)
	sv.interval.Store(int64(200 * time.Millisecond))
	concert := ticketrush.Concert{ID: "c1", Sections: []ticketrush.Section{{Name: "R", Price: 1, Seats: 2}},
		Schedules: []ticketrush.Schedule{{ID: "s1"}}}
	v := sv.schedule(concert, "s1")
	require.NoError(t, sv.Refresh(context.Background()))
	read := c.Now()
	assert.True(t, v.refuses("R-1", c.Now().UnixMilli()), "a seat held far ahead is refused from memory")
	store.fail = errors.New("redis away")
	for range 3 {
		c.Advance(time.Duration(sv.interval.Load()))
		require.Error(t, sv.Refresh(context.Background()))
	}
	assert.True(t, v.refuses("R-1", c.Now().UnixMilli()), "a few failed refreshes: still trusted")
	c.Set(read.Add(trustReads * time.Duration(sv.interval.Load())))
	assert.False(t, v.refuses("R-1", c.Now().UnixMilli()), "the last read is too old: the script decides")
}

// TestSeatViewUnderContention: 200 fans race for 5 seats, twenty attempts each, while the view refreshes
// every millisecond and the fans read the map: every seat goes to exactly one fan, the losers are
// refused, most of them from memory (run with -race, this is the view's concurrency test).
func TestSeatViewUnderContention(t *testing.T) {
	const seats = 5
	e := newEnvHolds(t, seats, time.Minute, 1)
	e.clock.Set(time.Now())
	ctx, stop := context.WithCancel(context.Background())
	e.svc.EnableSeatView()
	var loop sync.WaitGroup
	loop.Go(func() { e.svc.RunSeatView(ctx, time.Millisecond) })
	defer func() { stop(); loop.Wait() }()
	var mu sync.Mutex
	holder := map[string]string{}
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		f := e.fan(t, fmt.Sprint("fan-", i))
		wg.Go(func() {
			for attempt := 0; attempt < 20; attempt++ {
				seat := fmt.Sprint("R-", 1+(i+attempt)%seats)
				if attempt%5 == 0 {
					_, err := e.svc.SeatMap(context.Background(), f, e.concert.ID, e.schedule(), f)
					assert.NoError(t, err)
				}
				r, err := e.svc.Hold(context.Background(), f, f, e.schedule(), seat)
				if errors.Is(err, ticketrush.ErrSeatUnavailable) || errors.Is(err, ticketrush.ErrHoldLimitReached) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				noteHolder(t, &mu, holder, r.SeatID, f)
			}
		})
	}
	wg.Wait()
	assert.Len(t, holder, seats, "every seat went to exactly one fan")
	assert.Positive(t, inMemory(t, e.svc.metrics.refusedInMemory), "refusals from memory")
	m, err := e.svc.SeatMap(context.Background(), "fan-0", e.concert.ID, e.schedule(), "fan-0")
	require.NoError(t, err)
	for _, s := range m.Seats {
		assert.Equal(t, ticketrush.SeatHeld, s.Status, "this instance's holds show at once: %s", s.ID)
	}
}

// TestSeatViewProofKeepsActiveUntil: a hold's answer proves a token ACTIVE without telling its
// activeUntil; a proof from it stops at the activeUntil an earlier gate check told, even after that
// gate's own proof ran out and a refresh forgot it, so that a token past its turn gets the script's 410.
func TestSeatViewProofKeepsActiveUntil(t *testing.T) {
	c := dbtest.NewClock(time.Time{})
	c.Set(time.Unix(1_800_000_000, 0))
	sv := newSeatView(&slowSeats{clock: c, reads: map[string]int{}}, c.Now, newMetrics(prometheus.NewRegistry()))
	sv.enabled.Store(true)
	claims := ticketrush.QueueClaims{UserID: "fan", ConcertID: "c1", Seq: 7}
	activeUntil := c.Now().Add(2*activeProofFor + activeProofFor/2)

	sv.proven(claims, c.Now(), activeUntil) // a seat map read's gate check
	c.Advance(2 * activeProofFor)
	require.NoError(t, sv.Refresh(context.Background()))
	assert.False(t, sv.active(claims, c.Now()), "the gate's proof ran out")
	sv.learn(claims, c.Now(), nil) // a hold that won
	assert.True(t, sv.active(claims, c.Now()))
	c.Set(activeUntil)
	assert.False(t, sv.active(claims, c.Now()), "the hold's proof stops at the token's activeUntil")

	other := ticketrush.QueueClaims{UserID: "fan", ConcertID: "c1", Seq: 8} // a newer token: nothing known
	sv.learn(other, c.Now(), nil)
	assert.True(t, sv.active(other, c.Now().Add(activeProofFor-time.Millisecond)))
}

// TestSeatMapShowsThisInstancesChangesAtOnce: a seat map read (docs/api.md, "Concerts and seats") right
// after a change answered by this instance shows it, past the budget of immediate rebuilds too: a seat
// held (201) reads HELD, a hold cancelled (204) reads AVAILABLE, a hold whose expiry has passed reads
// AVAILABLE, with no refresh of the view in between. Thirty of each, one read after each, on the clock of
// the test (which does not move, so the budget is spent after rebuildsPerSecond).
func TestSeatMapShowsThisInstancesChangesAtOnce(t *testing.T) {
	const n = 30
	e := newEnvHolds(t, n, time.Minute, n)
	ctx := context.Background()
	e.svc.seats.enabled.Store(true)
	sched := e.schedule()
	fan := e.fan(t, "fan")
	statusOf := func(seat string) ticketrush.SeatStatus {
		t.Helper()
		m, err := e.svc.SeatMap(ctx, fan, e.concert.ID, sched, fan)
		require.NoError(t, err)
		for _, s := range m.Seats {
			if s.ID == seat {
				return s.Status
			}
		}
		t.Fatalf("no seat %s", seat)
		return ""
	}
	require.Equal(t, ticketrush.SeatAvailable, statusOf("R-1"), "the view loaded")

	ids := make([]string, n)
	for i := range n {
		seat := fmt.Sprint("R-", i+1)
		r, err := e.svc.Hold(ctx, fan, fan, sched, seat)
		require.NoError(t, err)
		ids[i] = r.ID
		require.Equal(t, ticketrush.SeatHeld, statusOf(seat), "hold %d: read just after its 201", i+1)
	}
	for i := range n / 2 {
		require.NoError(t, e.svc.Cancel(ctx, fan, ids[i]))
		require.Equal(t, ticketrush.SeatAvailable, statusOf(fmt.Sprint("R-", i+1)), "cancel %d: read just after its 204", i+1)
	}
	e.clock.Advance(time.Minute)
	for i := n / 2; i < n; i++ {
		require.Equal(t, ticketrush.SeatAvailable, statusOf(fmt.Sprint("R-", i+1)), "hold %d past its expiry", i+1)
	}
}
