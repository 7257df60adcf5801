package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/rueidis"
)

// Layout is where a concert's state lives, fixed when it is created and kept in its settings (cfg):
// how many slots its line is spread over (shards, 1: the concert's slot), and the schedules whose seats
// have a slot of their own, each named by its SeatSlot (sched, nil: the seats live in the concert's slot).
type Layout struct {
	Shards    int
	Schedules []SeatSlot
}

// ReadLayout reads a concert's layout from its settings in one command; found is false for a concert
// not in Redis (its layout is then the one-slot one, and its scripts answer NOT_FOUND).
func (k Keys) ReadLayout(ctx context.Context, c rueidis.Client, concertID string) (l Layout, found bool, err error) {
	v, err := c.Do(ctx, c.B().Hmget().Key(k.Concert(concertID).Cfg()).Field("cap", "shards", "sched").Build()).ToArray()
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
		l.Schedules = splitSchedules(raw)
	}
	return l, true, nil
}

// layouts caches each concert's layout (fixed at creation), read once per concert and process.
type layouts struct {
	mu sync.Mutex
	of map[string]Layout
}

// layout returns concertID's layout, read from Redis the first time (a concert not in Redis yet is not
// cached).
func (s *Store) layout(ctx context.Context, concertID string) (Layout, error) {
	s.layouts.mu.Lock()
	l, ok := s.layouts.of[concertID]
	s.layouts.mu.Unlock()
	if ok {
		return l, nil
	}
	l, found, err := s.keys.ReadLayout(ctx, s.client, concertID)
	if err != nil || !found {
		return l, err
	}
	s.layouts.mu.Lock()
	if s.layouts.of == nil {
		s.layouts.of = map[string]Layout{}
	}
	s.layouts.of[concertID] = l
	s.layouts.mu.Unlock()
	return l, nil
}
