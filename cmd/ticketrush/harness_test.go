package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// The secrets of the service under test; tests sign JWTs with the first and read queue tokens with the
// second.
const (
	testJWTSecret   = "e2e-jwt-secret-0123456789abcdef0123456789"
	testQueueSecret = "e2e-queue-secret-0123456789abcdef01234567"
	testAdminToken  = "e2e-admin-token-0123456789abcdefghij"
)

// service is one ticketrush process started through run, as main starts it.
type service struct {
	url    string // http://127.0.0.1:port
	client *http.Client
	logs   *logSink
	keys   []string // Redis key patterns to delete at the end
	mu     sync.Mutex
}

// startService runs `ticketrush serve` on port 0 against a fresh Postgres database and the real Redis
// (or env's REDIS_URL), and stops it at the end of the test, failing the test if run returns an error.
func startService(t *testing.T, env map[string]string) *service {
	t.Helper()
	vars := map[string]string{
		"HTTP_ADDR":          "127.0.0.1:0",
		"REDIS_URL":          dbtest.RedisURL(),
		"REDIS_KEY_PREFIX":   dbtest.Name("e2e"), // its own keys, streams and consumer group on the shared Redis
		"DATABASE_URL":       dbtest.Postgres(t),
		"JWT_SECRET":         testJWTSecret,
		"QUEUE_TOKEN_SECRET": testQueueSecret,
		"ADMIN_TOKEN":        testAdminToken,
		"USER_RATE_LIMIT":    "0", // off but where a test asks for it: tests poll faster than fans
	}
	for k, v := range env {
		vars[k] = v
	}
	getenv := func(k string) string { return vars[k] }

	sink := newLogSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, getenv, sink) }()

	s := &service{logs: sink, client: &http.Client{
		Timeout:   30 * time.Second, // a hung request fails the test instead of the whole binary
		Transport: &http.Transport{MaxIdleConnsPerHost: 256},
	}}
	s.keys = []string{vars["REDIS_KEY_PREFIX"] + ":*"}
	t.Cleanup(func() {
		cancel()
		err := <-done
		s.client.CloseIdleConnections()
		s.deleteKeys(vars["REDIS_URL"])
		if err != nil || t.Failed() {
			t.Logf("service log:\n%s", sink.String())
		}
		assert.NoError(t, err, "run returned an error")
	})

	select {
	case addr := <-sink.listening:
		s.url = "http://" + addr
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("run returned before listening: %v\n%s", err, sink.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the service did not log \"listening\" within a minute:\n%s", sink.String())
	}
	return s
}

// deleteKeys removes the Redis keys of the service under test: every key under its own prefix.
func (s *service) deleteKeys(redisURL string) {
	s.mu.Lock()
	patterns := s.keys
	s.mu.Unlock()
	if len(patterns) == 0 {
		return
	}
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		return
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return // a test that stopped its Redis has nothing left to delete
	}
	defer c.Close()
	ctx := context.Background()
	for _, p := range patterns {
		for _, node := range dbtest.Masters(c) { // SCAN covers one node: on a cluster, each master
			var cursor uint64
			for {
				r, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(p).Count(1000).Build()).AsScanEntry()
				if err != nil {
					break
				}
				for _, k := range r.Elements {
					c.Do(ctx, c.B().Unlink().Key(k).Build())
				}
				if r.Cursor == 0 {
					break
				}
				cursor = r.Cursor
			}
		}
	}
}

// logSink is the service's stdout: it keeps every line and hands over the address of the "listening"
// line.
type logSink struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	partial   []byte
	listening chan string
	sent      bool
}

func newLogSink() *logSink { return &logSink{listening: make(chan string, 1)} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := l.partial[:i]
		l.partial = l.partial[i+1:]
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if !l.sent && json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" && rec.Addr != "" {
			l.sent = true
			l.listening <- rec.Addr
		}
	}
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// response is one HTTP exchange's outcome.
type response struct {
	status int
	header http.Header
	body   []byte
}

// req is one request: headers are name, value pairs.
type req struct {
	method  string
	path    string
	body    any // a string or []byte is sent as it is, anything else as JSON; nil sends nothing
	headers []string
}

// send makes one request; it is safe in any goroutine (it never fails the test itself).
func (s *service) send(r req) (response, error) {
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return response{}, err
		}
		body = bytes.NewReader(j)
	}
	hr, err := http.NewRequest(r.method, s.url+r.path, body)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(r.headers); i += 2 {
		hr.Header.Set(r.headers[i], r.headers[i+1])
	}
	res, err := s.client.Do(hr)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read body: %w", r.method, r.path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}, nil
}

