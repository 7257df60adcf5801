package booking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The seat view (docs/design.md): each api instance keeps, per schedule that it served recently, the seats
// that are not free, read from Redis a few times a second (RunSeatView) and updated at once by the
// changes this instance makes itself. Two things read it:
//
//   - A hold of a seat the view shows SOLD, or held until a time still ahead, is refused
//     (SEAT_UNAVAILABLE) without Redis: a SOLD seat never comes back, and a hold until T cannot be taken
//     before T. Everything else goes to seat_hold, which stays the one that decides. The view is wrong
//     only about seats freed since its last refresh by another instance (a cancel, a payment's release,
//     a restore): those may be refused until the next refresh begins and ends. A read is trusted for
//     trustReads refreshes at most: while reads fail, holds go to the script.
//   - A seat map is built once per change the view sees and shared by every admitted fan of the
//     schedule (the HTTP adapter encodes it once); each read still checks its token in Redis. A read
//     shows every change this instance had made when it began (a hold answered 201 here reads HELD, a
//     cancel answered 204 reads AVAILABLE) and no hold past its expiry: it waits, a moment at most,
//     for a build when the budget of immediate ones is spent. Other instances' changes show from the
//     next refresh.
//
// A schedule nobody read or held on this instance for idleAfter costs nothing: the view forgets it, and
// the next read loads it again.

const (
	// seatViewIdle is how long a schedule stays in the view without a read or a hold on this instance.
	seatViewIdle = 10 * time.Second
	// activeProofFor is how long a script's answer that a token was ACTIVE is trusted by a refusal from
	// memory (less when the token's activeUntil is known sooner): a token that ends meanwhile on another
	// instance (left the line, its last hold paid there) reads SEAT_UNAVAILABLE for a seat the view shows
	// taken, where the script would say QUEUE_TOKEN_EXPIRED.
	activeProofFor = time.Second
	// rebuildsPerSecond bounds how often one schedule's map is rebuilt at once for this instance's own
	// changes and for holds that lapse between refreshes; past it, a read that must see such a change
	// waits for one build a moment later (1/rebuildsPerSecond at most), shared by every read waiting.
	rebuildsPerSecond = 20
	// readShare bounds the Redis time the view's reads take: a schedule whose read costs Redis d is read
	// again after readShare × d at the earliest, when that is longer than the refresh interval (a
	// 200,000-seat schedule fully taken takes Redis about half a second to read: every 10 s, not 5 times
	// a second). d is estimated from the entries read (seatReadCost each), not from how long the read
	// took: a Redis stall or a busy network must not slow a small schedule's refreshes.
	readShare = 20
	// seatReadCost is what Redis spends per entry of a seats hash read whole (HGETALL): about 0.5 s for
	// 200,000 entries on this project's machine.
	seatReadCost = 2500 * time.Nanosecond
	// trustReads is how many of its refreshes a view's last read is trusted for by a refusal from
	// memory: when reads keep failing (Redis away, a read timing out), holds go to the script again
	// instead of being refused from ever older data.
	trustReads = 5
)

// SeatViewStore reads what the seat view keeps.
type SeatViewStore interface {
	// Gate checks a gated call's token (and marks the fan shown up) in one round trip.
	Gate(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error)
	// TakenSeats reads the seats of each schedule that are not plainly free.
	TakenSeats(ctx context.Context, concertID string, scheduleIDs []string) ([]map[string]ticketrush.TakenSeat, error)
}

type seatView struct {
	store     SeatViewStore
	now       func() time.Time
	metrics   *metrics
	enabled   atomic.Bool // while RunSeatView runs
	idleAfter time.Duration
	proofFor  time.Duration
	interval  atomic.Int64 // RunSeatView's, in ns, set while reads may run; 0: every Refresh reads every schedule

	mu        sync.RWMutex
	schedules map[string]*scheduleView // by schedule id

	pmu    sync.Mutex
	proofs map[proofKey]proof
}

