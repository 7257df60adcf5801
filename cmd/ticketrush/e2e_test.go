package main

// End-to-end tests: the real service started through run, over HTTP, against the real Redis and a fresh
// Postgres database. Concert ids are random, so tests sharing the one Redis do not meet.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// waitFor is how long a test waits for the scheduler or a view refresh (ticks are 100 ms, refreshes
// 200 ms): a bound for a slow machine, not a timing assertion.
const (
	waitFor = 20 * time.Second
	every   = 20 * time.Millisecond
)

func TestQueueJoinRejoinPollLeave(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{ActiveCapacity: ptr(1)})
	alice, bob := newFan(t, "alice"), newFan(t, "bob")

	// Nobody waits and there is room: alice is admitted at once.
	before := time.Now()
	status, a := s.join(t, alice, concert)
	after := time.Now()
	require.Equal(t, http.StatusCreated, status)
	assert.Equal(t, "ACTIVE", a.Status)
	assert.Equal(t, concert, a.ConcertID)
	assert.Zero(t, a.Position)
	require.NotNil(t, a.ActiveUntil)
	assert.WithinRange(t, *a.ActiveUntil, before.Add(1800*time.Second-time.Millisecond), after.Add(1800*time.Second+time.Millisecond))

	status, again := s.join(t, alice, concert)
	assert.Equal(t, http.StatusOK, status, "a rejoin returns the live token")
	assert.Equal(t, a.Token, again.Token)
	assert.Equal(t, "ACTIVE", again.Status)

	// The one slot is taken: bob waits, first in line.
	status, b := s.join(t, bob, concert)
	require.Equal(t, http.StatusCreated, status)
	assert.Equal(t, "WAITING", b.Status)
	assert.EqualValues(t, 1, b.Position)
	assert.Nil(t, b.ActiveUntil)
	assert.NotEqual(t, a.Token, b.Token)

	status, bAgain := s.join(t, bob, concert)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, b.Token, bAgain.Token)
	assert.Equal(t, "WAITING", bAgain.Status)

	polled := s.poll(t, bob, b.Token)
	assert.Equal(t, "WAITING", polled.Status)
	assert.EqualValues(t, 1, polled.Position)
	assert.Equal(t, b.Token, polled.Token)
	assert.GreaterOrEqual(t, polled.EstimatedWaitSeconds, int64(1))
	assert.GreaterOrEqual(t, polled.PollAfterSeconds, int64(1))
	assert.LessOrEqual(t, polled.PollAfterSeconds, int64(30))
	assert.Equal(t, "ACTIVE", s.poll(t, alice, a.Token).Status)

	// Bob leaves the line: his token is EXPIRED; joining again puts him at the back with a new token.
	s.leave(t, bob, b.Token)
	gone := s.poll(t, bob, b.Token)
	assert.Equal(t, "EXPIRED", gone.Status)
	assert.Zero(t, gone.Position)
	assert.Nil(t, gone.ActiveUntil)
	s.leave(t, bob, b.Token) // leaving a dead token does nothing

	status, b2 := s.join(t, bob, concert)
	require.Equal(t, http.StatusCreated, status)
	assert.NotEqual(t, b.Token, b2.Token)
	assert.Equal(t, "WAITING", b2.Status)
	assert.EqualValues(t, 1, b2.Position)

	// Alice gives back her slot: EXPIRED at once, and the scheduler admits bob.
	s.leave(t, alice, a.Token)
	assert.Equal(t, "EXPIRED", s.poll(t, alice, a.Token).Status)
	require.Eventually(t, func() bool { return s.status(bob, b2.Token) == "ACTIVE" }, waitFor, every)
	p := s.poll(t, bob, b2.Token)
	assert.Zero(t, p.Position)
	assert.NotNil(t, p.ActiveUntil)

	q := s.queueState(t, concert)
	assert.EqualValues(t, 1, q.Active)
	assert.Zero(t, q.Waiting)
	assert.Equal(t, 1, q.ActiveCapacity)
}

