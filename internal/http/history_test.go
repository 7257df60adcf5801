package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// historyLedger is a ledger of one user, erin, that records the limit it was asked for.
type historyLedger struct {
	entries []ticketrush.LedgerEntry
	err     error
	limit   int
}

func (l *historyLedger) History(_ context.Context, userID string, limit int) ([]ticketrush.LedgerEntry, error) {
	l.limit = limit
	if l.err != nil {
		return nil, l.err
	}
	if userID != "erin" {
		return nil, nil
	}
	return l.entries[:min(limit, len(l.entries))], nil
}

type historyUsers struct{}

func (historyUsers) Verify(token string) (string, error) {
	if token == "jwt-erin" || token == "jwt-frank" {
		return token[4:], nil
	}
	return "", ticketrush.ErrUnauthenticated
}

func TestPointsHistory(t *testing.T) {
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.FixedZone("KST", 9*3600))
	entries := []ticketrush.LedgerEntry{
		{ID: "rres1", Type: ticketrush.LedgerRefund, Amount: 700, BalanceAfter: 1000, ReservationID: "res1", CreatedAt: at.Add(2 * time.Second)},
		{ID: "pres1", Type: ticketrush.LedgerPayment, Amount: 700, BalanceAfter: 300, ReservationID: "res1", CreatedAt: at.Add(time.Second)},
		{ID: "c1", Type: ticketrush.LedgerCharge, Amount: 1000, BalanceAfter: 1000, CreatedAt: at},
	}
	tests := []struct {
		name      string
		path      string
		user      string
		err       error
		status    int
		code      string
		wantLimit int
		wantLen   int
	}{
		{name: "default limit", path: "/v1/points/history", user: "erin", status: 200, wantLimit: 50, wantLen: 3},
		{name: "a limit", path: "/v1/points/history?limit=2", user: "erin", status: 200, wantLimit: 2, wantLen: 2},
		{name: "the largest limit", path: "/v1/points/history?limit=100", user: "erin", status: 200, wantLimit: 100, wantLen: 3},
		{name: "a user never seen", path: "/v1/points/history", user: "frank", status: 200, wantLimit: 50},
		{name: "limit 0", path: "/v1/points/history?limit=0", user: "erin", status: 400, code: "INVALID_REQUEST"},
		{name: "limit 101: the largest", path: "/v1/points/history?limit=101", user: "erin", status: 200, wantLimit: 100, wantLen: 3},
		{name: "limit a million: the largest", path: "/v1/points/history?limit=1000000", user: "erin", status: 200, wantLimit: 100, wantLen: 3},
		{name: "limit not a number", path: "/v1/points/history?limit=ten", user: "erin", status: 400, code: "INVALID_REQUEST"},
		{name: "limit twice", path: "/v1/points/history?limit=1&limit=2", user: "erin", status: 400, code: "INVALID_REQUEST"},
		{name: "limit empty", path: "/v1/points/history?limit=", user: "erin", status: 400, code: "INVALID_REQUEST"},
		{name: "no bearer", path: "/v1/points/history", status: 401, code: "UNAUTHENTICATED"},
		{name: "postgres down", path: "/v1/points/history", user: "erin", err: errors.Join(ticketrush.ErrUnavailable, errors.New("dial")),
			status: 503, code: "UNAVAILABLE", wantLimit: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ledger := &historyLedger{entries: entries, err: tt.err}
			s := NewServer(Deps{API: true, Users: historyUsers{}, Ledger: ledger, Registry: prometheus.NewRegistry(),
				Log: dbtest.Log(t)})
			r := httptest.NewRequest("GET", tt.path, nil)
			if tt.user != "" {
				r.Header.Set("Authorization", "Bearer jwt-"+tt.user)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			require.Equal(t, tt.status, w.Code, w.Body.String())
			assert.Equal(t, tt.wantLimit, ledger.limit)
			if tt.code != "" {
				var p problem
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
				assert.Equal(t, tt.code, p.Code)
				return
			}
			var body struct {
				Entries []map[string]any `json:"entries"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			require.NotNil(t, body.Entries, "entries is an array, never null")
			require.Len(t, body.Entries, tt.wantLen)
			if tt.wantLen == 0 {
				return
			}
			assert.Equal(t, map[string]any{"id": "rres1", "type": "REFUND", "amount": 700.0, "balanceAfter": 1000.0,
				"reservationId": "res1", "createdAt": "2026-12-24T01:00:02Z"}, body.Entries[0])
			if tt.wantLen == 3 {
				assert.Equal(t, map[string]any{"id": "c1", "type": "CHARGE", "amount": 1000.0, "balanceAfter": 1000.0,
					"reservationId": nil, "createdAt": "2026-12-24T01:00:00Z"}, body.Entries[2])
			}
		})
	}
}
