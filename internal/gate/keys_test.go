package gate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGateKeySetGarbageKeepsTheOldSet: an answer that is not a good key set (an error status, not JSON,
// no Ed25519 key, a body over the bound) fails the fetch and leaves the set in force, and the gate goes
// on letting good passes through.
func TestGateKeySetGarbageKeepsTheOldSet(t *testing.T) {
	s := newSigner(t, "k1")
	ks := newKeyServer(t, s)
	g := startGate(t, ks, Config{})
	gen := g.keys.Generation()
	require.NotZero(t, gen)
	rsa := `{"keys":[{"kty":"RSA","kid":"k1","n":"AQAB","e":"AQAB"}]}`
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"500", http.StatusInternalServerError, `{"keys":[]}`},
		{"not JSON", http.StatusOK, "<html>maintenance</html>"},
		{"empty", http.StatusOK, ""},
		{"no keys", http.StatusOK, `{"keys":[]}`},
		{"keys not a list", http.StatusOK, `{"keys":{"kty":"OKP"}}`},
		{"an RSA key only", http.StatusOK, rsa},
		{"x of the wrong size", http.StatusOK, `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"AAAA"}]}`},
		{"Ed25519 for encryption", http.StatusOK, strings.Replace(mustJSON(t, s), `"sig"`, `"enc"`, 1)},
		{"over 64 KiB", http.StatusOK, `{"keys":[` + strings.Repeat(`{"kty":"X"},`, 7000) + `{}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks.answer(tt.status, tt.body)
			_, err := g.keys.Fetch(context.Background())
			require.Error(t, err)
			assert.Equal(t, gen, g.keys.Generation(), "the set in force is kept")
			res, body := g.get(t, "/", PassHeader, s.valid(t, "fan-1"))
			assert.Equal(t, http.StatusOK, res.StatusCode, body)
		})
	}
}

func mustJSON(t *testing.T, s signer) string {
	t.Helper()
	ks := &keyServer{}
	ks.serve(t, s)
	return ks.body
}

// TestGateSlowKeySetDoesNotHoldRequests: while a fetch of the key set hangs, a pass of a known key goes
// through; and a key set that does not answer fails its fetch at the fetch timeout, the set in force
// kept.
func TestGateSlowKeySetDoesNotHoldRequests(t *testing.T) {
	s := newSigner(t, "k1")
	ks := newKeyServer(t, s)
	g := startGate(t, ks, Config{}, time.Hour)
	release := ks.stall()
	fetched := make(chan error, 1)
	go func() { _, err := g.keys.Fetch(context.Background()); fetched <- err }()
	<-ks.arrived // the fetch hangs in the key server now, and only release ends it

	served := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, g.URL+"/", nil)
		req.Header.Set(PassHeader, s.valid(t, "fan-1"))
		res, err := g.client.Do(req)
		if err != nil {
			served <- 0
			return
		}
		res.Body.Close()
		served <- res.StatusCode
	}()
	select {
	case code := <-served:
		assert.Equal(t, http.StatusOK, code)
	case <-time.After(30 * time.Second):
		t.Error("a pass of a known key waited for the hanging fetch")
	}
	release()
	require.NoError(t, <-fetched)
	ks.stall() // stays stalled: the fetch below ends by its timeout only

	quick := NewKeys(ks.url(), KeysOptions{FetchTimeout: 50 * time.Millisecond})
	_, err := quick.Fetch(context.Background())
	require.Error(t, err)
	_, err = quick.Key(context.Background(), "k1")
	assert.ErrorIs(t, err, ErrKeysUnavailable)
}

// TestGateKeyRefreshPeriod: max-age is honoured within [MinRefresh, MaxRefresh]; without one the
// period is MaxRefresh, after a failure Retry.
func TestGateKeyRefreshPeriod(t *testing.T) {
	o := NewKeys("http://x", KeysOptions{}).opts
	tests := []struct {
		give string
		err  error
		want time.Duration
	}{
		{"public, max-age=300", nil, 300 * time.Second},
		{"max-age=5", nil, 30 * time.Second},
		{"max-age=0", nil, 30 * time.Second},
		{"public, max-age=86400", nil, 10 * time.Minute},
		{`MAX-AGE="120"`, nil, 120 * time.Second},
		{"", nil, 10 * time.Minute},
		{"no-cache", nil, 10 * time.Minute},
		{"max-age=soon", nil, 10 * time.Minute},
		{"max-age=300", errors.New("down"), 10 * time.Second},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, o.period(maxAge(tt.give), tt.err), "%q %v", tt.give, tt.err)
	}
}

// TestGateUnknownKidFetchOutlivesItsRequest: a request that is gone before its unknown kid's fetch does
// not fail the fetch, so the next forged kid is PASS_UNKNOWN_KEY, not PASS_KEYS_UNAVAILABLE (which a gate
// failing open lets through).
func TestGateUnknownKidFetchOutlivesItsRequest(t *testing.T) {
	s := newSigner(t, "k1")
	ks := newKeyServer(t, s)
	g := startGate(t, ks, Config{FailOpen: true})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.keys.Key(gone, "forged-1")
	assert.ErrorIs(t, err, ErrUnknownKey)
	res, body := g.get(t, "/", PassHeader, newSigner(t, "forged-2").valid(t, "fan-1"))
	requireProblem(t, res, body, http.StatusForbidden, PassUnknownKey)
	assert.EqualValues(t, 2, ks.fetches.Load())
}

// A key set URL that answers a redirect is not followed: a redirect from https to http would let a
// path in between serve keys of its own.
func TestGateKeySetRedirectNotFollowed(t *testing.T) {
	elsewhere := newKeyServer(t, newSigner(t, "k1"))
	moved := httptest.NewServer(http.RedirectHandler(elsewhere.url(), http.StatusFound))
	t.Cleanup(moved.Close)
	keys := NewKeys(moved.URL, KeysOptions{})
	_, err := keys.Fetch(context.Background())
	assert.Error(t, err, "a key set fetched through a redirect")
}
