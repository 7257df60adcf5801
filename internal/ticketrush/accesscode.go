package ticketrush

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// Presale access codes (docs/api.md Abuse): 80 random bits, written as 16 characters of base32, kept only
// as their SHA-256 (a leaked table gives nobody a code).
const (
	MaxAccessCodes = 100_000 // per admin call
	accessCodeLen  = 16
)

var codeEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAccessCode returns a fresh code.
func NewAccessCode() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return codeEncoding.EncodeToString(b[:])
}

// HashAccessCode returns the stored form of a code: hex SHA-256 of it, upper-cased first (a fan may type
// it in either case). "" for a code that cannot be one of ours, so it is never looked up.
func HashAccessCode(code string) string {
	code = strings.ToUpper(strings.TrimSpace(code))
	if len(code) != accessCodeLen {
		return ""
	}
	if _, err := codeEncoding.DecodeString(code); err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}