func newSeatView(store SeatViewStore, now func() time.Time, m *metrics) *seatView {
	return &seatView{store: store, now: now, metrics: m, idleAfter: seatViewIdle, proofFor: activeProofFor,
		schedules: map[string]*scheduleView{}, proofs: map[proofKey]proof{}}
}

// scheduleView is the view of one schedule.
type scheduleView struct {
	concertID, id string
	base          []ticketrush.Seat // every seat, AVAILABLE, in map order
	used          atomic.Int64      // Unix ns of the last read or hold on this instance
	due           time.Time         // not read again before (Refresh's goroutine only)
	load          sync.Mutex        // one first load at a time

	mu       sync.RWMutex
	loaded   bool
	trusted  int64                           // Unix ms until which a refusal from memory may use the last read (0: no limit)
	taken    map[string]ticketrush.TakenSeat // the last refresh, with this instance's changes since
	changes  uint64                          // local changes so far
	local    map[string]uint64               // seat -> the local change that set it
	m        *ticketrush.SeatMap             // the map last built, nil before the first
	statuses []ticketrush.SeatStatus         // what m shows
	built    uint64                          // the local changes m shows (changes when it was built)
	lapses   int64                           // Unix ms of the first hold m shows HELD that lapses
	stale    bool                            // refreshed since m was built
	tokens   float64                         // rebuild budget for local changes and lapses
	filled   time.Time
	pending  chan struct{} // closed by the build a read past the budget waits for
}

// schedule returns the view of a concert's schedule, making it when this instance has none; nil when
// the view is off.
func (sv *seatView) schedule(c ticketrush.Concert, scheduleID string) *scheduleView {
	if sv == nil || !sv.enabled.Load() {
		return nil
	}
	now := sv.now()
	sv.mu.RLock()
	v := sv.schedules[scheduleID]
	sv.mu.RUnlock()
	if v == nil {
		sv.mu.Lock()
		if v = sv.schedules[scheduleID]; v == nil {
			v = &scheduleView{concertID: c.ID, id: scheduleID, base: baseSeats(c), tokens: rebuildsPerSecond, filled: now}
			sv.schedules[scheduleID] = v
		}
		sv.mu.Unlock()
	}
	v.used.Store(now.UnixNano())
	return v
}

// existing returns the view of a schedule when there is one.
func (sv *seatView) existing(scheduleID string) *scheduleView {
	if sv == nil || !sv.enabled.Load() {
		return nil
	}
	sv.mu.RLock()
	defer sv.mu.RUnlock()
	return sv.schedules[scheduleID]
}

func baseSeats(c ticketrush.Concert) []ticketrush.Seat {
	out := make([]ticketrush.Seat, 0, c.TotalSeats())
	for _, sec := range c.Sections {
		for n := 1; n <= sec.Seats; n++ {
			out = append(out, ticketrush.Seat{ID: ticketrush.SeatID(sec.Name, n), Section: sec.Name, Price: sec.Price,
				Status: ticketrush.SeatAvailable})
		}
	}
	return out
}

// refuses reports whether a hold of seat at nowMs is surely refused: the view shows it SOLD or held
// until after nowMs.
func (v *scheduleView) refuses(seat string, nowMs int64) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	t, ok := v.taken[seat]
	return v.loaded && (v.trusted == 0 || nowMs < v.trusted) && ok && t.RefusesAt(nowMs)
}

// changed records a change this instance made to a seat: taken as t, or free (nil).
func (v *scheduleView) changed(seat string, t *ticketrush.TakenSeat) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.loaded {
		return // the first load reads it
	}
	if t == nil {
		delete(v.taken, seat)
	} else {
		v.taken[seat] = *t
	}
	v.changes++
	if v.local == nil {
		v.local = map[string]uint64{}
	}
	v.local[seat] = v.changes
}

// mark returns the count of local changes, taken just before a read of the seats is sent: a change
// counted after it may be missing from the read.
func (v *scheduleView) mark() uint64 {
	mark, _ := v.state()
	return mark
}

