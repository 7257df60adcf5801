// Package auth verifies the two credentials of the API: user JWTs (HS256, minted by a login service
// outside the project) and queue tokens (HMAC-signed by this service, checked without touching Redis).
package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Users verifies user JWTs. A fan presents the same JWT on every poll, so verified tokens are kept in a
// bounded cache (each hit still checks exp; about 30 MiB at most): parsing a JWT is most of the cost of
// a poll otherwise.
type Users struct {
	secret []byte
	parser *jwt.Parser
	now    func() time.Time
	cache  *cache[verified]
}

const leeway = 5 * time.Second

type verified struct {
	user string
	exp  time.Time
}

// MaxJWTBytes bounds a JWT: ours are a few hundred bytes, and a longer one is refused before it is
// decoded or parsed.
const MaxJWTBytes = 4096

// UsersOption is an optional rule of NewUsers.
type UsersOption func(*[]jwt.ParserOption)

// WithIssuer requires the JWT's iss to be issuer (JWT_ISSUER); empty requires nothing.
func WithIssuer(issuer string) UsersOption {
	return func(o *[]jwt.ParserOption) {
		if issuer != "" {
			*o = append(*o, jwt.WithIssuer(issuer))
		}
	}
}

// WithAudience requires the JWT's aud to name audience (JWT_AUDIENCE); empty requires nothing.
func WithAudience(audience string) UsersOption {
	return func(o *[]jwt.ParserOption) {
		if audience != "" {
			*o = append(*o, jwt.WithAudience(audience))
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
		o(&po)
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
	var claims jwt.RegisteredClaims
	_, err := u.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return u.secret, nil })
	if err != nil {
		return "", time.Time{}, ticketrush.WithDetail(ticketrush.ErrUnauthenticated, jwtProblem(err, claims))
	}
	if !ticketrush.ValidUserID(claims.Subject) {
		return "", time.Time{}, ticketrush.WithDetail(ticketrush.ErrUnauthenticated, "the JWT's sub must be a user id of 1-64 chars of [A-Za-z0-9_-]")
	}
	return claims.Subject, claims.ExpiresAt.Time, nil
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
		return fmt.Sprintf("the JWT expired at %s (%s leeway for clock skew); get a new one", at, leeway)
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
		return "", fmt.Errorf("user id %q: want 1-64 chars of [A-Za-z0-9_-]", userID)
	}
	claims := jwt.RegisteredClaims{
		Subject:   userID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}
