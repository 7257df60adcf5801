package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// signed is a JWT of the given header and claims (JSON, as given) signed with HS256 and key.
func signed(key []byte, header, claims string) string {
	text := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(text))
	return text + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// TestFastVerify: the JWTs a login service mints are read without the library's JSON; what the fast path
// does not read (an aud list, a header field more, a fractional exp, an exp in quotes, which json.Number
// takes) is the library's, which accepts or refuses it as it does alone; and the fast path refuses what
// the library refuses.
func TestFastVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	u := NewUsers(secret, WithIssuer("login"), WithAudience("ticketrush"))
	u.now = func() time.Time { return now }
	plain := NewUsers(secret)
	plain.now = u.now

	minted, err := Mint(secret, "fan_1", time.Hour, now)
	require.NoError(t, err)
	user, at, ok := plain.fastVerify(minted)
	require.True(t, ok, "Mint's token")
	assert.Equal(t, "fan_1", user)
	assert.Equal(t, now.Add(time.Hour), at)

	hs256 := `{"alg":"HS256","typ":"JWT"}`
	full := signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`,"nbf":1799999990,"iat":1799999990,"jti":"j-1"}`)
	user, _, ok = u.fastVerify(full)
	require.True(t, ok, "every registered claim")
	assert.Equal(t, "fan_2", user)

	for name, tok := range map[string]string{
		"an aud list":      signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":["ticketrush","x"],"exp":`+exp+`}`),
		"a kid":            signed(secret, `{"alg":"HS256","typ":"JWT","kid":"k1"}`, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`),
		"a fractional exp": signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`.5}`),
		"an exp in quotes": signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":"`+exp+`"}`),
	} {
		_, _, ok := u.fastVerify(tok)
		assert.False(t, ok, name)
		user, err := u.Verify(tok)
		require.NoError(t, err, "%s: the library's", name)
		assert.Equal(t, "fan_2", user, name)
	}

	for name, tok := range map[string]string{
		"another key":       signed([]byte("another key of at least 32 bytes"), hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`),
		"HS384 in header":   signed(secret, `{"alg":"HS384"}`, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`),
		"no exp":            signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush"}`),
		"expired":           signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":1799999990}`),
		"expired a second":  signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":1799999999}`),
		"expired now":       signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":1800000000}`),
		"not yet":           signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`,"nbf":1800000006}`),
		"another issuer":    signed(secret, hs256, `{"iss":"other","sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`),
		"no issuer":         signed(secret, hs256, `{"sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`),
		"another audience":  signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"other","exp":`+exp+`}`),
		"a sub of a space":  signed(secret, hs256, `{"iss":"login","sub":"fan 2","aud":"ticketrush","exp":`+exp+`}`),
		"two segments":      signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`)[:20],
		"four segments":     signed(secret, hs256, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`) + ".x",
		"a header not JSON": signed(secret, `alg HS256`, `{"iss":"login","sub":"fan_2","aud":"ticketrush","exp":`+exp+`}`),
	} {
		_, _, ok := u.fastVerify(tok)
		lib := u.parser.Parse
		_, libErr := lib(tok, func(*jwt.Token) (any, error) { return secret, nil })
		if strings.HasPrefix(name, "expired") {
			assert.Error(t, libErr, "%s: the library refuses it too", name)
		}
		assert.False(t, ok, name)
		_, err := u.Verify(tok)
		assert.Error(t, err, name)
	}
}

// FuzzFastVerifyAgrees: a token the fast path accepts, the library accepts too, for the same user and
// expiry, with and without a required issuer and audience, at any time.
func FuzzFastVerifyAgrees(f *testing.F) {
	f.Add(`{"alg":"HS256","typ":"JWT"}`, `{"sub":"fan_1","exp":1800003600,"iat":1800000000}`, int64(0))
	f.Add(`{"alg":"HS256"}`, `{"iss":"login","sub":"fan_1","aud":"ticketrush","exp":1800000004,"nbf":1800000005}`, int64(-3))
	f.Add(`{"typ":"JWT","alg":"HS256"}`, `{"sub":"fan_1","exp":9007199254740993}`, int64(7))
	f.Add(`{"alg":"HS256"}`, `{"sub":"fan_1","exp":1800000000,"exp":null}`, int64(0))
	f.Fuzz(func(t *testing.T, header, claims string, delta int64) {
		now := time.Unix(1_800_000_000, 0).Add(time.Duration(delta%1e6) * time.Second)
		tok := signed(secret, header, claims)
		for _, u := range []*Users{NewUsers(secret), NewUsers(secret, WithIssuer("login"), WithAudience("ticketrush"))} {
			u.now = func() time.Time { return now }
			user, exp, ok := u.fastVerify(tok)
			if !ok {
				continue
			}
			var c jwt.RegisteredClaims
			_, err := u.parser.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return secret, nil })
			require.NoError(t, err, "%s %s: the fast path accepted it", header, claims)
			assert.Equal(t, c.Subject, user)
			assert.True(t, c.ExpiresAt.Time.Equal(exp), "exp %v against %v", exp, c.ExpiresAt.Time)
		}
	})
}

// BenchmarkUsersVerifyFresh: a JWT seen for the first time (a fan's first call: a join), verified by
// the service (the fast path) and by the library alone.
// `go test -run x -bench UsersVerifyFresh ./internal/auth`
func BenchmarkUsersVerifyFresh(b *testing.B) {
	now := time.Now()
	tokens := make([]string, 1024)
	for i := range tokens {
		var err error
		tokens[i], err = Mint(secret, "fan_"+strconv.Itoa(i), time.Hour, now)
		require.NoError(b, err)
	}
	u := NewUsers(secret)
	b.Run("service", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := u.verify(tokens[i%len(tokens)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var c jwt.RegisteredClaims
			if _, err := u.parser.ParseWithClaims(tokens[i%len(tokens)], &c, func(*jwt.Token) (any, error) { return secret, nil }); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
