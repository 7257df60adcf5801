package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestSchedulersNeverOverAdmitPerSeat runs three scheduler loops on one Redis for 5 s with
// activePerSeat 1 on a concert of 10 seats and an activeCapacity far above them, while fans join
// through every instance and active tokens lapse all the time: the active set never holds more fans
// than seats, by any tick's own count or by an independent sampler.
func TestSchedulersNeverOverAdmitPerSeat(t *testing.T) {
	const (
		seats = 10 // loadConcert's concert: one schedule of 10 seats
		tick  = 10 * time.Millisecond
		run   = 5 * time.Second
	)
	c, prefix := dbtest.Redis(t)
	ins := []instance{newInstance(t, c, prefix), newInstance(t, c, prefix), newInstance(t, c, prefix)}
	concert := loadConcert(t, ins[0].store, settings(func(q *ticketrush.QueueSettings) {
		q.ActiveCapacity = 1000
		q.AdmitPerSecond = 1000
		q.ActivePerSeat = 1
		q.ActiveTTL = 200 * time.Millisecond
	}))
	activeKey := ins[0].store.Keys().Concert(concert).Active()
	concerts := func() []string { return []string{concert} }

	loops, stopLoops := context.WithCancel(context.Background())
	var loopsWG sync.WaitGroup
	var recs []*tickRecorder
	for _, in := range ins {
		rec := &tickRecorder{store: in.store.Line, capacity: seats}
		recs = append(recs, rec)
		loopsWG.Go(func() { in.svc.NewScheduler(rec, concerts).Run(loops, tick) })
	}
	defer func() { stopLoops(); loopsWG.Wait() }()

	load, stopLoad := context.WithTimeout(context.Background(), run)
	defer stopLoad()
	var (
		mu                       sync.Mutex
		loadErrs                 []error
		samples, over, sampleErr int
		maxSampled               int64
	)
	var loadWG sync.WaitGroup
	loadWG.Go(func() {
		tk := time.NewTicker(tick / 2)
		defer tk.Stop()
		for {
			select {
			case <-load.Done():
				return
			case <-tk.C:
			}
			n, err := c.Do(load, c.B().Zcard().Key(activeKey).Build()).AsInt64()
			mu.Lock()
			switch {
			case err != nil && load.Err() == nil:
				sampleErr++
			case err == nil:
				samples++
				maxSampled = max(maxSampled, n)
				if n > seats {
					over++
				}
			}
			mu.Unlock()
		}
	})
	for w, in := range ins {
		loadWG.Go(func() {
			tk := time.NewTicker(5 * time.Millisecond)
			defer tk.Stop()
			for i := 0; ; i++ {
				select {
				case <-load.Done():
					return
				case <-tk.C:
				}
				if _, _, err := in.svc.Join(load, fmt.Sprintf("fan-%d-%d", w, i), concert); err != nil && load.Err() == nil {
					mu.Lock()
					loadErrs = append(loadErrs, err)
					mu.Unlock()
				}
			}
		})
	}
	loadWG.Wait()
	stopLoops()
	loopsWG.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, loadErrs)
	admitted, maxActive := 0, int64(0)
	for i, r := range recs {
		assert.Zero(t, r.over, "ticks of scheduler %d that left more fans ACTIVE than seats, e.g. %+v", i, r.overShown)
		assert.Zero(t, r.errs, "failed ticks of scheduler %d", i)
		assert.Positive(t, r.ticks)
		admitted += r.admitted
		maxActive = max(maxActive, r.maxActive)
	}
	t.Logf("admitted by tick %d; max active by tick %d, by %d samples %d (seats %d)", admitted, maxActive, samples, maxSampled, seats)
	assert.Zero(t, over, "samples of the active set over the seats, of %d", samples)
	assert.Zero(t, sampleErr)
	assert.GreaterOrEqual(t, admitted, 50, "admissions by tick: the lapses freed room all the time")
	assert.EqualValues(t, seats, max(maxActive, maxSampled), "the active set reached the seats at times")
}
