package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A pre-queue entrant far from the opening polls somewhere in the next 30-60 s (spread over a million
// entrants); close to it, they come back 1-3 s after the opening, never before it.
func TestPrequeuePacing(t *testing.T) {
	now := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	seen := map[time.Duration]bool{}
	for range 200 {
		wait, poll := prequeuePacing(now.Add(20*time.Minute), now)
		assert.Equal(t, 20*time.Minute, wait)
		assert.GreaterOrEqual(t, poll, 30*time.Second)
		assert.LessOrEqual(t, poll, 60*time.Second)
		seen[poll] = true
	}
	assert.Greater(t, len(seen), 10, "the polls are spread, not all at one second")
	for range 200 {
		wait, poll := prequeuePacing(now.Add(90*time.Second), now)
		assert.Equal(t, 90*time.Second, wait)
		assert.Greater(t, poll, 90*time.Second, "back after the opening")
		assert.LessOrEqual(t, poll, 93*time.Second, "and soon after it")
	}
	wait, poll := prequeuePacing(now.Add(-time.Second), now)
	assert.Zero(t, wait)
	assert.Equal(t, time.Second, poll)
}
