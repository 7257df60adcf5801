package auth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

var secret = []byte(strings.Repeat("s", 32))

func TestUsersVerify(t *testing.T) {
	now := time.Now()
	good, err := Mint(secret, "fan_1", time.Hour, now)
	require.NoError(t, err)
	expired, err := Mint(secret, "fan_1", -time.Hour, now)
	require.NoError(t, err)
	otherKey, err := Mint([]byte(strings.Repeat("x", 32)), "fan_1", time.Hour, now)
	require.NoError(t, err)
	noExp, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "fan_1"}).SignedString(secret)
	require.NoError(t, err)
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims{"sub": "fan_1", "exp": now.Add(time.Hour).Unix()}).SignedString(secret)
	require.NoError(t, err)
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "fan_1", "exp": now.Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	badSub, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "fan 1!", "exp": now.Add(time.Hour).Unix()}).SignedString(secret)
	require.NoError(t, err)

	tests := []struct {
		name string
		give string
		want string
	}{
		{"valid", good, "fan_1"},
		{"expired", expired, ""},
		{"other key", otherKey, ""},
		{"no exp", noExp, ""},
		{"hs512", hs512, ""},
		{"alg none", none, ""},
		{"bad sub", badSub, ""},
		{"garbage", "abc.def.ghi", ""},
		{"empty", "", ""},
	}
	u := NewUsers(secret)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := u.Verify(tt.give)
			if tt.want == "" {
				assert.ErrorIs(t, err, ticketrush.ErrUnauthenticated)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUsersCacheHonoursExpiry(t *testing.T) {
	start := time.Now()
	u := NewUsers(secret)
	u.now = func() time.Time { return start }
	tok, err := Mint(secret, "fan_1", time.Minute, start)
	require.NoError(t, err)
	for range 2 { // the second is a cache hit
		got, err := u.Verify(tok)
		require.NoError(t, err)
		assert.Equal(t, "fan_1", got)
	}
	u.now = func() time.Time { return start.Add(time.Minute + leeway + time.Second) }
	_, err = u.Verify(tok)
	assert.ErrorIs(t, err, ticketrush.ErrUnauthenticated, "a cached token still expires")
}

// TestUsersCacheKeysWholeToken: while a token is cached and still valid, a token that shares all of it
// but its last characters (a forged signature) is verified afresh and refused, and another user's token
// (which shares the header) gets its own user: a cache keyed by a prefix would let either through.
func TestUsersCacheKeysWholeToken(t *testing.T) {
	start := time.Now()
	u := NewUsers(secret)
	u.now = func() time.Time { return start }
	tok, err := Mint(secret, "fan_1", time.Hour, start)
	require.NoError(t, err)
	got, err := u.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, "fan_1", got)

	tail := "xx"
	if strings.HasSuffix(tok, tail) {
		tail = "yy"
	}
	forged := tok[:len(tok)-len(tail)] + tail
	_, err = u.Verify(forged)
	assert.ErrorIs(t, err, ticketrush.ErrUnauthenticated, "a token that shares a cached token's prefix is not a hit")
	forged = tok[:strings.LastIndexByte(tok, '.')+1] + strings.Repeat("A", 43)
	_, err = u.Verify(forged)
	assert.ErrorIs(t, err, ticketrush.ErrUnauthenticated, "a cached token's body with another signature is not a hit")

	other, err := Mint(secret, "fan_2", time.Hour, start)
	require.NoError(t, err)
	got, err = u.Verify(other)
	require.NoError(t, err)
	assert.Equal(t, "fan_2", got, "another user's token is not a hit on fan_1's entry")
	got, err = u.Verify(tok)
	require.NoError(t, err)
	assert.Equal(t, "fan_1", got)
}

