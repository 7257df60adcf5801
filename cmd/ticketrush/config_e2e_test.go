package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShortAdminTokenServes: the real binary started with a short ADMIN_TOKEN (README.md's configuration
// asks only that it be set) serves the admin API with it, refuses any other bearer, and logs a warning.
func TestShortAdminTokenServes(t *testing.T) {
	s := startService(t, map[string]string{"ADMIN_TOKEN": "admin"})
	body := map[string]any{"title": "Short token", "venue": "Hall", "schedules": []string{"2026-12-24T10:00:00Z"},
		"sections": []map[string]any{{"name": "R", "price": 1000, "seats": 10}}}
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: []string{"Authorization", "Bearer admin"}, body: body})
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	res = s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: []string{"Authorization", "Bearer admin2"}, body: body})
	assert.Equal(t, http.StatusUnauthorized, res.status, "%s", res.body)
	assert.True(t, strings.Contains(s.logs.String(), "ADMIN_TOKEN is 5 bytes"), "a warning in the log:\n%s", s.logs.String())
}

// TestRateBurstZeroTurnsTheLimitOff: the real binary started with USER_RATE_BURST=0 (and the default
// USER_RATE_LIMIT) serves, with no per-user limit: 100 requests of one user in a row, none 429.
func TestRateBurstZeroTurnsTheLimitOff(t *testing.T) {
	s := startService(t, map[string]string{"USER_RATE_LIMIT": "", "USER_RATE_BURST": "0"})
	f := newFan(t, "unlimited")
	for i := range 100 {
		res := s.do(t, req{method: "GET", path: "/v1/points", headers: f.auth("")})
		require.Equal(t, http.StatusOK, res.status, "request %d: %s", i+1, res.body)
	}
}
