package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// The state marker (Keys.State) is a key that is present while Redis holds the whole of the sale's
// state. The first start on an empty system writes it, and so does restore; FLUSHALL, or a Redis that
// lost its data, takes it away.

// stateMarker is the marker's value: who wrote it and when.
type stateMarker struct {
	By string    `json:"by"` // "first-load" or "restore"
	At time.Time `json:"at"`
}

// StateMarker reads and writes the state marker.
type StateMarker struct {
	client rueidis.Client
	key    string
}

// NewStateMarker returns the marker of the keys under prefix.
func NewStateMarker(client rueidis.Client, prefix string) *StateMarker {
	return &StateMarker{client: client, key: NewKeys(prefix).State()}
}

// Present reports whether the marker is there.
func (m *StateMarker) Present(ctx context.Context) (bool, error) {
	n, err := m.client.Do(ctx, m.client.B().Exists().Key(m.key).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("read state marker: %w", err)
	}
	return n == 1, nil
}

// Write writes the marker; by says who ("first-load" or "restore").
func (m *StateMarker) Write(ctx context.Context, by string, now time.Time) error {
	raw, _ := json.Marshal(stateMarker{By: by, At: now.UTC()})
	if err := m.client.Do(ctx, m.client.B().Set().Key(m.key).Value(string(raw)).Build()).Error(); err != nil {
		return fmt.Errorf("write state marker: %w", err)
	}
	return nil
}
