package writebehind

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/redis"
)

// The state marker (redis.StateMarker) is a key that is present while Redis holds the whole of the
// sale's state. While it is missing, readyz fails and the worker writes nothing (what an emptied Redis
// records is not the sale).

// ErrRedisNotWhole is an emptied Redis: it needs `ticketrush restore` before the sale may go on.
var ErrRedisNotWhole = errors.New("redis has lost the sale's state (the state marker is missing): run `ticketrush restore`")

// State reads and writes the marker.
type State struct {
	marker *redis.StateMarker
}

// NewState returns the marker of the keys under prefix.
func NewState(client rueidis.Client, prefix string) *State {
	return &State{marker: redis.NewStateMarker(client, prefix)}
}

// Whole reports whether the marker is there.
func (s *State) Whole(ctx context.Context) (bool, error) { return s.marker.Present(ctx) }

// Check is the readiness check: nil while Redis holds the whole state.
func (s *State) Check(ctx context.Context) error {
	whole, err := s.Whole(ctx)
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

// Startup checks the marker when the service starts. Present: Redis is whole. Missing on a system
// whose durable record holds no reservation and no point movement: this is the first load, and the
// marker is written. Missing otherwise: Redis was emptied, and ErrRedisNotWhole says so (the service
// runs, unready, until restore).
func (s *State) Startup(ctx context.Context, rec History, now time.Time) error {
	whole, err := s.Whole(ctx)
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
	return s.marker.Write(ctx, "first-load", now)
}