func TestQueueTokenRefused(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{Paused: ptr(true)})
	other := s.createConcert(t, queueSettings{Paused: ptr(true)})
	alice, mallory := newFan(t, "alice"), newFan(t, "mallory")
	_, a := s.join(t, alice, concert)
	require.Equal(t, "WAITING", a.Status)
	_, aOther := s.join(t, alice, other)
	require.NotEqual(t, a.Token, aOther.Token)

	claims, err := auth.NewQueueTokens([]byte(testQueueSecret)).Verify(a.Token)
	require.NoError(t, err)
	body, sig, ok := strings.Cut(a.Token, ".")
	require.True(t, ok)
	payload, err := base64.RawURLEncoding.DecodeString(body)
	require.NoError(t, err)
	enc := base64.RawURLEncoding

	// The same payload with the user id swapped (same length), signature kept.
	swapped := strings.Replace(string(payload), "alice", "malle", 1)
	// The same payload re-targeted at the other concert (ids have one length), signature kept.
	retargeted := strings.Replace(string(payload), concert, other, 1)
	require.NotEqual(t, string(payload), retargeted)
	altered := []byte(sig)
	altered[3] ^= 1 // another signature (or no base64url at all)

	tests := []struct {
		name  string
		fan   fan
		token string
	}{
		{"missing", alice, ""},
		{"garbage", alice, "not-a-token"},
		{"forged with another secret", alice,
			auth.NewQueueTokens([]byte("another-secret-0123456789abcdef0123456789")).Sign(claims)},
		{"altered signature", alice, body + "." + string(altered)},
		{"altered user", alice, enc.EncodeToString([]byte(swapped)) + "." + sig},
		{"another concert's token, altered", alice, enc.EncodeToString([]byte(retargeted)) + "." + sig},
		{"truncated", alice, a.Token[:len(a.Token)-2]},
		{"another user's token", mallory, a.Token},
		{"another user's token for another concert", mallory, aOther.Token},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireProblem(t, s.do(t, req{method: "GET", path: "/v1/queue", headers: tt.fan.auth(tt.token)}),
				http.StatusUnauthorized, "QUEUE_TOKEN_INVALID")
			requireProblem(t, s.do(t, req{method: "DELETE", path: "/v1/queue", headers: tt.fan.auth(tt.token)}),
				http.StatusUnauthorized, "QUEUE_TOKEN_INVALID")
		})
	}

	// At a gated endpoint of one concert, alice's genuine token of the other concert is refused; her
	// token of this concert is genuine but still WAITING.
	schedules := "/v1/concerts/" + concert + "/schedules"
	requireProblem(t, s.do(t, req{method: "GET", path: schedules, headers: alice.auth(aOther.Token)}),
		http.StatusUnauthorized, "QUEUE_TOKEN_INVALID")
	requireProblem(t, s.do(t, req{method: "GET", path: schedules, headers: mallory.auth(a.Token)}),
		http.StatusUnauthorized, "QUEUE_TOKEN_INVALID")
	requireProblem(t, s.do(t, req{method: "GET", path: schedules, headers: alice.auth(a.Token)}),
		http.StatusForbidden, "QUEUE_NOT_ACTIVE")

	// None of that touched alice's place.
	assert.Equal(t, "WAITING", s.poll(t, alice, a.Token).Status)
	assert.Equal(t, "WAITING", s.poll(t, alice, aOther.Token).Status)

	// Without a user JWT, or with a bad one, the queue answers UNAUTHENTICATED.
	requireProblem(t, s.do(t, req{method: "GET", path: "/v1/queue", headers: []string{"X-Queue-Token", a.Token}}),
		http.StatusUnauthorized, "UNAUTHENTICATED")
	requireProblem(t, s.do(t, req{method: "POST", path: "/v1/concerts/" + concert + "/queue",
		headers: []string{"Authorization", "Bearer " + alice.jwt + "x"}}), http.StatusUnauthorized, "UNAUTHENTICATED")
	requireProblem(t, s.do(t, req{method: "POST", path: "/v1/concerts/" + concert + "/queue",
		headers: admin()}), http.StatusUnauthorized, "UNAUTHENTICATED")
}

