package http

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

func TestLimiterBucket(t *testing.T) {
	clock := dbtest.NewClock(time.Unix(1_800_000_000, 0))
	l := NewLimiter(20, 40, clock.Now)
	served := 0
	var wait time.Duration
	for range 100 {
		ok, w := l.Allow("u:alice")
		if ok {
			served++
		} else {
			wait = w
		}
	}
	assert.Equal(t, 40, served, "a burst, then nothing")
	assert.Equal(t, 50*time.Millisecond, wait, "one token comes back in 1/rate s")
	assert.Equal(t, "1", retryAfter(wait), "Retry-After in whole seconds, at least 1")
	assert.Equal(t, "3", retryAfter(2001*time.Millisecond))
	ok, _ := l.Allow("u:bob")
	assert.True(t, ok, "buckets are per key")

	// 100 requests a second, 500 of them spanning 4.99 s: burst, then one per 50 ms (99 more), and no more.
	served = 0
	for range 500 {
		clock.Advance(10 * time.Millisecond)
		if ok, _ := l.Allow("u:carol"); ok {
			served++
		}
	}
	assert.Equal(t, 40+99, served)
	assert.Nil(t, NewLimiter(0, 40, clock.Now), "rate 0 turns the limit off")
}

func TestLimiterMemoryBounded(t *testing.T) {
	clock := dbtest.NewClock(time.Unix(1_800_000_000, 0))
	l := NewLimiter(20, 40, clock.Now)
	l.perShard = 4
	for i := range 10_000 {
		l.Allow("a:" + strconv.Itoa(i))
	}
	for i := range l.shards {
		assert.LessOrEqual(t, len(l.shards[i].buckets), 4)
	}
}

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"direct", "203.0.113.5:4000", nil, trusted, "203.0.113.5"},
		{"direct, forged XFF ignored", "203.0.113.5:4000", []string{"1.2.3.4"}, trusted, "203.0.113.5"},
		{"no proxies trusted", "10.0.0.2:4000", []string{"1.2.3.4"}, nil, "10.0.0.2"},
		{"through a trusted proxy", "10.0.0.2:4000", []string{"198.51.100.7"}, trusted, "198.51.100.7"},
		{"client-written hops left of the real one", "10.0.0.2:4000", []string{"6.6.6.6, 198.51.100.7"}, trusted, "198.51.100.7"},
		{"two trusted proxies", "10.0.0.2:4000", []string{"198.51.100.7, 10.1.1.1"}, trusted, "198.51.100.7"},
		{"several headers", "10.0.0.2:4000", []string{"6.6.6.6", "198.51.100.7"}, trusted, "198.51.100.7"},
		{"garbage hop", "10.0.0.2:4000", []string{"198.51.100.7, nonsense"}, trusted, "10.0.0.2"},
		{"all trusted", "10.0.0.2:4000", []string{"10.3.3.3"}, trusted, "10.3.3.3"},
		{"v4 in v6", "[::ffff:203.0.113.5]:4000", nil, trusted, "203.0.113.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/concerts", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			assert.Equal(t, tt.want, clientAddr(r, tt.trusted))
		})
	}
}

// TestServerLimitsPerInstance: through the server, past the burst a user gets 429 RATE_LIMITED with
// Retry-After and the handler does nothing; public endpoints are limited per client address.
func TestServerLimitsPerInstance(t *testing.T) {
	w := realWorld(t)
	d := w.deps
	joins := &joinCounter{Queue: d.Queue}
	d.Queue = joins
	clock := dbtest.NewClock(time.Unix(1_800_000_000, 0))
	d.Limiter = NewLimiter(2, 3, clock.Now)
	srv := NewServer(d)
	do := func(method, path, user, remote string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		if user != "" {
			r.Header.Set("Authorization", bearerOf(user))
		}
		r.RemoteAddr = remote
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		return rec
	}
	var codes []int
	for range 5 {
		codes = append(codes, do("GET", "/v1/points", userAlice, "192.0.2.1:1").Code)
	}
	assert.Equal(t, []int{200, 200, 200, 429, 429}, codes)
	rec := do("GET", "/v1/points", userAlice, "192.0.2.1:1")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	assert.Contains(t, rec.Body.String(), `"code":"RATE_LIMITED"`)
	assert.Equal(t, 200, do("GET", "/v1/points", userBob, "192.0.2.1:1").Code, "bob has his own bucket")

	codes = nil
	for range 4 {
		codes = append(codes, do("GET", "/v1/concerts", "", "192.0.2.9:1").Code)
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes, "the public list, by client address")
	assert.Equal(t, 200, do("GET", "/v1/concerts", "", "192.0.2.10:1").Code)
	assert.Equal(t, 200, do("GET", "/healthz", "", "192.0.2.9:1").Code, "operations are not limited")

	codes = nil
	for range 4 {
		codes = append(codes, do("GET", "/v1/concerts", userBob, "192.0.2.11:1").Code)
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes, "a public endpoint is limited by address, with a JWT too")

	// A bearer that does not verify is answered 401 however often, and costs the address's public bucket
	// nothing (docs/api.md, "Credentials": a bad token is 401 UNAUTHENTICATED).
	codes = nil
	for range 10 {
		r := httptest.NewRequest("GET", "/v1/points", nil)
		r.Header.Set("Authorization", "Bearer not-a-jwt")
		r.RemoteAddr = "192.0.2.12:1"
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		codes = append(codes, rec.Code)
	}
	assert.Equal(t, slices.Repeat([]int{401}, 10), codes, "bad bearers: 401, never 429")
	assert.Equal(t, 401, do("GET", "/v1/points", "", "192.0.2.12:1").Code, "no bearer: 401")
	assert.Equal(t, 200, do("GET", "/v1/concerts", "", "192.0.2.12:1").Code, "the address's public bucket untouched")

	clock.Advance(time.Second)
	assert.Equal(t, 200, do("GET", "/v1/points", userAlice, "192.0.2.1:1").Code, "the bucket refills")

	for range 10 {
		do("POST", "/v1/concerts/"+w.ids[concert2]+"/queue", userCarol, "192.0.2.1:1")
	}
	assert.Equal(t, int64(3), joins.calls.Load(), "a burst of 3 joins reached the queue; the limited ones did nothing")
}
