// Package auth verifies the two credentials of the API: user JWTs (HS256, minted by a login service
// outside the project) and queue tokens (HMAC-signed by this service, checked without touching Redis).
package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketrush/ticketrush/internal/flatjson"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Users verifies user JWTs. A fan presents the same JWT on every poll, so verified tokens are kept in a
// bounded cache (each hit still checks exp; about 30 MiB at most): parsing a JWT is most of the cost of
// a poll otherwise.
type Users struct {
	secret   []byte
	parser   *jwt.Parser
	iss, aud string // the required iss and aud, when set (for the fast path; the parser has them too)
	now      func() time.Time
	cache    *cache[verified]
}

// leeway is the clock skew allowed on exp and nbf: none, as docs/api.md has it (an expired token is 401 from
// its exp on; RFC 7519 allows a small leeway, the contract does not).
const leeway = 0

type verified struct {
	user string
	exp  time.Time
}

// MaxJWTBytes bounds a JWT: ours are a few hundred bytes, and a longer one is refused before it is
// decoded or parsed.
const MaxJWTBytes = 4096

// UsersOption is an optional rule of NewUsers.
type UsersOption func(u *Users, po *[]jwt.ParserOption)

// WithIssuer requires the JWT's iss to be issuer (JWT_ISSUER); empty requires nothing.
func WithIssuer(issuer string) UsersOption {
	return func(u *Users, o *[]jwt.ParserOption) {
		if issuer != "" {
			u.iss, *o = issuer, append(*o, jwt.WithIssuer(issuer))
		}
	}
}

// WithAudience requires the JWT's aud to name audience (JWT_AUDIENCE); empty requires nothing.
func WithAudience(audience string) UsersOption {
	return func(u *Users, o *[]jwt.ParserOption) {
		if audience != "" {
			u.aud, *o = audience, append(*o, jwt.WithAudience(audience))
		}
	}
}

// NewUsers returns a verifier for JWTs signed with secret.
func NewUsers(secret []byte, opts ...UsersOption) *Users {
	u := &Users{now: time.Now, cache: newCache[verified](), secret: secret}
	po := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(func() time.Time { return u.now() }),
	}
	for _, o := range opts {
		o(u, &po)
	}
	u.parser = jwt.NewParser(po...)
	return u
}

// Verify returns the user id of a valid token, or ticketrush.ErrUnauthenticated.
func (u *Users) Verify(token string) (string, error) {
	if len(token) > MaxJWTBytes {
		return "", ticketrush.WithDetail(ticketrush.ErrUnauthenticated,
			fmt.Sprintf("the bearer token is over %d bytes: not a JWT of this service", MaxJWTBytes))
	}
	if hit, ok := u.cache.get(token); ok && u.now().Before(hit.exp.Add(leeway)) {
		return hit.user, nil
	}
	user, exp, err := u.verify(token)
	if err != nil {
		return "", err
	}
	u.cache.put(token, verified{user: user, exp: exp})
	return user, nil
}

func (u *Users) verify(token string) (string, time.Time, error) {
	if user, exp, ok := u.fastVerify(token); ok {
		return user, exp, nil
	}
	var claims jwt.RegisteredClaims
	_, err := u.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return u.secret, nil })
	if err != nil {
		return "", time.Time{}, ticketrush.WithDetail(ticketrush.ErrUnauthenticated, jwtProblem(err, claims))
	}
	if !ticketrush.ValidUserID(claims.Subject) {
		return "", time.Time{}, ticketrush.WithDetail(ticketrush.ErrUnauthenticated, "the JWT's sub must be a user id of "+ticketrush.UserIDRule)
	}
	return claims.Subject, claims.ExpiresAt.Time, nil
}

// fastVerify accepts the JWTs a login service mints (a header of alg HS256 and perhaps typ; claims of
// strings and integers) with the library's own signature check but without its JSON and its maps: a
// fresh JWT costs 1.3 µs and 12 allocations this way, 4.6 µs and 46 by the library's parser
// (BenchmarkUsersVerifyFresh), half of a join handler's CPU. It reports ok only for a token the
// library accepts too, with the same user and expiry (FuzzFastVerifyAgrees); any other token, and
// every refusal with its reason, is the library's.
func (u *Users) fastVerify(token string) (user string, exp time.Time, ok bool) {
	head, rest, _ := strings.Cut(token, ".")
	payload, sig64, _ := strings.Cut(rest, ".")
	if strings.Contains(sig64, ".") || len(head)+len(payload)+len(sig64)+2 != len(token) {
		return "", time.Time{}, false // not three segments
	}
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil || jwt.SigningMethodHS256.Verify(token[:len(head)+1+len(payload)], sig, u.secret) != nil {
		return "", time.Time{}, false
	}
	header, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return "", time.Time{}, false
	}
	alg := ""
	if !flatjson.Fields(string(header), func(key, v string, q bool) bool {
		switch key {
		case "alg":
			alg = v
			return q
		case "typ":
			return q
		}
		return false
	}) || alg != jwt.SigningMethodHS256.Alg() {
		return "", time.Time{}, false
	}
	claims, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", time.Time{}, false
	}
	// An absent exp reads as 0, the epoch, which the expiry check below refuses (the parser requires
	// exp); an absent nbf as 0, which it passes.
	var iss, aud string
	var expAt, nbf int64
	if !flatjson.Fields(string(claims), func(key, v string, q bool) (ok bool) {
		switch key {
		case "sub":
			user, ok = v, q
		case "iss":
			iss, ok = v, q
		case "aud":
			aud, ok = v, q
		case "jti":
			ok = q
		case "exp":
			expAt, ok = flatjson.Int(v, q)
		case "nbf":
			nbf, ok = flatjson.Int(v, q)
		case "iat":
			_, ok = flatjson.Int(v, q)
		}
		return ok
	}) || iss != u.iss && u.iss != "" || aud != u.aud && u.aud != "" || !ticketrush.ValidUserID(user) {
		return "", time.Time{}, false
	}
	now, exp := u.now(), time.Unix(expAt, 0)
	if !now.Before(exp.Add(leeway)) || now.Before(time.Unix(nbf, 0).Add(-leeway)) {
		return "", time.Time{}, false
	}
	return user, exp, true
}

// jwtProblem says why a JWT was refused, in words a client can act on.
func jwtProblem(err error, claims jwt.RegisteredClaims) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the bearer token is not a JWT"
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the JWT's signature does not verify: it must be HS256, signed with the service's JWT_SECRET"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the JWT has no exp claim; tokens must expire"
	case errors.Is(err, jwt.ErrTokenExpired):
		at := "its exp"
		if claims.ExpiresAt != nil {
			at = claims.ExpiresAt.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("the JWT expired at %s; get a new one", at)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the JWT's iss is not the issuer this service trusts (JWT_ISSUER)"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the JWT's aud does not name this service (JWT_AUDIENCE)"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the JWT is not valid yet (nbf or iat in the future)"
	}
	return "the JWT is not valid: " + err.Error()
}

// Mint signs a user JWT: for development and tests; production tokens come from the login service.
func Mint(secret []byte, userID string, ttl time.Duration, now time.Time) (string, error) {
	if !ticketrush.ValidUserID(userID) {
		return "", fmt.Errorf("user id %q: want %s", userID, ticketrush.UserIDRule)
	}
	claims := jwt.RegisteredClaims{
		Subject:   userID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}
