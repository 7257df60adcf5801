package contract

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// passOf is the queue body's pass member: the pass, or "" for null; ok is false when the member is
// missing or neither a string nor null.
func passOf(r []byte) (pass string, ok bool) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(r, &raw) != nil {
		return "", false
	}
	m, present := raw["pass"]
	if !present {
		return "", false
	}
	if string(m) == "null" {
		return "", true
	}
	return pass, json.Unmarshal(m, &pass) == nil && pass != ""
}

// passClaims are the claims of a pass (Admission pass).
type passClaims struct {
	Iss string `json:"iss"`
	Sub string `json:"sub"`
	Aud string `json:"aud"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
	Jti string `json:"jti"`
}

// verifyPass checks a pass as an origin does, with the key set of GET /.well-known/jwks.json alone:
// the header pins alg EdDSA and typ JWT, its kid names an Ed25519 key of the set, the signature
// verifies. It returns the claims, or why it refused the pass.
func verifyPass(jwks []byte, pass string) (passClaims, string) {
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid, Use, Alg string } `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		return passClaims{}, "key set: " + err.Error()
	}
	parts := strings.Split(pass, ".")
	if len(parts) != 3 {
		return passClaims{}, "not a compact JWS"
	}
	var header map[string]string
	if raw, err := base64.RawURLEncoding.DecodeString(parts[0]); err != nil || json.Unmarshal(raw, &header) != nil {
		return passClaims{}, "header does not decode"
	}
	if header["alg"] != "EdDSA" || header["typ"] != "JWT" || len(header) != 3 {
		return passClaims{}, "header " + parts[0]
	}
	var pub []byte
	for _, k := range set.Keys {
		if k.Kid == header["kid"] && k.Kty == "OKP" && k.Crv == "Ed25519" && k.Use == "sig" && k.Alg == "EdDSA" {
			pub, _ = base64.RawURLEncoding.DecodeString(k.X)
		}
	}
	if len(pub) != ed25519.PublicKeySize {
		return passClaims{}, "no Ed25519 key " + header["kid"] + " in the key set"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return passClaims{}, "the signature does not verify"
	}
	var c passClaims
	if raw, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(raw, &c) != nil {
		return passClaims{}, "claims do not decode"
	}
	return c, ""
}

// admissionPass checks docs/api.md "Admission pass".
func admissionPass(t *testing.T, s *server) {
	keys := s.do(t, "GET", "/.well-known/jwks.json", nil)
	expectStatus(t, "Admission pass: GET /.well-known/jwks.json (no auth)", keys, 200)
	promise(t, "Admission pass: the key set with Cache-Control: public, max-age=...",
		strings.HasPrefix(keys.header.Get("Cache-Control"), "public, max-age="), "Cache-Control %q", keys.header.Get("Cache-Control"))

	c := s.createConcert(t, concertSpec{Seats: 5, Queue: map[string]any{"activeCapacity": 1, "activeTtlSeconds": 120}})
	a, b := s.newFan(t), s.newFan(t)
	live := func(sentence string, f fan, r reply) {
		t.Helper()
		tk := asTicket(t, r)
		p, ok := passOf(r.body)
		if !promise(t, sentence, ok && p != "" && tk.Status == "ACTIVE", "%s", r) {
			return
		}
		claims, why := verifyPass(keys.body, p)
		if !promise(t, "Admission pass: any origin verifies the pass with the key set of /.well-known/jwks.json alone", why == "",
			"%s; pass %s; key set %s", why, p, keys.body) {
			return
		}
		promise(t, "Admission pass: claims iss (PASS_ISSUER, default ticketrush), sub (the user id), aud (the concert id), iat, exp, jti",
			claims.Iss == "ticketrush" && claims.Sub == f.id && claims.Aud == c.ID && claims.Iat > 0 && claims.Jti != "",
			"claims %+v, fan %s, concert %s", claims, f.id, c.ID)
		promise(t, "Admission pass: exp is at most activeUntil", tk.ActiveUntil != nil && claims.Exp <= tk.ActiveUntil.Unix(),
			"exp %d, activeUntil %v", claims.Exp, tk.ActiveUntil)
		promise(t, "Admission pass: exp is at most PASS_TTL_SECONDS (default 300) after iat", claims.Exp <= claims.Iat+300 && claims.Exp > time.Now().Unix(),
			"iat %d exp %d", claims.Iat, claims.Exp)
	}
	none := func(sentence string, r reply) {
		t.Helper()
		p, ok := passOf(r.body)
		promise(t, sentence, ok && p == "", "%s", r)
	}

	r := s.join(t, a, c.ID, nil)
	expectStatus(t, "Queue: POST /v1/concerts/{concertId}/queue → 201 new token", r, 201)
	live("Admission pass: while a token is ACTIVE, the join's body carries pass", a, r)
	at := asTicket(t, r)
	live("Admission pass: while a token is ACTIVE, the poll's body carries pass", a, s.poll(t, a, at.Token))

	r = s.join(t, b, c.ID, nil)
	none("Admission pass: in every other status pass is null (a WAITING join)", r)
	bt := asTicket(t, r)
	none("Admission pass: in every other status pass is null (a WAITING poll)", s.poll(t, b, bt.Token))
	ev := s.openEvents(t, b, bt.Token)
	if first, ok, timedOut := ev.next(10 * time.Second); promise(t, "Queue: the event stream sends the body at once", ok && !timedOut, "status %d %s", ev.status, ev.body) {
		none("Admission pass: in every other status pass is null (a WAITING event)", reply{body: []byte(first.data)})
	}

	expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, a.h(at.Token)...), 204)
	none("Admission pass: no new pass after the fan leaves (pass null)", s.poll(t, a, at.Token))

	s.waitStatus(t, "Queue: DELETE gives back the active slot: the next in line is admitted", b, bt.Token, 20*time.Second, "ACTIVE")
	ev = s.openEvents(t, b, bt.Token)
	if first, ok, timedOut := ev.next(10 * time.Second); promise(t, "Queue: the event stream sends the body at once", ok && !timedOut, "status %d %s", ev.status, ev.body) {
		live("Admission pass: while a token is ACTIVE, the event stream's body carries pass", b,
			reply{call: "GET /v1/queue/events", status: 200, header: map[string][]string{"Content-Type": {"application/json"}}, body: []byte(first.data)})
	}
}