// TestFIFOAdmission admits 20 fans one at a time: capacity 1, each admitted fan leaves, and the order
// of admission is the order of joining.
func TestFIFOAdmission(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{ActiveCapacity: ptr(1), AdmitPerSecond: ptr(1000)})

	const n = 20
	fans := make([]fan, n)
	tokens := make([]string, n)
	for i := range fans {
		fans[i] = newFan(t, fmt.Sprintf("fifo-%02d", i))
		status, tk := s.join(t, fans[i], concert)
		require.Equal(t, http.StatusCreated, status)
		tokens[i] = tk.Token
		if i == 0 {
			require.Equal(t, "ACTIVE", tk.Status, "the first fan finds the room empty")
			continue
		}
		require.Equal(t, "WAITING", tk.Status)
		assert.EqualValues(t, i, tk.Position, "fan %d joined behind %d others", i, i)
	}

	var order []int
	remaining := []int{}
	for i := range n {
		remaining = append(remaining, i)
	}
	for len(remaining) > 0 {
		// Wait until someone of those left is ACTIVE; with capacity 1 it must be exactly one.
		var active []int
		require.Eventually(t, func() bool {
			var found []int
			for _, i := range remaining {
				st := s.status(fans[i], tokens[i])
				if st == "" {
					return false
				}
				if st == "ACTIVE" {
					found = append(found, i)
				}
			}
			active = found
			return len(found) > 0
		}, waitFor, every, "nobody admitted after %v", order)
		require.Len(t, active, 1, "capacity 1, but ACTIVE: %v", active)
		next := active[0]
		order = append(order, next)
		remaining = slices.DeleteFunc(remaining, func(i int) bool { return i == next })
		s.leave(t, fans[next], tokens[next])
		require.Equal(t, "EXPIRED", s.poll(t, fans[next], tokens[next]).Status)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, order, "admission order is join order")
}

func TestPauseAndResume(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{ActiveCapacity: ptr(5), AdmitPerSecond: ptr(1000)})

	res := s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
		body: map[string]any{"paused": true}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.Contains(t, string(res.body), `"paused":true`)
	assert.Contains(t, string(res.body), `"activeCapacity":5`, "a patch keeps what it does not name")
	assert.True(t, s.queueState(t, concert).Paused)

	// Paused: joins still queue, even with every slot free.
	fans := make([]fan, 3)
	tokens := make([]string, 3)
	for i := range fans {
		fans[i] = newFan(t, fmt.Sprintf("pause-%d", i))
		status, tk := s.join(t, fans[i], concert)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, "WAITING", tk.Status)
		assert.EqualValues(t, i+1, tk.Position)
		tokens[i] = tk.Token
	}
	// Let the scheduler tick a few times over the paused line (counted in /metrics), then check that
	// nobody was admitted.
	ticks := s.tickCalls()
	require.GreaterOrEqual(t, ticks, 0.0, "/metrics counts the ticks")
	require.Eventually(t, func() bool { return s.tickCalls() >= ticks+5 }, waitFor, every)
	for i := range fans {
		tk := s.poll(t, fans[i], tokens[i])
		assert.Equal(t, "WAITING", tk.Status)
		assert.EqualValues(t, i+1, tk.Position)
	}
	q := s.queueState(t, concert)
	assert.EqualValues(t, 3, q.Waiting)
	assert.Zero(t, q.Active)

	// Resume: all three are admitted (capacity 5).
	res = s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
		body: map[string]any{"paused": false}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.Contains(t, string(res.body), `"paused":false`)
	for i := range fans {
		require.Eventually(t, func() bool { return s.status(fans[i], tokens[i]) == "ACTIVE" }, waitFor, every)
	}
	q = s.queueState(t, concert)
	assert.False(t, q.Paused)
	assert.EqualValues(t, 3, q.Active)
	assert.Zero(t, q.Waiting)
	assert.EqualValues(t, 3, q.Admitted, "the admin figures count the admissions")

	// A new fan finds a free slot and nobody waiting: admitted at once.
	status, tk := s.join(t, newFan(t, "pause-late"), concert)
	assert.Equal(t, http.StatusCreated, status)
	assert.Equal(t, "ACTIVE", tk.Status)

	// The capacity patch is in force too: with 4 of 4 taken, the next fan waits.
	res = s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
		body: map[string]any{"activeCapacity": 4}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	_, tk = s.join(t, newFan(t, "pause-later"), concert)
	assert.Equal(t, "WAITING", tk.Status)

	// The admin figures show every setting in force, those a patch changed too.
	res = s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
		body: map[string]any{"noShowSeconds": 77, "joinPowBits": 3}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	q = s.queueState(t, concert)
	assert.Equal(t, 4, q.ActiveCapacity)
	assert.Equal(t, 77, q.NoShowSeconds)
	assert.Equal(t, 3, q.JoinPowBits)
	assert.EqualValues(t, 4, q.Admitted)
}

