package gate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// MaxPassBytes bounds a pass: the service's are about 300 bytes, and a longer one is refused before it is
// decoded.
const MaxPassBytes = 4096

// Leeway is the clock skew allowed on exp and nbf (docs/gate.md). IssuedAt gets IssuedLeeway: the
// service's instances may sign with clocks up to 30 s apart (docs/pass.md, "Rotation"), and a pass issued
// by one running ahead must not send its fan back to the waiting room.
const (
	Leeway       = 5 * time.Second
	IssuedLeeway = 30 * time.Second
)

// Claims are what a verified pass says: the fan (sub), the concert (aud), and when it was issued and
// ends.
type Claims struct {
	Issuer    string
	User      string
	Concert   string
	IssuedAt  time.Time
	Expires   time.Time
	NotBefore time.Time // zero when the pass has no nbf
	ID        string
	KeyID     string
}

// Header is a pass's JOSE header.
type Header struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid"`
}

// KeySource finds the public key of a kid; ErrKeysUnavailable (wrapped) when it has no key set to look in.
type KeySource interface {
	Key(ctx context.Context, kid string) (ed25519.PublicKey, error)
}

// ErrUnknownKey is a kid the key set does not hold; ErrKeysUnavailable is a key set the source cannot
// get (never fetched, or unknown kid while the fetch fails).
var (
	ErrUnknownKey      = errors.New("no key of this kid in the key set")
	ErrKeysUnavailable = errors.New("the key set cannot be fetched")
)

// Verifier checks passes for one concert. A pass that verified is remembered until its exp (a fan
// presents the same pass on every request, and its signature check is most of what the gate costs
// otherwise: docs/gate.md, "Cost"); the memory is dropped whenever the key set changes.
type Verifier struct {
	keys    KeySource
	concert string
	issuer  string // required iss; empty checks none
	now     func() time.Time
	cache   passCache
}

// NewVerifier returns a verifier of passes for concert, with keys from keys; issuer, when not empty, is
// the iss every pass must carry.
func NewVerifier(keys KeySource, concert, issuer string) *Verifier {
	return &Verifier{keys: keys, concert: concert, issuer: issuer, now: time.Now}
}

// Verify returns the claims of a valid pass for the verifier's concert, or a *Refusal.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	now := v.now()
	gen := generationOf(v.keys)
	if c, ok := v.cache.get(token, gen); ok && now.Before(c.Expires.Add(Leeway)) {
		return c, nil
	}
	h, c, signed, sig, err := Decode(token)
	if err != nil {
		return Claims{}, err
	}
	// The claims are checked first: they cost no key lookup, so an expired pass or another concert's
	// never makes the gate fetch the key set.
	if err := v.Check(c, now); err != nil {
		return Claims{}, err
	}
	key, err := v.keys.Key(ctx, h.Kid)
	switch {
	case errors.Is(err, ErrUnknownKey):
		return Claims{}, refuse(PassUnknownKey, fmt.Sprintf("the key set has no key %q", h.Kid))
	case err != nil:
		return Claims{}, refuse(PassKeysUnavailable, "the gate cannot check a pass now: its key set cannot be fetched")
	}
	if !ed25519.Verify(key, []byte(signed), sig) {
		return Claims{}, refuse(PassBadSignature, fmt.Sprintf("the signature does not verify with key %q", h.Kid))
	}
	v.cache.put(token, c, gen)
	return c, nil
}

// Check checks a pass's claims (not its signature) at now: the times with Leeway, the concert and the
// issuer.
func (v *Verifier) Check(c Claims, now time.Time) error {
	switch {
	case !now.Before(c.Expires.Add(Leeway)):
		return refuse(PassExpired, fmt.Sprintf("the pass expired at %s", c.Expires.UTC().Format(time.RFC3339)))
	case c.IssuedAt.After(now.Add(IssuedLeeway)):
		return refuse(PassNotYetValid, fmt.Sprintf("the pass is issued at %s, in the future", c.IssuedAt.UTC().Format(time.RFC3339)))
	case !c.NotBefore.IsZero() && c.NotBefore.After(now.Add(Leeway)):
		return refuse(PassNotYetValid, fmt.Sprintf("the pass is valid from %s", c.NotBefore.UTC().Format(time.RFC3339)))
	case c.Concert != v.concert:
		return refuse(PassWrongConcert, fmt.Sprintf("the pass is for concert %q, this gate admits to %q", c.Concert, v.concert))
	case v.issuer != "" && c.Issuer != v.issuer:
		return refuse(PassWrongIssuer, fmt.Sprintf("the pass is issued by %q, this gate takes %q", c.Issuer, v.issuer))
	}
	return nil
}

