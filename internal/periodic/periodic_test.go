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
