package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Layout is where a concert's state lives, fixed when it is created and kept in its settings (cfg):
// how many slots its line is spread over (shards, 1: the concert's slot), and the schedules whose seats
// have a slot of their own, each named by its SeatSlot (sched, nil: the seats live in the concert's slot).
// The record keeps the seat slots too (ticketrush.Placement), and restore writes them from there.
type Layout struct {
	Shards    int
	Schedules []SeatSlot
	ShardAt   []int // the tag suffix of each shard of the line, where the placement chose them (nil: none)
	// hold (ms) and maxHolds are the concert's hold settings as its cfg has them, fixed at creation: a
	// line over shards tells each gate step on a shard (gateAt).
	hold, maxHolds string
}

// Follows reports whether l puts the seats and the line's shards where p, the concert's recorded
// placement, puts them (always, while none is recorded).
func (l Layout) Follows(p ticketrush.Placement) bool {
	if !p.Recorded {
		return true
	}
	rest, line, placed := strings.Cut(p.Slots, "|")
	if placed != (len(l.ShardAt) > 0) || !shardsFollow(line, l.ShardAt) {
		return false
	}
	for i, s := range l.Schedules {
		if i > 0 {
			if !strings.HasPrefix(rest, ",") {
				return false
			}
			rest = rest[1:]
		}
		if !strings.HasPrefix(rest, string(s)) {
			return false
		}
		rest = rest[len(s):]
	}
	return rest == ""
}

// shardsFollow reports whether line, a placement's line part, names the shard tag suffixes at, without
// building a string (Follows runs on every call of a concert).
func shardsFollow(line string, at []int) bool {
	for _, a := range at {
		var part string
		part, line, _ = strings.Cut(line, ",")
		if n, err := strconv.Atoi(part); err != nil || n != a {
			return false
		}
	}
	return line == ""
}

// ReadLayout reads a concert's layout from its settings in one command; found is false for a concert
// not in Redis (its layout is then the one-slot one, and its scripts answer NOT_FOUND).
func (k Keys) ReadLayout(ctx context.Context, c rueidis.Client, concertID string) (l Layout, found bool, err error) {
	v, err := c.Do(ctx, c.B().Hmget().Key(k.Concert(concertID).Cfg()).Field("cap", "shards", "sched", "hold", "maxholds").Build()).ToArray()
	if err != nil {
		return Layout{}, false, fmt.Errorf("layout of %s: %w", concertID, unavailable(err))
	}
	l.Shards = 1
	if v[0].IsNil() {
		return l, false, nil
	}
	if !v[1].IsNil() {
		raw, _ := v[1].ToString()
		if l.Shards, err = strconv.Atoi(raw); err != nil || l.Shards < 1 {
			return Layout{}, false, fmt.Errorf("layout of %s: bad shards %q", concertID, raw)
		}
	}
	if !v[2].IsNil() {
		raw, _ := v[2].ToString()
		l.Schedules, l.ShardAt = splitSchedules(raw), splitShardAt(raw)
	}
	l.hold, _ = v[3].ToString()
	l.maxHolds, _ = v[4].ToString()
	return l, true, nil
}

// layouts caches each concert's layout, read once per concert and process, and read again when it does
// not follow the concert's recorded placement (follow, see FollowPlacements).
type layouts struct {
	mu     sync.Mutex
	of     map[string]concertWays
	follow atomic.Pointer[func(concertID string) ticketrush.Placement]
}

// FollowPlacements makes the store check each concert's cached layout against recorded, the concert's
// placement as the record has it now (the catalog's, which follows the record within its refresh), and
// read the layout again from Redis when the two differ: restore writes the recorded placement, so a
// cached layout that differs from it names seat slots Redis may no longer have (docs/scaleout.md,
// "Placement"). Without it a cached layout is kept for the life of the process.
func (s *Store) FollowPlacements(recorded func(concertID string) ticketrush.Placement) {
	s.layouts.follow.Store(&recorded)
}

// ways returns concertID's layout and the line and the seats built from it (ways.go): read from Redis the
// first time and whenever the cached one does not follow the recorded placement (a concert not in Redis
// yet is not cached).
func (s *core) ways(ctx context.Context, concertID string) (concertWays, error) {
	s.layouts.mu.Lock()
	w, ok := s.layouts.of[concertID]
	s.layouts.mu.Unlock()
	if ok {
		if follow := s.layouts.follow.Load(); follow == nil || w.layout.Follows((*follow)(concertID)) {
			return w, nil
		}
	}
	l, found, err := s.keys.ReadLayout(ctx, s.client, concertID)
	if err != nil {
		return concertWays{}, err
	}
	w = s.waysOf(concertID, l)
	if !found {
		return w, nil
	}
	s.layouts.mu.Lock()
	if s.layouts.of == nil {
		s.layouts.of = map[string]concertWays{}
	}
	s.layouts.of[concertID] = w
	s.layouts.mu.Unlock()
	return w, nil
}

// forget drops concertID's cached layout: the next call reads it again (a migration changed it).
func (s *core) forget(concertID string) {
	s.layouts.mu.Lock()
	delete(s.layouts.of, concertID)
	s.layouts.mu.Unlock()
}