func TestActiveTTLLapse(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{ActiveCapacity: ptr(1), ActiveTTLSeconds: ptr(1)})
	alice, bob := newFan(t, "alice"), newFan(t, "bob")

	before := time.Now()
	_, a := s.join(t, alice, concert)
	after := time.Now()
	require.Equal(t, "ACTIVE", a.Status)
	require.NotNil(t, a.ActiveUntil)
	assert.WithinRange(t, *a.ActiveUntil, before.Add(time.Second-time.Millisecond), after.Add(time.Second+time.Millisecond))

	// Pause admission so that bob waits whatever the machine's speed (were alice's second over before
	// bob joins, he would be admitted at once); lapses go on while paused.
	res := s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
		body: map[string]any{"paused": true}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	_, b := s.join(t, bob, concert)
	require.Equal(t, "WAITING", b.Status)

	// Alice's second runs out: her token is EXPIRED and the scheduler takes it out of the active set.
	require.Eventually(t, func() bool { return s.status(alice, a.Token) == "EXPIRED" }, waitFor, every)
	lapsed := func() bool {
		lines, _ := s.tryMetricLines("ticketrush_queue_lapsed_total")
		for _, line := range lines {
			if strings.Contains(line, `concert="`+concert+`"`) && !strings.HasSuffix(line, " 0") {
				return true
			}
		}
		return false
	}
	require.Eventually(t, lapsed, waitFor, every, "the scheduler lapses the token")
	assert.Zero(t, s.queueState(t, concert).Active)
	assert.Equal(t, "WAITING", s.status(bob, b.Token))

	// On resume the freed slot goes to bob.
	res = s.do(t, req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
		body: map[string]any{"paused": false}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Eventually(t, func() bool { return s.status(bob, b.Token) == "ACTIVE" }, waitFor, every)

	// An expired fan who joins again gets a new token at the back of the line.
	status, a2 := s.join(t, alice, concert)
	assert.Equal(t, http.StatusCreated, status)
	assert.NotEqual(t, a.Token, a2.Token)
	assert.Equal(t, "EXPIRED", s.status(alice, a.Token))
}

