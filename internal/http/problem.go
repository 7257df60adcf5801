package http

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// problem is an RFC 9457 problem document with API.md's extra member code.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// codes maps domain errors to status, problem code, title and a detail a client can show: the one
// table of it. Anything not here is a 500 whose detail says nothing of the cause.
var codes = []struct {
	err    error
	status int
	code   string
	title  string
	detail string
}{
	{ticketrush.ErrNotFound, 404, "NOT_FOUND", "Not found", "no such resource, or it is not yours"},
	{ticketrush.ErrUnauthenticated, 401, "UNAUTHENTICATED", "Unauthenticated", "a valid bearer token is required"},
	{ticketrush.ErrQueueTokenInvalid, 401, "QUEUE_TOKEN_INVALID", "Queue token invalid", "the queue token is not a genuine token of this user and concert"},
	{ticketrush.ErrQueueNotActive, 403, "QUEUE_NOT_ACTIVE", "Still waiting", "the queue token is still WAITING; poll GET /v1/queue until it is ACTIVE"},
	{ticketrush.ErrQueueTokenExpired, 410, "QUEUE_TOKEN_EXPIRED", "Queue token expired", "the queue token is EXPIRED or DONE; join the queue again"},
	{ticketrush.ErrSeatUnavailable, 409, "SEAT_UNAVAILABLE", "Seat unavailable", "the seat is held or sold"},
	{ticketrush.ErrHoldLimitReached, 409, "HOLD_LIMIT_REACHED", "Hold limit reached", "you hold as many seats of this concert as you may"},
	{ticketrush.ErrInsufficientBalance, 409, "INSUFFICIENT_BALANCE", "Insufficient balance", "charge points before paying"},
	{ticketrush.ErrReservationNotHeld, 409, "RESERVATION_NOT_HELD", "Reservation not held", "the reservation is not HELD"},
	{ticketrush.ErrIdempotencyConflict, 409, "IDEMPOTENCY_CONFLICT", "Idempotency conflict", "this Idempotency-Key was used with a different request"},
	{ticketrush.ErrBalanceLimit, 409, "BALANCE_LIMIT", "Balance limit", "the balance would pass 1,000,000,000"},
	{ticketrush.ErrReservationExpired, 410, "RESERVATION_EXPIRED", "Reservation expired", "the hold lapsed before payment"},
	{ticketrush.ErrInvalidAmount, 400, "INVALID_AMOUNT", "Invalid amount", "amount must be an integer from 1 to 10,000,000"},
	{ticketrush.ErrUnavailable, 503, "UNAVAILABLE", "Service unavailable", "try again shortly"},
}

// errPayloadTooLarge and errMethod are the adapter's own refusals.
var (
	errPayloadTooLarge = errors.New("payload too large")
	errMethod          = errors.New("method not allowed")
	errSlowBody        = errors.New("request body too slow")
)

// writeError writes err as a problem document and reports whether it was a server-side failure.
func writeError(w http.ResponseWriter, err error) (status int) {
	p := problem{Type: "about:blank"}
	var invalid *ticketrush.InvalidError
	switch {
	case errors.As(err, &invalid):
		p.Status, p.Code, p.Title, p.Detail = 400, "INVALID_REQUEST", "Invalid request", invalid.Detail
	case errors.Is(err, errPayloadTooLarge):
		p.Status, p.Code, p.Title, p.Detail = 413, "PAYLOAD_TOO_LARGE", "Payload too large", "request bodies are limited to 64 KiB"
	case errors.Is(err, errSlowBody):
		p.Status, p.Code, p.Title, p.Detail = 408, "REQUEST_TIMEOUT", "Request timeout", "the request body did not arrive in time"
	case errors.Is(err, errMethod):
		p.Status, p.Code, p.Title, p.Detail = 405, "METHOD_NOT_ALLOWED", "Method not allowed", "see the Allow header"
	default:
		p.Status, p.Code, p.Title, p.Detail = 500, "INTERNAL", "Internal error", "the error is logged; try again"
		for _, c := range codes {
			if errors.Is(err, c.err) {
				p.Status, p.Code, p.Title, p.Detail = c.status, c.code, c.title, c.detail
				break
			}
		}
	}
	if p.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
	return p.Status
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
