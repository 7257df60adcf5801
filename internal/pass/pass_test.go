package pass_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/pass"
	"github.com/ticketrush/ticketrush/internal/postgres"
)

const (
	ttl  = 300 * time.Second
	skew = 30 * time.Second
	lead = 5 * time.Minute
)

var schedule = pass.Schedule{TTL: ttl, Skew: skew, KeySetMaxAge: time.Minute}

// openDB opens url and applies the migrations; another call on the same url is a second instance's pool.
func openDB(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Migrate(context.Background())
	require.NoError(t, err)
	return db
}

// started is an issuer over db on clock, started.
func started(t *testing.T, db *postgres.DB, clock *dbtest.Clock, log *slog.Logger) *pass.Issuer {
	t.Helper()
	i := pass.NewIssuer(db, "ticketrush", schedule, clock.Now, log)
	require.NoError(t, i.Start(context.Background()))
	return i
}

// keySet is a parsed RFC 7517 key set, as a verifier reads it.
type keySet struct {
	Keys []map[string]any `json:"keys"`
}

func parseKeySet(t *testing.T, raw []byte) keySet {
	t.Helper()
	var ks keySet
	require.NoError(t, json.Unmarshal(raw, &ks))
	return ks
}

func (ks keySet) kids() []string {
	var out []string
	for _, k := range ks.Keys {
		out = append(out, k["kid"].(string))
	}
	return out
}

// claims is a verified pass's header kid and claims.
type claims struct {
	Kid           string
	Iss, Sub, Aud string
	Iat, Exp      int64
	Jti           string
}

// verify checks a compact JWS the way an origin does, with nothing but the key set: header alg EdDSA,
// typ JWT and a kid the set lists as an Ed25519 signing key, then the signature with ed25519.Verify.
func verify(t *testing.T, ks keySet, token string) claims {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3, "a compact JWS")
	var header map[string]any
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &header))
	assert.Equal(t, map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": header["kid"]}, header)
	kid, _ := header["kid"].(string)
	var pub ed25519.PublicKey
	for _, k := range ks.Keys {
		if k["kid"] == kid {
			assert.Equal(t, "OKP", k["kty"])
			assert.Equal(t, "Ed25519", k["crv"])
			assert.Equal(t, "sig", k["use"])
			assert.Equal(t, "EdDSA", k["alg"])
			x, err := base64.RawURLEncoding.DecodeString(k["x"].(string))
			require.NoError(t, err)
			pub = x
		}
	}
	require.Len(t, pub, ed25519.PublicKeySize, "the key set lists kid %s", kid)
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	require.True(t, ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig), "the signature verifies")
	raw, err = base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var c struct {
		Iss, Sub, Aud, Jti string
		Iat, Exp           int64
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&c))
	return claims{Kid: kid, Iss: c.Iss, Sub: c.Sub, Aud: c.Aud, Iat: c.Iat, Exp: c.Exp, Jti: c.Jti}
}

func keySetOf(t *testing.T, i *pass.Issuer) keySet {
	raw, _ := i.KeySet()
	return parseKeySet(t, raw)
}

func TestPassVerifiesWithTheKeySet(t *testing.T) {
	db := openDB(t, dbtest.Postgres(t))
	clock := dbtest.NewClock(time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC))
	i := started(t, db, clock, dbtest.Log(t))
	ks := keySetOf(t, i)
	require.Len(t, ks.Keys, 1, "the first start creates one key")
	now := clock.Now().Unix()

	tests := []struct {
		name        string
		activeUntil time.Time
		wantExp     int64
	}{
		{"active longer than the ttl", clock.Now().Add(30 * time.Minute), now + 300},
		{"active shorter than the ttl", clock.Now().Add(90*time.Second + 700*time.Millisecond), now + 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := i.Sign("fan_1", "c0ncert", tt.activeUntil)
			require.NoError(t, err)
			c := verify(t, ks, p)
			assert.Equal(t, ks.Keys[0]["kid"], c.Kid)
			assert.Equal(t, "ticketrush", c.Iss)
			assert.Equal(t, "fan_1", c.Sub)
			assert.Equal(t, "c0ncert", c.Aud)
			assert.Equal(t, now, c.Iat)
			assert.Equal(t, tt.wantExp, c.Exp)
			assert.LessOrEqual(t, c.Exp, tt.activeUntil.Unix(), "exp ≤ activeUntil")
			assert.LessOrEqual(t, c.Exp, c.Iat+int64(ttl/time.Second), "exp ≤ iat + PASS_TTL_SECONDS")
			assert.Len(t, c.Jti, 22, "16 random bytes")
		})
	}
	a, err := i.Sign("fan_1", "c0ncert", clock.Now().Add(time.Hour))
	require.NoError(t, err)
	b, err := i.Sign("fan_1", "c0ncert", clock.Now().Add(time.Hour))
	require.NoError(t, err)
	assert.NotEqual(t, verify(t, ks, a).Jti, verify(t, ks, b).Jti, "every pass has its own jti")

	t.Run("an issuer and ids that need escaping", func(t *testing.T) {
		odd := pass.NewIssuer(db, `https://tickets.example/"a"`, schedule, clock.Now, dbtest.Log(t))
		require.NoError(t, odd.Start(context.Background()))
		p, err := odd.Sign(`fan"1`, "c\\1", clock.Now().Add(time.Hour))
		require.NoError(t, err)
		c := verify(t, ks, p)
		assert.Equal(t, `https://tickets.example/"a"`, c.Iss)
		assert.Equal(t, `fan"1`, c.Sub)
		assert.Equal(t, `c\1`, c.Aud)
	})
}

