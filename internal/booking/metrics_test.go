package booking

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

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
