package ticketrush

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestConcertLimits: the contract's catalog limits hold before any seat row is made; the review found a
// 64 KiB body asking for 20 million seat rows.
func TestConcertLimits(t *testing.T) {
	concert := func(schedules int, seats ...int) Concert {
		c := Concert{Title: "t", Venue: "v", Queue: DefaultQueueSettings()}
		for i := range schedules {
			c.Schedules = append(c.Schedules, Schedule{StartsAt: time.Unix(int64(i), 0)})
		}
		for i, n := range seats {
			c.Sections = append(c.Sections, Section{Name: "S" + strconv.Itoa(i), Price: 1, Seats: n})
		}
		return c
	}
	many := func(n, each int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = each
		}
		return out
	}
	tests := []struct {
		name   string
		give   Concert
		wantOK bool
	}{
		{"at every limit", concert(5, 200_000), true},
		{"20 million seat rows", concert(100, 200_000), false},
		{"just over a million", concert(2, 200_000, 200_000, 100_001), false},
		{"a million exactly", concert(5, 100_000, 100_000), true},
		{"101 schedules", concert(101, 1), false},
		{"51 sections", concert(1, many(51, 1)...), false},
		{"50 sections", concert(1, many(50, 1)...), true},
		{"seats that overflow the sum", concert(1, math.MaxInt, math.MaxInt, 2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.give.Validate()
			if tt.wantOK {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalidRequest)
			}
		})
	}
}
