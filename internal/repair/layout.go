package repair

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// LayoutRecord is the durable catalog's record of each concert's layout version
// (sql/0014_layout_version.sql).
type LayoutRecord interface {
	Concerts(ctx context.Context) ([]ticketrush.Concert, error)
	ConcertsBelowLayout(ctx context.Context, version int) ([]string, error)
	RecordLayoutVersion(ctx context.Context, concertID string, version int) error
}

// LayoutMigrator moves one concert's live state to the store's layout version.
type LayoutMigrator interface {
	MigrateLayout(ctx context.Context, c ticketrush.Concert) (redis.LayoutMigration, error)
}

// MigrateLayouts moves every concert the record lists below redis.LayoutVersion to it, then records the
// version, one concert after the other, a line on progress each (to progress, when not nil). A concert
// not in Redis has nothing to move: its first load writes the current layout. Every process runs it
// at its start, before it serves or ticks, and `ticketrush migrate-layout` runs it alone; a migration
// run twice, or by two processes at once, moves each thing once. It returns how many concerts it
// migrated.
func MigrateLayouts(ctx context.Context, live LayoutMigrator, rec LayoutRecord, progress io.Writer) (int, error) {
	ids, err := rec.ConcertsBelowLayout(ctx, redis.LayoutVersion)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	all, err := rec.Concerts(ctx)
	if err != nil {
		return 0, err
	}
	byID := make(map[string]ticketrush.Concert, len(all))
	for _, c := range all {
		byID[c.ID] = c
	}
	for i, id := range ids {
		c, ok := byID[id]
		if !ok {
			return i, fmt.Errorf("migrate layout of %s: %w", id, ticketrush.ErrNotFound)
		}
		m, err := live.MigrateLayout(ctx, c)
		if err != nil && !errors.Is(err, ticketrush.ErrNotFound) {
			return i, err
		}
		if err := rec.RecordLayoutVersion(ctx, id, redis.LayoutVersion); err != nil {
			return i, err
		}
		if progress != nil {
			fmt.Fprintf(progress, "concert %s (%d of %d): layout %d, %d waiting fans, %d liveness fields, %d reservations and %d gate records moved\n",
				id, i+1, len(ids), redis.LayoutVersion, m.Waiting, m.Seen, m.Seats, m.Gates)
		}
	}
	return len(ids), nil
}
