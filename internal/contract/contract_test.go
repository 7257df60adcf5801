package contract

import (
	"testing"
)

// TestContract starts one ticketrush process as production runs it and checks docs/api.md section by
// section against it, the sections in parallel (each on concerts and fans of its own). The checks that
// spend the public endpoints' per-address rate limit run after them, alone.
func TestContract(t *testing.T) {
	s := startServer(t)
	t.Run("sections", func(t *testing.T) {
		for _, sec := range []struct {
			name string
			run  func(*testing.T, *server)
		}{
			{"Conventions", conventions},
			{"Queue", queueSection},
			{"EventStream", eventStream},
			{"EventStreamDone", eventStreamDone},
			{"Catalog", catalogSection},
			{"Reservations", reservations},
			{"Points", points},
			{"Payments", payments},
			{"Admin", adminSection},
			{"OnSale", onSale},
			{"Inventory", inventory},
			{"Abandonment", abandonment},
			{"Abuse", abuse},
			{"Operations", operations},
			{"AdmissionPass", admissionPass},
		} {
			t.Run(sec.name, func(t *testing.T) {
				t.Parallel()
				sec.run(t, s)
			})
		}
	})
	t.Run("Abuse/PublicPerAddress", func(t *testing.T) { publicRateLimit(t, s) })
}
