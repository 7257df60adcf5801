package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
)

func TestBucketsCoverEveryLatency(t *testing.T) {
	for us := time.Duration(0); us < 10*time.Second; us = us*11/10 + time.Microsecond {
		i := bucketOf(us)
		lo, hi := lowerBound(i), lowerBound(i+1)
		require.LessOrEqual(t, lo, us.Truncate(time.Microsecond), "bucket %d of %s", i, us)
		require.Greater(t, hi, us.Truncate(time.Microsecond), "bucket %d of %s", i, us)
		if us >= 128*time.Microsecond {
			assert.LessOrEqual(t, float64(hi-lo)/float64(lo), 1.0/64+1e-9, "bucket %d too wide", i)
		}
	}
}

func TestQuantile(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	tests := []struct {
		give float64
		want time.Duration
	}{
		{0.50, 500 * time.Millisecond},
		{0.99, 990 * time.Millisecond},
		{0.0, time.Millisecond},
	}
	for _, tt := range tests {
		got := h.quantile(tt.give)
		assert.InEpsilon(t, float64(tt.want), float64(got), 0.02, "q%.2f = %s", tt.give, got)
	}
	var empty histogram
	assert.Zero(t, empty.quantile(0.5))
}

func TestJSONString(t *testing.T) {
	tests := []struct {
		body, name, want string
	}{
		{`{"id":"r1","status":"HELD","concertId":"c1"}`, "id", "r1"},
		{`{"token":"a.b","concertId":"c1"}`, "token", "a.b"},
		{`{"concertId":"c1"}`, "id", ""},
		{`{"status":"WAITING"`, "status", "WAITING"},
		{`{"status":"WAIT`, "status", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, jsonString([]byte(tt.body), tt.name), tt.body)
	}
}

func TestMinterMakesTokensTheServiceAccepts(t *testing.T) {
	secret := []byte("a-secret-of-at-least-thirty-two-bytes!!")
	m := newMinter(secret)
	for _, user := range []string{"fan-1", "bj0-12345", "x"} {
		got, err := auth.NewUsers(secret).Verify(m.mint(user))
		require.NoError(t, err)
		assert.Equal(t, user, got)
	}
	_, err := auth.NewUsers([]byte("another-secret-of-thirty-two-bytes!!!!")).Verify(m.mint("fan-1"))
	assert.Error(t, err)
}
