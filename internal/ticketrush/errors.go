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
)

// InvalidError is a request that breaks a rule; Detail says which, in words a client can show.
type InvalidError struct{ Detail string }

func (e *InvalidError) Error() string { return "invalid request: " + e.Detail }

// Invalidf builds an InvalidError.
func Invalidf(format string, args ...any) error {
	return &InvalidError{Detail: fmt.Sprintf(format, args...)}
}

// WithDetail returns err with a detail that says what exactly is wrong, in words a client can show
// (the missing header, the expired JWT): the result is still errors.Is err, and the HTTP adapter shows
// the detail in place of the code's general one.
func WithDetail(err error, detail string) error { return &detailedError{err: err, detail: detail} }

type detailedError struct {
	err    error
	detail string
}

func (e *detailedError) Error() string { return e.err.Error() + ": " + e.detail }
func (e *detailedError) Unwrap() error { return e.err }

// Detail is what the client is told.
func (e *detailedError) Detail() string { return e.detail }
