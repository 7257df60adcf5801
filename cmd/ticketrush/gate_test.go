package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// passKey signs admission passes as the service does, and serves its key set.
type passKey struct {
	kid  string
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func newPassKey(t *testing.T, kid string) passKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return passKey{kid: kid, priv: priv, pub: pub}
}

func (k passKey) sign(t *testing.T, user, concert string, exp time.Time) string {
	t.Helper()
	b64 := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := b64(map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": k.kid}) + "." +
		b64(map[string]any{"iss": "ticketrush", "sub": user, "aud": concert, "iat": time.Now().Unix(), "exp": exp.Unix(), "jti": "j1"})
	return signed + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(k.priv, []byte(signed)))
}

func serveKeySet(t *testing.T, keys ...passKey) *httptest.Server {
	t.Helper()
	var set []map[string]string
	for _, k := range keys {
		set = append(set, map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": k.kid, "use": "sig", "alg": "EdDSA",
			"x": base64.RawURLEncoding.EncodeToString(k.pub)})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestGateCommand runs ticketrush gate through run, configured from flags and the environment, in
// front of a plain server: no pass is sent to the waiting room, a pass gets through with the user the
// origin sees, and /metrics on the admin listener counts both.
func TestGateCommand(t *testing.T) {
	key := newPassKey(t, "k1")
	keys := serveKeySet(t, key)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "origin sees "+r.Header.Get("X-Admission-User"))
	}))
	t.Cleanup(origin.Close)
	env := map[string]string{
		"GATE_KEYS_URL":     keys.URL + "/.well-known/jwks.json",
		"GATE_CONCERT":      "c1",
		"GATE_WAITING_ROOM": "https://tickets.example/concerts/c1",
		"GATE_LISTEN":       "nowhere", // the flag wins
	}
	ctx, cancel := context.WithCancel(context.Background())
	sink := newLogSink()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"gate", "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-upstream", origin.URL},
			func(k string) string { return env[k] }, sink)
	}()
	t.Cleanup(func() {
		cancel()
		err := <-done
		assert.True(t, err == nil || strings.Contains(err.Error(), "configuration"), "%v", err)
	})
	var addr string
	select {
	case addr = <-sink.listening:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("gate returned before listening: %v\n%s", err, sink.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("gate did not log \"listening\":\n%s", sink.String())
	}
	var rec struct{ Admin string }
	for _, l := range strings.Split(sink.String(), "\n") {
		if strings.Contains(l, `"msg":"listening"`) {
			require.NoError(t, json.Unmarshal([]byte(l), &rec))
		}
	}
	require.NotEmpty(t, rec.Admin, sink.String())

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string, headers ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, _ := get("http://"+addr+"/", "Accept", "text/html")
	assert.Equal(t, http.StatusFound, res.StatusCode)
	assert.Equal(t, env["GATE_WAITING_ROOM"], res.Header.Get("Location"))

	pass := key.sign(t, "fan-7", "c1", time.Now().Add(time.Minute))
	res, body := get("http://"+addr+"/", "X-Admission-Pass", pass, "X-Admission-User", "admin")
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.Equal(t, "origin sees fan-7", body)

	res, body = get("http://"+addr+"/?pass="+pass, "Accept", "text/html")
	require.Equal(t, http.StatusFound, res.StatusCode, body)
	require.Len(t, res.Cookies(), 1)
	assert.False(t, res.Cookies()[0].Secure, "the gate listens on plain loopback")

	res, body = get("http://" + rec.Admin + "/metrics")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, `ticketrush_gate_admitted_total{source="header"} 1`)
	assert.Contains(t, body, `ticketrush_gate_admitted_total{source="query"} 1`)
	assert.Contains(t, body, `ticketrush_gate_refused_total{code="PASS_MISSING"} 1`)
	assert.Contains(t, body, `ticketrush_gate_key_fetches_total{outcome="ok"} 1`)
	assert.Contains(t, body, `ticketrush_gate_keys 1`)
}

// TestGateCommandLine: -h describes the gate and touches nothing; a missing or bad setting is reported
// by its variable, all of them at once.
func TestGateCommandLine(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"gate", "-h"}, func(string) string { return "" }, &out))
	for _, w := range []string{"usage: ticketrush gate", "-upstream string", "-keys string", "-fail-open", "GATE_FAIL_OPEN"} {
		assert.Contains(t, out.String(), w)
	}
	out.Reset()
	err := run(context.Background(), []string{"gate", "-upstream", "ftp://x", "-fail-open=maybe"}, func(k string) string {
		return map[string]string{"GATE_LISTEN": "nowhere"}[k]
	}, &out)
	require.Error(t, err)
	assert.True(t, errors.As(err, new(usageError)), "a bad flag value is a usage error: %v", err)

	err = run(context.Background(), []string{"gate", "-upstream", "ftp://x"}, func(k string) string {
		return map[string]string{"GATE_LISTEN": "nowhere", "GATE_FAIL_OPEN": "maybe"}[k]
	}, &out)
	require.Error(t, err)
	for _, v := range []string{"GATE_LISTEN", "GATE_UPSTREAM", "GATE_KEYS_URL", "GATE_CONCERT", "GATE_WAITING_ROOM", "GATE_FAIL_OPEN"} {
		assert.Contains(t, err.Error(), v+":")
	}
	assert.Empty(t, out.String(), "nothing served")
}

// TestPassVerify: ticketrush pass verify prints a pass's claims and passes a good one; an expired pass,
// another concert's, one the key set does not hold and a key set that cannot be fetched fail with the
// reason.
func TestPassVerify(t *testing.T) {
	key, other := newPassKey(t, "k1"), newPassKey(t, "k2")
	keys := serveKeySet(t, key)
	jwks := keys.URL + "/.well-known/jwks.json"
	verify := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"pass", "verify"}, args...), func(string) string { return "" }, &out)
		return out.String(), err
	}
	good := key.sign(t, "fan-1", "c1", time.Now().Add(time.Minute))
	out, err := verify("--keys", jwks, "--concert", "c1", good)
	require.NoError(t, err, out)
	for _, w := range []string{"alg EdDSA", "kid k1", "sub     fan-1", "aud     c1", "iss     ticketrush", "jti     j1", "ok "} {
		assert.Contains(t, out, w)
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"expired", []string{"--keys", jwks, key.sign(t, "fan-1", "c1", time.Now().Add(-time.Minute))}, "PASS_EXPIRED"},
		{"another concert", []string{"--keys", jwks, "--concert", "c2", good}, "PASS_WRONG_CONCERT"},
		{"unknown key", []string{"--keys", jwks, other.sign(t, "fan-1", "c1", time.Now().Add(time.Minute))}, "PASS_UNKNOWN_KEY"},
		{"tampered", []string{"--keys", jwks, good[:len(good)-3] + "AAA"}, "PASS_BAD_SIGNATURE"},
		{"not a pass", []string{"--keys", jwks, "hello"}, "PASS_MALFORMED"},
		{"key set down", []string{"--keys", "http://127.0.0.1:1/.well-known/jwks.json", good}, "fetch the key set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := verify(tt.args...)
			require.Error(t, err, out)
			assert.False(t, errors.As(err, new(usageError)), "a failed check exits 1, not 2")
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, out, "FAIL ")
		})
	}
	_, err = verify("--keys", jwks)
	assert.True(t, errors.As(err, new(usageError)), "no pass is a usage error: %v", err)
}
