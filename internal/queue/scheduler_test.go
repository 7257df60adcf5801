package queue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// tickRecorder is a scheduler's TickStore that keeps what every tick reported. A tick's Active is the
// ZCARD of the active set at the end of the script, so it is an exact sample.
type tickRecorder struct {
	store    queue.TickStore
	capacity int64

	mu        sync.Mutex
	ticks     int
	admitted  int
	errs      int
	maxActive int64
	over      int                     // ticks that ended over capacity
	overShown []ticketrush.TickResult // the first few of them
}

func (r *tickRecorder) Tick(ctx context.Context, concertID string, now time.Time, batch int) (ticketrush.TickResult, error) {
	res, err := r.store.Tick(ctx, concertID, now, batch)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			r.errs++
		}
		return res, err
	}
	r.ticks++
	r.admitted += res.Admitted
	r.maxActive = max(r.maxActive, res.Active)
	if res.Active > r.capacity {
		r.over++
		if len(r.overShown) < 5 {
			r.overShown = append(r.overShown, res)
		}
	}
	return res, nil
}

// TestTwoSchedulersNeverOverAdmit runs two scheduler loops on one Redis for 10 s while fans join and
// leave steadily and active tokens lapse; the active set never holds more than activeCapacity.
func TestTwoSchedulersNeverOverAdmit(t *testing.T) {
	const (
		capacity = 5
		tick     = 20 * time.Millisecond
		run      = 10 * time.Second
	)
	c, prefix := dbtest.Redis(t)
	a, b := newInstance(t, c, prefix), newInstance(t, c, prefix)
	concert := loadConcert(t, a.store, settings(func(q *ticketrush.QueueSettings) {
		q.ActiveCapacity = capacity
		q.AdmitPerSecond = 50
		q.ActiveTTL = 300 * time.Millisecond // lapses free slots all the time
	}))
	activeKey := a.store.Keys().Concert(concert).Active()
	concerts := func() []string { return []string{concert} }
	recA := &tickRecorder{store: a.store.Line, capacity: capacity}
	recB := &tickRecorder{store: b.store.Line, capacity: capacity}

	loops, stopLoops := context.WithCancel(context.Background())
	var loopsWG sync.WaitGroup
	loopsWG.Go(func() { a.svc.NewScheduler(recA, concerts).Run(loops, tick) })
	loopsWG.Go(func() { b.svc.NewScheduler(recB, concerts).Run(loops, tick) })
	loopsWG.Go(func() { a.svc.RunRefresher(loops, 200*time.Millisecond) })
	loopsWG.Go(func() { b.svc.RunRefresher(loops, 200*time.Millisecond) })
	defer func() { stopLoops(); loopsWG.Wait() }()

	// An independent sampler reads ZCARD of the active set every tick, which also covers fans
	// admitted by their own join.
	var (
		samples, sampleErrs, overSampled int
		maxSampled                       int64
	)

	load, stopLoad := context.WithTimeout(context.Background(), run)
	defer stopLoad()
	type member struct{ user, token string }
	var (
		mu        sync.Mutex
		live      []member
		joins     int
		leaves    int
		loadErrs  []error
		joinedNow int // ACTIVE at their join: admitted by it, or by a tick before the join's answer
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if load.Err() == nil && len(loadErrs) < 10 {
			loadErrs = append(loadErrs, err)
		}
	}
	var loadWG sync.WaitGroup
	loadWG.Go(func() { // sampler
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for {
			select {
			case <-load.Done():
				return
			case <-tk.C:
			}
			n, err := c.Do(load, c.B().Zcard().Key(activeKey).Build()).AsInt64()
			if err != nil {
				if load.Err() == nil {
					sampleErrs++
				}
				continue
			}
			samples++
			maxSampled = max(maxSampled, n)
			if n > capacity {
				overSampled++
			}
		}
	})
	for w, in := range []instance{a, b} { // joins, through both instances: ~200/s in all
		loadWG.Go(func() {
			tk := time.NewTicker(10 * time.Millisecond)
			defer tk.Stop()
			for i := 0; ; i++ {
				select {
				case <-load.Done():
					return
				case <-tk.C:
				}
				user := fmt.Sprintf("fan-%d-%d", w, i)
				tkt, created, err := in.svc.Join(load, user, concert)
				if err != nil {
					fail(fmt.Errorf("join: %w", err))
					continue
				}
				mu.Lock()
				joins++
				if created && tkt.Status == ticketrush.StatusActive {
					joinedNow++
				}
				live = append(live, member{user, tkt.Token})
				mu.Unlock()
			}
		})
	}
	loadWG.Go(func() { // leaves of random fans, waiting or active: ~100/s
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		rnd := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-load.Done():
				return
			case <-tk.C:
			}
			mu.Lock()
			if len(live) == 0 {
				mu.Unlock()
				continue
			}
			i := rnd.IntN(len(live))
			m := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			leaves++
			mu.Unlock()
			// Half the leaves go through the other instance, whose view learns of them by snapshot.
			in := a
			if rnd.IntN(2) == 0 {
				in = b
			}
			if err := in.svc.Leave(load, m.user, m.token); err != nil {
				fail(fmt.Errorf("leave: %w", err))
			}
		}
	})
	loadWG.Wait()
	stopLoops()
	loopsWG.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, loadErrs)
	t.Logf("joins %d (%d ACTIVE at once), leaves %d; scheduler A: %d ticks, %d admitted; B: %d ticks, %d admitted; "+
		"max active by tick %d, by %d samples %d (capacity %d)",
		joins, joinedNow, leaves, recA.ticks, recA.admitted, recB.ticks, recB.admitted,
		max(recA.maxActive, recB.maxActive), samples, maxSampled, capacity)

	assert.Zero(t, recA.over, "ticks of scheduler A that left the active set over capacity, e.g. %+v", recA.overShown)
	assert.Zero(t, recB.over, "ticks of scheduler B that left the active set over capacity, e.g. %+v", recB.overShown)
	assert.Zero(t, overSampled, "samples of the active set over capacity, of %d", samples)
	assert.Zero(t, recA.errs+recB.errs+sampleErrs, "failed ticks or samples")
	// The test says something only if the set was full and both loops worked on it.
	assert.Positive(t, recA.ticks)
	assert.Positive(t, recB.ticks)
	assert.Positive(t, samples)
	assert.GreaterOrEqual(t, recA.admitted+recB.admitted, 50, "admissions by tick")
	assert.EqualValues(t, capacity, max(recA.maxActive, recB.maxActive, maxSampled), "the active set was full at times")

	// Admission stays FIFO with two schedulers: every admission event's seq is above the previous one.
	events, err := c.Do(context.Background(), c.B().Xrange().Key(a.store.Keys().Concert(concert).Events()).
		Start("-").End("+").Build()).AsXRange()
	require.NoError(t, err)
	var last uint64
	admits := 0
	for _, e := range events {
		if typ := e.FieldValues["type"]; typ != "queue.admit" && typ != "queue.admits" {
			continue
		}
		fans, err := redis.EventFans(e.FieldValues)
		require.NoError(t, err)
		for _, f := range fans {
			require.Greater(t, f.Seq, last, "admission out of arrival order at event %s", e.ID)
			last = f.Seq
			admits++
		}
	}
	// Every admission a tick reported has its event (there are more: fans admitted by their join, and
	// a tick cut off by the end of the test may have admitted without reporting it).
	assert.GreaterOrEqual(t, admits, recA.admitted+recB.admitted, "admissions without their event")
}
