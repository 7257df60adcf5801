package http

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Ledger is the durable point ledger, fed by the write-behind.
type Ledger interface {
	History(ctx context.Context, userID string, limit int) ([]ticketrush.LedgerEntry, error)
}

// The page size of GET /v1/points/history.
const (
	historyDefault = 50
	historyMax     = 100
)

type ledgerEntryJSON struct {
	ID            string    `json:"id"`
	Type          string    `json:"type"`
	Amount        int64     `json:"amount"`
	BalanceAfter  int64     `json:"balanceAfter"`
	ReservationID *string   `json:"reservationId"`
	CreatedAt     time.Time `json:"createdAt"`
}

// pointsHistory answers the caller's newest ledger entries, newest first. It reads Postgres, so it
// trails Redis by the write-behind lag.
func (s *Server) pointsHistory(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	user, err := s.user(r)
	if err != nil {
		return err
	}
	limit := historyDefault
	if vs, ok := r.URL.Query()["limit"]; ok {
		n, err := strconv.Atoi(vs[0])
		if len(vs) != 1 || err != nil || n < 1 {
			return ticketrush.Invalidf("limit must be a positive integer (at most %d entries are given)", historyMax)
		}
		limit = min(n, historyMax) // docs/api.md sets no upper bound: a larger limit gets the most there is
	}
	if s.Ledger == nil {
		return ticketrush.ErrUnavailable
	}
	entries, err := s.Ledger.History(r.Context(), user, limit)
	if err != nil {
		return err
	}
	out := struct {
		Entries []ledgerEntryJSON `json:"entries"`
	}{Entries: make([]ledgerEntryJSON, len(entries))}
	for i, e := range entries {
		j := ledgerEntryJSON{ID: e.ID, Type: string(e.Type), Amount: e.Amount, BalanceAfter: e.BalanceAfter,
			CreatedAt: e.CreatedAt.UTC()}
		if e.ReservationID != "" {
			id := e.ReservationID
			j.ReservationID = &id
		}
		out.Entries[i] = j
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
