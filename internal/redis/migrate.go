package redis

import (
	"context"
	"fmt"
)

// LayoutVersion is the version of the Redis layout this build reads and writes (docs/operations.md,
// "Layout versions"). Version 2: a line is a hash of places and lists in arrival order (not a sorted
// set), and a line of one slot keeps its liveness in seen (not a hash). Concerts below it are migrated
// once (MigrateLayout), at a process's start or by `ticketrush migrate-layout`; the scripts read
// version 2 alone.
const LayoutVersion = 2

// migrateBatch is how many fans or fields one migration call moves.
const migrateBatch = 1000

// LayoutMigration is what MigrateLayout moved of one concert.
type LayoutMigration struct {
	Waiting int64 // fans moved from a sorted set into places and order
	Seen    int64 // liveness fields moved from the hash into seen
}

// MigrateLayout moves what older builds left of a concert's line into LayoutVersion: each line's sorted
// set into places and order (line_migrate, all the lines' calls in one round trip, a batch each, until
// none is left), then a line of one slot's liveness hash into seen (seen_migrate), which records the
// version in the concert's settings. Running it again, or on a concert of the current layout, moves
// nothing; a concert not in Redis answers ErrNotFound (its first load writes the current layout).
func (s *Store) MigrateLayout(ctx context.Context, concertID string) (LayoutMigration, error) {
	var m LayoutMigration
	w, err := s.ways(ctx, concertID)
	if err != nil {
		return m, fmt.Errorf("migrate layout of %s: %w", concertID, err)
	}
	calls := w.line.migrations()
	for len(calls) > 0 {
		msgs, err := s.execMulti(ctx, s.lineMigrate, calls)
		if err != nil {
			return m, fmt.Errorf("migrate the line of %s: %w", concertID, err)
		}
		left := calls[:0]
		for i, msg := range msgs {
			r, err := reply(msg, 2)
			if err != nil {
				return m, fmt.Errorf("migrate the line of %s: %w", concertID, err)
			}
			m.Waiting += r.int(0)
			if r.int(1) > 0 {
				left = append(left, calls[i])
			}
			if r.err != nil {
				return m, fmt.Errorf("migrate the line of %s: %w", concertID, r.err)
			}
		}
		calls = left
	}
	k := s.keys.Concert(concertID)
	for {
		keys, args := seenMigrate(k, migrateBatch)
		msg, err := s.exec(ctx, s.seenMigrate, keys, args)
		if err != nil {
			return m, fmt.Errorf("migrate the liveness of %s: %w", concertID, err)
		}
		r, err := reply(msg, 2)
		if err != nil {
			return m, fmt.Errorf("migrate the liveness of %s: %w", concertID, err)
		}
		m.Seen += r.int(0)
		if left := r.int(1); r.err != nil || left == 0 {
			return m, r.err
		}
	}
}

// seenMigrate is seen_migrate's call: at most batch fields of a line of one slot's liveness hash into
// seen, then the layout version recorded.
func seenMigrate(k ConcertKeys, batch int) (keys, args []string) {
	return []string{k.Cfg(), k.Alive(), k.Seen()}, []string{itoa(batch), itoa(LayoutVersion)}
}