func TestAdminAuth(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{})
	user := newFan(t, "alice")
	creds := []struct {
		name    string
		headers []string
	}{
		{"none", nil},
		{"wrong token", []string{"Authorization", "Bearer not-the-admin-token"}},
		{"admin token with a suffix", []string{"Authorization", "Bearer " + testAdminToken + "x"}},
		{"admin token as basic", []string{"Authorization", "Basic " + testAdminToken}},
		{"a user JWT", user.auth("")},
	}
	calls := []struct {
		name string
		req  req
	}{
		{"create concert", req{method: "POST", path: "/admin/v1/concerts", body: map[string]any{"title": "x"}}},
		{"get queue", req{method: "GET", path: "/admin/v1/concerts/" + concert + "/queue"}},
		{"patch queue", req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", body: map[string]any{"paused": true}}},
	}
	for _, c := range creds {
		for _, call := range calls {
			t.Run(c.name+"/"+call.name, func(t *testing.T) {
				r := call.req
				r.headers = c.headers
				requireProblem(t, s.do(t, r), http.StatusUnauthorized, "UNAUTHENTICATED")
			})
		}
	}
	assert.False(t, s.queueState(t, concert).Paused, "no refused patch took effect")
}

func TestRequestErrors(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{})
	alice := newFan(t, "alice")
	big := `{"title":"` + strings.Repeat("x", 64<<10) + `"}`
	tests := []struct {
		name   string
		req    req
		status int
		code   string
	}{
		{"body over 64 KiB", req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: big},
			http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
		{"patch body over 64 KiB", req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
			body: `{"paused":true,"x":"` + strings.Repeat("y", 64<<10) + `"}`},
			http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
		{"unknown field", req{method: "POST", path: "/admin/v1/concerts", headers: admin(),
			body: `{"title":"T","venue":"V","schedules":["2026-12-24T10:00:00Z"],"sections":[{"name":"R","price":1,"seats":1}],"colour":"red"}`},
			http.StatusBadRequest, "INVALID_REQUEST"},
		{"unknown queue field", req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
			body: `{"paused":true,"speed":9}`}, http.StatusBadRequest, "INVALID_REQUEST"},
		{"not JSON", req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
			body: `{"paused":`}, http.StatusBadRequest, "INVALID_REQUEST"},
		{"wrong type", req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
			body: `{"activeCapacity":"many"}`}, http.StatusBadRequest, "INVALID_REQUEST"},
		{"setting out of range", req{method: "PATCH", path: "/admin/v1/concerts/" + concert + "/queue", headers: admin(),
			body: `{"activeCapacity":0}`}, http.StatusBadRequest, "INVALID_REQUEST"},
		{"invalid concert", req{method: "POST", path: "/admin/v1/concerts", headers: admin(),
			body: `{"title":"","venue":"V","schedules":["2026-12-24T10:00:00Z"],"sections":[{"name":"R","price":1,"seats":1}]}`},
			http.StatusBadRequest, "INVALID_REQUEST"},
		{"join an unknown concert", req{method: "POST", path: "/v1/concerts/nosuchconcert/queue", headers: alice.auth("")},
			http.StatusNotFound, "NOT_FOUND"},
		{"patch an unknown concert", req{method: "PATCH", path: "/admin/v1/concerts/nosuchconcert/queue", headers: admin(),
			body: `{"paused":true}`}, http.StatusNotFound, "NOT_FOUND"},
		{"unknown route", req{method: "GET", path: "/v1/nothing-here"}, http.StatusNotFound, "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireProblem(t, s.do(t, tt.req), tt.status, tt.code)
		})
	}
	assert.False(t, s.queueState(t, concert).Paused, "no refused patch took effect")
	assert.Equal(t, 1000, s.queueState(t, concert).ActiveCapacity)
}

