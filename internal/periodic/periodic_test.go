package periodic

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func TestRunStepsUntilCancelledAndLogsErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, time.Millisecond, func(context.Context) error {
			calls++ // only the loop's goroutine touches it until done
			if calls == 3 {
				cancel()
			}
			return errors.New("boom")
		}, slog.New(slog.NewTextHandler(&logs, nil)), "step failed")
	}()
	<-done
	assert.Equal(t, 3, calls, "no step after ctx ended")
	assert.Equal(t, 2, strings.Count(logs.b.String(), "step failed"), "errors logged, not the one after cancel")
}

// TestRunPacedSlowsWhenIdleAndWakes: a paced loop steps every interval while busy, waits its idle pace
// (an hour here) once not busy, and steps at once when woken.
func TestRunPacedSlowsWhenIdleAndWakes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	busy, woken, wakeSent := true, make(chan struct{}), false
	steps := make(chan int, 100)
	early := make(chan int, 100)
	n := 0
	go RunPaced(ctx, time.Millisecond, time.Hour, func() bool { mu.Lock(); defer mu.Unlock(); return busy },
		func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return woken },
		func(context.Context) error {
			n++ // only the loop's goroutine touches it
			mu.Lock()
			if n == 5 {
				busy = false
			}
			if n > 5 && !wakeSent {
				early <- n
			}
			mu.Unlock()
			steps <- n
			return nil
		}, slog.Default(), "step")
	for i := 1; i <= 5; i++ {
		assert.Equal(t, i, <-steps, "steps at the interval while busy")
	}
	// Not a synchronisation: a loop that ignored its idle pace would step 20 more times meanwhile.
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	wakeSent = true
	close(woken)
	woken = make(chan struct{})
	mu.Unlock()
	assert.Equal(t, 6, <-steps, "a wake-up runs the step at once")
	assert.Empty(t, early, "a step ran while idle, before its hour and any wake-up")
}
