package contract

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// points checks docs/api.md "Points".
func points(t *testing.T, s *server) {
	t.Run("ChargeAndBounds", func(t *testing.T) {
		t.Parallel()
		f := s.newFan(t)
		promise(t, `Points: GET /v1/points → 200 {"balance":0} (a user never seen has 0)`, s.balance(t, f) == 0, "a fresh user's balance is not 0")
		const invalid = "Points: POST /v1/points/charges: 400 INVALID_AMOUNT (not an integer, ≤ 0, > 10,000,000)"
		for _, amount := range []any{0, -1, 10_000_001, 1.5, "100", true} {
			r := s.charge(t, f, amount)
			expectProblem(t, invalid+" (amount "+string(mustJSON(amount))+")", r, 400, "INVALID_AMOUNT")
		}
		r := s.do(t, "POST", "/v1/points/charges", `{}`, f.h("")...)
		expectProblem(t, invalid+" (no amount)", r, 400, "INVALID_AMOUNT")
		promise(t, "Points: a refused charge does nothing", s.balance(t, f) == 0, "balance after refused charges")

		r = s.charge(t, f, 10_000_000)
		var ch struct {
			ID        string     `json:"id"`
			Amount    *int64     `json:"amount"`
			Balance   *int64     `json:"balance"`
			CreatedAt *time.Time `json:"createdAt"`
		}
		const body = `Points: POST /v1/points/charges {"amount"} → 201 {"id","amount","balance","createdAt"}`
		if expectStatus(t, body, r, 201) && decode(t, body, r, &ch) {
			promise(t, body, ch.ID != "" && ch.Amount != nil && *ch.Amount == 10_000_000 && ch.Balance != nil &&
				*ch.Balance == 10_000_000 && ch.CreatedAt != nil, "%s", r)
		}
	})

	t.Run("BalanceLimit", func(t *testing.T) {
		t.Parallel()
		f := s.newFan(t)
		// 1,000,000,000 is 100 charges of the largest amount: more than the rate limit's burst, so the
		// charges are paced by the 429s' Retry-After, as a client is told to (a 429 does nothing).
		for i := 0; i < 100; {
			r := s.charge(t, f, 10_000_000)
			switch r.status {
			case http.StatusCreated:
				i++
			case http.StatusTooManyRequests:
				wait, _ := strconv.Atoi(r.header.Get("Retry-After"))
				time.Sleep(time.Duration(max(wait, 1)) * time.Second)
			default:
				promiseNow(t, "Points: POST /v1/points/charges → 201 while the balance stays within 1,000,000,000", false,
					"charge %d: %s", i+1, r)
			}
		}
		promise(t, "Points: a balance of exactly 1,000,000,000 is allowed", s.balance(t, f) == 1_000_000_000, "balance %d", s.balance(t, f))
		r := s.charge(t, f, 1)
		for r.status == http.StatusTooManyRequests { // the 100 charges spent the burst: paced as a client is
			wait, _ := strconv.Atoi(r.header.Get("Retry-After"))
			time.Sleep(time.Duration(max(wait, 1)) * time.Second)
			r = s.charge(t, f, 1)
		}
		expectProblem(t, "Points: 409 BALANCE_LIMIT (balance would pass 1,000,000,000)", r, 409, "BALANCE_LIMIT")
		promise(t, "Points: a refused charge does nothing", s.balance(t, f) == 1_000_000_000, "balance %d", s.balance(t, f))
	})
}

