package ticketrush

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestConcertValidate covers the admin inputs that once passed validation and then failed in Postgres
// with a 500: a NUL byte in a text field, and section seat counts whose sum overflows.
func TestConcertValidate(t *testing.T) {
	valid := func() Concert {
		return Concert{Title: "IU 2026", Venue: "KSPO Dome", Queue: DefaultQueueSettings(),
			Schedules: []Schedule{{StartsAt: time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)}},
			Sections:  []Section{{Name: "VIP", Price: 100, Seats: 10}}}
	}
	tests := []struct {
		name string
		give func(c *Concert)
		want string // "" when valid
	}{
		{"valid", func(*Concert) {}, ""},
		{"unicode title", func(c *Concert) { c.Title = "아이유 콘서트 ♪" }, ""},
		{"NUL in the title", func(c *Concert) { c.Title = "IU\x002026" }, "control characters"},
		{"NUL in the venue", func(c *Concert) { c.Venue = "\x00" }, "control characters"},
		{"a newline in the title", func(c *Concert) { c.Title = "IU\n2026" }, "control characters"},
		{"invalid UTF-8", func(c *Concert) { c.Venue = "KSPO \xff" }, "UTF-8"},
		{"seats that overflow int when summed", func(c *Concert) {
			c.Sections = []Section{{Name: "A", Seats: math.MaxInt}, {Name: "B", Seats: math.MaxInt}, {Name: "C", Seats: 3}}
		}, "seats must be from 1"},
		{"one section too large", func(c *Concert) { c.Sections[0].Seats = MaxSeatsPerSchedule + 1 }, "seats must be from 1"},
		{"sections too large together", func(c *Concert) {
			c.Sections = []Section{{Name: "A", Seats: MaxSeatsPerSchedule}, {Name: "B", Seats: 1}}
		}, "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.give(&c)
			err := c.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			var invalid *InvalidError
			if assert.True(t, errors.As(err, &invalid), "want an InvalidError, got %v", err) {
				assert.Contains(t, invalid.Detail, tt.want)
			}
		})
	}
}
