// Package gate verifies admission passes (docs/gate.md): Ed25519 JWTs the service hands an ACTIVE fan,
// checked here with the published key set alone. It holds the verifier, the key set's cache and the
// reverse proxy that puts a pass in front of any site (ticketrush gate). The verifier uses the standard
// library only, so what it does can be read in one sitting and copied by an origin.
package gate

import "net/http"

// Code says why a pass was refused: the problem document's code and the refusal metric's label.
type Code string

// The gate's codes, one row each in codes below.
const (
	PassMissing         Code = "PASS_MISSING"
	PassMalformed       Code = "PASS_MALFORMED"
	PassBadAlgorithm    Code = "PASS_BAD_ALGORITHM"
	PassUnknownKey      Code = "PASS_UNKNOWN_KEY"
	PassBadSignature    Code = "PASS_BAD_SIGNATURE"
	PassExpired         Code = "PASS_EXPIRED"
	PassNotYetValid     Code = "PASS_NOT_YET_VALID"
	PassWrongConcert    Code = "PASS_WRONG_CONCERT"
	PassWrongIssuer     Code = "PASS_WRONG_ISSUER"
	PassKeysUnavailable Code = "PASS_KEYS_UNAVAILABLE"
)

// codeInfo is a code's status and title. Every refusal of a pass is 403 (a page request is redirected to
// the waiting room instead); only a key set the gate cannot get is 503, failing closed.
type codeInfo struct {
	status int
	title  string
}

var codes = map[Code]codeInfo{
	PassMissing:         {http.StatusForbidden, "Admission pass missing"},
	PassMalformed:       {http.StatusForbidden, "Admission pass malformed"},
	PassBadAlgorithm:    {http.StatusForbidden, "Admission pass algorithm refused"},
	PassUnknownKey:      {http.StatusForbidden, "Admission pass signed by an unknown key"},
	PassBadSignature:    {http.StatusForbidden, "Admission pass signature invalid"},
	PassExpired:         {http.StatusForbidden, "Admission pass expired"},
	PassNotYetValid:     {http.StatusForbidden, "Admission pass not yet valid"},
	PassWrongConcert:    {http.StatusForbidden, "Admission pass for another concert"},
	PassWrongIssuer:     {http.StatusForbidden, "Admission pass from another issuer"},
	PassKeysUnavailable: {http.StatusServiceUnavailable, "Admission keys unavailable"},
}

// Refusal is a pass the verifier does not accept, with its code and a sentence saying what is wrong.
type Refusal struct {
	Code   Code
	Detail string
}

func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Detail }

func refuse(code Code, detail string) *Refusal { return &Refusal{Code: code, Detail: detail} }
