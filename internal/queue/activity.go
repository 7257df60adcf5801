package queue

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Activity: the scheduler's loops (tick, sweep, the draw's pre-queue gauge) and the write-behind's
// stream reads run only for concerts with someone there, so that their cost grows with the concerts
// that have fans, not with the catalog. A concert wakes when a fan joins, polls or leaves it on any
// instance: the instance writes the concert's id into one zset in Redis (Store.Wake), at most once a
// second per concert, a join at once and a poll with the next liveness flush. Every scheduler and
// write-behind process reads the zset once per tick (Poll). A woken concert stays awake for awakeFor
// after the last wake-up, and as long as its own rounds find work (Busy): fans waiting or active,
// holds open, payments in flight.
//
// Whatever writes an event to a concert's stream wakes the concert for every process, so that a
// write-behind in a process of its own reads the stream: a hold, a cancel or a payment on an api
// instance (SeatsChanged, written at once), and a scheduler's round that found work (Busy, LineBusy:
// written by its next Poll). Seat activity is written under its own member (seatsMember), which wakes
// the concert even after its sale closed: a fan still ACTIVE at the close may hold, and that hold must
// be swept and its events written behind.

// ActivityStore is the zset of concerts with activity in Redis.
type ActivityStore interface {
	Wake(ctx context.Context, concertIDs []string, now time.Time) error
	Awake(ctx context.Context, since time.Time) (map[string]time.Time, error)
	ForgetAsleep(ctx context.Context, before time.Time) error
}

const (
	// awakeFor is how long a wake-up, or a round that found work, keeps a concert's loops running.
	awakeFor = 10 * time.Second
	// wakeEvery is how often one instance writes a concert's wake-up at most.
	wakeEvery = time.Second
	// forgetAfter is how long a concert stays in the live zset after its last wake-up.
	forgetAfter = time.Hour
	// StreamDrain is how long after a concert falls asleep the write-behind still reads its stream (and
	// beyond, until a read finds nothing new): time for entries a crashed worker left pending to be
	// claimed (the longest ClaimIdle and a ClaimEvery; TestStreamDrainOutlastsAClaim).
	StreamDrain = 20 * time.Second
	// settleFor is how long a start keeps every concert awake (Settle).
	settleFor = 2 * time.Second
	// forgetLocal is how long an instance remembers a concert asleep (longer than any Recent window).
	forgetLocal = 5 * time.Minute
)

// Activity knows which concerts are awake: on an api instance it writes wake-ups, on a scheduler or
// write-behind instance it reads them.
type Activity struct {
	store  ActivityStore
	now    func() time.Time
	closed func(concertID string, now time.Time) bool // nil: no sale closes

	mu      sync.Mutex
	until   map[string]time.Time // concert -> awake until
	wrote   map[string]time.Time // concert -> this instance's last wake-up written
	pending map[string]struct{}  // seen since the last Flush, not written yet
	forgot  time.Time            // the last ForgetAsleep
	noted   sync.Map             // concert -> *atomic.Int64: the Unix second Saw last noted it

	wmu   sync.Mutex
	woken chan struct{} // closed at the next wake-up (Woken)
}

// Woken returns a channel closed at the next wake-up this process sees: a wake-up it writes (a join,
// an admin change, a hold here), or a concert asleep here that a Poll or a round finds awake. The paced
// loops (periodic.RunPaced) wait on it while nothing is awake.
func (a *Activity) Woken() <-chan struct{} {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.woken == nil {
		a.woken = make(chan struct{})
	}
	return a.woken
}

func (a *Activity) signal() {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.woken != nil {
		close(a.woken)
		a.woken = nil
	}
}

// AnyAwake reports whether a concert is awake now.
func (a *Activity) AnyAwake() bool {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, until := range a.until {
		if until.After(now) {
			return true
		}
	}
	return false
}