// state returns mark() and whether the view was loaded, under one read lock.
func (v *scheduleView) state() (mark uint64, loaded bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.changes, v.loaded
}

// apply replaces the view with a read of the seats that began after local change mark, to be trusted by
// refusals until trusted (Unix ms, 0: no limit); this instance's changes after mark stay as they are.
func (v *scheduleView) apply(fresh map[string]ticketrush.TakenSeat, mark uint64, trusted int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for seat, n := range v.local {
		if n <= mark {
			delete(v.local, seat)
			continue
		}
		if t, ok := v.taken[seat]; ok {
			fresh[seat] = t
		} else {
			delete(fresh, seat)
		}
	}
	v.taken, v.loaded, v.stale, v.trusted = fresh, true, true, trusted
}

// seatMap returns the schedule's map as of the changes this instance had made when it was called, with
// no hold shown HELD past its expiry: the map last built while that holds. Otherwise it builds one: at
// once after a refresh, or within the rebuild budget; past the budget it waits for the build one
// 1/rebuildsPerSecond later that every such read shares (or for ctx).
func (v *scheduleView) seatMap(ctx context.Context, now func() time.Time) (*ticketrush.SeatMap, error) {
	v.mu.RLock()
	want := v.changes
	m, fresh := v.m, v.shows(want, now())
	v.mu.RUnlock()
	if fresh {
		return m, nil
	}
	for {
		v.mu.Lock()
		t := now()
		if v.shows(want, t) {
			m := v.m
			v.mu.Unlock()
			return m, nil
		}
		if v.m == nil || v.stale || v.spend(t) {
			v.build(t)
			m := v.m
			v.mu.Unlock()
			return m, nil
		}
		next := v.nextBuild(now)
		v.mu.Unlock()
		select {
		case <-next:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: seat map: %w", ticketrush.ErrUnavailable, ctx.Err())
		}
	}
}

// shows reports whether the map last built may be served at t to a read that must show local change
// want: no refresh since, that change in, and no hold in it lapsed (callers hold v.mu).
func (v *scheduleView) shows(want uint64, t time.Time) bool {
	return v.m != nil && !v.stale && v.built >= want && t.UnixMilli() < v.lapses
}

// nextBuild returns a channel closed by a build 1/rebuildsPerSecond from the first call that asked for
// it (callers hold v.mu).
func (v *scheduleView) nextBuild(now func() time.Time) <-chan struct{} {
	if v.pending == nil {
		ch := make(chan struct{})
		v.pending = ch
		time.AfterFunc(time.Second/rebuildsPerSecond, func() {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.build(now())
			v.pending = nil
			close(ch)
		})
	}
	return v.pending
}

// build makes the map of the view at now (callers hold v.mu); the same statuses keep the same map, its
// encoding and ETag.
func (v *scheduleView) build(now time.Time) {
	ms := now.UnixMilli()
	statuses := make([]ticketrush.SeatStatus, len(v.base))
	lapses := int64(math.MaxInt64)
	for i, s := range v.base {
		statuses[i] = ticketrush.SeatAvailable
		if t, ok := v.taken[s.ID]; ok {
			statuses[i] = t.StatusAt(ms)
			if !t.Sold && !t.Paying && t.HeldUntil > ms {
				lapses = min(lapses, t.HeldUntil)
			}
		}
	}
	v.stale, v.built, v.lapses = false, v.changes, lapses
	if v.m != nil && slices.Equal(statuses, v.statuses) {
		return
	}
	seats := slices.Clone(v.base)
	for i := range seats {
		seats[i].Status = statuses[i]
	}
	v.m, v.statuses = &ticketrush.SeatMap{ScheduleID: v.id, Seats: seats, AsOf: now}, statuses
}

