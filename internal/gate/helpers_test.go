package gate

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testConcert = "c0ncert1"

// signer mints passes the way the service does (docs/gate.md: header and claims), and any other way a test
// asks for.
type signer struct {
	kid  string
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func newSigner(t testing.TB, kid string) signer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return signer{kid: kid, priv: priv, pub: pub}
}

func enc(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(b)
}

// claims are a valid pass's claims at now for user.
func claims(now time.Time, user string) map[string]any {
	return map[string]any{"iss": "ticketrush", "sub": user, "aud": testConcert, "iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(), "jti": "j-" + user}
}

func (s signer) header() map[string]any {
	return map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": s.kid}
}

// pass signs claims under header with s's key.
func (s signer) pass(t testing.TB, header, claims map[string]any) string {
	t.Helper()
	signed := enc(t, header) + "." + enc(t, claims)
	return signed + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(s.priv, []byte(signed)))
}

func (s signer) valid(t testing.TB, user string) string {
	return s.pass(t, s.header(), claims(time.Now(), user))
}

// hs256 signs claims with HMAC-SHA256 keyed by secret under a header of alg HS256: the key confusion
// that a verifier taking alg from the token falls for when the public key's bytes are the secret.
func hs256(t testing.TB, kid string, secret []byte, claims map[string]any) string {
	t.Helper()
	signed := enc(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": kid}) + "." + enc(t, claims)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func jwk(s signer) map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(s.pub),
		"kid": s.kid, "use": "sig", "alg": "EdDSA"}
}

// keyServer serves a key set and counts the requests for it. The test sets what it answers.
type keyServer struct {
	*httptest.Server
	fetches atomic.Int64

	mu      sync.Mutex
	status  int
	body    string
	cache   string
	release chan struct{} // when set, a fetch waits for it (or for the client to give up)
	arrived chan struct{} // a fetch that waits says so here
}

// stall makes every fetch wait until the returned function is called or its client gives up.
func (ks *keyServer) stall() (release func()) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.release = make(chan struct{})
	ch := ks.release
	return func() { close(ch) }
}

func newKeyServer(t testing.TB, signers ...signer) *keyServer {
	t.Helper()
	ks := &keyServer{arrived: make(chan struct{}, 16)}
	ks.serve(t, signers...)
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.fetches.Add(1)
		ks.mu.Lock()
		status, body, cache, release := ks.status, ks.body, ks.cache, ks.release
		ks.mu.Unlock()
		if release != nil {
			select {
			case ks.arrived <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if cache != "" {
			w.Header().Set("Cache-Control", cache)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ks.Close)
	return ks
}

// serve makes the server answer 200 with a key set of signers.
func (ks *keyServer) serve(t testing.TB, signers ...signer) {
	keys := []any{}
	for _, s := range signers {
		keys = append(keys, jwk(s))
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	require.NoError(t, err)
	ks.answer(http.StatusOK, string(b))
}

func (ks *keyServer) answer(status int, body string) {
	ks.mu.Lock()
	ks.status, ks.body = status, body
	ks.mu.Unlock()
}

func (ks *keyServer) url() string { return ks.URL + "/.well-known/jwks.json" }

// origin is the site behind the gate: it answers what it saw.
func newOrigin(t testing.TB) *httptest.Server {
	t.Helper()
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// What an origin may read as the admission headers: any case, '_' for '-' (CGI, WSGI).
		saw := map[string][]string{}
		for name, vs := range r.Header {
			n := strings.ReplaceAll(http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-")), "_", "-")
			saw[n] = append(saw[n], vs...)
		}
		w.Header().Set("X-Saw-User", strings.Join(saw[UserHeader], ","))
		w.Header().Set("X-Saw-Concert", strings.Join(saw[ConcertHeader], ","))
		w.Header().Set("X-Saw-Query", r.URL.RawQuery)
		_, _ = w.Write([]byte("origin " + r.URL.Path))
	}))
	t.Cleanup(o.Close)
	return o
}
