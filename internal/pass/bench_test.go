package pass_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/pass"
)

// BenchmarkSign is the cost of one pass, what an ACTIVE join, poll or stream event adds (docs/pass.md,
// "Cost").
func BenchmarkSign(b *testing.B) {
	i := pass.NewIssuer(openDB(b, dbtest.Postgres(b)), "ticketrush", schedule, time.Now, dbtest.Log(b))
	require.NoError(b, i.Start(context.Background()))
	until := time.Now().Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := i.Sign("fan_0123456789", "c0ncert01", until); err != nil {
			b.Fatal(err)
		}
	}
}
