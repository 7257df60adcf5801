package gate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const waitingRoom = "https://tickets.example/concerts/" + testConcert

type testGate struct {
	*httptest.Server
	origin   *httptest.Server
	ks       *keyServer
	keys     *Keys
	verifier *Verifier
	m        *Metrics
	client   *http.Client
}

// startGate puts a gate for testConcert in front of a fresh origin, with the key set of ks fetched once.
// A pass of an unknown kid may fetch the set again once an hour, so that every fetch a test counts
// beyond that one is a fetch the gate should not have made.
func startGate(t *testing.T, ks *keyServer, cfg Config, fetchTimeout ...time.Duration) *testGate {
	t.Helper()
	g := &testGate{origin: newOrigin(t), ks: ks}
	reg := prometheus.NewRegistry()
	g.m = NewMetrics(reg)
	opts := KeysOptions{UnknownKid: time.Hour, FetchTimeout: 2 * time.Second, Fetched: g.m.KeyFetched}
	if len(fetchTimeout) > 0 {
		opts.FetchTimeout = fetchTimeout[0]
	}
	g.keys = NewKeys(ks.url(), opts)
	_, _ = g.keys.Fetch(context.Background()) // a test of a key set that cannot be fetched starts without one
	g.verifier = NewVerifier(g.keys, testConcert, "ticketrush")
	u, err := url.Parse(g.origin.URL)
	require.NoError(t, err)
	cfg.Upstream, cfg.WaitingRoom = u, waitingRoom
	g.Server = httptest.NewServer(New(cfg, g.verifier, g.m))
	t.Cleanup(g.Close)
	g.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return g
}

