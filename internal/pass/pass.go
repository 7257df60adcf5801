// Package pass issues the admission pass (docs/pass.md): a short-lived Ed25519 JWT that says "this fan
// was admitted to this concert, until exp", which any origin verifies with the published key set alone.
// The keys live in a Store that every instance shares, so every instance signs with the same keys; each
// instance reloads them periodically and signs with the newest key whose signing time has come.
package pass

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// Key is one signing key as the store keeps it: it signs from SignsFrom until the next key's SignsFrom.
type Key struct {
	ID        string // the JWK's kid: its RFC 7638 thumbprint
	Seed      []byte // the Ed25519 private key's seed (ed25519.SeedSize bytes); never leaves the store and this package
	CreatedAt time.Time
	SignsFrom time.Time
}

// Store keeps the signing keys every instance shares.
type Store interface {
	// PassKeys returns every key, oldest SignsFrom first.
	PassKeys(ctx context.Context) ([]Key, error)
	// AddPassKey adds k unless a key signs from after `unless`; concurrent calls add one key between them.
	AddPassKey(ctx context.Context, k Key, unless time.Time) (bool, error)
	// DeletePassKeys deletes every key a later key replaced before `before`.
	DeletePassKeys(ctx context.Context, before time.Time) ([]string, error)
}

// ErrNoKey is a Sign with no key whose signing time has come (Start was not called or failed).
var ErrNoKey = errors.New("no admission-pass key signs yet")

// ErrKeyPending is a rotation refused because the last one's key does not sign yet.
var ErrKeyPending = errors.New("a key added by an earlier rotation does not sign yet")

// Schedule is how keys overlap (docs/pass.md, "Rotation").
type Schedule struct {
	TTL time.Duration // PASS_TTL_SECONDS: a pass's longest life
	// Skew is how long after a key stopped signing an instance whose clock trails may still sign with it;
	// a key stays published TTL+Skew after the next key starts signing.
	Skew time.Duration
	// KeySetMaxAge is the key set's Cache-Control max-age.
	KeySetMaxAge time.Duration
}

// Issuer signs passes with the shared keys and serves the key set that verifies them.
type Issuer struct {
	store    Store
	issuer   []byte // PASS_ISSUER as a JSON string
	schedule Schedule
	now      func() time.Time
	log      *slog.Logger
	ring     atomic.Pointer[ring]
}

// NewIssuer returns an issuer of passes whose iss is issuer; it signs nothing until Start.
func NewIssuer(store Store, issuer string, s Schedule, now func() time.Time, log *slog.Logger) *Issuer {
	iss, _ := json.Marshal(issuer) // a string always marshals
	i := &Issuer{store: store, issuer: iss, schedule: s, now: now, log: log}
	i.ring.Store(&ring{jwks: []byte(`{"keys":[]}`)})
	return i
}

// Start loads the keys, creating the first one when the store has none. It signs at once (no pass exists
// that another key would have to verify), on every instance whose clock trails by up to the schedule's
// skew too.
func (i *Issuer) Start(ctx context.Context) error {
	keys, err := i.store.PassKeys(ctx)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		now := i.now()
		k, err := NewKey(now, now.Add(-i.schedule.Skew))
		if err != nil {
			return err
		}
		added, err := i.store.AddPassKey(ctx, k, time.Time{})
		if err != nil {
			return err
		}
		if added {
			i.log.Info("pass key created", "kid", k.ID)
		}
	}
	return i.Refresh(ctx)
}

// Refresh reloads the keys from the store and rebuilds the key set; serve runs it every
// config.PassKeyReload, so a rotated key is published everywhere well before it signs.
func (i *Issuer) Refresh(ctx context.Context) error {
	keys, err := i.store.PassKeys(ctx)
	if err != nil {
		return err
	}
	r, err := newRing(keys, i.schedule, i.now())
	if err != nil {
		return err
	}
	if old := i.ring.Load(); !slices.Equal(old.kids(), r.kids()) {
		i.log.Info("pass keys loaded", "kids", r.kids())
	}
	i.ring.Store(r)
	return nil
}

// KeySet is the RFC 7517 key set of every key that verifies a pass not yet expired (and of a key about
// to sign), as JSON, and how long a client may cache it.
func (i *Issuer) KeySet() ([]byte, time.Duration) { return i.ring.Load().jwks, i.schedule.KeySetMaxAge }

// TTL is a pass's longest life (PASS_TTL_SECONDS).
func (i *Issuer) TTL() time.Duration { return i.schedule.TTL }

