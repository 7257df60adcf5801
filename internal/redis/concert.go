package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// LoadConcert writes a concert's catalog and settings unless Redis has them already; it reports
// whether it wrote.
func (s *Store) LoadConcert(ctx context.Context, c ticketrush.Concert, now time.Time) (bool, error) {
	k := s.keys.Concert(c.ID)
	sched, err := s.seatSlotsToLoad(ctx, k, c)
	if err != nil {
		return false, fmt.Errorf("load concert %s: %w", c.ID, err)
	}
	keys, args := k.concertLoad(c, sched, now)
	msg, err := s.exec(ctx, s.load, keys, args)
	if err != nil {
		return false, fmt.Errorf("load concert %s: %w", c.ID, err)
	}
	loaded, err := loadReply(msg)
	if err != nil {
		return false, fmt.Errorf("load concert %s: %w", c.ID, err)
	}
	if err := s.loadSchedules(ctx, c, now); err != nil { // each time: a crash may have left one out
		return false, fmt.Errorf("load concert %s: %w", c.ID, err)
	}
	return loaded, nil
}

// seatSlotsToLoad is the cfg sched value concert_load writes for c: the placement its settings already
// name (a concert loaded before: every instance loads each concert once at its start, and its layout is
// read then anyway), else a new one (PlaceSeatSlots, which reads the cluster's slot map).
func (s *Store) seatSlotsToLoad(ctx context.Context, k ConcertKeys, c ticketrush.Concert) (string, error) {
	if c.Queue.LineShards <= 1 {
		return "", nil
	}
	l, err := s.layout(ctx, c.ID)
	if err != nil || l.Schedules != nil {
		return joinSlots(l.Schedules), err
	}
	return PlaceSeatSlots(ctx, s.client, k, c)
}

// loadReply reads concert_load's 1 (loaded) or 0 (there already).
func loadReply(msg rueidis.RedisMessage) (bool, error) {
	n, err := msg.ToInt64()
	if err != nil {
		return false, fmt.Errorf("script reply: %w", err)
	}
	if n != 0 && n != 1 {
		return false, fmt.Errorf("script reply %d is not 0 or 1", n)
	}
	return n == 1, nil
}
