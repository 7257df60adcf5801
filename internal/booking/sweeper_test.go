package booking

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestSweepLapsesAWaveInShortCalls: a wave of holds expiring together (those of an opening's first
// minute) is lapsed in one sweep round, in hold_sweep calls of at most sweepBatch holds each: a call's
// Redis time grows with its holds, and every other call of the concert's slot waits for it (500 a call
// held the slot 12 ms, 100 about 1.7 ms).
func TestSweepLapsesAWaveInShortCalls(t *testing.T) {
	ctx := context.Background()
	const fans, each = 65, 4
	e := newEnvHolds(t, fans*each, time.Minute, each)
	holds := e.seatSlot(t).Holds()
	var mu sync.Mutex
	var batches []int // the batch of each hold_sweep call: EVALSHA sha numkeys holds ... now batch ...
	e.watch(func(w []string) {
		if w[0] == "EVALSHA" && len(w) > 3 && w[3] == holds {
			n, _ := strconv.Atoi(w[2])
			b, err := strconv.Atoi(w[3+n+1])
			require.NoError(t, err)
			mu.Lock()
			batches = append(batches, b)
			mu.Unlock()
		}
	})
	var ids []string
	for i := range fans {
		f := e.fan(t, fmt.Sprintf("fan-%d", i))
		for k := range each {
			r, err := e.svc.Hold(ctx, f, f, e.schedule(), fmt.Sprintf("R-%d", i*each+k+1))
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
	}

	e.clock.Advance(time.Minute + time.Second)
	require.NoError(t, e.svc.Sweep(ctx))
	for _, id := range ids {
		r, err := e.store.Seats.Reservation(ctx, id)
		require.NoError(t, err)
		require.Equal(t, ticketrush.ReservationExpired, r.Status, "every hold of the wave lapsed in one round")
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, batches)
	for _, b := range batches {
		assert.LessOrEqual(t, b, 100, "a sweep call lapses at most 100 holds")
	}
	assert.GreaterOrEqual(t, len(batches), fans*each/100+1, "the wave in several calls: %v", batches)
}