// NewActivity returns the activity of concerts over store; closed, when not nil, tells the concerts
// whose sale has closed, which nothing wakes any more.
func NewActivity(store ActivityStore, now func() time.Time, closed func(concertID string, now time.Time) bool) *Activity {
	return &Activity{store: store, now: now, closed: closed,
		until: map[string]time.Time{}, wrote: map[string]time.Time{}, pending: map[string]struct{}{}}
}

// seatsPrefix marks a member of the live zset as seat activity (a concert id never holds it).
const seatsPrefix = "$"

// seatsMember is the live zset's member for seat activity at a concert: holds, cancels, payments,
// lapses. Unlike the concert's own member (the line: joins, polls), it wakes a closed sale too.
func seatsMember(concertID string) string { return seatsPrefix + concertID }

// Wake writes a wake-up of the concert now, unless this instance wrote one in the last second.
func (a *Activity) Wake(ctx context.Context, concertID string) error { return a.wake(ctx, concertID) }

// wake writes member (a concert's or its seatsMember) now, unless this instance wrote it in the last
// second.
func (a *Activity) wake(ctx context.Context, member string) error {
	now := a.now()
	a.mu.Lock()
	if now.Sub(a.wrote[member]) < wakeEvery {
		a.mu.Unlock()
		return nil
	}
	a.wrote[member] = now
	delete(a.pending, member)
	a.mu.Unlock()
	defer a.signal() // this process's own loops learn of it at once, from the next Poll
	return a.store.Wake(ctx, []string{member}, now)
}

// Touch is Wake for a caller that must not fail on it (a join, an admin change already made): when the
// write fails, the next Flush writes it.
func (a *Activity) Touch(ctx context.Context, concertID string) { a.touch(ctx, concertID) }

// SeatsChanged wakes the concert for every process because a hold, a cancel or a payment changed its
// seats on this instance and wrote events to its stream: at once (at most once a second per
// instance), even after its sale closed, so that the hold is swept and the events are written behind.
func (a *Activity) SeatsChanged(ctx context.Context, concertID string) {
	a.Busy(concertID)
	a.touch(ctx, seatsMember(concertID))
}

func (a *Activity) touch(ctx context.Context, member string) {
	if err := a.wake(ctx, member); err != nil {
		a.mu.Lock()
		delete(a.wrote, member)
		a.pending[member] = struct{}{}
		a.mu.Unlock()
	}
}

// Saw notes that someone was at the concert; the next Flush writes it (one command for all). It is on
// every poll's path: once a concert is noted, later polls in the same second take no lock.
func (a *Activity) Saw(concertID string) {
	now := a.now()
	sec := now.Unix()
	v, _ := a.noted.Load(concertID)
	last, _ := v.(*atomic.Int64)
	if last != nil && last.Load() == sec {
		return
	}
	if last == nil {
		v, _ = a.noted.LoadOrStore(concertID, new(atomic.Int64))
		last = v.(*atomic.Int64)
	}
	last.Store(sec)
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.wrote[concertID]) >= wakeEvery {
		a.pending[concertID] = struct{}{}
	}
}

// Flush writes the wake-ups Saw and the rounds noted, in one command (none when there are none).
func (a *Activity) Flush(ctx context.Context) error {
	now := a.now()
	a.mu.Lock()
	ids := make([]string, 0, len(a.pending))
	for id := range a.pending {
		ids = append(ids, id)
		a.wrote[id] = now
	}
	a.pending = map[string]struct{}{}
	for id, at := range a.wrote {
		if now.Sub(at) >= wakeEvery {
			delete(a.wrote, id)
		}
	}
	a.mu.Unlock()
	return a.store.Wake(ctx, ids, now)
}