// get sends a GET of path with headers (name, value pairs) and returns the answer and its body.
func (g *testGate) get(t *testing.T, path string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := g.client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func requireProblem(t *testing.T, res *http.Response, body string, status int, code Code) problemDoc {
	t.Helper()
	require.Equal(t, status, res.StatusCode, body)
	assert.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
	var p problemDoc
	require.NoError(t, json.Unmarshal([]byte(body), &p), body)
	assert.Equal(t, "about:blank", p.Type)
	assert.Equal(t, status, p.Status)
	assert.Equal(t, string(code), p.Code, "detail: %s", p.Detail)
	assert.NotEmpty(t, p.Title)
	assert.NotEmpty(t, p.Detail)
	return p
}

func count(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

const html = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"

// TestGateWithoutPass: a page request is sent to the waiting room, any other refused with PASS_MISSING,
// and nothing reaches the origin.
func TestGateWithoutPass(t *testing.T) {
	s := newSigner(t, "k1")
	g := startGate(t, newKeyServer(t, s), Config{SecureCookie: true})

	res, body := g.get(t, "/tickets", "Accept", html)
	assert.Equal(t, http.StatusFound, res.StatusCode, body)
	assert.Equal(t, waitingRoom, res.Header.Get("Location"))
	assert.NotContains(t, body, "origin")

	res, body = g.get(t, "/api/seats", "Accept", "application/json")
	requireProblem(t, res, body, http.StatusForbidden, PassMissing)

	// ?pass= is a page request's only: an API call with one is told where a pass goes.
	res, body = g.get(t, "/api/seats?pass="+s.valid(t, "fan-1"), "Accept", "application/json")
	p := requireProblem(t, res, body, http.StatusForbidden, PassMissing)
	assert.Contains(t, p.Detail, "X-Admission-Pass")
	assert.InDelta(t, 3, count(t, g.m.refused[PassMissing]), 0)
}

// TestGateLetsThroughHeaderCookieAndQuery: each of the three ways of carrying a pass lets the fan
// through, and the origin sees the user and concert of the pass, never the ones the client sent.
func TestGateLetsThroughHeaderCookieAndQuery(t *testing.T) {
	s := newSigner(t, "k1")
	g := startGate(t, newKeyServer(t, s), Config{SecureCookie: true})
	pass := s.valid(t, "fan-1")

	t.Run("header", func(t *testing.T) {
		res, body := g.get(t, "/api/seats", PassHeader, pass, UserHeader, "admin", ConcertHeader, "other",
			"X-Admission_User", "root", "x-admission_concert", "other", "Accept", "application/json")
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		assert.Equal(t, "origin /api/seats", body)
		assert.Equal(t, "fan-1", res.Header.Get("X-Saw-User"), "the origin sees the pass's user only")
		assert.Equal(t, testConcert, res.Header.Get("X-Saw-Concert"))
	})
	t.Run("cookie", func(t *testing.T) {
		res, body := g.get(t, "/tickets", "Cookie", "theme=dark; "+PassCookie+"="+pass, "Accept", html,
			strings.ToLower(UserHeader), "admin")
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		assert.Equal(t, "fan-1", res.Header.Get("X-Saw-User"))
	})
	t.Run("query", func(t *testing.T) {
		res, body := g.get(t, "/tickets/seat?a=1&pass="+url.QueryEscape(pass)+"&b=x%20y", "Accept", html)
		require.Equal(t, http.StatusFound, res.StatusCode, body)
		assert.Equal(t, "/tickets/seat?a=1&b=x%20y", res.Header.Get("Location"), "the same URL without the pass")
		assert.Equal(t, "no-store", res.Header.Get("Cache-Control"))
		assert.NotContains(t, body, "origin", "the redirect is the gate's own")
		cookies := res.Cookies()
		require.Len(t, cookies, 1)
		c := cookies[0]
		assert.Equal(t, PassCookie, c.Name)
		assert.Equal(t, pass, c.Value)
		assert.Equal(t, "/", c.Path)
		assert.True(t, c.HttpOnly, "HttpOnly")
		assert.True(t, c.Secure, "Secure")
		assert.Equal(t, http.SameSiteLaxMode, c.SameSite)
		_, cl, _, _, err := Decode(pass)
		require.NoError(t, err)
		assert.Equal(t, cl.Expires.Unix(), c.Expires.Unix(), "the cookie expires with the pass")
		assert.InDelta(t, time.Until(cl.Expires).Seconds(), c.MaxAge, 5)

		// The redirect stays on the site, whatever the path.
		res2, _ := g.get(t, "//evil.example/x?pass="+url.QueryEscape(pass), "Accept", html)
		require.Equal(t, http.StatusFound, res2.StatusCode)
		assert.Equal(t, "/evil.example/x", res2.Header.Get("Location"))

		// The fan follows the redirect with the cookie.
		res, body = g.get(t, res.Header.Get("Location"), "Cookie", c.Name+"="+c.Value, "Accept", html)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		assert.Equal(t, "a=1&b=x%20y", res.Header.Get("X-Saw-Query"))
		assert.Equal(t, "fan-1", res.Header.Get("X-Saw-User"))
	})
	assert.InDelta(t, 1, count(t, g.m.admitted[sourceHeader]), 0)
	assert.InDelta(t, 2, count(t, g.m.admitted[sourceCookie]), 0)
	assert.InDelta(t, 2, count(t, g.m.admitted[sourceQuery]), 0)
}

// TestGateCookieNotSecureOnLoopbackOnly: the cookie drops Secure only where the gate listens on plain
// loopback and the fan did not come over HTTPS.
func TestGateCookieNotSecureOnLoopbackOnly(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"127.0.0.1:8090", true}, {"[::1]:8090", true}, {"localhost:8090", true}, {"127.1.2.3:80", true},
		{":8090", false}, {"0.0.0.0:8090", false}, {"10.0.0.5:8090", false}, {"[::]:8090", false}, {"bad", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, LoopbackOnly(tt.give), tt.give)
	}
	s := newSigner(t, "k1")
	g := startGate(t, newKeyServer(t, s), Config{SecureCookie: false})
	res, _ := g.get(t, "/?pass="+s.valid(t, "fan-1"), "Accept", html)
	require.Len(t, res.Cookies(), 1)
	assert.False(t, res.Cookies()[0].Secure)
	assert.True(t, res.Cookies()[0].HttpOnly)

	// Behind a TLS proxy on the same machine, the fan came over HTTPS.
	res, _ = g.get(t, "/?pass="+s.valid(t, "fan-1"), "Accept", html, "X-Forwarded-Proto", "https")
	require.Len(t, res.Cookies(), 1)
	assert.True(t, res.Cookies()[0].Secure)
}

