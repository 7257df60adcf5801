package writebehind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/redis"
)

// The state marker is a key that is present while Redis holds the whole of the sale's state. The first
// start on an empty system writes it, and so does restore; FLUSHALL, or a Redis that lost its data, takes
// it away. While it is missing, readyz fails and the worker writes nothing (what an emptied Redis
// records is not the sale).

// ErrRedisNotWhole is an emptied Redis: it needs `ticketrush restore` before the sale may go on.
var ErrRedisNotWhole = errors.New("redis has lost the sale's state (the state marker is missing): run `ticketrush restore`")

type stateMarker struct {
	By string    `json:"by"` // "first-load" or "restore"
	At time.Time `json:"at"`
}

// State reads and writes the marker.
type State struct {
	client rueidis.Client
	key    string
}

// NewState returns the marker of the keys under prefix.
func NewState(client rueidis.Client, prefix string) *State {
	return &State{client: client, key: redis.NewKeys(prefix).State()}
}

// Whole reports whether the marker is there.
func (s *State) Whole(ctx context.Context) (bool, error) {
	n, err := s.client.Do(ctx, s.client.B().Exists().Key(s.key).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("read state marker: %w", err)
	}
	return n == 1, nil
}

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

// Mark writes the marker; by says who ("first-load" or "restore").
func (s *State) Mark(ctx context.Context, by string, now time.Time) error {
	raw, _ := json.Marshal(stateMarker{By: by, At: now.UTC()})
	if err := s.client.Do(ctx, s.client.B().Set().Key(s.key).Value(string(raw)).Build()).Error(); err != nil {
		return fmt.Errorf("write state marker: %w", err)
	}
	return nil
}

// Records tells whether the durable record holds anything Redis would have to hold too.
type Records interface {
	HasRecords(ctx context.Context) (bool, error)
}

// Startup checks the marker when the service starts. Present: Redis is whole. Missing on a system
// whose durable record holds no reservation and no point movement: this is the first load, and the
// marker is written. Missing otherwise: Redis was emptied, and ErrRedisNotWhole says so (the service
// runs, unready, until restore).
func (s *State) Startup(ctx context.Context, rec Records, now time.Time) error {
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
	return s.Mark(ctx, "first-load", now)
}