// Decode splits a compact JWS pass and reads its header and claims without checking the signature: the
// header must name alg EdDSA and a kid, the claims must have sub (a user id), aud (a string), iat and
// exp. It returns the signed part (header.payload) and the signature, or a *Refusal.
func Decode(token string) (h Header, c Claims, signed string, sig []byte, err error) {
	if len(token) > MaxPassBytes {
		return h, c, "", nil, refuse(PassMalformed, fmt.Sprintf("the pass is %d bytes, over %d: not an admission pass", len(token), MaxPassBytes))
	}
	head, rest, ok1 := strings.Cut(token, ".")
	payload, sig64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig64, ".") {
		return h, c, "", nil, refuse(PassMalformed, "a pass is three base64url parts joined by dots (a compact JWS)")
	}
	rawHead, err1 := b64.DecodeString(head)
	rawClaims, err2 := b64.DecodeString(payload)
	sig, err3 := b64.DecodeString(sig64)
	if err1 != nil || err2 != nil || err3 != nil {
		return h, c, "", nil, refuse(PassMalformed, "a part of the pass is not unpadded base64url")
	}
	if err := strictJSON(rawHead, &h); err != nil {
		return h, c, "", nil, refuse(PassMalformed, "the pass's header is not a JSON object: "+err.Error())
	}
	if h.Alg != "EdDSA" {
		return h, c, "", nil, refuse(PassBadAlgorithm, fmt.Sprintf("the pass's alg is %q; this gate takes EdDSA only", h.Alg))
	}
	if h.Kid == "" || (h.Typ != "" && h.Typ != "JWT") {
		return h, c, "", nil, refuse(PassMalformed, "the pass's header must name a kid (and typ JWT, when it has a typ)")
	}
	if len(sig) != ed25519.SignatureSize {
		return h, c, "", nil, refuse(PassBadSignature, fmt.Sprintf("an Ed25519 signature is %d bytes, this one %d", ed25519.SignatureSize, len(sig)))
	}
	var raw struct {
		Iss string          `json:"iss"`
		Sub string          `json:"sub"`
		Aud json.RawMessage `json:"aud"`
		Iat *json.Number    `json:"iat"`
		Exp *json.Number    `json:"exp"`
		Nbf *json.Number    `json:"nbf"`
		Jti string          `json:"jti"`
	}
	if err := strictJSON(rawClaims, &raw); err != nil {
		return h, c, "", nil, refuse(PassMalformed, "the pass's claims are not a JSON object of the pass's claims: "+err.Error())
	}
	c = Claims{Issuer: raw.Iss, User: raw.Sub, ID: raw.Jti, KeyID: h.Kid}
	if err := json.Unmarshal(raw.Aud, &c.Concert); err != nil || c.Concert == "" {
		return h, c, "", nil, refuse(PassMalformed, "the pass's aud must be the concert id, a string")
	}
	if !ticketrush.ValidUserID(c.User) {
		return h, c, "", nil, refuse(PassMalformed, "the pass's sub must be a user id of 1-64 chars of [A-Za-z0-9_-]")
	}
	var ok bool
	if c.IssuedAt, ok = numericDate(raw.Iat); !ok {
		return h, c, "", nil, refuse(PassMalformed, "the pass's iat must be a number of seconds since 1970")
	}
	if c.Expires, ok = numericDate(raw.Exp); !ok {
		return h, c, "", nil, refuse(PassMalformed, "the pass's exp must be a number of seconds since 1970")
	}
	if raw.Nbf != nil {
		if c.NotBefore, ok = numericDate(raw.Nbf); !ok {
			return h, c, "", nil, refuse(PassMalformed, "the pass's nbf, when present, must be a number of seconds since 1970")
		}
	}
	return h, c, token[:len(head)+1+len(payload)], sig, nil
}

// b64 is unpadded base64url that refuses stray bits in the last character, so that one pass has one
// spelling.
var b64 = base64.RawURLEncoding.Strict()

// strictJSON decodes one JSON object and nothing after it.
func strictJSON(b []byte, v any) error {
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not an object")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the object")
	}
	return nil
}

// numericDate reads an RFC 7519 NumericDate (seconds, perhaps with a fraction).
func numericDate(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > 1<<40 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// generationOf is the key source's generation when it keeps one (*Keys does), so that a cached pass is
// checked again after the key set changed.
func generationOf(k KeySource) uint64 {
	if g, ok := k.(interface{ Generation() uint64 }); ok {
		return g.Generation()
	}
	return 0
}

// passCache remembers verified passes by their whole token, with the key set generation they verified
// under. Bounded: full, it starts afresh, and a pass dropped so is verified again.
type passCache struct {
	mu      sync.RWMutex
	entries map[string]cachedPass
}

type cachedPass struct {
	claims Claims
	gen    uint64
}

const passCacheSize = 65536

func (p *passCache) get(token string, gen uint64) (Claims, bool) {
	p.mu.RLock()
	e, ok := p.entries[token]
	p.mu.RUnlock()
	return e.claims, ok && e.gen == gen
}

func (p *passCache) put(token string, c Claims, gen uint64) {
	p.mu.Lock()
	if p.entries == nil || len(p.entries) >= passCacheSize {
		p.entries = make(map[string]cachedPass)
	}
	p.entries[token] = cachedPass{claims: c, gen: gen}
	p.mu.Unlock()
}
