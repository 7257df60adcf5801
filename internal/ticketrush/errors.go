package ticketrush

import (
	"errors"
	"fmt"
	"strings"
)

// Code names a kind of failure with one word everywhere: the code of a problem document, the error
// reply of a Lua script (redis.error_reply('SEAT_UNAVAILABLE')) and the reason label of the refusal
// metrics.
type Code string

// CodeInfo is what the error table says of a code.
type CodeInfo struct {
	Code    Code
	Status  int    // HTTP status of the problem document
	Title   string // problem title
	Detail  string // client detail, unless the error carries its own (WithDetail)
	Refusal bool   // a hold or payment the sale's rules refused, counted by reason
}

// Error is a domain error of the table; compare with errors.Is against the sentinels below.
type Error struct{ code Code }

func (e *Error) Error() string { return strings.ToLower(strings.ReplaceAll(string(e.code), "_", " ")) }

// ErrorCode returns the error's code.
func (e *Error) ErrorCode() Code { return e.code }

var (
	table     = map[Code]CodeInfo{}
	sentinels = map[Code]*Error{}
	order     []Code
)

// define adds a code to the table and returns its sentinel error.
func define(code Code, status int, title, detail string, refusal bool) *Error {
	if _, dup := table[code]; dup {
		panic("ticketrush: error code " + string(code) + " defined twice")
	}
	table[code] = CodeInfo{Code: code, Status: status, Title: title, Detail: detail, Refusal: refusal}
	sentinels[code] = &Error{code: code}
	order = append(order, code)
	return sentinels[code]
}

// The error table: one line per code, with its HTTP status, problem title, default client detail and
// whether it counts as a refused hold or payment. Adapters map their own failures onto these sentinels
// (the Lua scripts reply with the code itself); anything else is INTERNAL.
var (
	ErrNotFound             = define("NOT_FOUND", 404, "Not found", "no such resource, or it is not yours", true)
	ErrUnauthenticated      = define("UNAUTHENTICATED", 401, "Unauthenticated", "a valid bearer token is required", false)
	ErrQueueTokenInvalid    = define("QUEUE_TOKEN_INVALID", 401, "Queue token invalid", "the queue token is not a genuine token of this user and concert", false)
	ErrQueueNotActive       = define("QUEUE_NOT_ACTIVE", 403, "Still waiting", "the queue token is still WAITING; poll GET /v1/queue until it is ACTIVE", false)
	ErrQueueTokenExpired    = define("QUEUE_TOKEN_EXPIRED", 410, "Queue token expired", "the queue token is EXPIRED or DONE; join the queue again", false)
	ErrSeatUnavailable      = define("SEAT_UNAVAILABLE", 409, "Seat unavailable", "the seat is held or sold", true)
	ErrHoldLimitReached     = define("HOLD_LIMIT_REACHED", 409, "Hold limit reached", "you hold as many seats of this concert as you may", true)
	ErrInsufficientBalance  = define("INSUFFICIENT_BALANCE", 409, "Insufficient balance", "charge points before paying", true)
	ErrReservationNotHeld   = define("RESERVATION_NOT_HELD", 409, "Reservation not held", "the reservation is not HELD", true)
	ErrIdempotencyConflict  = define("IDEMPOTENCY_CONFLICT", 409, "Idempotency conflict", "this Idempotency-Key was used with a different request", false)
	ErrBalanceLimit         = define("BALANCE_LIMIT", 409, "Balance limit", "the balance would pass 1,000,000,000", false)
	ErrReservationExpired   = define("RESERVATION_EXPIRED", 410, "Reservation expired", "the hold lapsed before payment", true)
	ErrInvalidAmount        = define("INVALID_AMOUNT", 400, "Invalid amount", "amount must be an integer from 1 to 10,000,000", false)
	ErrUnavailable          = define("UNAVAILABLE", 503, "Service unavailable", "try again shortly", false)
	ErrInvalidRequest       = define("INVALID_REQUEST", 400, "Invalid request", "the request breaks a rule of the API", false)
	ErrPayloadTooLarge      = define("PAYLOAD_TOO_LARGE", 413, "Payload too large", "request bodies are limited to 64 KiB", false)
	ErrMethodNotAllowed     = define("METHOD_NOT_ALLOWED", 405, "Method not allowed", "see the Allow header", false)
	ErrRequestTimeout       = define("REQUEST_TIMEOUT", 408, "Request timeout", "the request body did not arrive in time", false)
	ErrUnsupportedMediaType = define("UNSUPPORTED_MEDIA_TYPE", 415, "Unsupported media type", "request bodies are JSON: send Content-Type: application/json", false)
	ErrInternal             = define("INTERNAL", 500, "Internal error", "the error is logged; try again", false)
	ErrRateLimited          = define("RATE_LIMITED", 429, "Too many requests", "slow down: wait Retry-After seconds", false)
	ErrPowRequired          = define("POW_REQUIRED", 403, "Proof of work required", "this concert asks for a proof of work: POST .../queue/challenge, solve it, join with challenge and nonce", false)
	ErrPowInvalid           = define("POW_INVALID", 403, "Proof of work invalid", "the proof is wrong, expired, used already or another user's; get a new challenge", false)
	ErrAccessCodeRequired   = define("ACCESS_CODE_REQUIRED", 403, "Access code required", "this concert's line is open to access-code holders only: join with accessCode", false)
	ErrAccessCodeInvalid    = define("ACCESS_CODE_INVALID", 403, "Access code invalid", "the access code is unknown, or another user's", false)
	ErrSoldOut              = define("SOLD_OUT", 409, "Sold out", "every seat of this concert is sold", false)

	// The HTTP server's own refusals, made before any route runs (internal/http refusals.go).
	ErrHeadersTooLarge         = define("HEADERS_TOO_LARGE", 431, "Request headers too large", "the request's line and headers are over the server's limit", false)
	ErrNotImplemented          = define("NOT_IMPLEMENTED", 501, "Not implemented", "the request asks for something the server does not support (a Transfer-Encoding other than chunked)", false)
	ErrHTTPVersionNotSupported = define("HTTP_VERSION_NOT_SUPPORTED", 505, "HTTP version not supported", "send HTTP/1.1 or HTTP/2", false)
)

