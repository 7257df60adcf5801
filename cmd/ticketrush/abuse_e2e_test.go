package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// TestRateLimitAcrossInstances: a fan sends 100 charges at once, half to each of two instances on one
// Redis: at most the limit is served (burst plus the refill of the time it took), the rest are 429
// RATE_LIMITED problems with Retry-After, and a limited charge charges nothing.
func TestRateLimitAcrossInstances(t *testing.T) {
	env := map[string]string{
		"REDIS_KEY_PREFIX": dbtest.Name("e2e"),
		"DATABASE_URL":     dbtest.Postgres(t),
		"USER_RATE_LIMIT":  "5",
		"USER_RATE_BURST":  "10",
	}
	a := startService(t, env)
	env["ROLES"] = "api"
	b := startService(t, env)
	f := newFan(t, "rl-fan")

	var mu sync.Mutex
	served, limited := 0, 0
	var wg sync.WaitGroup
	for i := range 100 {
		s := []*service{a, b}[i%2]
		wg.Go(func() {
			res, err := s.send(req{method: "POST", path: "/v1/points/charges", headers: f.auth(""), body: map[string]any{"amount": 1}})
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch res.status {
			case http.StatusCreated:
				served++
			case http.StatusTooManyRequests:
				limited++
				requireProblem(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
				sec, err := strconv.Atoi(res.header.Get("Retry-After"))
				assert.NoError(t, err, "Retry-After in whole seconds")
				assert.GreaterOrEqual(t, sec, 1)
			default:
				t.Errorf("status %d: %s", res.status, res.body)
			}
		})
	}
	wg.Wait()
	t.Logf("served %d, limited %d", served, limited)
	// Each instance alone would serve its own burst of 10; together they serve the one limit. The
	// refill of a slow run (5/s) is the only slack, and 100 requests at once take well under the 18 s
	// that would need.
	assert.GreaterOrEqual(t, served, 10)
	assert.Less(t, served, 20, "the instances share one limit")
	assert.Equal(t, 100, served+limited)

	var res response
	require.Eventually(t, func() bool { // the fan's bucket refills in a fifth of a second
		res = a.do(t, req{method: "GET", path: "/v1/points", headers: f.auth("")})
		return res.status == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	var bal struct {
		Balance int `json:"balance"`
	}
	require.NoError(t, json.Unmarshal(res.body, &bal))
	assert.Equal(t, served, bal.Balance, fmt.Sprintf("a limited charge charges nothing (%d served)", served))
}
