// Package auth verifies the two credentials of the API: user JWTs (HS256, minted by a login service
// outside the project) and queue tokens (HMAC-signed by this service, checked without touching Redis).
package auth

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Users verifies user JWTs.
type Users struct {
	secret []byte
	parser *jwt.Parser
}

// NewUsers returns a verifier for JWTs signed with secret.
func NewUsers(secret []byte) *Users {
	return &Users{
		secret: secret,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(5*time.Second),
		),
	}
}

// Verify returns the user id of a valid token, or ticketrush.ErrUnauthenticated.
func (u *Users) Verify(token string) (string, error) {
	var claims jwt.RegisteredClaims
	_, err := u.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return u.secret, nil })
	if err != nil {
		return "", fmt.Errorf("%w: %v", ticketrush.ErrUnauthenticated, err)
	}
	if !ticketrush.ValidUserID(claims.Subject) {
		return "", fmt.Errorf("%w: sub must be 1-64 chars of [A-Za-z0-9_-]", ticketrush.ErrUnauthenticated)
	}
	return claims.Subject, nil
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