// Poll writes the wake-ups this process' rounds noted (Busy, LineBusy), then reads the wake-ups of
// every instance (one command) and keeps each woken concert awake for awakeFor after it; once an hour
// it drops the long-asleep concerts from the zset.
func (a *Activity) Poll(ctx context.Context) error {
	if err := a.Flush(ctx); err != nil {
		return err
	}
	now := a.now()
	seen, err := a.store.Awake(ctx, now.Add(-awakeFor))
	if err != nil {
		return err
	}
	a.mu.Lock()
	for member, at := range seen {
		id, seats := strings.CutPrefix(member, seatsPrefix)
		if !seats && a.closed != nil && a.closed(id, now) {
			continue // a closed sale's line wakes no more; its seats do (a hold of a fan ACTIVE at the close)
		}
		a.extend(id, at.Add(awakeFor))
	}
	forget := now.Sub(a.forgot) >= forgetAfter
	if forget {
		a.forgot = now
	}
	a.mu.Unlock()
	if forget {
		return a.store.ForgetAsleep(ctx, now.Add(-forgetAfter))
	}
	return nil
}

// Busy keeps a concert awake for awakeFor more: a round found seats held or being paid there, or
// drew its sale. The next Flush (or Poll) writes it for the other processes (a write-behind of its own
// reads the events the round wrote), at most once a second.
func (a *Activity) Busy(concertID string) { a.busy(concertID, seatsMember(concertID)) }

func (a *Activity) busy(concertID, member string) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.extend(concertID, now.Add(awakeFor))
	if now.Sub(a.wrote[member]) >= wakeEvery {
		a.pending[member] = struct{}{}
	}
}

// extend keeps a concert awake until at least until (callers hold a.mu); a concert asleep until now
// wakes the paced loops.
func (a *Activity) extend(concertID string, until time.Time) {
	before := a.until[concertID]
	if until.After(before) {
		a.until[concertID] = until
		if now := a.now(); !before.After(now) && until.After(now) {
			a.signal()
		}
	}
}

// LineBusy keeps a concert awake for awakeFor more because fans wait or are active in its line, unless
// its sale has closed: a closed line is not ticked any more (its holds and payments still are, Busy).
func (a *Activity) LineBusy(concertID string) {
	if a.closed != nil && a.closed(concertID, a.now()) {
		return
	}
	a.busy(concertID, concertID)
}

// Settle wakes every concert listed for settleFor, at a start: the first rounds find the concerts a
// previous process left with fans, holds or payments (Busy keeps those awake), and the write-behind
// reads every stream for StreamDrain more (Recent), so that a backlog left unread drains.
func (a *Activity) Settle(concertIDs []string) {
	until := a.now().Add(settleFor)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range concertIDs {
		a.extend(id, until)
	}
}

// IDs returns the awake concerts, sorted. A concert whose sale has closed is awake only while its own
// rounds find work (its last holds and payments); nothing else wakes it.
func (a *Activity) IDs() []string { return a.Recent(0) }

// Recent returns the concerts awake within the last d (0: awake now), sorted, and forgets the
// concerts asleep for longer than forgetLocal.
func (a *Activity) Recent(d time.Duration) []string {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.until))
	for id, until := range a.until {
		if now.Sub(until) > forgetLocal {
			delete(a.until, id)
			continue
		}
		if until.After(now.Add(-d)) || d > 0 && until.Equal(now.Add(-d)) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// IsAwake reports whether the concert is awake now.
func (a *Activity) IsAwake(concertID string) bool {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.until[concertID].After(now)
}

// TrackActivity makes the service wake concerts: a join wakes its concert at once, a poll or a leave
// with the next liveness flush.
func (s *Service) TrackActivity(a *Activity) { s.activity = a }

// wake writes the concert's wake-up now (a join), or with the next flush when Redis refuses it.
func (s *Service) wake(ctx context.Context, concertID string) {
	if s.activity != nil {
		s.activity.Touch(ctx, concertID)
	}
}

// saw notes someone at the concert (a poll, a leave); FlushLiveness writes it.
func (s *Service) saw(concertID string) {
	if s.activity != nil {
		s.activity.Saw(concertID)
	}
}

func (s *Service) flushActivity(ctx context.Context) error {
	if s.activity == nil {
		return nil
	}
	return s.activity.Flush(ctx)
}
