package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
)

// TestProblemDetailsSayWhatIsWrong: each way a credential, a body or an id can be wrong gets a problem
// detail of its own, so that a newcomer can tell a missing header from a forged token, an expired JWT
// from one signed with another secret, a body cut short from an empty one, an unknown seat from an
// unknown schedule or route, and learns the allowed fields when a guessed one is refused.
func TestProblemDetailsSayWhatIsWrong(t *testing.T) {
	s := startService(t, nil)
	concertA, scheduleA := s.saleConcert(t, nil)
	concertB, scheduleB := s.saleConcert(t, nil)
	alice, bob := buyer(t, "alice"), buyer(t, "bob")
	tokenA := s.admitted(t, alice, concertA)
	bobToken := s.admitted(t, bob, concertA)
	body, sig, _ := strings.Cut(tokenA, ".")
	forged := body + "." + strings.Repeat("A", len(sig))

	expired, err := auth.Mint([]byte(testJWTSecret), alice.id, time.Minute, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	otherSecret, err := auth.Mint([]byte("another-secret-0123456789abcdef0123456789"), alice.id, time.Hour, time.Now())
	require.NoError(t, err)
	schedules := "/v1/concerts/" + concertA + "/schedules"

	tests := []struct {
		name    string
		give    req
		status  int
		code    string
		details []string // all in the detail
	}{
		{"no Authorization header", req{method: "GET", path: schedules}, 401, "UNAUTHENTICATED",
			[]string{"Authorization header is missing", "Bearer <JWT>"}},
		{"not a bearer", req{method: "GET", path: schedules, headers: []string{"Authorization", "Basic YWxpY2U6eA=="}}, 401, "UNAUTHENTICATED",
			[]string{"must be Bearer <JWT>"}},
		{"not a JWT", req{method: "GET", path: schedules, headers: []string{"Authorization", "Bearer garbage"}}, 401, "UNAUTHENTICATED",
			[]string{"not a JWT"}},
		{"expired JWT", req{method: "GET", path: schedules, headers: []string{"Authorization", "Bearer " + expired}}, 401, "UNAUTHENTICATED",
			[]string{"the JWT expired at " + time.Now().Add(-59*time.Minute).UTC().Format("2006-01-02T15"), "get a new one"}},
		{"JWT of another secret", req{method: "GET", path: schedules, headers: []string{"Authorization", "Bearer " + otherSecret}}, 401, "UNAUTHENTICATED",
			[]string{"signature does not verify", "JWT_SECRET"}},
		{"no X-Queue-Token", req{method: "GET", path: schedules, headers: alice.auth("")}, 401, "QUEUE_TOKEN_INVALID",
			[]string{"X-Queue-Token header is missing"}},
		{"no X-Queue-Token on a poll", req{method: "GET", path: "/v1/queue", headers: alice.auth("")}, 401, "QUEUE_TOKEN_INVALID",
			[]string{"X-Queue-Token header is missing"}},
		{"forged queue token", req{method: "GET", path: schedules, headers: alice.auth(forged)}, 401, "QUEUE_TOKEN_INVALID",
			[]string{"signature does not verify"}},
		{"malformed queue token", req{method: "GET", path: schedules, headers: alice.auth("not-a-token")}, 401, "QUEUE_TOKEN_INVALID",
			[]string{"malformed"}},
		{"another user's queue token", req{method: "GET", path: schedules, headers: alice.auth(bobToken)}, 401, "QUEUE_TOKEN_INVALID",
			[]string{"belongs to another user"}},
		{"another concert's queue token", req{method: "GET", path: "/v1/concerts/" + concertB + "/schedules", headers: alice.auth(tokenA)}, 401, "QUEUE_TOKEN_INVALID",
			[]string{"for another concert"}},
		{"hold on another concert's date", req{method: "POST", path: "/v1/reservations", headers: alice.auth(tokenA),
			body: map[string]string{"scheduleId": scheduleB, "seatId": "R-1"}}, 401, "QUEUE_TOKEN_INVALID",
			[]string{"for another concert"}},
		{"a guessed field", req{method: "POST", path: "/v1/reservations", headers: alice.auth(tokenA),
			body: map[string]string{"scheduleId": scheduleA, "seat": "R-1"}}, 400, "INVALID_REQUEST",
			[]string{`unknown field "seat"`, "the fields of this request are scheduleId, seatId"}},
		{"a hold on an unknown seat", req{method: "POST", path: "/v1/reservations", headers: alice.auth(tokenA),
			body: map[string]string{"scheduleId": scheduleA, "seatId": "VIP-999"}}, 404, "NOT_FOUND",
			[]string{`has no seat "VIP-999"`, "<section>-<number>"}},
		{"a hold on an unknown schedule", req{method: "POST", path: "/v1/reservations", headers: alice.auth(tokenA),
			body: map[string]string{"scheduleId": "nosuchsched1", "seatId": "VIP-1"}}, 404, "NOT_FOUND",
			[]string{`has no schedule "nosuchsched1"`, schedules}},
		{"the seats of an unknown schedule", req{method: "GET", path: schedules + "/nosuchsched1/seats", headers: alice.auth(tokenA)},
			404, "NOT_FOUND", []string{`has no schedule "nosuchsched1"`}},
		{"an unknown route", req{method: "GET", path: "/v1/nosuchroute", headers: alice.auth("")}, 404, "NOT_FOUND",
			[]string{"no such resource"}},
		{"a body cut short", req{method: "POST", path: "/v1/points/charges", headers: alice.auth(""), body: `{"amount":143000`},
			400, "INVALID_REQUEST", []string{"not valid JSON", "ends before its JSON value does"}},
		{"an array for a body", req{method: "POST", path: "/v1/points/charges", headers: alice.auth(""), body: `[]`},
			400, "INVALID_REQUEST", []string{"must be a JSON object, not a JSON array"}},
		{"an empty body", req{method: "POST", path: "/v1/points/charges", headers: alice.auth(""), body: ` `},
			400, "INVALID_REQUEST", []string{"the body is empty"}},
		{"a guessed nested field", req{method: "POST", path: "/admin/v1/concerts", headers: admin(),
			body: map[string]any{"title": "x", "queue": map[string]any{"capacity": 5}}}, 400, "INVALID_REQUEST",
			[]string{`unknown field "capacity"`, "queue {activeCapacity, admitPerSecond,", "sections {name, price, seats}"}},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.do(t, tt.give)
			requireProblem(t, res, tt.status, tt.code)
			var p struct{ Detail string }
			require.NoError(t, json.Unmarshal(res.body, &p))
			for _, d := range tt.details {
				assert.Contains(t, p.Detail, d)
			}
			seen[tt.name] = p.Detail
		})
	}
	// The credential problems are told apart: no two kinds share a detail.
	kinds := map[string][]string{}
	for name, d := range seen {
		kinds[d] = append(kinds[d], name)
	}
	for d, names := range kinds {
		if len(names) > 1 {
			for _, n := range names {
				assert.Contains(t, []string{"no X-Queue-Token", "no X-Queue-Token on a poll",
					"another concert's queue token", "hold on another concert's date",
					"a hold on an unknown schedule", "the seats of an unknown schedule"}, n, "%q shared by %v", d, names)
			}
		}
	}
	assert.Equal(t, http.StatusOK, s.do(t, req{method: "GET", path: schedules, headers: alice.auth(tokenA)}).status,
		"the right credentials still pass")
}
