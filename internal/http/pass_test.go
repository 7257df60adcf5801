package http

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verifyPass checks a pass as an origin does, with the key set alone (docs/pass.md): header alg EdDSA,
// typ JWT, a kid the set lists, the Ed25519 signature; it returns the claims.
func verifyPass(t *testing.T, jwks []byte, token string) map[string]any {
	t.Helper()
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid, Use, Alg string } `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(jwks, &set))
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	var header map[string]string
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &header))
	require.Equal(t, "EdDSA", header["alg"])
	require.Equal(t, "JWT", header["typ"])
	var pub ed25519.PublicKey
	for _, k := range set.Keys {
		if k.Kid == header["kid"] && k.Kty == "OKP" && k.Crv == "Ed25519" && k.Alg == "EdDSA" && k.Use == "sig" {
			pub, err = base64.RawURLEncoding.DecodeString(k.X)
			require.NoError(t, err)
		}
	}
	require.Len(t, pub, ed25519.PublicKeySize, "the key set lists kid %q", header["kid"])
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	require.True(t, ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig), "the pass verifies")
	var claims map[string]any
	raw, err = base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &claims))
	return claims
}

// TestQueueBodyPass: an ACTIVE join, poll and event carry a pass that verifies with the served key set
// alone, bounded by activeUntil and PASS_TTL_SECONDS; every other status carries "pass":null.
func TestQueueBodyPass(t *testing.T) {
	w := realWorld(t)
	s := w.server()
	call := func(method, path string, h http.Header) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, w.replace(path), nil)
		for k, v := range h {
			r.Header.Set(k, w.replace(v[0]))
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		return rec
	}
	keys := call("GET", "/.well-known/jwks.json", nil)
	require.Equal(t, http.StatusOK, keys.Code)
	assert.Equal(t, "public, max-age=60", keys.Header().Get("Cache-Control"))
	jwks := keys.Body.Bytes()

	body := func(rec *httptest.ResponseRecorder) map[string]any {
		t.Helper()
		var b map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &b), rec.Body.String())
		require.Contains(t, b, "pass", "the queue body always has pass")
		return b
	}
	checkActive := func(t *testing.T, b map[string]any, user string) {
		t.Helper()
		require.Equal(t, "ACTIVE", b["status"])
		p, ok := b["pass"].(string)
		require.True(t, ok, "an ACTIVE body carries a pass, got %v", b["pass"])
		c := verifyPass(t, jwks, p)
		assert.Equal(t, testPassIssuer, c["iss"])
		assert.Equal(t, user, c["sub"])
		assert.Equal(t, b["concertId"], c["aud"])
		activeUntil, err := time.Parse(time.RFC3339, b["activeUntil"].(string))
		require.NoError(t, err)
		iat, exp := int64(c["iat"].(float64)), int64(c["exp"].(float64))
		assert.LessOrEqual(t, exp, activeUntil.Unix(), "exp ≤ activeUntil")
		assert.LessOrEqual(t, exp, iat+int64(testPassTTL/time.Second), "exp ≤ iat + PASS_TTL_SECONDS")
		assert.Greater(t, exp, time.Now().Unix(), "a live pass")
		assert.NotEmpty(t, c["jti"])
	}

	t.Run("active", func(t *testing.T) {
		rec := call("GET", "/v1/queue", asUser(userAlice, qtAliceActive))
		require.Equal(t, http.StatusOK, rec.Code)
		checkActive(t, body(rec), userAlice)
		rec = call("POST", "/v1/concerts/"+concert1+"/queue", asUser(userAlice))
		require.Equal(t, http.StatusOK, rec.Code)
		checkActive(t, body(rec), userAlice)
		rec = call("POST", "/v1/concerts/"+concert2+"/queue", asUser(userBob))
		require.Equal(t, http.StatusCreated, rec.Code)
		checkActive(t, body(rec), userBob)
	})
	t.Run("not active", func(t *testing.T) {
		for _, tt := range []struct {
			give       http.Header
			wantStatus string
		}{
			{asUser(userBob, qtBobWaiting), "WAITING"},
			{asUser(userCarol, qtCarolExpired), "EXPIRED"},
			{asUser(userDave, qtDaveDone), "DONE"},
		} {
			b := body(call("GET", "/v1/queue", tt.give))
			assert.Equal(t, tt.wantStatus, b["status"])
			assert.Nil(t, b["pass"], tt.wantStatus)
		}
		b := body(call("POST", "/v1/concerts/"+concert1+"/queue", asUser(userBob)))
		assert.Equal(t, "WAITING", b["status"])
		assert.Nil(t, b["pass"], "a WAITING join")
	})
	t.Run("left", func(t *testing.T) {
		require.Equal(t, http.StatusNoContent, call("DELETE", "/v1/queue", asUser(userAlice, qtAliceActive)).Code)
		b := body(call("GET", "/v1/queue", asUser(userAlice, qtAliceActive)))
		assert.NotEqual(t, "ACTIVE", b["status"])
		assert.Nil(t, b["pass"], "a fan who left")
	})
	t.Run("event stream", func(t *testing.T) {
		srv := httptest.NewServer(s)
		defer srv.Close()
		first := func(h http.Header) map[string]any {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/queue/events", nil)
			require.NoError(t, err)
			for k, v := range h {
				r.Header.Set(k, w.replace(v[0]))
			}
			res, err := srv.Client().Do(r)
			require.NoError(t, err)
			defer res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode)
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					var b map[string]any
					require.NoError(t, json.Unmarshal([]byte(data), &b))
					require.Contains(t, b, "pass")
					return b
				}
			}
			require.FailNow(t, "no event", "%v", sc.Err())
			return nil
		}
		checkActive(t, first(asUser(userAlice, qtAliceC2)), userAlice)
		assert.Nil(t, first(asUser(userBob, qtBobWaiting))["pass"], "a WAITING event")
	})
}
