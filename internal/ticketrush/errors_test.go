package ticketrush

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorTable checks what the table must give every code that define alone does not: an error
// status, a title no other code shares (a client tells problems apart by it), a detail, and a
// sentinel whose code survives wrapping. (define panics on a code given twice.)
func TestErrorTable(t *testing.T) {
	codes := Codes()
	require.NotEmpty(t, codes)
	titles := map[string]Code{}
	for _, c := range codes {
		assert.Regexp(t, `^[A-Z]+(_[A-Z]+)*$`, string(c.Code))
		assert.True(t, c.Status >= 400 && c.Status <= 599, "%s: status %d is not an error status", c.Code, c.Status)
		assert.NotEmpty(t, c.Title, c.Code)
		assert.NotEmpty(t, c.Detail, c.Code)
		if other, dup := titles[c.Title]; dup {
			t.Errorf("%s and %s share the title %q", c.Code, other, c.Title)
		}
		titles[c.Title] = c.Code

		err, ok := ErrorOf(c.Code)
		require.True(t, ok, c.Code)
		wrapped := fmt.Errorf("context: %w", err)
		assert.Equal(t, c.Code, ErrorCode(wrapped))
		assert.Equal(t, c.Detail, ErrorDetail(wrapped))
	}
	_, ok := ErrorOf("NO_SUCH_CODE")
	assert.False(t, ok)
}

// TestErrorTableLines pins each line's code, status and refusal flag, which the HTTP contract, the
// docs, openapi.yaml and the dashboards' refusal reasons depend on.
func TestErrorTableLines(t *testing.T) {
	tests := []struct {
		give    error
		code    Code
		status  int
		refusal bool
	}{
		{ErrNotFound, "NOT_FOUND", 404, true},
		{ErrUnauthenticated, "UNAUTHENTICATED", 401, false},
		{ErrQueueTokenInvalid, "QUEUE_TOKEN_INVALID", 401, false},
		{ErrQueueNotActive, "QUEUE_NOT_ACTIVE", 403, false},
		{ErrQueueTokenExpired, "QUEUE_TOKEN_EXPIRED", 410, false},
		{ErrSeatUnavailable, "SEAT_UNAVAILABLE", 409, true},
		{ErrHoldLimitReached, "HOLD_LIMIT_REACHED", 409, true},
		{ErrInsufficientBalance, "INSUFFICIENT_BALANCE", 409, true},
		{ErrReservationNotHeld, "RESERVATION_NOT_HELD", 409, true},
		{ErrIdempotencyConflict, "IDEMPOTENCY_CONFLICT", 409, false},
		{ErrBalanceLimit, "BALANCE_LIMIT", 409, false},
		{ErrReservationExpired, "RESERVATION_EXPIRED", 410, true},
		{ErrInvalidAmount, "INVALID_AMOUNT", 400, false},
		{ErrUnavailable, "UNAVAILABLE", 503, false},
		{ErrInvalidRequest, "INVALID_REQUEST", 400, false},
		{ErrPayloadTooLarge, "PAYLOAD_TOO_LARGE", 413, false},
		{ErrMethodNotAllowed, "METHOD_NOT_ALLOWED", 405, false},
		{ErrRequestTimeout, "REQUEST_TIMEOUT", 408, false},
		{ErrUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", 415, false},
		{ErrInternal, "INTERNAL", 500, false},
		{ErrRateLimited, "RATE_LIMITED", 429, false},
		{ErrPowRequired, "POW_REQUIRED", 403, false},
		{ErrPowInvalid, "POW_INVALID", 403, false},
		{ErrAccessCodeRequired, "ACCESS_CODE_REQUIRED", 403, false},
		{ErrAccessCodeInvalid, "ACCESS_CODE_INVALID", 403, false},
		{ErrSaleNotOpen, "SALE_NOT_OPEN", 409, false},
		{ErrDrawNotReady, "DRAW_NOT_READY", 409, false},
		{ErrSaleClosed, "SALE_CLOSED", 409, false},
		{ErrSoldOut, "SOLD_OUT", 409, false},
		{ErrHeadersTooLarge, "HEADERS_TOO_LARGE", 431, false},
		{ErrNotImplemented, "NOT_IMPLEMENTED", 501, false},
		{ErrHTTPVersionNotSupported, "HTTP_VERSION_NOT_SUPPORTED", 505, false},
	}
	require.Len(t, tests, len(Codes()), "a code of the table is not pinned here")
	for _, tt := range tests {
		info := ErrorInfo(tt.give)
		assert.Equal(t, tt.code, info.Code)
		assert.Equal(t, tt.status, info.Status, tt.code)
		assert.Equal(t, tt.refusal, info.Refusal, tt.code)
	}
}

func TestErrorCodeAndDetail(t *testing.T) {
	tests := []struct {
		name       string
		give       error
		wantCode   Code
		wantDetail string
		is         error
	}{
		{"sentinel", ErrSeatUnavailable, "SEAT_UNAVAILABLE", "the seat is held or sold", ErrSeatUnavailable},
		{"wrapped", fmt.Errorf("hold s1/A-1: %w", ErrSeatUnavailable), "SEAT_UNAVAILABLE", "the seat is held or sold", ErrSeatUnavailable},
		{"own detail", WithDetail(ErrQueueTokenExpired, "the token expired at 12:00"), "QUEUE_TOKEN_EXPIRED", "the token expired at 12:00", ErrQueueTokenExpired},
		{"own detail wrapped", fmt.Errorf("gate: %w", WithDetail(ErrUnauthenticated, "no bearer token")), "UNAUTHENTICATED", "no bearer token", ErrUnauthenticated},
		{"invalid", Invalidf("seat %q is not a seat", "Z"), "INVALID_REQUEST", `seat "Z" is not a seat`, ErrInvalidRequest},
		{"joined", errors.Join(ErrUnavailable, errors.New("dial tcp: refused")), "UNAVAILABLE", "try again shortly", ErrUnavailable},
		{"no code", errors.New("panic"), "INTERNAL", "the error is logged; try again", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantCode, ErrorCode(tt.give))
			assert.Equal(t, tt.wantDetail, ErrorDetail(tt.give))
			if tt.is != nil {
				assert.ErrorIs(t, tt.give, tt.is)
			}
		})
	}
	assert.Equal(t, Code(""), ErrorCode(nil))
}

// TestErrorLookupsAllocateNothing: writing a problem document looks an error's code, detail and sale
// up several times, on every refusal a client gets (most holds of an on-sale are refused): none of
// those lookups may allocate (errors.As does, its target escaping; errors.AsType does not).
func TestErrorLookupsAllocateNothing(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("hold s1/A-1: %w", ErrSeatUnavailable),
		fmt.Errorf("gate: %w", WithDetail(ErrUnauthenticated, "no bearer token")),
		errors.Join(ErrUnavailable, errors.New("dial tcp: refused")),
		errors.New("panic"),
	} {
		allocs := testing.AllocsPerRun(100, func() {
			_, _ = ErrorCode(err), ErrorDetail(err)
			_, _ = AsSaleNotOpen(err)
		})
		assert.Zero(t, allocs, "allocations to look up %v", err)
	}
}
