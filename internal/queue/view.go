package queue

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// rateWindow is how far back the admission rate is measured.
const rateWindow = 30 * time.Second

// view is an instance's copy of one concert's line, refreshed from a snapshot a few times a second. The
// line is every seq in (head, tail] except the leaves, so a WAITING token's position follows from its
// own seq: position = seq - head - (leaves between head and seq). That is O(log leaves) in memory and no
// Redis round trip, and strictly increasing in seq, so a fan never shows behind a later arrival.
type view struct {
	mu         sync.RWMutex
	found      bool
	head, tail uint64
	lastLeave  uint64   // the newest leave ordinal applied
	left       []uint64 // sorted seqs of leavers above head
	waiting    int64
	active     int64
	capacity   int
	admitRate  int
	paused     bool
	samples    []sample              // admissions so far over time, for the measured admission rate
	drawn      *ticketrush.DrawState // the concert's sale's draw once it is done (never unset), else nil
	places     map[string]uint64     // entrant -> arrival seq the draw gave them, learnt from pre-queue polls
	abandon    time.Duration         // abandonAfter: 0 off
	soldOut    bool                  // every seat is SOLD: the line is closed
	available  int64                 // seats AVAILABLE at the last refresh
	changed    chan struct{}         // closed and replaced when a refresh changes what a poll could read
	shown      readout               // what the last refresh showed
	used       atomic.Int64          // when a request last read the view (Unix ns)
}

// use records a read of the view at now.
func (v *view) use(now time.Time) { v.used.Store(now.UnixNano()) }

// lastUse is when a request last read the view.
func (v *view) lastUse() time.Time { return time.Unix(0, v.used.Load()) }

// placeOf returns the arrival seq the draw gave an entrant, when this instance has learnt it.
func (v *view) placeOf(user string) (uint64, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	seq, ok := v.places[user]
	return seq, ok
}

// placed records the arrival seq the draw gave an entrant.
func (v *view) placed(user string, seq uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.places == nil {
		v.places = map[string]uint64{}
	}
	v.places[user] = seq
}

func (v *view) isDrawn() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.drawn != nil
}

// drawnEntrant reports whether the draw is done and gave arrival seq seq to an entrant.
func (v *view) drawnEntrant(seq uint64) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.drawn != nil && v.drawn.Entrant(seq)
}

// drawState is the sale's draw once it is done; ok is false before.
func (v *view) drawState() (st ticketrush.DrawState, ok bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.drawn == nil {
		return st, false
	}
	return *v.drawn, true
}

func (v *view) setDrawn(st ticketrush.DrawState) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.drawn = &st
}

type sample struct {
	at       time.Time
	admitted uint64
}

// apply merges a snapshot into the view.
func (v *view) apply(s ticketrush.QueueSnapshot, at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n := len(v.samples); s.Found && s.Tail < v.head && n > 0 && s.Admitted < v.samples[n-1].admitted {
		// The line and the admissions went backwards, which Redis never does: it was emptied (and
		// restored). Start the view afresh.
		v.head, v.tail, v.lastLeave, v.left, v.samples = 0, 0, 0, nil, nil
	}
	v.found = s.Found
	v.head = max(v.head, s.Head) // head and tail only grow; a local update may be ahead of the snapshot
	v.tail = max(v.tail, s.Tail)
	for _, l := range s.Leaves {
		v.insertLeft(l.Seq)
		v.lastLeave = max(v.lastLeave, l.Ordinal)
	}
	v.trim()
	v.waiting, v.active = s.Waiting, s.Active
	v.capacity, v.admitRate, v.paused = s.ActiveCapacity, s.AdmitPerSecond, s.Paused
	v.samples = append(v.samples, sample{at: at, admitted: s.Admitted})
	cut := 0
	for cut < len(v.samples)-2 && at.Sub(v.samples[cut].at) > rateWindow {
		cut++
	}
	v.samples = v.samples[cut:]
	v.soldOut, v.available, v.abandon = s.SoldOut, s.SeatsAvailable, s.AbandonAfter
	if now := (readout{v.found, v.head, v.lastLeave, v.paused, v.soldOut}); now != v.shown {
		v.shown = now
		v.notify()
	}
}

// readout is what can change a status a poll of the view reads; event streams wake only when it
// changes (not for seat counts, which their heartbeat carries).
type readout struct {
	found           bool
	head, leave     uint64
	paused, soldOut bool
}

// notify wakes every event stream waiting on this view (callers hold v.mu).
func (v *view) notify() {
	if v.changed != nil {
		close(v.changed)
	}
	v.changed = make(chan struct{})
}

// watch returns a channel closed at the next refresh of the view.
func (v *view) watch() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.changed == nil {
		v.changed = make(chan struct{})
	}
	return v.changed
}

// pollInfo is what every poll's answer carries from the last refresh, read under one lock: whether
// admission is paused, the seats AVAILABLE, and abandonAfter (0: off).
func (v *view) pollInfo() (paused bool, available int64, abandon time.Duration) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.paused, v.available, v.abandon
}

func (v *view) insertLeft(seq uint64) {
	if seq <= v.head {
		return
	}
	i, found := slices.BinarySearch(v.left, seq)
	if !found {
		v.left = slices.Insert(v.left, i, seq)
	}
}

func (v *view) trim() {
	i, _ := slices.BinarySearch(v.left, v.head+1)
	if i > 0 {
		v.left = slices.Delete(v.left, 0, i)
	}
}

// arrived records a join this instance made.
func (v *view) arrived(r ticketrush.JoinResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tail = max(v.tail, r.Seq)
	if r.Status == ticketrush.StatusActive && r.Created {
		v.head = max(v.head, r.Seq) // admitted at once: nobody waited before it
		v.trim()
	}
}

// leftLine records a leave this instance made, so its own next poll already sees the gap closed.
func (v *view) leftLine(seq uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.insertLeft(seq)
}

// lookup answers a poll from the view: the token's status and position, and whether the view could
// answer at all (it cannot for tokens at or behind the head, which may be ACTIVE, EXPIRED or DONE, nor
// for arrivals newer than the snapshot, which may have been admitted at once).
func (v *view) lookup(seq uint64) (ticketrush.QueueStatus, int64, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if !v.found || seq <= v.head || seq > v.tail {
		return "", 0, false
	}
	i, found := slices.BinarySearch(v.left, seq)
	if found {
		return ticketrush.StatusExpired, 0, true
	}
	if v.soldOut {
		return ticketrush.StatusSoldOut, 0, true
	}
	return ticketrush.StatusWaiting, int64(seq-v.head) - int64(i), true
}

// isSoldOut reports whether the concert was sold out at the last refresh.
func (v *view) isSoldOut() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.soldOut
}

// rate is the measured admission rate over the window, in fans per second, or the configured rate
// while there is not yet a measurement.
func (v *view) rate() float64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if n := len(v.samples); n >= 2 {
		first, last := v.samples[0], v.samples[n-1]
		if span := last.at.Sub(first.at).Seconds(); span >= 5 && last.admitted > first.admitted {
			return float64(last.admitted-first.admitted) / span
		}
	}
	return float64(max(v.admitRate, 1))
}

// pacing returns the estimated wait of a fan at position and how long they should wait before polling
// again: a tenth of the estimated wait, between 1 and 30 seconds, so that fans far from the front poll
// rarely and the front polls every second.
func pacing(position int64, rate float64) (wait, pollAfter time.Duration) {
	secs := math.Ceil(float64(position) / rate)
	poll := math.Min(30, math.Max(1, math.Ceil(secs/10)))
	return time.Duration(secs) * time.Second, time.Duration(poll) * time.Second
}
