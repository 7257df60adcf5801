package writebehind

import (
	"context"
	"errors"
	"time"
)

// The state marker (redis.StateMarker) is a key that is present while Redis holds the whole of the
// sale's state. While it is missing, readyz fails and the worker writes nothing (what an emptied Redis
// records is not the sale).

// ErrRedisNotWhole is an emptied Redis: it needs `ticketrush restore` before the sale may go on.
var ErrRedisNotWhole = errors.New("redis has lost the sale's state (the state marker is missing): run `ticketrush restore`")

// Marker is the state marker as Redis keeps it (redis.StateMarker).
type Marker interface {
	Present(ctx context.Context) (bool, error)
	Write(ctx context.Context, by string, now time.Time) error
}

// CheckWhole is the readiness check of Redis's state: nil while the marker is there.
func CheckWhole(ctx context.Context, m Marker) error {
	whole, err := m.Present(ctx)
	if err != nil {
		return err
	}
	if !whole {
		return ErrRedisNotWhole
	}
	return nil
}

// History tells whether the durable record holds anything Redis would have to hold too.
type History interface {
	HasRecords(ctx context.Context) (bool, error)
}

// Startup checks the marker m when the service starts. Present: Redis is whole. Missing on a system
// whose durable record holds no reservation and no point movement: this is the first load, and the
// marker is written. Missing otherwise: Redis was emptied, and ErrRedisNotWhole says so (the service
// runs, unready, until restore).
func Startup(ctx context.Context, m Marker, rec History, now time.Time) error {
	whole, err := m.Present(ctx)
	if err != nil || whole {
		return err
	}
	has, err := rec.HasRecords(ctx)
	if err != nil {
		return err
	}
	if has {
		return ErrRedisNotWhole
	}
	return m.Write(ctx, "first-load", now)
}
