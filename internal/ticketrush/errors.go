package ticketrush

import (
	"errors"
	"fmt"
)

// Domain errors. Adapters map their own failures onto these; the HTTP adapter maps these onto status
// codes and problem codes in one table.
var (
	ErrNotFound            = errors.New("not found")
	ErrUnauthenticated     = errors.New("unauthenticated")
	ErrQueueTokenInvalid   = errors.New("queue token invalid")
	ErrQueueNotActive      = errors.New("queue token not active")
	ErrQueueTokenExpired   = errors.New("queue token expired")
	ErrSeatUnavailable     = errors.New("seat unavailable")
	ErrHoldLimitReached    = errors.New("hold limit reached")
	ErrInsufficientBalance = errors.New("insufficient balance")
	ErrReservationNotHeld  = errors.New("reservation not held")
	ErrReservationExpired  = errors.New("reservation expired")
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")
	ErrBalanceLimit        = errors.New("balance limit")
	ErrInvalidAmount       = errors.New("invalid amount")
	ErrUnavailable         = errors.New("unavailable")
	ErrExists              = errors.New("exists already") // a create of an id that is taken (a retry)
)

// InvalidError is a request that breaks a rule; Detail says which, in words a client can show.
type InvalidError struct{ Detail string }

func (e *InvalidError) Error() string { return "invalid request: " + e.Detail }

// Invalidf builds an InvalidError.
func Invalidf(format string, args ...any) error {
	return &InvalidError{Detail: fmt.Sprintf(format, args...)}
}
