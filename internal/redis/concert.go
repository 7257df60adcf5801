package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// LoadConcert writes a concert's catalog and settings unless Redis has them already; it reports
// whether it wrote.
func (s *Store) LoadConcert(ctx context.Context, c ticketrush.Concert, now time.Time) (bool, error) {
	keys, args := s.keys.Concert(c.ID).concertLoad(c, now)
	msg, err := s.exec(ctx, s.load, keys, args)
	if err != nil {
		return false, fmt.Errorf("load concert %s: %w", c.ID, err)
	}
	n, err := msg.AsInt64()
	return n == 1, err
}
