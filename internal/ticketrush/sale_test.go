package ticketrush

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSaleValidate(t *testing.T) {
	now := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		give Sale
		ok   bool
	}{
		{"both ahead", Sale{OpensAt: now.Add(time.Hour), PrequeueOpensAt: now.Add(time.Minute)}, true},
		{"same time", Sale{OpensAt: now.Add(time.Hour), PrequeueOpensAt: now.Add(time.Hour)}, true},
		{"default pre-queue already open", Sale{OpensAt: now.Add(time.Minute), PrequeueOpensAt: now.Add(-29 * time.Minute)}, true},
		{"opening past", Sale{OpensAt: now.Add(-time.Second), PrequeueOpensAt: now.Add(-time.Hour)}, false},
		{"opening now", Sale{OpensAt: now, PrequeueOpensAt: now.Add(-time.Hour)}, false},
		{"given pre-queue past: open at once", Sale{OpensAt: now.Add(time.Hour), PrequeueOpensAt: now.Add(-time.Second)}, true},
		{"pre-queue after the opening", Sale{OpensAt: now.Add(time.Hour), PrequeueOpensAt: now.Add(2 * time.Hour)}, false},
		{"no opening", Sale{PrequeueOpensAt: now.Add(time.Hour)}, false},
		{"closing after the opening", Sale{OpensAt: now.Add(time.Hour), PrequeueOpensAt: now.Add(time.Minute), ClosesAt: now.Add(2 * time.Hour)}, true},
		{"closing at the opening", Sale{OpensAt: now.Add(time.Hour), PrequeueOpensAt: now.Add(time.Minute), ClosesAt: now.Add(time.Hour)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.give.Validate(now)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalidRequest)
			}
		})
	}
}