// Sign returns a pass for userID admitted to concertID until activeUntil: exp is at most activeUntil
// and at most TTL after iat.
func (i *Issuer) Sign(userID, concertID string, activeUntil time.Time) (string, error) {
	if activeUntil.IsZero() {
		return "", errors.New("sign pass: no activeUntil")
	}
	now := i.now()
	k := i.ring.Load().signer(now)
	if k == nil {
		return "", ErrNoKey
	}
	iat := now.Unix()
	exp := min(iat+int64(i.schedule.TTL/time.Second), activeUntil.Unix()) // Unix floors: exp ≤ activeUntil
	var jti [16]byte
	_, _ = rand.Read(jti[:]) // crypto/rand never fails (Go 1.24)

	var cbuf [256]byte
	c := append(cbuf[:0], `{"iss":`...)
	c = append(c, i.issuer...)
	c = append(c, `,"sub":`...)
	c = appendString(c, userID)
	c = append(c, `,"aud":`...)
	c = appendString(c, concertID)
	c = append(c, `,"iat":`...)
	c = strconv.AppendInt(c, iat, 10)
	c = append(c, `,"exp":`...)
	c = strconv.AppendInt(c, exp, 10)
	c = append(c, `,"jti":"`...)
	c = base64.RawURLEncoding.AppendEncode(c, jti[:])
	c = append(c, `"}`...)

	out := make([]byte, 0, len(k.header)+base64.RawURLEncoding.EncodedLen(len(c))+1+base64.RawURLEncoding.EncodedLen(ed25519.SignatureSize))
	out = append(out, k.header...)
	out = base64.RawURLEncoding.AppendEncode(out, c)
	sig := ed25519.Sign(k.priv, out)
	out = append(out, '.')
	out = base64.RawURLEncoding.AppendEncode(out, sig)
	return string(out), nil
}

// appendString appends s as a JSON string: as it is when it needs no escaping (ids are [A-Za-z0-9_-]),
// through encoding/json otherwise.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// NewKey makes a key created at createdAt that signs from signsFrom. Times are kept to the microsecond,
// as Postgres keeps them.
func NewKey(createdAt, signsFrom time.Time) (Key, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return Key{}, err
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return Key{ID: thumbprint(pub), Seed: seed,
		CreatedAt: createdAt.UTC().Truncate(time.Microsecond), SignsFrom: signsFrom.UTC().Truncate(time.Microsecond)}, nil
}

// thumbprint is the RFC 7638 thumbprint of an Ed25519 public key (RFC 8037 §2): the kid.
func thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Rotation is what Rotate did.
type Rotation struct {
	Key     Key      // the new key
	Deleted []string // kids of keys no pass can need any more
}

// Rotate adds a key that signs lead after now (every instance loads it and every cached key set has it
// by then), unless the last rotation's key does not sign yet (ErrKeyPending). It deletes the keys that
// stopped signing more than retention ago.
func Rotate(ctx context.Context, store Store, now time.Time, lead, retention time.Duration) (Rotation, error) {
	keys, err := store.PassKeys(ctx)
	if err != nil {
		return Rotation{}, err
	}
	if len(keys) == 0 { // no pass exists yet: nothing to publish ahead of, so the key signs at once
		lead = 0
	}
	k, err := NewKey(now, now.Add(lead))
	if err != nil {
		return Rotation{}, err
	}
	added, err := store.AddPassKey(ctx, k, now)
	if err != nil {
		return Rotation{}, err
	}
	if !added {
		return Rotation{}, ErrKeyPending
	}
	deleted, err := store.DeletePassKeys(ctx, now.Add(-retention))
	if err != nil {
		return Rotation{}, err
	}
	return Rotation{Key: k, Deleted: deleted}, nil
}

// signingKey is a key ready to sign.
type signingKey struct {
	id     string
	from   time.Time
	priv   ed25519.PrivateKey
	header []byte // the base64url of the JWS header, then '.'
}

// ring is the keys one load found: the ones that sign, in order, and the key set published.
type ring struct {
	keys []signingKey // oldest from first
	jwks []byte
}

// JWK is one public key of the key set (RFC 7517, an OKP key of RFC 8037), as the issuer publishes it and
// the gate reads it.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// newRing readies keys (oldest SignsFrom first) at now: key i is published until key i+1 has signed
// for TTL+Skew, since a pass it signed just before lives TTL (and a trailing clock signs Skew late).
func newRing(keys []Key, s Schedule, now time.Time) (*ring, error) {
	r := &ring{}
	set := struct {
		Keys []JWK `json:"keys"`
	}{Keys: []JWK{}}
	for i, k := range keys {
		if len(k.Seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("pass key %s: seed of %d bytes", k.ID, len(k.Seed))
		}
		priv := ed25519.NewKeyFromSeed(k.Seed)
		pub := priv.Public().(ed25519.PublicKey)
		header, _ := json.Marshal(struct {
			Alg string `json:"alg"`
			Typ string `json:"typ"`
			Kid string `json:"kid"`
		}{"EdDSA", "JWT", k.ID})
		r.keys = append(r.keys, signingKey{id: k.ID, from: k.SignsFrom, priv: priv,
			header: append(base64.RawURLEncoding.AppendEncode(nil, header), '.')})
		if i+1 < len(keys) && !now.Before(keys[i+1].SignsFrom.Add(s.TTL+s.Skew)) {
			continue // every pass it signed has expired
		}
		set.Keys = append(set.Keys, JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub),
			Kid: k.ID, Use: "sig", Alg: "EdDSA"})
	}
	var err error
	r.jwks, err = json.Marshal(set)
	return r, err
}

// signer is the newest key whose signing time has come at now, nil if none.
func (r *ring) signer(now time.Time) *signingKey {
	for i := len(r.keys) - 1; i >= 0; i-- {
		if !now.Before(r.keys[i].from) {
			return &r.keys[i]
		}
	}
	return nil
}

func (r *ring) kids() []string {
	out := make([]string, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.id
	}
	return out
}
