package contract

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// catalogSection checks docs/api.md "Concerts and seats".
func catalogSection(t *testing.T, s *server) {
	c := s.createConcert(t, concertSpec{Seats: 3, Price: 143000, Schedules: 2})

	const list = `Catalog: GET /v1/concerts (public, no auth): [{"id","title","venue"}]`
	eventually(t, list+" (a created concert is listed)", 30*time.Second, 500*time.Millisecond, func() (bool, string) {
		r, err := s.try("GET", "/v1/concerts", nil)
		if err != nil {
			return false, err.Error()
		}
		var cs []struct{ ID, Title, Venue string }
		if r.status != 200 || json.Unmarshal(r.body, &cs) != nil {
			return false, r.String()
		}
		for _, x := range cs {
			if x.ID == c.ID {
				return x.Title == c.Title && x.Venue == c.Venue, fmt.Sprintf("%+v", x)
			}
		}
		return false, "not listed"
	})

	f := s.newFan(t)
	tok := s.admitted(t, f, c.ID)
	r := s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules", nil, f.h(tok)...)
	var schedules []struct {
		ID             string     `json:"id"`
		StartsAt       *time.Time `json:"startsAt"`
		AvailableSeats *int64     `json:"availableSeats"`
		TotalSeats     *int64     `json:"totalSeats"`
	}
	const sched = `Catalog (gated): GET /v1/concerts/{concertId}/schedules: [{"id","startsAt","availableSeats","totalSeats"}]`
	if expectStatus(t, sched, r, 200) && decode(t, sched, r, &schedules) {
		promise(t, sched, len(schedules) == 2, "two schedules created: %s", r)
		for i, sc := range schedules {
			promise(t, sched, sc.ID != "" && sc.StartsAt != nil && sc.AvailableSeats != nil && *sc.AvailableSeats == 3 &&
				sc.TotalSeats != nil && *sc.TotalSeats == 3, "schedule %d of a concert of 3 seats: %s", i, r)
		}
	}
	r = s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules", nil, f.h("")...)
	promise(t, "Catalog is gated: X-Queue-Token required", r.status == 401, "no token: %s", r)

	seats := s.seats(t, f, tok, c.ID, c.Schedules[0].ID)
	const seatList = `Catalog: seats [{"id":"VIP-1","section":"VIP","price":165000,"status":"AVAILABLE"}]; Admin: ids <section>-<n> from 1`
	promise(t, seatList, len(seats) == 3, "seats %v", seats)
	for i := 1; i <= 3; i++ {
		st := seats[fmt.Sprintf("R-%d", i)]
		promise(t, seatList, st.Section == "R" && st.Price == 143000 && st.Status == "AVAILABLE", "seat R-%d: %+v", i, st)
	}
	r = s.do(t, "GET", "/v1/concerts/"+c.ID+"/schedules/no-such-schedule/seats", nil, f.h(tok)...)
	expectProblem(t, "Catalog: seats of an unknown schedule: 404 NOT_FOUND", r, 404, "NOT_FOUND")
}

