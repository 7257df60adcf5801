package redis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// inFlight makes a batch of concertID look in flight: the calls made from now on wait in the queue it
// returns until the test flushes it.
func (b *batches[A, R]) inFlight(concertID string) *batchQueue[A, R] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.of == nil {
		b.of = map[string]*batchQueue[A, R]{}
	}
	q := &batchQueue[A, R]{busy: true}
	b.of[concertID] = q
	return q
}

// waiting is how many calls wait in q.
func (b *batches[A, R]) waiting(q *batchQueue[A, R]) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(q.waiting)
}

// queues is how many concerts have a batch in flight or calls waiting.
func (b *batches[A, R]) queues() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.of)
}

// lineOf is concertID's line over shards, as its layout builds it.
func lineOf(t testing.TB, s *Store, concertID string) shardedLine {
	t.Helper()
	w, err := s.ways(context.Background(), concertID)
	require.NoError(t, err)
	l, ok := w.line.(shardedLine)
	require.True(t, ok, "%s's line is over shards", concertID)
	return l
}
