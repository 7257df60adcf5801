package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// LoadConcert writes a concert's catalog and settings unless Redis has them already; it reports
// whether it wrote. Its seat slots are its recorded placement, or for a concert without one (the tools',
// the tests') what SeatPlacement gives: the one Redis holds, else one block a schedule. A concert that
// should keep its seats in blocks is placed first (PlaceSeats) and loaded with that placement recorded.
func (s *Store) LoadConcert(ctx context.Context, c ticketrush.Concert, now time.Time) (bool, error) {
	k := s.keys.Concert(c.ID)
	sched := c.Placement.Slots
	if !c.Placement.Recorded {
		var err error
		if sched, err = SeatPlacement(ctx, s.client, k, c); err != nil {
			return false, fmt.Errorf("load concert %s: %w", c.ID, err)
		}
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
	if err := s.Seats.loadSchedules(ctx, c, now); err != nil { // each time: a crash may have left one out
		return false, fmt.Errorf("load concert %s: %w", c.ID, err)
	}
	return loaded, nil
}

// PlaceSeats is the placement of a concert about to be created (PlaceSeatSlots, in a block of seat slots
// per master on a cluster), or the one Redis holds of it.
func (s *Store) PlaceSeats(ctx context.Context, c ticketrush.Concert) (string, error) {
	return seatPlacement(ctx, s.client, s.keys.Concert(c.ID), c, 0)
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