// Codes lists the table in its order.
func Codes() []CodeInfo {
	out := make([]CodeInfo, len(order))
	for i, c := range order {
		out[i] = table[c]
	}
	return out
}

// LookupCode returns the table's line of a code.
func LookupCode(code Code) (CodeInfo, bool) {
	info, ok := table[code]
	return info, ok
}

// ErrorOf returns the sentinel error of a code, for adapters that receive codes (the Lua scripts' error
// replies).
func ErrorOf(code Code) (error, bool) {
	e, ok := sentinels[code]
	if !ok {
		return nil, false
	}
	return e, true
}

// ErrorCode returns the code of err: that of the first error in its chain that carries one, INTERNAL
// when none does, "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	if c, ok := errors.AsType[interface {
		error
		ErrorCode() Code
	}](err); ok { // AsType, not As: no target escapes, so every problem document's lookups allocate nothing
		return c.ErrorCode()
	}
	return ErrInternal.code
}

// ErrorInfo returns the table's line of err's code (INTERNAL's for an error without a known code).
func ErrorInfo(err error) CodeInfo {
	if info, ok := table[ErrorCode(err)]; ok {
		return info
	}
	return table[ErrInternal.code]
}

// WithDetail returns err with a client detail that replaces its code's default detail in a problem
// document; errors.Is and ErrorCode see through it.
func WithDetail(err error, detail string) error { return &detailError{err: err, detail: detail} }

type detailError struct {
	err    error
	detail string
}

func (e *detailError) Error() string       { return e.err.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error       { return e.err }
func (e *detailError) ErrorDetail() string { return e.detail }

// ErrorDetail returns the client detail of err: its own (WithDetail, InvalidError) or its code's.
func ErrorDetail(err error) string {
	if d, ok := errors.AsType[interface {
		error
		ErrorDetail() string
	}](err); ok {
		return d.ErrorDetail()
	}
	return ErrorInfo(err).Detail
}

// ErrExists is a create of an id that is taken (a retry of a create with the same Idempotency-Key): the
// catalog answers with what the first create made; it never reaches a client as such.
var ErrExists = errors.New("exists already")

// InvalidError is a request that breaks a rule; Detail says which, in words a client can show. Its
// code is INVALID_REQUEST.
type InvalidError struct{ Detail string }

func (e *InvalidError) Error() string       { return "invalid request: " + e.Detail }
func (e *InvalidError) Unwrap() error       { return ErrInvalidRequest }
func (e *InvalidError) ErrorDetail() string { return e.Detail }

// Invalidf builds an InvalidError.
func Invalidf(format string, args ...any) error {
	return &InvalidError{Detail: fmt.Sprintf(format, args...)}
}

// The on-sale's codes (docs/api.md v2, "On-sale").
var (
	ErrSaleNotOpen  = define("SALE_NOT_OPEN", 409, "Sale not open", "the concert's pre-queue has not opened yet", false)
	ErrDrawNotReady = define("DRAW_NOT_READY", 409, "Draw not ready", "the concert's pre-queue has not been drawn yet", false)
	ErrSaleClosed   = define("SALE_CLOSED", 409, "Sale closed", "the concert's sale has closed (sale.closesAt): its line takes nobody", false)
)
