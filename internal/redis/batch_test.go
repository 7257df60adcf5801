package redis

import (
	"context"
	"testing"
	"time"

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

// TestABatchsLeaderKeepsItsDeadline: the call that finds no batch in flight and sends one returns when
// its own context ends, though the batch's call runs on (for up to wait, longer than a request may): a
// Redis node cut off must not hold a request past its deadline. The batch, answered later, frees the
// queue for the next call.
func TestABatchsLeaderKeepsItsDeadline(t *testing.T) {
	release := make(chan struct{})
	b := &batches[int, int]{max: 8, wait: time.Minute,
		send: func(ctx context.Context, _ string, args []int) ([]batchResult[int], error) {
			<-release
			out := make([]batchResult[int], len(args))
			for i, a := range args {
				out[i].res = a * 2
			}
			return out, nil
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := b.do(ctx, "c", 1)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded, "the leader returns at its deadline")
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the leader waited for its batch past its deadline")
	}
	close(release)
	require.Eventually(t, func() bool { return b.queues() == 0 }, 5*time.Second, time.Millisecond, "the batch ends")
	got, err := b.do(context.Background(), "c", 21)
	require.NoError(t, err)
	require.Equal(t, 42, got)
}