func TestUsersCacheIsBounded(t *testing.T) {
	u := NewUsers(secret)
	u.cache.perShard = 8
	for i := 0; i < cacheShards*u.cache.perShard*4; i++ {
		tok, err := Mint(secret, fmt.Sprintf("fan_%d", i), time.Hour, time.Now())
		require.NoError(t, err)
		_, err = u.Verify(tok)
		require.NoError(t, err)
	}
	assertBounded(t, u.cache)
}

// size counts the tokens c keeps.
func (c *cache[V]) size() (n int) {
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += len(c.shards[i].entries)
		c.shards[i].mu.Unlock()
	}
	return n
}

func assertBounded[V any](t *testing.T, c *cache[V]) {
	t.Helper()
	for i := range c.shards {
		assert.LessOrEqual(t, len(c.shards[i].entries), c.perShard)
	}
	assert.Positive(t, c.size())
}

// TestQueueTokenCache: a token that verified is a hit afterwards, with its own claims; another token
// gets its own; a token that did not verify is not kept; and the cache stays within its bound.
func TestQueueTokenCache(t *testing.T) {
	q := NewQueueTokens(secret)
	c1, c2 := NewClaims("c1", "fan-1", 7), NewClaims("c1", "fan-2", 8)
	tok1, tok2 := q.Sign(c1), q.Sign(c2)
	for range 2 { // the second round is answered by the cache
		got, err := q.Verify(tok1)
		require.NoError(t, err)
		assert.Equal(t, c1, got)
		got, err = q.Verify(tok2)
		require.NoError(t, err)
		assert.Equal(t, c2, got, "another fan's token is not a hit on the first one's entry")
	}
	assert.Equal(t, 2, q.cache.size())
	_, err := q.Verify(tok1[:len(tok1)-2] + "AA")
	require.Error(t, err)
	assert.Equal(t, 2, q.cache.size(), "a token that did not verify is not kept")

	q.cache.perShard = 8
	for i := 0; i < cacheShards*q.cache.perShard*4; i++ {
		_, err := q.Verify(q.Sign(NewClaims("c1", fmt.Sprintf("fan-%d", i), uint64(i+1))))
		require.NoError(t, err)
	}
	assertBounded(t, q.cache)
}

func TestMintRefusesBadUser(t *testing.T) {
	_, err := Mint(secret, "", time.Hour, time.Now())
	assert.Error(t, err)
	_, err = Mint(secret, strings.Repeat("a", 65), time.Hour, time.Now())
	assert.Error(t, err)
}

func TestQueueTokenRoundTrip(t *testing.T) {
	q := NewQueueTokens(secret)
	c := NewClaims("c1a2", "fan-9", 123456789)
	tok := q.Sign(c)
	got, err := q.Verify(tok)
	require.NoError(t, err)
	assert.Equal(t, c, got)
	assert.Equal(t, tok, q.Sign(NewClaims("c1a2", "fan-9", 123456789)), "same arrival, same token")
	assert.NotEqual(t, tok, q.Sign(NewClaims("c1a2", "fan-9", 123456790)))
	assert.Equal(t, 5, int(got.ID.Version()), "token ids are name-based UUIDs")
}

func TestQueueTokenRejects(t *testing.T) {
	q := NewQueueTokens(secret)
	tok := q.Sign(NewClaims("c1", "fan", 7))
	other := NewQueueTokens([]byte(strings.Repeat("o", 32))).Sign(NewClaims("c1", "fan", 7))
	body, sig, _ := strings.Cut(tok, ".")
	flipped := []byte(body)
	flipped[3] ^= 1
	tests := []struct {
		name string
		give string
	}{
		{"other secret", other},
		{"altered body", string(flipped) + "." + sig},
		{"altered sig", body + "." + sig[:len(sig)-2] + "AA"},
		{"no dot", body},
		{"empty", ""},
		{"not base64", "!!!.???"},
		{"huge", strings.Repeat("a", 1000)},
		{"sig padding bits altered", body + "." + paddingFlipped(sig)},
		{"body padding bits altered", paddingFlipped(body) + "." + sig},
		{"a line break inside", body[:4] + "\n" + body[4:] + "." + sig},
		{"a line break at the end", tok + "\r\n"},
	}
	// Each is refused while the genuine token is in the cache: a cache keyed by anything less than the
	// whole token (its tail picks the shard) would let the altered body through.
	_, err := q.Verify(tok)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := q.Verify(tt.give)
			assert.ErrorIs(t, err, ticketrush.ErrQueueTokenInvalid)
		})
	}
}