// TestGateRefusesBadPasses: every kind of bad pass is refused with its code, never a 5xx, never let
// through to the origin, and never makes the gate fetch the key set per request.
func TestGateRefusesBadPasses(t *testing.T) {
	s := newSigner(t, "k1")
	other := newSigner(t, "k1") // another key under the same kid
	stranger := newSigner(t, "k9")
	ks := newKeyServer(t, s)
	g := startGate(t, ks, Config{SecureCookie: true})
	now := time.Now()
	valid := s.valid(t, "fan-1")
	with := func(k string, v any) map[string]any {
		c := claims(now, "fan-1")
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + enc(t, with("sub", "fan-2")) + "." + parts[2]
	none := enc(t, map[string]any{"alg": "none", "typ": "JWT", "kid": "k1"}) + "." + parts[1] + "."
	sAlg := func(alg string) map[string]any { h := s.header(); h["alg"] = alg; return h }

	tests := []struct {
		name string
		give string
		want Code
	}{
		{"signed with another key", other.pass(t, other.header(), claims(now, "fan-1")), PassBadSignature},
		{"tampered claims", tampered, PassBadSignature},
		{"alg none", none, PassBadAlgorithm},
		{"alg none with the signature kept", enc(t, sAlg("none")) + "." + parts[1] + "." + parts[2], PassBadAlgorithm},
		{"HS256 keyed by the public key", hs256(t, "k1", s.pub, claims(now, "fan-1")), PassBadAlgorithm},
		{"HS256 keyed by the public key's base64", hs256(t, "k1", []byte(jwk(s)["x"].(string)), claims(now, "fan-1")), PassBadAlgorithm},
		{"Ed25519 spelled otherwise", s.pass(t, sAlg("Ed25519"), claims(now, "fan-1")), PassBadAlgorithm},
		{"unknown kid", stranger.valid(t, "fan-1"), PassUnknownKey},
		{"expired", s.pass(t, s.header(), with("exp", now.Add(-time.Minute).Unix())), PassExpired},
		{"issued in the future", s.pass(t, s.header(), with("iat", now.Add(time.Hour).Unix())), PassNotYetValid},
		{"not yet valid", s.pass(t, s.header(), with("nbf", now.Add(time.Hour).Unix())), PassNotYetValid},
		{"another concert", s.pass(t, s.header(), with("aud", "other1")), PassWrongConcert},
		{"aud a list", s.pass(t, s.header(), with("aud", []string{testConcert})), PassMalformed},
		{"another issuer", s.pass(t, s.header(), with("iss", "somebody")), PassWrongIssuer},
		{"no exp", s.pass(t, s.header(), with("exp", nil)), PassMalformed},
		{"exp a string", s.pass(t, s.header(), with("exp", "soon")), PassMalformed},
		{"sub not a user id", s.pass(t, s.header(), with("sub", "fan\r\nX-Admission-User: admin")), PassMalformed},
		{"no kid", s.pass(t, map[string]any{"alg": "EdDSA", "typ": "JWT"}, claims(now, "fan-1")), PassMalformed},
		{"truncated", valid[:len(valid)-1], PassMalformed},
		{"truncated to two parts", parts[0] + "." + parts[1], PassMalformed},
		{"short signature", parts[0] + "." + parts[1] + "." + parts[2][:40], PassBadSignature},
		{"padded", valid + "==", PassMalformed},
		{"padded header", parts[0] + "=." + parts[1] + "." + parts[2], PassMalformed},
		{"four parts", valid + ".x", PassMalformed},
		{"100 KB", valid + strings.Repeat("A", 100<<10), PassMalformed},
		{"not base64", "!!!.???.***", PassMalformed},
		{"header not JSON", enc(t, "EdDSA") + "." + parts[1] + "." + parts[2], PassMalformed},
	}
	const rounds = 5
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range rounds {
				res, body := g.get(t, "/api/seats", PassHeader, tt.give, "Accept", "application/json")
				requireProblem(t, res, body, http.StatusForbidden, tt.want)
				assert.NotContains(t, body, "origin")

				res, body = g.get(t, "/tickets", "Cookie", PassCookie+"="+url.QueryEscape(tt.give), "Accept", html)
				assert.Equal(t, http.StatusFound, res.StatusCode, body)
				assert.Equal(t, waitingRoom, res.Header.Get("Location"))
			}
		})
	}
	// One fetch at the start, and one for the first unknown kid: the rest are answered from the set in hand.
	assert.EqualValues(t, 2, ks.fetches.Load(), "fetches of the key set")
	res, body := g.get(t, "/api/seats", PassHeader, valid)
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
	// An instance whose clock runs ahead, within the service's 30 s of skew, issues passes the gate takes.
	res, body = g.get(t, "/api/seats", PassHeader, s.pass(t, s.header(), with("iat", now.Add(20*time.Second).Unix())))
	assert.Equal(t, http.StatusOK, res.StatusCode, "a pass issued 20 s ahead: %s", body)
}

// TestGateVerifierPinsEdDSA: the verifier alone refuses the key confusion (an HS256 pass whose secret is
// the public key) and alg none, whatever the key source answers.
func TestGateVerifierPinsEdDSA(t *testing.T) {
	s := newSigner(t, "k1")
	keys := NewKeys(newKeyServer(t, s).url(), KeysOptions{UnknownKid: time.Hour})
	_, err := keys.Fetch(context.Background())
	require.NoError(t, err)
	v := NewVerifier(keys, testConcert, "")
	_, err = v.Verify(context.Background(), s.valid(t, "fan-1"))
	require.NoError(t, err)
	for _, give := range []string{hs256(t, "k1", s.pub, claims(time.Now(), "fan-1")),
		enc(t, map[string]any{"alg": "none", "kid": "k1"}) + "." + enc(t, claims(time.Now(), "fan-1")) + "."} {
		_, err := v.Verify(context.Background(), give)
		var rf *Refusal
		require.ErrorAs(t, err, &rf)
		assert.Equal(t, PassBadAlgorithm, rf.Code)
	}
}

