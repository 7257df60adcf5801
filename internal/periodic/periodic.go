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
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := step(ctx); err != nil && ctx.Err() == nil {
				log.Warn(msg, "err", err)
			}
		}
	}
}