func TestOperations(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{})
	alice := newFan(t, "alice")
	_, tk := s.join(t, alice, concert)
	s.poll(t, alice, tk.Token)
	s.do(t, req{method: "GET", path: "/v1/nothing/" + concert})

	res := s.do(t, req{method: "GET", path: "/healthz"})
	assert.Equal(t, http.StatusOK, res.status)
	res = s.do(t, req{method: "GET", path: "/readyz"})
	assert.Equal(t, http.StatusOK, res.status, "%s", res.body)
	res = s.do(t, req{method: "GET", path: "/v1/concerts"})
	assert.Equal(t, http.StatusOK, res.status)
	assert.Contains(t, string(res.body), `"id":"`+concert+`"`)

	lines := s.metricLines(t, "ticketrush_http_requests_total")
	require.NotEmpty(t, lines)
	routeLabel := regexp.MustCompile(`route="([^"]*)"`)
	var routes []string
	for _, line := range lines {
		m := routeLabel.FindStringSubmatch(line)
		require.NotNil(t, m, "no route label: %s", line)
		routes = append(routes, m[1])
		assert.NotContains(t, line, concert, "a raw path or id in a label: %s", line)
	}
	assert.Contains(t, routes, "/v1/concerts/:concertId/queue")
	assert.Contains(t, routes, "/admin/v1/concerts")
	assert.Contains(t, routes, "/v1/queue")
	assert.Contains(t, routes, "unmatched")
	for _, r := range routes {
		assert.True(t, r == "unmatched" || strings.HasPrefix(r, "/"), "route %q", r)
	}
	assert.NotEmpty(t, s.metricLines(t, "ticketrush_http_request_duration_seconds_bucket"))
}

// TestReadyzReportsRedisDown runs the service on a Redis of its own and stops that Redis. On a cluster:
// redis.TestPingFollowsFailoverOnCluster and the scale-out test (a master SIGKILLed, readiness after the election).
func TestReadyzReportsRedisDown(t *testing.T) {
	redisURL := dbtest.PrivateRedis(t)
	s := startService(t, map[string]string{"REDIS_URL": redisURL})
	require.Equal(t, http.StatusOK, s.do(t, req{method: "GET", path: "/readyz"}).status)

	c := dbtest.Client(t, redisURL)
	_ = c.Do(context.Background(), c.B().Shutdown().Nosave().Build()).Error() // the reply is the closed connection
	require.Eventually(t, func() bool {
		res, err := s.send(req{method: "GET", path: "/readyz"})
		return err == nil && res.status == http.StatusServiceUnavailable
	}, waitFor, every)
	res := s.do(t, req{method: "GET", path: "/readyz"})
	requireProblem(t, res, http.StatusServiceUnavailable, "UNAVAILABLE")
	assert.Contains(t, string(res.body), "redis")
	assert.NotContains(t, string(res.body), "postgres", "Postgres still answers")
	assert.Equal(t, http.StatusOK, s.do(t, req{method: "GET", path: "/healthz"}).status, "alive all the same")
}

// joinRetrying joins as a client keeping to the contract would: a 503 must carry Retry-After (whole
// seconds), and the fan joins again after it, up to 5 attempts; retries counts them. A retry of a join
// that was done before its answer was lost finds the same token (200).
func (s *service) joinRetrying(f fan, concertID string, retries *atomic.Int64) (int, ticket, error) {
	for attempt := 1; ; attempt++ {
		res, err := s.send(req{method: "POST", path: "/v1/concerts/" + concertID + "/queue", headers: f.auth("")})
		if err != nil {
			return 0, ticket{}, err
		}
		if res.status != http.StatusServiceUnavailable || attempt == 5 {
			ok := res.status == http.StatusCreated || (res.status == http.StatusOK && attempt > 1) // 200 only for a retry
			if !ok {
				return res.status, ticket{}, fmt.Errorf("join, attempt %d: %d %s", attempt, res.status, res.body)
			}
			var tk ticket
			return res.status, tk, json.Unmarshal(res.body, &tk)
		}
		retries.Add(1)
		after, err := strconv.Atoi(res.header.Get("Retry-After"))
		if err != nil || after < 1 {
			return res.status, ticket{}, fmt.Errorf("join: a 503 without a Retry-After of whole seconds: %q %s", res.header.Get("Retry-After"), res.body)
		}
		time.Sleep(time.Duration(after) * time.Second) // the client's side of the contract: wait as told
	}
}