// TestRotation: a rotated key is published at once and signs only from its time; passes of the old key
// verify against the published set until they expire, and the old key leaves the set only after that.
func TestRotation(t *testing.T) {
	db := openDB(t, dbtest.Postgres(t))
	ctx := context.Background()
	clock := dbtest.NewClock(time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC))
	i := started(t, db, clock, dbtest.Log(t))
	old := keySetOf(t, i).kids()
	require.Len(t, old, 1)
	activeUntil := clock.Now().Add(24 * time.Hour)

	first, err := i.Sign("fan", "c1", activeUntil)
	require.NoError(t, err)
	clock.Advance(time.Minute)
	r, err := pass.Rotate(ctx, db, clock.Now(), lead, time.Hour+skew)
	require.NoError(t, err)
	assert.Equal(t, clock.Now().Add(lead), r.Key.SignsFrom)
	_, err = pass.Rotate(ctx, db, clock.Now().Add(lead/2), lead, time.Hour+skew)
	assert.ErrorIs(t, err, pass.ErrKeyPending, "one rotation at a time")
	require.NoError(t, i.Refresh(ctx))
	assert.ElementsMatch(t, []string{old[0], r.Key.ID}, keySetOf(t, i).kids(), "the new key is published before it signs")

	clock.Advance(lead - time.Second) // the last second of the old key
	last, err := i.Sign("fan", "c1", activeUntil)
	require.NoError(t, err)
	assert.Equal(t, old[0], verify(t, keySetOf(t, i), last).Kid, "the new key does not sign before its time")

	clock.Advance(time.Second) // the new key's signing time
	require.NoError(t, i.Refresh(ctx))
	next, err := i.Sign("fan", "c1", activeUntil)
	require.NoError(t, err)
	assert.Equal(t, r.Key.ID, verify(t, keySetOf(t, i), next).Kid, "new passes carry the new kid")

	firstExp, lastExp := verify(t, keySetOf(t, i), first).Exp, verify(t, keySetOf(t, i), last).Exp
	for clock.Now().Unix() < lastExp { // every pass of the old key verifies while it lives
		require.NoError(t, i.Refresh(ctx))
		ks := keySetOf(t, i)
		if clock.Now().Unix() < firstExp {
			verify(t, ks, first)
		}
		verify(t, ks, last)
		clock.Advance(10 * time.Second)
	}
	assert.LessOrEqual(t, lastExp, r.Key.SignsFrom.Add(ttl).Unix(), "the old key's passes end TTL after the switch")
	clock.Set(r.Key.SignsFrom.Add(ttl + skew - time.Second))
	require.NoError(t, i.Refresh(ctx))
	assert.Contains(t, keySetOf(t, i).kids(), old[0], "kept for a trailing clock's last passes")
	clock.Set(r.Key.SignsFrom.Add(ttl + skew))
	require.NoError(t, i.Refresh(ctx))
	assert.Equal(t, []string{r.Key.ID}, keySetOf(t, i).kids(), "the old key leaves once its last pass expired")

	clock.Advance(time.Hour)
	r2, err := pass.Rotate(ctx, db, clock.Now(), lead, time.Hour+skew)
	require.NoError(t, err)
	assert.Equal(t, []string{old[0]}, r2.Deleted, "a key no pass can need is deleted")
}

