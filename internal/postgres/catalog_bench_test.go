package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// BenchmarkCreateLargeConcert writes the largest admin create of the issue: 10 schedules of 200,000
// seats (2,000,000 seat rows by COPY) in one transaction, and reports seconds per create.
func BenchmarkCreateLargeConcert(b *testing.B) {
	db := open(b)
	ctx := context.Background()
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	for i := range b.N {
		c := ticketrush.Concert{ID: fmt.Sprintf("big%d", i), Title: "Big", Venue: "Stadium", Queue: ticketrush.DefaultQueueSettings(),
			Sections: []ticketrush.Section{{Name: "A", Price: 100, Seats: 100_000}, {Name: "B", Price: 50, Seats: 100_000}}}
		for s := range 10 {
			c.Schedules = append(c.Schedules, ticketrush.Schedule{ID: fmt.Sprintf("big%d-s%d", i, s), StartsAt: at.Add(time.Duration(s) * time.Hour)})
		}
		start := time.Now()
		require.NoError(b, db.CreateConcert(ctx, c))
		b.ReportMetric(time.Since(start).Seconds(), "s/create")
	}
}
