package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// saleConcert creates a concert with one schedule of VIP-1..3 (165,000) and R-1..5 (143,000).
func (s *service) saleConcert(t *testing.T, queue map[string]any) (concertID, scheduleID string) {
	t.Helper()
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": "Sale " + t.Name(), "venue": "KSPO Dome",
		"schedules": []string{"2026-12-24T10:00:00Z"},
		"sections":  []map[string]any{{"name": "VIP", "price": 165000, "seats": 3}, {"name": "R", "price": 143000, "seats": 5}},
		"queue":     queue,
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var c struct {
		ID        string `json:"id"`
		Schedules []struct {
			ID string `json:"id"`
		} `json:"schedules"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	return c.ID, c.Schedules[0].ID
}

// buyer is a fan with a fresh user id: wallets are global, so fans of money tests must not meet
// another test's (or an earlier run's) wallet.
func buyer(t *testing.T, name string) fan { return newFan(t, dbtest.Name(name+"-")) }

// admitted joins a fan and returns their ACTIVE token.
func (s *service) admitted(t *testing.T, f fan, concertID string) string {
	t.Helper()
	_, tk := s.join(t, f, concertID)
	require.Equal(t, "ACTIVE", tk.Status)
	return tk.Token
}

type reservation struct {
	ID         string    `json:"id"`
	Status     string    `json:"status"`
	ConcertID  string    `json:"concertId"`
	ScheduleID string    `json:"scheduleId"`
	SeatID     string    `json:"seatId"`
	Price      int64     `json:"price"`
	ExpiresAt  time.Time `json:"expiresAt"`
	CreatedAt  time.Time `json:"createdAt"`
}

type payment struct {
	ID            string    `json:"id"`
	ReservationID string    `json:"reservationId"`
	Amount        int64     `json:"amount"`
	Balance       int64     `json:"balance"`
	PaidAt        time.Time `json:"paidAt"`
}

// decodeStrict decodes a body that must have exactly the fields of v.
func decodeStrict(t *testing.T, res response, v any) {
	t.Helper()
	assert.Equal(t, "application/json", res.header.Get("Content-Type"))
	dec := json.NewDecoder(strings.NewReader(string(res.body)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "body %s", res.body)
}

func (s *service) hold(t *testing.T, f fan, token, scheduleID, seat string) response {
	t.Helper()
	return s.do(t, req{method: "POST", path: "/v1/reservations", headers: f.auth(token),
		body: map[string]string{"scheduleId": scheduleID, "seatId": seat}})
}

func (s *service) seatMap(t *testing.T, f fan, token, concertID, scheduleID string) map[string]string {
	t.Helper()
	res := s.do(t, req{method: "GET", path: "/v1/concerts/" + concertID + "/schedules/" + scheduleID + "/seats", headers: f.auth(token)})
	require.Equal(t, http.StatusOK, res.status, "seats: %s", res.body)
	var seats []struct {
		ID      string `json:"id"`
		Section string `json:"section"`
		Price   int64  `json:"price"`
		Status  string `json:"status"`
	}
	decodeStrict(t, res, &seats)
	out := map[string]string{}
	for _, seat := range seats {
		out[seat.ID] = seat.Status
	}
	return out
}

func (s *service) charge(t *testing.T, f fan, amount any, key string) response {
	t.Helper()
	h := f.auth("")
	if key != "" {
		h = append(h, "Idempotency-Key", key)
	}
	return s.do(t, req{method: "POST", path: "/v1/points/charges", headers: h, body: map[string]any{"amount": amount}})
}

func (s *service) pay(t *testing.T, f fan, resID, key string) response {
	t.Helper()
	h := f.auth("")
	if key != "" {
		h = append(h, "Idempotency-Key", key)
	}
	return s.do(t, req{method: "POST", path: "/v1/payments", headers: h, body: map[string]string{"reservationId": resID}})
}

func TestPurchaseCatalog(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcert(t, map[string]any{"activeCapacity": 1})
	alice, bob := buyer(t, "alice"), buyer(t, "bob")
	aliceToken := s.admitted(t, alice, concertID)
	_, bobTicket := s.join(t, bob, concertID)
	require.Equal(t, "WAITING", bobTicket.Status)

	res := s.do(t, req{method: "GET", path: "/v1/concerts/" + concertID + "/schedules", headers: alice.auth(aliceToken)})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	var schedules []struct {
		ID             string    `json:"id"`
		StartsAt       time.Time `json:"startsAt"`
		AvailableSeats int64     `json:"availableSeats"`
		TotalSeats     int64     `json:"totalSeats"`
	}
	decodeStrict(t, res, &schedules)
	require.Len(t, schedules, 1)
	assert.Equal(t, scheduleID, schedules[0].ID)
	assert.Equal(t, time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC), schedules[0].StartsAt)
	assert.Equal(t, int64(8), schedules[0].AvailableSeats)
	assert.Equal(t, int64(8), schedules[0].TotalSeats)

	seats := s.seatMap(t, alice, aliceToken, concertID, scheduleID)
	assert.Len(t, seats, 8)
	assert.Equal(t, "AVAILABLE", seats["VIP-1"])

	schedulesPath := "/v1/concerts/" + concertID + "/schedules"
	tests := []struct {
		name    string
		path    string
		headers []string
		status  int
		code    string
	}{
		{"no jwt", schedulesPath, nil, 401, "UNAUTHENTICATED"},
		{"no queue token", schedulesPath, alice.auth(""), 401, "QUEUE_TOKEN_INVALID"},
		{"another user's token", schedulesPath, bob.auth(aliceToken), 401, "QUEUE_TOKEN_INVALID"},
		{"forged token", schedulesPath, alice.auth(aliceToken + "x"), 401, "QUEUE_TOKEN_INVALID"},
		{"waiting", schedulesPath, bob.auth(bobTicket.Token), 403, "QUEUE_NOT_ACTIVE"},
		{"seats while waiting", schedulesPath + "/" + scheduleID + "/seats", bob.auth(bobTicket.Token), 403, "QUEUE_NOT_ACTIVE"},
		{"unknown schedule", schedulesPath + "/nosuchsched1/seats", alice.auth(aliceToken), 404, "NOT_FOUND"},
		{"another concert's token", "/v1/concerts/nosuchconcert/schedules", alice.auth(aliceToken), 401, "QUEUE_TOKEN_INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireProblem(t, s.do(t, req{method: "GET", path: tt.path, headers: tt.headers}), tt.status, tt.code)
		})
	}

	s.leave(t, alice, aliceToken)
	requireProblem(t, s.do(t, req{method: "GET", path: schedulesPath, headers: alice.auth(aliceToken)}), 410, "QUEUE_TOKEN_EXPIRED")
}

func TestPurchaseHoldsAndCancel(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcert(t, map[string]any{"maxHoldsPerUser": 2})
	alice, bob := buyer(t, "alice"), buyer(t, "bob")
	aliceToken, bobToken := s.admitted(t, alice, concertID), s.admitted(t, bob, concertID)

	res := s.hold(t, alice, aliceToken, scheduleID, "VIP-1")
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	var r reservation
	decodeStrict(t, res, &r)
	assert.Equal(t, "HELD", r.Status)
	assert.Equal(t, concertID, r.ConcertID)
	assert.Equal(t, scheduleID, r.ScheduleID)
	assert.Equal(t, "VIP-1", r.SeatID)
	assert.Equal(t, int64(165000), r.Price)
	assert.Equal(t, 300*time.Second, r.ExpiresAt.Sub(r.CreatedAt), "holdTtlSeconds defaults to 300")

	assert.Equal(t, "HELD", s.seatMap(t, bob, bobToken, concertID, scheduleID)["VIP-1"])
	requireProblem(t, s.hold(t, bob, bobToken, scheduleID, "VIP-1"), 409, "SEAT_UNAVAILABLE")
	requireProblem(t, s.hold(t, bob, bobToken, scheduleID, "VIP-9"), 404, "NOT_FOUND")
	requireProblem(t, s.hold(t, bob, bobToken, "nosuchsched1", "VIP-2"), 404, "NOT_FOUND")
	_, otherSchedule := s.saleConcert(t, nil)
	requireProblem(t, s.hold(t, bob, bobToken, otherSchedule, "VIP-2"), 401, "QUEUE_TOKEN_INVALID")
	requireProblem(t, s.hold(t, bob, bobToken+"x", scheduleID, "VIP-2"), 401, "QUEUE_TOKEN_INVALID")
	requireProblem(t, s.do(t, req{method: "POST", path: "/v1/reservations", headers: bob.auth(bobToken),
		body: map[string]string{"scheduleId": scheduleID, "seatId": "VIP-2", "extra": "x"}}), 400, "INVALID_REQUEST")
	requireProblem(t, s.do(t, req{method: "POST", path: "/v1/reservations", headers: bob.auth(bobToken),
		body: strings.Repeat(" ", 65<<10) + "{}"}), 413, "PAYLOAD_TOO_LARGE")

	require.Equal(t, http.StatusCreated, s.hold(t, alice, aliceToken, scheduleID, "VIP-2").status)
	requireProblem(t, s.hold(t, alice, aliceToken, scheduleID, "VIP-3"), 409, "HOLD_LIMIT_REACHED")

	res = s.do(t, req{method: "GET", path: "/v1/reservations/" + r.ID, headers: alice.auth("")})
	require.Equal(t, http.StatusOK, res.status)
	var got reservation
	decodeStrict(t, res, &got)
	assert.Equal(t, r, got)
	requireProblem(t, s.do(t, req{method: "GET", path: "/v1/reservations/" + r.ID, headers: bob.auth("")}), 404, "NOT_FOUND")
	requireProblem(t, s.do(t, req{method: "DELETE", path: "/v1/reservations/" + r.ID, headers: bob.auth("")}), 404, "NOT_FOUND")
	requireProblem(t, s.do(t, req{method: "GET", path: "/v1/reservations/nope", headers: alice.auth("")}), 404, "NOT_FOUND")

	res = s.do(t, req{method: "DELETE", path: "/v1/reservations/" + r.ID, headers: alice.auth("")})
	require.Equal(t, http.StatusNoContent, res.status, "%s", res.body)
	assert.Equal(t, "AVAILABLE", s.seatMap(t, bob, bobToken, concertID, scheduleID)["VIP-1"], "the seat is AVAILABLE again")
	requireProblem(t, s.do(t, req{method: "DELETE", path: "/v1/reservations/" + r.ID, headers: alice.auth("")}), 409, "RESERVATION_NOT_HELD")
	res = s.do(t, req{method: "GET", path: "/v1/reservations/" + r.ID, headers: alice.auth("")})
	decodeStrict(t, res, &got)
	assert.Equal(t, "CANCELLED", got.Status)
	require.Equal(t, http.StatusCreated, s.hold(t, bob, bobToken, scheduleID, "VIP-1").status, "bob gets it now")
}

func TestPurchaseHoldLapses(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcert(t, map[string]any{"holdTtlSeconds": 1})
	alice := buyer(t, "alice")
	token := s.admitted(t, alice, concertID)
	var r reservation
	decodeStrict(t, s.hold(t, alice, token, scheduleID, "R-1"), &r)
	require.Eventually(t, func() bool {
		return s.seatMap(t, alice, token, concertID, scheduleID)["R-1"] == "AVAILABLE"
	}, 10*time.Second, 50*time.Millisecond, "an unpaid hold lapses and the seat is free again")
	res := s.do(t, req{method: "GET", path: "/v1/reservations/" + r.ID, headers: alice.auth("")})
	var got reservation
	decodeStrict(t, res, &got)
	assert.Equal(t, "EXPIRED", got.Status)
	requireProblem(t, s.pay(t, alice, r.ID, ""), 410, "RESERVATION_EXPIRED")
}

func TestPurchasePoints(t *testing.T) {
	s := startService(t, nil)
	alice := buyer(t, "alice")
	res := s.do(t, req{method: "GET", path: "/v1/points", headers: alice.auth("")})
	require.Equal(t, http.StatusOK, res.status)
	assert.JSONEq(t, `{"balance":0}`, string(res.body), "a user never seen has 0")

	res = s.charge(t, alice, 5000, "charge-1")
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	var c struct {
		ID        string    `json:"id"`
		Amount    int64     `json:"amount"`
		Balance   int64     `json:"balance"`
		CreatedAt time.Time `json:"createdAt"`
	}
	decodeStrict(t, res, &c)
	assert.Equal(t, int64(5000), c.Amount)
	assert.Equal(t, int64(5000), c.Balance)
	again := s.charge(t, alice, 5000, "charge-1")
	assert.Equal(t, http.StatusCreated, again.status)
	assert.JSONEq(t, string(res.body), string(again.body), "a retry with the same key returns the first response")
	requireProblem(t, s.charge(t, alice, 6000, "charge-1"), 409, "IDEMPOTENCY_CONFLICT")

	for _, bad := range []any{0, -5, 10_000_001, 1.5, "100", nil, true} {
		requireProblem(t, s.charge(t, alice, bad, ""), 400, "INVALID_AMOUNT")
	}
	requireProblem(t, s.do(t, req{method: "POST", path: "/v1/points/charges", headers: alice.auth(""),
		body: `{"amount":1,"currency":"KRW"}`}), 400, "INVALID_REQUEST")
	requireProblem(t, s.do(t, req{method: "POST", path: "/v1/points/charges",
		headers: append(alice.auth(""), "Idempotency-Key", strings.Repeat("k", 65)), body: `{"amount":1}`}), 400, "INVALID_REQUEST")

	rich := buyer(t, "rich")
	for i := 0; i < 100; i++ {
		require.Equal(t, http.StatusCreated, s.charge(t, rich, 10_000_000, "").status)
	}
	requireProblem(t, s.charge(t, rich, 1, ""), 409, "BALANCE_LIMIT")
	res = s.do(t, req{method: "GET", path: "/v1/points", headers: rich.auth("")})
	assert.JSONEq(t, `{"balance":1000000000}`, string(res.body))
	requireProblem(t, s.do(t, req{method: "GET", path: "/v1/points"}), 401, "UNAUTHENTICATED")
}

func TestPurchasePayments(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcert(t, map[string]any{"activeCapacity": 1})
	alice, bob := buyer(t, "alice"), buyer(t, "bob")
	token := s.admitted(t, alice, concertID)
	_, bobTicket := s.join(t, bob, concertID)
	require.Equal(t, "WAITING", bobTicket.Status, "capacity 1: bob waits for alice")

	var r1, r2 reservation
	decodeStrict(t, s.hold(t, alice, token, scheduleID, "VIP-1"), &r1)
	decodeStrict(t, s.hold(t, alice, token, scheduleID, "R-1"), &r2)

	requireProblem(t, s.pay(t, alice, r1.ID, ""), 409, "INSUFFICIENT_BALANCE")
	requireProblem(t, s.pay(t, bob, r1.ID, ""), 404, "NOT_FOUND")
	requireProblem(t, s.pay(t, alice, "nosuchreservation", ""), 404, "NOT_FOUND")
	require.Equal(t, http.StatusCreated, s.charge(t, alice, 400000, "").status)

	// Sent twice at once: one debit.
	var wg sync.WaitGroup
	results := make([]response, 2)
	for i := range results {
		wg.Go(func() {
			res, err := s.send(req{method: "POST", path: "/v1/payments", headers: alice.auth(""),
				body: map[string]string{"reservationId": r1.ID}})
			assert.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	var p payment
	for _, res := range results {
		require.Contains(t, []int{200, 201}, res.status, "%s", res.body)
		decodeStrict(t, res, &p)
	}
	assert.Equal(t, r1.ID, p.ReservationID)
	assert.Equal(t, int64(165000), p.Amount)
	assert.Equal(t, int64(400000-165000), p.Balance)

	res := s.pay(t, alice, r1.ID, "")
	assert.Equal(t, http.StatusOK, res.status, "paying a PAID reservation again: 200, the same payment")
	var same payment
	decodeStrict(t, res, &same)
	assert.Equal(t, p, same)
	res = s.do(t, req{method: "GET", path: "/v1/payments/" + p.ID, headers: alice.auth("")})
	require.Equal(t, http.StatusOK, res.status)
	decodeStrict(t, res, &same)
	assert.Equal(t, p, same)
	requireProblem(t, s.do(t, req{method: "GET", path: "/v1/payments/" + p.ID, headers: bob.auth("")}), 404, "NOT_FOUND")
	requireProblem(t, s.do(t, req{method: "GET", path: "/v1/payments/nope", headers: alice.auth("")}), 404, "NOT_FOUND")
	res = s.do(t, req{method: "GET", path: "/v1/reservations/" + r1.ID, headers: alice.auth("")})
	var paid reservation
	decodeStrict(t, res, &paid)
	assert.Equal(t, "PAID", paid.Status)
	assert.Equal(t, "SOLD", s.seatMap(t, alice, token, concertID, scheduleID)["VIP-1"])
	requireProblem(t, s.do(t, req{method: "DELETE", path: "/v1/reservations/" + r1.ID, headers: alice.auth("")}), 409, "RESERVATION_NOT_HELD")

	// Idempotency-Key on payments.
	res = s.pay(t, alice, r2.ID, "pay-r2")
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	replay := s.pay(t, alice, r2.ID, "pay-r2")
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.JSONEq(t, string(res.body), string(replay.body))
	requireProblem(t, s.pay(t, alice, r1.ID, "pay-r2"), 409, "IDEMPOTENCY_CONFLICT")
	balance := s.do(t, req{method: "GET", path: "/v1/points", headers: alice.auth("")})
	assert.JSONEq(t, `{"balance":92000}`, string(balance.body), "400000 - 165000 - 143000")

	// Her last hold is paid: her token is DONE and bob gets her slot.
	assert.Equal(t, "DONE", s.poll(t, alice, token).Status)
	require.Eventually(t, func() bool { return s.status(bob, bobTicket.Token) == "ACTIVE" }, 10*time.Second, 50*time.Millisecond)
	requireProblem(t, s.hold(t, alice, token, scheduleID, "R-2"), 410, "QUEUE_TOKEN_EXPIRED")

	// A cancelled hold cannot be paid.
	bobToken := bobTicket.Token
	var r3 reservation
	decodeStrict(t, s.hold(t, bob, bobToken, scheduleID, "R-3"), &r3)
	require.Equal(t, http.StatusNoContent, s.do(t, req{method: "DELETE", path: "/v1/reservations/" + r3.ID, headers: bob.auth("")}).status)
	require.Equal(t, http.StatusCreated, s.charge(t, bob, 200000, "").status)
	requireProblem(t, s.pay(t, bob, r3.ID, ""), 409, "RESERVATION_NOT_HELD")

	state := s.do(t, req{method: "GET", path: "/admin/v1/concerts/" + concertID + "/queue", headers: admin()})
	var q struct {
		Seats struct{ Available, Held, Sold int64 } `json:"seats"`
	}
	require.NoError(t, json.Unmarshal(state.body, &q))
	assert.Equal(t, int64(2), q.Seats.Sold)
	assert.Equal(t, int64(0), q.Seats.Held)
	assert.Equal(t, int64(6), q.Seats.Available)
}

func TestPurchaseSoldOut(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcert(t, map[string]any{"maxHoldsPerUser": 8})
	alice := buyer(t, "alice")
	token := s.admitted(t, alice, concertID)
	for _, seat := range []string{"VIP-1", "VIP-2", "VIP-3", "R-1", "R-2", "R-3", "R-4", "R-5"} {
		require.Equal(t, http.StatusCreated, s.hold(t, alice, token, scheduleID, seat).status)
	}
	res := s.do(t, req{method: "GET", path: "/v1/concerts/" + concertID + "/schedules", headers: alice.auth(token)})
	assert.Contains(t, string(res.body), `"availableSeats":0`, "the schedule says at once that it has no seat left")
	for seat, status := range s.seatMap(t, alice, token, concertID, scheduleID) {
		assert.Equal(t, "HELD", status, seat)
	}
}