// TestConcurrentJoins has 1,000 fans join one paused concert at once: every fan gets a distinct
// arrival, none is lost, and the positions are exactly 1..N in arrival order. A join the service cannot
// answer in time (the race detector on a slow machine) may be a 503 with Retry-After, as the contract
// allows; the fan retries as told and the retry resolves it. On a line over shards such a retry may
// take a second arrival number that nobody then holds (the first join had entered the fan's shard):
// a gap, which the positions close, so the arrivals run 1..N plus at most one per retry.
func TestConcurrentJoins(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{Paused: ptr(true)})
	const n = 1000
	fans := make([]fan, n)
	for i := range fans {
		fans[i] = newFan(t, fmt.Sprintf("crowd-%04d", i))
	}
	tokens := auth.NewQueueTokens([]byte(testQueueSecret))

	type joined struct {
		status int
		ticket ticket
		seq    uint64
	}
	got := make([]joined, n)
	var retries atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range fans {
		wg.Go(func() {
			<-start
			status, tk, err := s.joinRetrying(fans[i], concert, &retries)
			if !assert.NoError(t, err) {
				return
			}
			c, err := tokens.Verify(tk.Token)
			assert.NoError(t, err)
			assert.Equal(t, fans[i].id, c.UserID)
			assert.Equal(t, concert, c.ConcertID)
			got[i] = joined{status: status, ticket: tk, seq: c.Seq}
		})
	}
	close(start)
	wg.Wait()
	require.False(t, t.Failed())

	bySeq := map[uint64]int{}
	for i, g := range got {
		// 201, or 200 when a retry found the join that a 503 had answered already done (joinRetrying
		// refuses a 200 to a first attempt)
		assert.Contains(t, []int{http.StatusCreated, http.StatusOK}, g.status)
		assert.Equal(t, "WAITING", g.ticket.Status)
		prev, dup := bySeq[g.seq]
		require.False(t, dup, "fans %d and %d share seq %d", prev, i, g.seq)
		bySeq[g.seq] = i
	}
	seqs := slices.Sorted(maps.Keys(bySeq))
	assert.LessOrEqual(t, seqs[n-1], uint64(n)+uint64(retries.Load()),
		"arrivals up to %d for %d fans and %d retries", seqs[n-1], n, retries.Load())
	rank := make([]int64, n) // each fan's place in arrival order, from 1: their position
	for r, seq := range seqs {
		rank[bySeq[seq]] = int64(r + 1)
	}
	// none lost: the line's count, which a line over shards sums at each tick
	assert.Eventually(t, func() bool { q := s.queueState(t, concert); return q.Waiting == n && q.Active == 0 },
		waitFor, 50*time.Millisecond, "none lost")

	// Positions: a poll of every token, until the views agree (they may need one refresh).
	positions := func() ([]int64, bool) {
		out := make([]int64, n)
		jobs := make(chan int)
		var failed sync.Once
		ok := true
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for i := range jobs {
					tk, err := s.tryPoll(fans[i], got[i].ticket.Token)
					if err != nil || tk.Status != "WAITING" {
						failed.Do(func() { ok = false })
						continue
					}
					out[i] = tk.Position
				}
			})
		}
		for i := range n {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		return out, ok
	}
	var (
		mu   sync.Mutex
		last []int64
	)
	settled := assert.Eventually(t, func() bool {
		pos, ok := positions()
		if !ok {
			return false
		}
		mu.Lock()
		last = pos
		mu.Unlock()
		for i, p := range pos {
			if p != rank[i] { // nobody admitted or gone: a fan's position is their place in arrival order
				return false
			}
		}
		return true
	}, waitFor, 100*time.Millisecond, "positions never matched arrivals")
	mu.Lock()
	sorted := slices.Clone(last)
	mu.Unlock()
	if !settled {
		t.Fatalf("last positions seen, by fan: %v", sorted)
	}
	slices.Sort(sorted)
	for i, p := range sorted {
		require.EqualValues(t, i+1, p, "positions are 1..%d without gaps", n)
	}
}
