package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneKeyOverHTTP sends payments with one Idempotency-Key at once through the whole service: on ten
// reservations, one 201 and nine 409 IDEMPOTENCY_CONFLICT; on one reservation, ten answers identical
// byte for byte (status and body) and one debit.
func TestOneKeyOverHTTP(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcertSeats(t, 200)
	const rounds, racers = 5, 10
	for round := range rounds {
		alice := buyer(t, fmt.Sprintf("alice%d", round))
		token := s.admitted(t, alice, concertID)
		require.Equal(t, http.StatusCreated, s.charge(t, alice, 100*seatPrice, "").status)
		ids := make([]string, racers)
		for i := range ids {
			var r reservation
			decodeStrict(t, s.hold(t, alice, token, scheduleID, fmt.Sprintf("R-%d", round*2*racers+i+1)), &r)
			ids[i] = r.ID
		}
		answers := make([]response, racers)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				res, err := s.send(req{method: "POST", path: "/v1/payments", headers: append(alice.auth(""), "Idempotency-Key", "k1"),
					body: map[string]string{"reservationId": ids[i]}})
				assert.NoError(t, err)
				answers[i] = res
			})
		}
		wg.Wait()
		counts := map[int]int{}
		for _, a := range answers {
			counts[a.status]++
		}
		require.Equal(t, map[int]int{201: 1, 409: racers - 1}, counts, "round %d: one key pays one reservation", round)

		token = s.admitted(t, alice, concertID)
		var r reservation
		decodeStrict(t, s.hold(t, alice, token, scheduleID, fmt.Sprintf("R-%d", round*2*racers+racers+1)), &r)
		for i := range answers {
			wg.Go(func() {
				res, err := s.send(req{method: "POST", path: "/v1/payments", headers: append(alice.auth(""), "Idempotency-Key", "k2"),
					body: map[string]string{"reservationId": r.ID}})
				assert.NoError(t, err)
				answers[i] = res
			})
		}
		wg.Wait()
		for i, a := range answers {
			require.Equal(t, answers[0].status, a.status, "round %d: answer %d", round, i)
			require.Equal(t, string(answers[0].body), string(a.body), "round %d: answer %d, byte for byte", round, i)
		}
		assert.Equal(t, http.StatusCreated, answers[0].status)
		var b struct{ Balance int64 }
		decodeStrict(t, s.do(t, req{method: "GET", path: "/v1/points", headers: alice.auth("")}), &b)
		assert.Equal(t, int64(98*seatPrice), b.Balance, "round %d: two debits", round)
	}
}

// seatPrice is the price of every seat of saleConcertSeats.
const seatPrice = 1000

// saleConcertSeats creates a concert of one schedule with seats R seats of seatPrice and room for every fan.
func (s *service) saleConcertSeats(t *testing.T, seats int) (string, string) {
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": "Storm " + t.Name(), "venue": "KSPO Dome", "schedules": []string{"2026-12-24T10:00:00Z"},
		"sections": []map[string]any{{"name": "R", "price": seatPrice, "seats": seats}},
		"queue":    map[string]any{"activeCapacity": 1000, "admitPerSecond": 1000, "maxHoldsPerUser": 50},
	}})
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	var c struct {
		ID        string `json:"id"`
		Schedules []struct {
			ID string `json:"id"`
		} `json:"schedules"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	return c.ID, c.Schedules[0].ID
}
