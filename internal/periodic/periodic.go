// Package periodic runs one step of a background loop every interval: the admission tick, the sweeper,
// the queue view and catalog refreshes. The caller owns the goroutine and stops it with ctx.
package periodic

import (
	"context"
	"log/slog"
	"time"
)

// Run calls step every interval until ctx ends; a step's error is logged as msg and the loop goes on.
func Run(ctx context.Context, interval time.Duration, step func(context.Context) error, log *slog.Logger, msg string) {
	RunPaced(ctx, interval, interval, func() bool { return true }, nil, step, log, msg)
}

// RunPaced is Run for a loop whose work comes and goes: step runs every interval while busy() reports
// work (asked after each step), and every idle (longer) while it does not, unless wake() is closed
// during that idle wait (something woke up: step runs at once; a busy loop keeps its interval; nil:
// nothing wakes it). An
// idle service then wakes up a few times a second instead of tens, which is most of its CPU.
func RunPaced(ctx context.Context, interval, idle time.Duration, busy func() bool, wake func() <-chan struct{},
	step func(context.Context) error, log *slog.Logger, msg string) {
	t := time.NewTimer(interval)
	defer t.Stop()
	var woken <-chan struct{} // nil (never) while busy
	for {
		select {
		case <-ctx.Done():
			return
		case <-woken:
			t.Stop() // nothing stale to drain since Go 1.23
		case <-t.C:
		}
		if ctx.Err() != nil { // ended while the timer fired too: select picks either
			return
		}
		start := time.Now()
		if err := step(ctx); err != nil && ctx.Err() == nil {
			log.Warn(msg, "err", err)
		}
		next := interval
		woken = nil
		if !busy() {
			next = idle
			if wake != nil {
				woken = wake()
			}
		}
		t.Reset(max(0, next-time.Since(start)))
	}
}