// paddingFlipped changes the unused low bits of a raw base64url string's last character: lenient
// decoding reads the same bytes, strict decoding refuses it.
func paddingFlipped(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return s[:len(s)-1] + string(alphabet[i^1])
}

func TestUsersRefuseHugeJWT(t *testing.T) {
	u := NewUsers(secret)
	huge, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "fan_1",
		"exp": time.Now().Add(time.Hour).Unix(), "pad": strings.Repeat("p", 8<<10)}).SignedString(secret)
	require.NoError(t, err)
	_, err = u.Verify(huge)
	require.ErrorIs(t, err, ticketrush.ErrUnauthenticated, "a validly signed 8 KiB JWT is refused unparsed")
	assert.Contains(t, err.Error(), "over 4096 bytes")
}

func TestUsersIssuerAudience(t *testing.T) {
	now := time.Now()
	mint := func(iss, aud string) string {
		c := jwt.MapClaims{"sub": "fan_1", "exp": now.Add(time.Hour).Unix()}
		if iss != "" {
			c["iss"] = iss
		}
		if aud != "" {
			c["aud"] = aud
		}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
		require.NoError(t, err)
		return tok
	}
	tests := []struct {
		name     string
		iss, aud string
		give     string
		wantOK   bool
	}{
		{"nothing required", "", "", mint("", ""), true},
		{"both required, both right", "login", "tr", mint("login", "tr"), true},
		{"issuer missing", "login", "", mint("", ""), false},
		{"issuer wrong", "login", "", mint("evil", ""), false},
		{"audience missing", "", "tr", mint("login", ""), false},
		{"audience wrong", "", "tr", mint("", "other"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewUsers(secret, WithIssuer(tt.iss), WithAudience(tt.aud)).Verify(tt.give)
			if tt.wantOK {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ticketrush.ErrUnauthenticated)
			}
		})
	}
}

// FuzzUsersVerify: no input panics, and only tokens signed with the secret for a valid user verify.
func FuzzUsersVerify(f *testing.F) {
	good, err := Mint(secret, "fan_1", time.Hour, time.Now())
	require.NoError(f, err)
	f.Add(good)
	f.Add("abc.def.ghi")
	f.Add("")
	u := NewUsers(secret)
	f.Fuzz(func(t *testing.T, s string) {
		user, err := u.Verify(s)
		if err != nil {
			assert.ErrorIs(t, err, ticketrush.ErrUnauthenticated)
			return
		}
		assert.True(t, ticketrush.ValidUserID(user))
		var claims jwt.RegisteredClaims
		_, perr := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"})).ParseWithClaims(s, &claims,
			func(*jwt.Token) (any, error) { return secret, nil })
		assert.NoError(t, perr, "a verified token is one signed with the secret")
	})
}

func FuzzQueueTokenVerify(f *testing.F) {
	q := NewQueueTokens(secret)
	tok := q.Sign(NewClaims("c1", "fan", 7))
	body, sig, _ := strings.Cut(tok, ".")
	f.Add(tok)
	f.Add(body + "." + paddingFlipped(sig))
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := q.Verify(s)
		if err == nil {
			assert.Equal(t, s, q.Sign(c), "only tokens we signed verify")
		}
	})
}

func BenchmarkQueueTokenVerify(b *testing.B) {
	q := NewQueueTokens(secret)
	tok := q.Sign(NewClaims("c1a2b3c4d5e6", "fan-123456", 987654))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}