// reservations checks docs/api.md "Holds (reservations)".
func reservations(t *testing.T, s *server) {
	t.Run("HoldReadCancel", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Seats: 5, Price: 2500, Queue: map[string]any{"maxHoldsPerUser": 2}})
		sc := c.Schedules[0].ID
		a, b := s.newFan(t), s.newFan(t)
		at, bt := s.admitted(t, a, c.ID), s.admitted(t, b, c.ID)

		r := s.hold(t, a, at, sc, "R-1")
		var res reservation
		const body = `Reservations: POST /v1/reservations → 201 {"id","status":"HELD","concertId","scheduleId","seatId","price","expiresAt","createdAt"}`
		if expectStatus(t, body, r, 201) && decode(t, body, r, &res) {
			hasMembers(t, body, r, "id", "status", "concertId", "scheduleId", "seatId", "price", "expiresAt", "createdAt")
			promise(t, body, res.ID != "" && res.Status == "HELD" && res.ConcertID == c.ID && res.ScheduleID == sc &&
				res.SeatID == "R-1" && res.Price == 2500, "%s", r)
			promise(t, "Reservations: a hold lasts holdTtlSeconds (default 300)",
				res.ExpiresAt.Sub(res.CreatedAt) > 290*time.Second && res.ExpiresAt.Sub(res.CreatedAt) <= 301*time.Second, "%s", r)
		}
		promise(t, "Catalog: status HELD for a held seat", s.seats(t, b, bt, c.ID, sc)["R-1"].Status == "HELD", "seat R-1 after a hold")

		r = s.do(t, "GET", "/v1/reservations/"+res.ID, nil, a.h("")...)
		expectStatus(t, "Reservations: GET /v1/reservations/{id} → 200", r, 200)
		r = s.do(t, "GET", "/v1/reservations/"+res.ID, nil, b.h("")...)
		expectProblem(t, "Reservations: GET /v1/reservations/{id} → 404 for anyone but its owner", r, 404, "NOT_FOUND")

		r = s.hold(t, b, bt, sc, "R-1")
		expectProblem(t, "Reservations: a held seat: 409 SEAT_UNAVAILABLE", r, 409, "SEAT_UNAVAILABLE")

		r = s.hold(t, a, at, sc, "R-99")
		if expectProblem(t, "Reservations: a hold of an unknown seat: 404 NOT_FOUND", r, 404, "NOT_FOUND") {
			d := strings.ToLower(detail(r))
			promise(t, "Conventions: every error is RFC 9457 problem+json; its detail says what is wrong (an unknown seat: the detail names the seat, not an unknown route)",
				strings.Contains(d, "seat") || strings.Contains(d, "r-99"), "detail %q", detail(r))
		}
		r = s.hold(t, a, at, "no-such-schedule", "R-1")
		if expectProblem(t, "Reservations: a hold on an unknown schedule: 404 NOT_FOUND", r, 404, "NOT_FOUND") {
			promise(t, "Conventions: every error is RFC 9457 problem+json; its detail says what is wrong (an unknown schedule: the detail names the schedule, not an unknown route)",
				strings.Contains(strings.ToLower(detail(r)), "schedule"), "detail %q", detail(r))
		}

		s.mustHold(t, a, at, sc, "R-2")
		r = s.hold(t, a, at, sc, "R-3")
		expectProblem(t, "Reservations: a user holds at most maxHoldsPerUser seats per concert at once: 409 HOLD_LIMIT_REACHED", r, 409, "HOLD_LIMIT_REACHED")
		promise(t, "Reservations: a refused hold leaves the seat AVAILABLE", s.seats(t, b, bt, c.ID, sc)["R-3"].Status == "AVAILABLE", "seat R-3")

		r = s.do(t, "DELETE", "/v1/reservations/"+res.ID, nil, b.h("")...)
		expectProblem(t, "Reservations: DELETE /v1/reservations/{id} of another user's: 404", r, 404, "NOT_FOUND")
		r = s.do(t, "DELETE", "/v1/reservations/"+res.ID, nil, a.h("")...)
		expectStatus(t, "Reservations: DELETE /v1/reservations/{id} → 204", r, 204)
		promise(t, "Reservations: DELETE → 204, the seat is AVAILABLE again", s.seats(t, b, bt, c.ID, sc)["R-1"].Status == "AVAILABLE", "seat R-1 after cancel")
		var got reservation
		r = s.do(t, "GET", "/v1/reservations/"+res.ID, nil, a.h("")...)
		if decode(t, "Reservations: GET /v1/reservations/{id} → 200", r, &got) {
			promise(t, "Reservations: status CANCELLED after a cancel", got.Status == "CANCELLED", "%s", r)
		}
		r = s.do(t, "DELETE", "/v1/reservations/"+res.ID, nil, a.h("")...)
		expectProblem(t, "Reservations: DELETE of a reservation no longer held: 409 RESERVATION_NOT_HELD", r, 409, "RESERVATION_NOT_HELD")
		r = s.do(t, "DELETE", "/v1/reservations/no-such-reservation", nil, a.h("")...)
		expectProblem(t, "Reservations: DELETE of an unknown reservation: 404", r, 404, "NOT_FOUND")

		s.mustHold(t, a, at, sc, "R-3") // a cancel frees a place under maxHoldsPerUser
	})

	t.Run("SeatMapAfterEachChange", func(t *testing.T) {
		// 25 fans in a row each hold a seat and read the map at once, then each cancels and reads again:
		// more changes of one schedule than a seat map may be rebuilt for at once in a second.
		t.Parallel()
		const n = 25
		c := s.createConcert(t, concertSpec{Seats: n, Price: 1000})
		sc := c.Schedules[0].ID
		fans, toks, ids := make([]fan, n), make([]string, n), make([]string, n)
		for i := range fans {
			fans[i] = s.newFan(t)
			toks[i] = s.admitted(t, fans[i], c.ID)
		}
		for i, f := range fans {
			seat := fmt.Sprint("R-", i+1)
			ids[i] = s.mustHold(t, f, toks[i], sc, seat).ID
			got := s.seats(t, f, toks[i], c.ID, sc)[seat].Status
			if !promise(t, "Catalog: status HELD for a held seat (read just after the 201)", got == "HELD", "seat %s reads %s", seat, got) {
				return
			}
		}
		for i, f := range fans {
			seat := fmt.Sprint("R-", i+1)
			r := s.do(t, "DELETE", "/v1/reservations/"+ids[i], nil, f.h("")...)
			expectStatus(t, "Reservations: DELETE /v1/reservations/{id} → 204", r, 204)
			got := s.seats(t, f, toks[i], c.ID, sc)[seat].Status
			if !promise(t, "Reservations: DELETE → 204, the seat is AVAILABLE again (read just after the 204)", got == "AVAILABLE", "seat %s reads %s", seat, got) {
				return
			}
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Seats: 2, Queue: map[string]any{"holdTtlSeconds": 1}})
		sc := c.Schedules[0].ID
		a, b := s.newFan(t), s.newFan(t)
		at, bt := s.admitted(t, a, c.ID), s.admitted(t, b, c.ID)
		res := s.mustHold(t, a, at, sc, "R-1")
		promise(t, "Reservations: a hold lasts holdTtlSeconds", res.ExpiresAt.Sub(res.CreatedAt) <= 2*time.Second, "holdTtlSeconds 1: %+v", res)
		eventually(t, "Reservations: unpaid, a hold becomes EXPIRED", 20*time.Second, 250*time.Millisecond, func() (bool, string) {
			r, err := s.try("GET", "/v1/reservations/"+res.ID, nil, a.h("")...)
			if err != nil {
				return false, err.Error()
			}
			var got reservation
			_ = json.Unmarshal(r.body, &got)
			return r.status == http.StatusOK && got.Status == "EXPIRED", r.String()
		})
		promise(t, "Catalog: a hold past its expiry reads as AVAILABLE", s.seats(t, b, bt, c.ID, sc)["R-1"].Status == "AVAILABLE", "seat R-1 after expiry")
		s.mustHold(t, b, bt, sc, "R-1") // and it can be held again
	})
}
