package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

func concertBody(title string, seats ...int) map[string]any {
	var sections []map[string]any
	for i, n := range seats {
		sections = append(sections, map[string]any{"name": string(rune('A' + i)), "price": 1000, "seats": n})
	}
	return map[string]any{"title": title, "venue": "KSPO Dome", "schedules": []string{"2026-12-24T10:00:00Z"}, "sections": sections}
}

// TestAdminCreateBadInput: admin inputs Postgres would refuse are answered 400, never a 500.
func TestAdminCreateBadInput(t *testing.T) {
	s := startService(t, nil)
	tests := []struct {
		name string
		give any
	}{
		{"NUL in the title", concertBody("IU\u00002026", 10)},
		{"NUL in the venue", map[string]any{"title": "IU", "venue": "\u0000", "schedules": []string{"2026-12-24T10:00:00Z"},
			"sections": []map[string]any{{"name": "A", "price": 1, "seats": 1}}}},
		{"seat counts whose sum overflows", concertBody("IU", 9223372036854775807, 9223372036854775807, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: tt.give})
			requireProblem(t, res, http.StatusBadRequest, "INVALID_REQUEST")
		})
	}
}

// TestAdminCreateIsSafeToRetry: the same Idempotency-Key twice is one concert, answered twice alike;
// the key with another body is a conflict.
func TestAdminCreateIsSafeToRetry(t *testing.T) {
	s := startService(t, nil)
	key := append(admin(), "Idempotency-Key", dbtest.Name("create-"))
	first := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: key, body: concertBody("Retry", 5, 7)})
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	again := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: key, body: concertBody("Retry", 5, 7)})
	require.Equal(t, http.StatusCreated, again.status, "%s", again.body)
	assert.JSONEq(t, string(first.body), string(again.body), "the retry answers with the first concert")
	requireProblem(t, s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: key, body: concertBody("Other", 5)}),
		http.StatusConflict, "IDEMPOTENCY_CONFLICT")

	var list []struct{ Title string }
	require.NoError(t, json.Unmarshal(s.do(t, req{method: "GET", path: "/v1/concerts"}).body, &list))
	n := 0
	for _, c := range list {
		if c.Title == "Retry" {
			n++
		}
	}
	assert.Equal(t, 1, n, "one concert")
}

// TestAdminCreateWhilePostgresIsDown: Postgres cut off, an admin create is 503 UNAVAILABLE with
// Retry-After (it was a 500), and works again once Postgres is back.
func TestAdminCreateWhilePostgresIsDown(t *testing.T) {
	dbURL := dbtest.Postgres(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := dbtest.NewProxy(t, u.Host)
	s := startService(t, map[string]string{"DATABASE_URL": proxy.Through(t, dbURL)})
	proxy.Cut()
	start := time.Now()
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: concertBody("Down", 5)})
	requireProblem(t, res, http.StatusServiceUnavailable, "UNAVAILABLE")
	t.Logf("admin create with Postgres cut off: 503 in %s", time.Since(start).Round(time.Millisecond))
	proxy.Heal()
	require.Eventually(t, func() bool {
		res, err := s.send(req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: concertBody("Up", 5)})
		return err == nil && res.status == http.StatusCreated
	}, waitFor, every)
}