// TestInstancesSignWithTheSameKeys: two instances (two pools on one database) starting at once create
// one key between them, and sign and publish with the same keys, before and after a rotation.
func TestInstancesSignWithTheSameKeys(t *testing.T) {
	url := dbtest.Postgres(t)
	clock := dbtest.NewClock(time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC))
	dbs := []*postgres.DB{openDB(t, url), openDB(t, url)}
	issuers := make([]*pass.Issuer, 8)
	var wg sync.WaitGroup
	for n := range issuers {
		issuers[n] = pass.NewIssuer(dbs[n%2], "ticketrush", schedule, clock.Now, dbtest.Log(t))
		wg.Go(func() { assert.NoError(t, issuers[n].Start(context.Background())) })
	}
	wg.Wait()
	keys, err := dbs[0].PassKeys(context.Background())
	require.NoError(t, err)
	require.Len(t, keys, 1, "instances starting at once create one key")
	added, err := dbs[1].AddPassKey(context.Background(), keys[0], time.Time{})
	require.NoError(t, err)
	assert.False(t, added, "a first key is added only to an empty store")

	sameKeys := func(want string) {
		t.Helper()
		first, _ := issuers[0].KeySet()
		for _, i := range issuers {
			ks, _ := i.KeySet()
			assert.JSONEq(t, string(first), string(ks))
			p, err := i.Sign("fan", "c1", clock.Now().Add(time.Hour))
			require.NoError(t, err)
			assert.Equal(t, want, verify(t, parseKeySet(t, ks), p).Kid)
		}
	}
	sameKeys(keys[0].ID)

	r, err := pass.Rotate(context.Background(), dbs[0], clock.Now(), lead, time.Hour+skew)
	require.NoError(t, err)
	clock.Advance(lead)
	for _, i := range issuers {
		require.NoError(t, i.Refresh(context.Background()))
	}
	sameKeys(r.Key.ID)
}

// TestKeyMaterialStaysInTheStore: the key set and the issuer's and the rotation's logs hold no private
// key, in any encoding.
func TestKeyMaterialStaysInTheStore(t *testing.T) {
	db := openDB(t, dbtest.Postgres(t))
	ctx := context.Background()
	clock := dbtest.NewClock(time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC))
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	i := started(t, db, clock, log)
	r, err := pass.Rotate(ctx, db, clock.Now(), lead, time.Hour+skew)
	require.NoError(t, err)
	require.NoError(t, i.Refresh(ctx))
	jwks, _ := i.KeySet()
	rotation, err := json.Marshal(r.Deleted)
	require.NoError(t, err)

	keys, err := db.PassKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	assert.Contains(t, logs.String(), keys[0].ID, "the log names keys by kid")
	for _, k := range parseKeySet(t, jwks).Keys {
		assert.NotContains(t, k, "d", "a JWK's private part")
	}
	for _, k := range keys {
		priv := ed25519.NewKeyFromSeed(k.Seed)
		for _, secret := range [][]byte{k.Seed, priv} {
			for _, enc := range []string{base64.RawURLEncoding.EncodeToString(secret), base64.StdEncoding.EncodeToString(secret),
				hex.EncodeToString(secret), base64.RawURLEncoding.EncodeToString(secret[:16])} {
				assert.NotContains(t, string(jwks), enc, "key set")
				assert.NotContains(t, logs.String(), enc, "log")
				assert.NotContains(t, string(rotation), enc, "rotation")
			}
		}
	}
}

// The first key signs at once on every instance, one whose clock trails the creator's by up to the
// schedule's skew too; a rotation of an empty store adds a key that signs at once.
func TestFirstKeySignsOnATrailingClock(t *testing.T) {
	url := dbtest.Postgres(t)
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	ahead, behind := dbtest.NewClock(at), dbtest.NewClock(at.Add(-skew+time.Second))
	started(t, openDB(t, url), ahead, dbtest.Log(t))
	trailing := started(t, openDB(t, url), behind, dbtest.Log(t))
	_, err := trailing.Sign("fan", "c1", behind.Now().Add(time.Hour))
	assert.NoError(t, err, "an instance %s behind the key's creator signs", skew-time.Second)

	empty := openDB(t, dbtest.Postgres(t))
	r, err := pass.Rotate(context.Background(), empty, at, lead, time.Hour+skew)
	require.NoError(t, err)
	i := started(t, empty, ahead, dbtest.Log(t))
	p, err := i.Sign("fan", "c1", at.Add(time.Hour))
	require.NoError(t, err, "the key a rotation added to an empty store signs at once")
	ks, _ := i.KeySet()
	assert.Equal(t, r.Key.ID, verify(t, parseKeySet(t, ks), p).Kid)
}
