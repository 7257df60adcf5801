package booking

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// series returns the value of the counter series of reg named name with the single label
// concert=concertID, and whether that series exists.
func series(t *testing.T, reg *prometheus.Registry, name, concertID string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			l := m.GetLabel()
			if len(l) == 1 && l[0].GetName() == "concert" && l[0].GetValue() == concertID {
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestConcertCountersStartAtZero: once the sweeper has seen a concert, every per-concert counter a
// dashboard panel adds or divides by exists at 0, before any hold, payment, cancel or lapse (the Sale
// overview's "Holds that end paid" adds lapsed and cancelled holds: a missing series leaves it empty).
func TestConcertCountersStartAtZero(t *testing.T) {
	e := newEnv(t, 10, time.Minute)
	reg := prometheus.NewRegistry()
	svc := NewService(e.store.Seats, e.store.Wallet, e, e, e.clock.Now, dbtest.Log(t), reg)
	names := []string{"ticketrush_holds_total", "ticketrush_holds_lapsed_total", "ticketrush_holds_cancelled_total", "ticketrush_payments_total"}
	for _, name := range names {
		_, ok := series(t, reg, name, e.concert.ID)
		require.False(t, ok, "%s before the sweeper saw the concert", name)
	}
	require.NoError(t, svc.Sweep(context.Background()))
	for _, name := range names {
		v, ok := series(t, reg, name, e.concert.ID)
		assert.True(t, ok, "%s exists once the concert is loaded", name)
		assert.Zero(t, v, name)
	}
}

// TestRefusalReasonsFromTheTable checks that the refusal metrics' reason labels are the error table's
// codes: an error the table marks as a refusal counts under its code, any other error not at all.
func TestRefusalReasonsFromTheTable(t *testing.T) {
	var reasons []string
	for _, c := range ticketrush.Codes() {
		err, _ := ticketrush.ErrorOf(c.Code)
		got := refusal(fmt.Errorf("pay r1: %w", err))
		if c.Refusal {
			assert.Equal(t, string(c.Code), got)
			reasons = append(reasons, got)
		} else {
			assert.Empty(t, got, "%s is not a refusal", c.Code)
		}
	}
	assert.ElementsMatch(t, []string{"NOT_FOUND", "SEAT_UNAVAILABLE", "HOLD_LIMIT_REACHED", "INSUFFICIENT_BALANCE",
		"RESERVATION_NOT_HELD", "RESERVATION_EXPIRED"}, reasons, "the dashboards' refusal reasons")
	assert.Empty(t, refusal(fmt.Errorf("boom")))
	assert.Empty(t, refusal(nil))
}