// payments checks docs/api.md "Payments" and, through the payments made, the points history.
func payments(t *testing.T, s *server) {
	t.Run("PayOnce", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Seats: 3, Price: 1200})
		sc := c.Schedules[0].ID
		f, g := s.newFan(t), s.newFan(t)
		tok, gt := s.admitted(t, f, c.ID), s.admitted(t, g, c.ID)
		ch := s.charge(t, f, 2000)
		promiseNow(t, "Points: POST /v1/points/charges → 201", ch.status == 201, "%s", ch)
		res := s.mustHold(t, f, tok, sc, "R-2")

		r := s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": res.ID}, g.h("")...)
		expectProblem(t, "Payments: POST /v1/payments: 404 NOT_FOUND (not the caller's)", r, 404, "NOT_FOUND")
		r = s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": "no-such-reservation"}, f.h("")...)
		expectProblem(t, "Payments: POST /v1/payments: 404 NOT_FOUND (unknown)", r, 404, "NOT_FOUND")

		r = s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": res.ID}, f.h("")...)
		var p struct {
			ID            string     `json:"id"`
			ReservationID string     `json:"reservationId"`
			Amount        *int64     `json:"amount"`
			Balance       *int64     `json:"balance"`
			PaidAt        *time.Time `json:"paidAt"`
		}
		const body = `Payments: POST /v1/payments {"reservationId"} → 201 {"id","reservationId","amount","balance","paidAt"} (balance after the debit)`
		if !expectStatus(t, body, r, 201) || !decode(t, body, r, &p) {
			t.FailNow()
		}
		promise(t, body, p.ID != "" && p.ReservationID == res.ID && p.Amount != nil && *p.Amount == 1200 &&
			p.Balance != nil && *p.Balance == 800 && p.PaidAt != nil, "%s", r)

		again := s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": res.ID}, f.h("")...)
		var p2 struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(again.body, &p2)
		promise(t, "Payments: 200 the same payment when the owner pays a PAID reservation again", again.status == 200 && p2.ID == p.ID,
			"first %s; again %s", r, again)
		promise(t, "Payments: a payment debits exactly the reservation's price once", s.balance(t, f) == 800, "balance %d, want 2000-1200", s.balance(t, f))

		r = s.do(t, "GET", "/v1/payments/"+p.ID, nil, f.h("")...)
		expectStatus(t, "Payments: GET /v1/payments/{id} → 200", r, 200)
		r = s.do(t, "GET", "/v1/payments/"+p.ID, nil, g.h("")...)
		expectProblem(t, "Payments: GET /v1/payments/{id} → 404 for anyone but its owner", r, 404, "NOT_FOUND")

		var got reservation
		r = s.do(t, "GET", "/v1/reservations/"+res.ID, nil, f.h("")...)
		if decode(t, "Reservations: GET /v1/reservations/{id} → 200", r, &got) {
			promise(t, "Payments: a payment turns the reservation PAID", got.Status == "PAID", "%s", r)
		}
		promise(t, "Payments: a payment turns the seat SOLD", s.seats(t, g, gt, c.ID, sc)["R-2"].Status == "SOLD", "seat R-2 after payment")
		s.waitStatus(t, "Queue: a user whose last hold is paid is DONE", f, tok, 20*time.Second, "DONE")
		r = s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules", nil, f.h(tok)...)
		expectProblem(t, "Conventions: a gated call with a DONE token: 410 QUEUE_TOKEN_EXPIRED", r, 410, "QUEUE_TOKEN_EXPIRED")

		// The durable ledger: the charge and the payment, newest first.
		const history = `Points: GET /v1/points/history?limit=50 → 200 {"entries":[{"id","type","amount","balanceAfter","reservationId","createdAt"}]}, newest first`
		eventually(t, history+" (within the write-behind lag)", 30*time.Second, 500*time.Millisecond, func() (bool, string) {
			r, err := s.try("GET", "/v1/points/history?limit=50", nil, f.h("")...)
			if err != nil {
				return false, err.Error()
			}
			var h struct {
				Entries []struct {
					ID            string     `json:"id"`
					Type          string     `json:"type"`
					Amount        int64      `json:"amount"`
					BalanceAfter  int64      `json:"balanceAfter"`
					ReservationID *string    `json:"reservationId"`
					CreatedAt     *time.Time `json:"createdAt"`
				} `json:"entries"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &h) != nil || len(h.Entries) < 2 {
				return false, r.String()
			}
			pay, charge := h.Entries[0], h.Entries[1]
			return len(h.Entries) == 2 && pay.Type == "PAYMENT" && pay.BalanceAfter == 800 && pay.ReservationID != nil &&
				*pay.ReservationID == res.ID && pay.CreatedAt != nil && charge.Type == "CHARGE" && charge.Amount == 2000 &&
				charge.BalanceAfter == 2000 && charge.ID != "" && pay.ID != "", r.String()
		})
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Seats: 4, Price: 1000, Queue: map[string]any{"maxHoldsPerUser": 3}})
		short := s.createConcert(t, concertSpec{Seats: 1, Price: 1000, Queue: map[string]any{"holdTtlSeconds": 1}})
		sc := c.Schedules[0].ID
		f, g := s.newFan(t), s.newFan(t)
		tok, gt := s.admitted(t, f, c.ID), s.admitted(t, g, c.ID)

		poor := s.mustHold(t, f, tok, sc, "R-1")
		r := s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": poor.ID}, f.h("")...)
		expectProblem(t, "Payments: 409 INSUFFICIENT_BALANCE", r, 409, "INSUFFICIENT_BALANCE")
		promise(t, "Payments: a payment ... or does nothing (the seat stays HELD)", s.seats(t, g, gt, c.ID, sc)["R-1"].Status == "HELD", "seat R-1")

		const replay = "Conventions: Idempotency-Key: a retry with the same key and the same body returns the first response again without acting twice"
		refused := s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": poor.ID}, append(f.h(""), "Idempotency-Key", "refused-1")...)
		expectProblem(t, "Payments: 409 INSUFFICIENT_BALANCE", refused, 409, "INSUFFICIENT_BALANCE")

		ch := s.charge(t, f, 5000)
		promiseNow(t, "Points: POST /v1/points/charges → 201", ch.status == 201, "%s", ch)
		again := s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": poor.ID}, append(f.h(""), "Idempotency-Key", "refused-1")...)
		promise(t, replay+" (a refusal too, once the balance would pay)",
			again.status == refused.status && string(again.body) == string(refused.body), "first %s; retry %s", refused, again)
		promise(t, replay+": the retry did not pay", s.seats(t, g, gt, c.ID, sc)["R-1"].Status == "HELD" && s.balance(t, f) == 5000,
			"seat R-1 %s, balance %d", s.seats(t, g, gt, c.ID, sc)["R-1"].Status, s.balance(t, f))
		cancelled := s.mustHold(t, f, tok, sc, "R-2")
		r = s.do(t, "DELETE", "/v1/reservations/"+cancelled.ID, nil, f.h("")...)
		expectStatus(t, "Reservations: DELETE /v1/reservations/{id} → 204", r, 204)
		r = s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": cancelled.ID}, f.h("")...)
		expectProblem(t, "Payments: 409 RESERVATION_NOT_HELD (cancelled)", r, 409, "RESERVATION_NOT_HELD")

		st := s.admitted(t, f, short.ID)
		lapsing := s.mustHold(t, f, st, short.Schedules[0].ID, "R-1")
		eventually(t, "Reservations: unpaid, a hold becomes EXPIRED", 20*time.Second, 250*time.Millisecond, func() (bool, string) {
			r, err := s.try("GET", "/v1/reservations/"+lapsing.ID, nil, f.h("")...)
			if err != nil {
				return false, err.Error()
			}
			var got reservation
			_ = json.Unmarshal(r.body, &got)
			return got.Status == "EXPIRED", r.String()
		})
		r = s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": lapsing.ID}, f.h("")...)
		expectProblem(t, "Payments: 410 RESERVATION_EXPIRED", r, 410, "RESERVATION_EXPIRED")
		promise(t, "Payments: a refused payment does nothing", s.balance(t, f) == 5000, "balance %d, want 5000", s.balance(t, f))

		// Idempotency-Key on the second money endpoint.
		held := s.mustHold(t, f, tok, sc, "R-3")
		first := s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": held.ID}, append(f.h(""), "Idempotency-Key", "pay-1")...)
		again = s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": held.ID}, append(f.h(""), "Idempotency-Key", "pay-1")...)
		promise(t, replay,
			first.status == 201 && again.status == first.status && string(again.body) == string(first.body), "first %s; retry %s", first, again)
		r = s.do(t, "POST", "/v1/payments", map[string]any{"reservationId": poor.ID}, append(f.h(""), "Idempotency-Key", "pay-1")...)
		expectProblem(t, "Conventions: the same Idempotency-Key with a different body is 409 IDEMPOTENCY_CONFLICT", r, 409, "IDEMPOTENCY_CONFLICT")
		promise(t, "Payments: a payment debits exactly the reservation's price once", s.balance(t, f) == 4000, "balance %d, want 5000-1000", s.balance(t, f))
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
