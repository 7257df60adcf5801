package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestWriteError checks that the problem writer takes status, code and title from the error table and
// the detail from the error when it carries its own.
func TestWriteError(t *testing.T) {
	tests := []struct {
		name string
		give error
		want problem
	}{
		{"table", fmt.Errorf("hold: %w", ticketrush.ErrSeatUnavailable),
			problem{"about:blank", "Seat unavailable", 409, "SEAT_UNAVAILABLE", "the seat is held or sold"}},
		{"own detail", ticketrush.WithDetail(ticketrush.ErrQueueTokenExpired, "the token expired at 12:00"),
			problem{"about:blank", "Queue token expired", 410, "QUEUE_TOKEN_EXPIRED", "the token expired at 12:00"}},
		{"invalid", ticketrush.Invalidf("amount is missing"),
			problem{"about:blank", "Invalid request", 400, "INVALID_REQUEST", "amount is missing"}},
		{"adapter's own", errPayloadTooLarge,
			problem{"about:blank", "Payload too large", 413, "PAYLOAD_TOO_LARGE", "request bodies are limited to 64 KiB"}},
		{"no code", errors.New("panic: secret cause"),
			problem{"about:blank", "Internal error", 500, "INTERNAL", "the error is logged; try again"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			assert.Equal(t, tt.want.Status, writeError(rec, tt.give))
			assert.Equal(t, tt.want.Status, rec.Code)
			assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
			var got problem
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			assert.Equal(t, tt.want, got)
		})
	}
	rec := httptest.NewRecorder()
	writeError(rec, ticketrush.ErrUnavailable)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
}