// spend takes one rebuild from the budget (callers hold v.mu).
func (v *scheduleView) spend(now time.Time) bool {
	v.tokens = min(rebuildsPerSecond, v.tokens+now.Sub(v.filled).Seconds()*rebuildsPerSecond)
	v.filled = now
	if v.tokens < 1 {
		return false
	}
	v.tokens--
	return true
}

// loadFirst reads a schedule the view has not read yet. Every seat map read calls it: a loaded view
// costs one read lock, and only a first load takes v.load.
func (sv *seatView) loadFirst(ctx context.Context, v *scheduleView) error {
	if _, loaded := v.state(); loaded {
		return nil
	}
	v.load.Lock()
	defer v.load.Unlock()
	mark, loaded := v.state()
	if loaded {
		return nil
	}
	start := sv.now()
	taken, err := sv.store.TakenSeats(ctx, v.concertID, []string{v.id})
	if err != nil {
		return err
	}
	_, trusted := sv.pace(start, len(taken[0]))
	v.apply(taken[0], mark, trusted)
	return nil
}

// Refresh re-reads every schedule of the view (one round trip per concert) and forgets those nobody
// read or held on this instance for idleAfter, and the token proofs that ran out.
func (sv *seatView) Refresh(ctx context.Context) error {
	now := sv.now()
	byConcert := map[string][]*scheduleView{}
	sv.mu.Lock()
	for id, v := range sv.schedules {
		if now.Sub(time.Unix(0, v.used.Load())) > sv.idleAfter {
			delete(sv.schedules, id)
			continue
		}
		if now.Before(v.due) {
			continue
		}
		byConcert[v.concertID] = append(byConcert[v.concertID], v)
	}
	sv.metrics.seatViewSchedules.Set(float64(len(sv.schedules)))
	sv.mu.Unlock()
	sv.pmu.Lock()
	for k, p := range sv.proofs {
		if !now.Before(p.until) && !now.Before(p.activeUntil) { // kept while its activeUntil bounds a later proof
			delete(sv.proofs, k)
		}
	}
	sv.pmu.Unlock()

	var errs []error
	for concertID, views := range byConcert {
		ids := make([]string, len(views))
		marks := make([]uint64, len(views))
		for i, v := range views {
			ids[i], marks[i] = v.id, v.mark()
		}
		start := sv.now()
		taken, err := sv.store.TakenSeats(ctx, concertID, ids)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, v := range views {
			due, trusted := sv.pace(start, len(taken[i]))
			v.apply(taken[i], marks[i], trusted)
			v.due = due
		}
	}
	return errors.Join(errs...)
}

// pace returns, for a schedule read at start whose read held entries, when it is next read at the
// earliest (zero: at the next refresh) and until when (Unix ms) a refusal may trust the read: for
// trustReads refreshes at its pace (no limit without RunSeatView's interval).
func (sv *seatView) pace(start time.Time, entries int) (due time.Time, trusted int64) {
	every := time.Duration(sv.interval.Load())
	if every <= 0 {
		return time.Time{}, 0
	}
	if cost := readShare * seatReadCost * time.Duration(entries); cost > every {
		every = cost
		due = start.Add(cost)
	}
	return due, start.Add(trustReads * every).UnixMilli()
}

// RunSeatView keeps this instance's seat view (holds refused in memory, shared seat maps) until ctx
// ends, refreshing it every interval; without it every hold and seat map goes to Redis.
func (s *Service) RunSeatView(ctx context.Context, interval time.Duration) {
	s.seats.interval.Store(int64(interval))
	s.EnableSeatView()
	defer s.seats.enabled.Store(false)
	periodic.Run(ctx, interval, s.RefreshSeatView, s.log, "seat view refresh")
}

// EnableSeatView turns the seat view on without its loop (RunSeatView does it first): for a caller
// that refreshes it itself with RefreshSeatView.
func (s *Service) EnableSeatView() { s.seats.enabled.Store(true) }

// RefreshSeatView refreshes the seat view once.
func (s *Service) RefreshSeatView(ctx context.Context) error { return s.seats.Refresh(ctx) }