// do makes one request from the test's goroutine.
func (s *service) do(t testing.TB, r req) response {
	t.Helper()
	res, err := s.send(r)
	require.NoError(t, err)
	return res
}

// admin is the admin API's bearer header.
func admin() []string { return []string{"Authorization", "Bearer " + testAdminToken} }

// fan is one user of the API.
type fan struct {
	id  string
	jwt string
}

func newFan(t testing.TB, id string) fan {
	t.Helper()
	tok, err := auth.Mint([]byte(testJWTSecret), id, time.Hour, time.Now())
	require.NoError(t, err)
	return fan{id: id, jwt: tok}
}

func (f fan) auth(queueToken string) []string {
	h := []string{"Authorization", "Bearer " + f.jwt}
	if queueToken != "" {
		h = append(h, "X-Queue-Token", queueToken)
	}
	return h
}

// queueSettings are the optional queue fields of a concert; nil fields take the defaults.
type queueSettings struct {
	ActiveCapacity   *int  `json:"activeCapacity,omitempty"`
	AdmitPerSecond   *int  `json:"admitPerSecond,omitempty"`
	ActiveTTLSeconds *int  `json:"activeTtlSeconds,omitempty"`
	Paused           *bool `json:"paused,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// createConcert creates a concert through the admin API and returns its id.
func (s *service) createConcert(t testing.TB, q queueSettings) string {
	t.Helper()
	res := s.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title":     "E2E " + t.Name(),
		"venue":     "Test Hall",
		"schedules": []string{"2026-12-24T10:00:00Z"},
		"sections":  []map[string]any{{"name": "R", "price": 1000, "seats": 10}},
		"queue":     q,
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var c struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	require.NotEmpty(t, c.ID)
	return c.ID
}

// ticket is the queue token body of docs/api.md.
type ticket struct {
	Token                string     `json:"token"`
	ConcertID            string     `json:"concertId"`
	Status               string     `json:"status"`
	Position             int64      `json:"position"`
	EstimatedWaitSeconds int64      `json:"estimatedWaitSeconds"`
	PollAfterSeconds     int64      `json:"pollAfterSeconds"`
	ActiveUntil          *time.Time `json:"activeUntil"`
	Paused               bool       `json:"paused"`
	OpensAt              *time.Time `json:"opensAt"`
	DrawKey              *string    `json:"drawKey"`
	SeatsAvailable       int64      `json:"seatsAvailable"`
	Pass                 *string    `json:"pass"` // the admission pass while ACTIVE (docs/pass.md)
}

func decodeTicket(t testing.TB, res response) ticket {
	t.Helper()
	assert.Equal(t, "application/json", res.header.Get("Content-Type"))
	var tk ticket
	dec := json.NewDecoder(bytes.NewReader(res.body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&tk), "queue body %s", res.body)
	// Every member of docs/api.md's token body is present (activeUntil as null at least).
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(res.body, &raw))
	for _, k := range []string{"token", "concertId", "status", "position", "estimatedWaitSeconds", "pollAfterSeconds", "activeUntil"} {
		assert.Contains(t, raw, k, "queue body %s", res.body)
	}
	return tk
}

// join joins the concert's line and returns the response status and ticket.
func (s *service) join(t testing.TB, f fan, concertID string) (int, ticket) {
	t.Helper()
	res := s.do(t, req{method: "POST", path: "/v1/concerts/" + concertID + "/queue", headers: f.auth("")})
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, res.status, "join: %s", res.body)
	return res.status, decodeTicket(t, res)
}

// tryJoin is join for other goroutines.
func (s *service) tryJoin(f fan, concertID string) (int, ticket, error) {
	res, err := s.send(req{method: "POST", path: "/v1/concerts/" + concertID + "/queue", headers: f.auth("")})
	if err != nil {
		return 0, ticket{}, err
	}
	if res.status != http.StatusOK && res.status != http.StatusCreated {
		return res.status, ticket{}, fmt.Errorf("join: %d %s", res.status, res.body)
	}
	var tk ticket
	err = json.Unmarshal(res.body, &tk)
	return res.status, tk, err
}

// poll returns the token's state; the poll must succeed.
func (s *service) poll(t testing.TB, f fan, token string) ticket {
	t.Helper()
	res := s.do(t, req{method: "GET", path: "/v1/queue", headers: f.auth(token)})
	require.Equal(t, http.StatusOK, res.status, "poll: %s", res.body)
	return decodeTicket(t, res)
}

// tryPoll is poll for other goroutines, and for conditions of require.Eventually (which runs them in
// a goroutine of its own).
func (s *service) tryPoll(f fan, token string) (ticket, error) {
	res, err := s.send(req{method: "GET", path: "/v1/queue", headers: f.auth(token)})
	if err != nil {
		return ticket{}, err
	}
	if res.status != http.StatusOK {
		return ticket{}, fmt.Errorf("poll: %d %s", res.status, res.body)
	}
	var tk ticket
	err = json.Unmarshal(res.body, &tk)
	return tk, err
}

// status is the token's status for Eventually conditions; "" when the poll failed.
func (s *service) status(f fan, token string) string {
	tk, err := s.tryPoll(f, token)
	if err != nil {
		return ""
	}
	return tk.Status
}

func (s *service) leave(t testing.TB, f fan, token string) {
	t.Helper()
	res := s.do(t, req{method: "DELETE", path: "/v1/queue", headers: f.auth(token)})
	require.Equal(t, http.StatusNoContent, res.status, "leave: %s", res.body)
	assert.Empty(t, res.body)
}

// queueState is the admin view of a concert's queue.
type queueState struct {
	Waiting        int64 `json:"waiting"`
	Active         int64 `json:"active"`
	Admitted       int64 `json:"admitted"`
	NoShowSeconds  int   `json:"noShowSeconds"`
	JoinPowBits    int   `json:"joinPowBits"`
	ActiveCapacity int   `json:"activeCapacity"`
	AdmitPerSecond int   `json:"admitPerSecond"`
	Paused         bool  `json:"paused"`
	SoldOut        bool  `json:"soldOut"`
	ActivePerSeat  int   `json:"activePerSeat"`
	Seats          struct {
		Available int64 `json:"available"`
		Held      int64 `json:"held"`
		Sold      int64 `json:"sold"`
	} `json:"seats"`
}

func (s *service) queueState(t testing.TB, concertID string) queueState {
	t.Helper()
	res := s.do(t, req{method: "GET", path: "/admin/v1/concerts/" + concertID + "/queue", headers: admin()})
	require.Equal(t, http.StatusOK, res.status, "queue state: %s", res.body)
	var q queueState
	require.NoError(t, json.Unmarshal(res.body, &q))
	return q
}

// requireProblem checks that res is an RFC 9457 problem document with docs/api.md's code member. Extension
// members beyond those are allowed, as RFC 9457 allows them.
func requireProblem(t testing.TB, res response, status int, code string) {
	t.Helper()
	require.Equal(t, status, res.status, "body %s", res.body)
	assert.Equal(t, "application/problem+json", res.header.Get("Content-Type"))
	var p struct {
		Type   *string `json:"type"`
		Title  *string `json:"title"`
		Status *int    `json:"status"`
		Code   *string `json:"code"`
		Detail *string `json:"detail"` // optional; a string when present
	}
	require.NoError(t, json.Unmarshal(res.body, &p), "problem body %s", res.body)
	require.True(t, p.Type != nil && p.Title != nil && p.Status != nil && p.Code != nil,
		"a problem has type, title, status and code: %s", res.body)
	assert.Equal(t, "about:blank", *p.Type)
	assert.NotEmpty(t, *p.Title)
	assert.Equal(t, status, *p.Status)
	assert.Equal(t, code, *p.Code)
	if status == http.StatusServiceUnavailable {
		assert.NotEmpty(t, res.header.Get("Retry-After"), "a 503 says when to retry")
	}
}

// metricLines returns the sample lines of /metrics for the metric name.
func (s *service) metricLines(t testing.TB, name string) []string {
	t.Helper()
	lines, err := s.tryMetricLines(name)
	require.NoError(t, err)
	return lines
}

// tryMetricLines is metricLines for other goroutines and Eventually conditions.
func (s *service) tryMetricLines(name string) ([]string, error) {
	res, err := s.send(req{method: "GET", path: "/metrics"})
	if err != nil {
		return nil, err
	}
	if res.status != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %d", res.status)
	}
	var out []string
	for _, line := range strings.Split(string(res.body), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			out = append(out, line)
		}
	}
	return out, nil
}

// tickCalls is the admission ticks the service ran: queue_tick for a line of one slot, line_admit for a
// line over shards (a concert's default on a cluster).
func (s *service) tickCalls() float64 {
	return s.scriptCalls("queue_tick") + s.scriptCalls("line_admit")
}

// scriptCalls reads ticketrush_redis_script_calls_total for one script from /metrics: how tests see
// that the scheduler has ticked without sleeping. -1 when it cannot be read.
func (s *service) scriptCalls(script string) float64 {
	lines, err := s.tryMetricLines("ticketrush_redis_script_calls_total")
	if err != nil {
		return -1
	}
	for _, line := range lines {
		if strings.HasPrefix(line, `ticketrush_redis_script_calls_total{script="`+script+`"} `) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				return -1
			}
			return v
		}
	}
	return -1
}