// TestGateCacheKeepsToExp: a pass verified once is refused after its exp all the same.
func TestGateCacheKeepsToExp(t *testing.T) {
	s := newSigner(t, "k1")
	keys := NewKeys(newKeyServer(t, s).url(), KeysOptions{UnknownKid: time.Hour})
	_, err := keys.Fetch(context.Background())
	require.NoError(t, err)
	v := NewVerifier(keys, testConcert, "")
	now := time.Now()
	v.now = func() time.Time { return now }
	pass := s.valid(t, "fan-1")
	c, err := v.Verify(context.Background(), pass)
	require.NoError(t, err)
	_, cached := v.cache.get(pass, keys.Generation())
	require.True(t, cached, "a verified pass is remembered")

	now = c.Expires.Add(Leeway)
	_, err = v.Verify(context.Background(), pass)
	var rf *Refusal
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, PassExpired, rf.Code)
}

// TestGateCacheDroppedWhenKeysChange: a pass verified under a key that the key set no longer holds is
// refused, though it was remembered as verified.
func TestGateCacheDroppedWhenKeysChange(t *testing.T) {
	k1, k2 := newSigner(t, "k1"), newSigner(t, "k2")
	ks := newKeyServer(t, k1, k2)
	g := startGate(t, ks, Config{})
	pass := k1.valid(t, "fan-1")
	res, body := g.get(t, "/", PassHeader, pass)
	require.Equal(t, http.StatusOK, res.StatusCode, body)

	ks.serve(t, k2) // k1 withdrawn
	_, err := g.keys.Fetch(context.Background())
	require.NoError(t, err)
	res, body = g.get(t, "/", PassHeader, pass)
	requireProblem(t, res, body, http.StatusForbidden, PassUnknownKey)
	res, body = g.get(t, "/", PassHeader, k2.valid(t, "fan-1"))
	require.Equal(t, http.StatusOK, res.StatusCode, body)
}

// TestGateUnknownKidFetchesTheNewKey: a pass signed by a key published after the gate's last fetch is
// let through: the unknown kid fetches the set once.
func TestGateUnknownKidFetchesTheNewKey(t *testing.T) {
	k1, k2 := newSigner(t, "k1"), newSigner(t, "k2")
	ks := newKeyServer(t, k1)
	g := startGate(t, ks, Config{})
	ks.serve(t, k1, k2)
	for range 3 {
		res, body := g.get(t, "/", PassHeader, k2.valid(t, "fan-1"))
		require.Equal(t, http.StatusOK, res.StatusCode, body)
	}
	assert.EqualValues(t, 2, ks.fetches.Load())
}

// TestGateFailsClosedWithoutKeys: with no key set, a pass is 503 PASS_KEYS_UNAVAILABLE by default; with
// FailOpen a pass whose claims hold goes through without the admission headers, and no pass, a bad one
// or an expired one is refused still (403: its claims are refused before its key is looked for).
func TestGateFailsClosedWithoutKeys(t *testing.T) {
	s := newSigner(t, "k1")
	down := func() *keyServer {
		ks := newKeyServer(t, s)
		ks.answer(http.StatusInternalServerError, "oops")
		return ks
	}
	pass := s.valid(t, "fan-1")

	closed := startGate(t, down(), Config{})
	res, body := closed.get(t, "/api", PassHeader, pass)
	requireProblem(t, res, body, http.StatusServiceUnavailable, PassKeysUnavailable)
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	res, body = closed.get(t, "/", PassHeader, pass, "Accept", html)
	requireProblem(t, res, body, http.StatusServiceUnavailable, PassKeysUnavailable) // not a loop through the waiting room

	open := startGate(t, down(), Config{FailOpen: true})
	res, body = open.get(t, "/api", PassHeader, pass, UserHeader, "admin", "X-ADMISSION_USER", "root")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.Empty(t, res.Header.Get("X-Saw-User"), "an unchecked pass names nobody to the origin")
	assert.InDelta(t, 1, count(t, open.m.failOpen), 0)

	res, body = open.get(t, "/api")
	requireProblem(t, res, body, http.StatusForbidden, PassMissing)
	expired := claims(time.Now().Add(-time.Hour), "fan-1")
	res, body = open.get(t, "/api", PassHeader, s.pass(t, s.header(), expired))
	requireProblem(t, res, body, http.StatusForbidden, PassExpired)
	res, body = open.get(t, "/api", PassHeader, pass+"x")
	requireProblem(t, res, body, http.StatusForbidden, PassMalformed)
}
