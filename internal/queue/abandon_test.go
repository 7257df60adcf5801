package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestAbandonment: 20 fans wait in a paused line with abandonAfterSeconds 2; the 10 at even places
// keep polling (through two instances), the 10 others go quiet. Once the quiet ones have been silent
// for longer than 2 s the line resumes: the pollers are admitted in arrival order and the quiet ones
// read EXPIRED, counted in the admin figure and the metric.
func TestAbandonment(t *testing.T) {
	c, prefix := dbtest.Redis(t)
	a, b := newInstance(t, c, prefix), newInstance(t, c, prefix)
	q := settings(func(q *ticketrush.QueueSettings) { q.Paused, q.AbandonAfter = true, 2*time.Second })
	concert := loadConcert(t, a.store, q)
	ctx := context.Background()
	type fan struct {
		user, token string
		seq         uint64
	}
	var fans []fan
	for i := range 20 {
		user := fmt.Sprintf("fan-%02d", i)
		tk, _, err := a.svc.Join(ctx, user, concert)
		require.NoError(t, err)
		claims, err := a.svc.Verify(context.Background(), user, concert, tk.Token)
		require.NoError(t, err)
		fans = append(fans, fan{user, tk.Token, claims.Seq})
	}
	joined := time.Now()
	polls := func(f fan) bool { return f.seq%2 == 0 }

	loops, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for _, in := range []instance{a, b} {
		wg.Go(func() { in.svc.RunRefresher(loops, 200*time.Millisecond) })
		wg.Go(func() { in.svc.RunLiveness(loops, time.Second) })
		wg.Go(func() {
			in.svc.NewScheduler(in.store.Line, func() []string { return []string{concert} }).Run(loops, 50*time.Millisecond)
		})
	}
	var mu sync.Mutex
	status := map[string]ticketrush.QueueStatus{}
	for i, f := range fans {
		if !polls(f) {
			continue
		}
		in := []instance{a, b}[i%4/2] // half the pollers poll through each instance
		wg.Go(func() {
			tk := time.NewTicker(200 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-loops.Done():
					return
				case <-tk.C:
				}
				t, err := in.svc.Status(loops, f.user, f.token)
				if err == nil {
					mu.Lock()
					status[f.user] = t.Status
					mu.Unlock()
				}
			}
		})
	}

	// Wait until the quiet fans are past abandonAfter and every poller has been seen since.
	seenKey := a.store.Keys().Concert(concert).Seen()
	require.Eventually(t, func() bool {
		if time.Since(joined) < 2500*time.Millisecond {
			return false
		}
		seen, err := c.Do(ctx, c.B().Get().Key(seenKey).Build()).ToString()
		if err != nil {
			return false
		}
		for _, f := range fans {
			if polls(f) && lastSeen(seen, f.seq).Before(joined.Add(500*time.Millisecond)) {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "the pollers are seen after the quiet ones fell silent")

	q.Paused = false
	require.NoError(t, a.store.Configure(ctx, concert, q, time.Now()))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range fans {
			if polls(f) && status[f.user] != ticketrush.StatusActive {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "every poller is admitted")
	for _, f := range fans {
		if !polls(f) {
			tk, err := b.svc.Status(ctx, f.user, f.token)
			require.NoError(t, err)
			assert.Equal(t, ticketrush.StatusExpired, tk.Status, "%s went quiet", f.user)
		}
	}

	entries, err := c.Do(ctx, c.B().Xrange().Key(a.store.Keys().Concert(concert).Events()).Start("-").End("+").Build()).AsXRange()
	require.NoError(t, err)
	var admitted, dropped []uint64
	for _, e := range entries {
		var into *[]uint64
		switch e.FieldValues["type"] {
		case "queue.admit", "queue.admits":
			into = &admitted
		case "queue.abandons":
			into = &dropped
		default:
			continue
		}
		fans, err := redis.EventFans(e.FieldValues)
		require.NoError(t, err)
		for _, f := range fans {
			*into = append(*into, f.Seq)
		}
	}
	var wantAdmitted, wantDropped []uint64
	for _, f := range fans {
		if polls(f) {
			wantAdmitted = append(wantAdmitted, f.seq)
		} else {
			wantDropped = append(wantDropped, f.seq)
		}
	}
	assert.Equal(t, wantAdmitted, admitted, "the pollers, in arrival order")
	assert.Equal(t, wantDropped, dropped)
	assert.True(t, slices.IsSorted(admitted))
	snap, err := a.store.Line.Snapshot(ctx, concert, 0, 0, time.Now())
	require.NoError(t, err)
	assert.EqualValues(t, 10, snap.Abandoned)
	assert.EqualValues(t, 10, counter(t, a.reg, "ticketrush_queue_abandoned_total", map[string]string{"concert": concert})+
		counter(t, b.reg, "ticketrush_queue_abandoned_total", map[string]string{"concert": concert}))
}

// lastSeen reads when the fan of arrival seq was last seen out of a fresh concert's seen string (its
// seenbase 0): 6 bytes an arrival from the first, Unix ms big-endian.
func lastSeen(seen string, seq uint64) time.Time {
	var ms int64
	if at := int(seq-1) * 6; at+6 <= len(seen) {
		for _, b := range []byte(seen[at : at+6]) {
			ms = ms<<8 | int64(b)
		}
	}
	return time.UnixMilli(ms)
}
