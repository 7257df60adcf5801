package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// conventions checks docs/api.md "Conventions" and "Credentials": bodies, problems, user JWTs, queue
// tokens, idempotency keys and the admin bearer.
func conventions(t *testing.T, s *server) {
	t.Run("Bodies", func(t *testing.T) {
		t.Parallel()
		f := s.newFan(t)
		r := s.do(t, "POST", "/v1/points/charges", `{"amount":1,"currency":"KRW"}`, f.h("")...)
		expectProblem(t, "Conventions: request bodies reject unknown fields (400 INVALID_REQUEST)", r, 400, "INVALID_REQUEST")

		big := `{"amount":1` + strings.Repeat(" ", 65<<10) + `}` // valid JSON, only its size is wrong
		r = s.do(t, "POST", "/v1/points/charges", big, f.h("")...)
		expectProblem(t, "Conventions: request bodies reject anything over 64 KiB (413)", r, 413, "PAYLOAD_TOO_LARGE")
		promise(t, "Conventions: a refused body does nothing", s.balance(t, f) == 0, "balance after two refused charges is not 0")

		r = s.do(t, "GET", "/v1/no-such-route", nil, f.h("")...)
		expectProblem(t, "Conventions: every error is RFC 9457 (an unknown route: 404 NOT_FOUND)", r, 404, "NOT_FOUND")

		// The calls that take no body hold one to the same rules: {} is no field at all.
		c := s.createConcert(t, concertSpec{Seats: 2, Price: 1000})
		tok := s.admitted(t, f, c.ID)
		res := s.mustHold(t, f, tok, c.Schedules[0].ID, "R-1")
		for _, call := range []struct{ method, path string }{
			{"POST", "/v1/concerts/" + c.ID + "/queue/challenge"},
			{"DELETE", "/v1/reservations/" + res.ID},
			{"DELETE", "/v1/queue"},
		} {
			r = s.do(t, call.method, call.path, `{"extra":1}`, f.h(tok)...)
			expectProblem(t, "Conventions: request bodies reject unknown fields (400 INVALID_REQUEST): "+call.method+" "+call.path, r, 400, "INVALID_REQUEST")
			r = s.do(t, call.method, call.path, `{}`+strings.Repeat(" ", 65<<10), f.h(tok)...)
			expectProblem(t, "Conventions: request bodies reject anything over 64 KiB (413): "+call.method+" "+call.path, r, 413, "PAYLOAD_TOO_LARGE")
		}
		r = s.do(t, "DELETE", "/v1/reservations/"+res.ID, `{}`, f.h("")...)
		expectStatus(t, "Reservations: DELETE /v1/reservations/{id} → 204 (with an empty JSON object for a body)", r, 204)
	})

	t.Run("ErrorDetails", func(t *testing.T) {
		t.Parallel()
		f := s.newFan(t)
		// RFC 9457: detail is "a human-readable explanation specific to this occurrence of the problem".
		r := s.do(t, "POST", "/v1/points/charges", `{"amount":143000`, f.h("")...)
		if expectProblem(t, "Conventions: a truncated JSON body is 400 INVALID_REQUEST", r, 400, "INVALID_REQUEST") {
			d := strings.ToLower(detail(r))
			promise(t, "Conventions: every error is RFC 9457 problem+json; its detail says what is wrong (a truncated body: the JSON is malformed or cut short, not empty)",
				strings.Contains(d, "json") && !strings.Contains(d, "empty"), "detail %q for the body {\"amount\":143000", detail(r))
		}
		r = s.do(t, "POST", "/v1/points/charges", `[]`, f.h("")...)
		if expectProblem(t, "Conventions: a body that is not a JSON object is 400 INVALID_REQUEST", r, 400, "INVALID_REQUEST") {
			d := strings.ToLower(detail(r))
			promise(t, "Conventions: every error is RFC 9457 problem+json; its detail says what is wrong (the body [] must be a JSON object)",
				strings.Contains(d, "object") && !strings.Contains(d, `field ""`), "detail %q for the body []", detail(r))
		}
	})

	t.Run("UserJWT", func(t *testing.T) {
		t.Parallel()
		const sentence = "Conventions: any other algorithm, a missing exp, an expired or badly signed token: 401 UNAUTHENTICATED"
		id := s.newFan(t).id
		hour := time.Now().Add(time.Hour).Unix()
		for _, tt := range []struct {
			name, token string
		}{
			{"no Authorization", ""},
			{"missing exp", s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": id})},
			{"HS384", s.mint(t, jwt.SigningMethodHS384, s.jwtSecret, jwt.MapClaims{"sub": id, "exp": hour})},
			{"alg none", s.mint(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": id, "exp": hour})},
			{"bad signature", s.mint(t, jwt.SigningMethodHS256, []byte(secret()), jwt.MapClaims{"sub": id, "exp": hour})},
			{"expired a minute ago", s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": id, "exp": time.Now().Add(-time.Minute).Unix()})},
			{"expired a second ago", s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": id, "exp": time.Now().Unix() - 1})},
			{"sub not [A-Za-z0-9_-]", s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": "a b/c", "exp": hour})},
			{"sub of 65 chars", s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": strings.Repeat("a", 65), "exp": hour})},
		} {
			var h []string
			if tt.token != "" {
				h = []string{"Authorization", "Bearer " + tt.token}
			}
			r := s.do(t, "GET", "/v1/points", nil, h...)
			expectProblem(t, sentence+" ("+tt.name+")", r, 401, "UNAUTHENTICATED")
		}
		// However many, from one address: each is 401, not 429 (the limit is each user's, and the public
		// endpoints' each address).
		expired := s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": id, "exp": time.Now().Add(-time.Minute).Unix()})
		for i := range 60 {
			r := s.do(t, "GET", "/v1/points", nil, "Authorization", "Bearer "+expired)
			if !expectProblem(t, sentence+fmt.Sprintf(" (an expired token, request %d of 60 in a row)", i+1), r, 401, "UNAUTHENTICATED") {
				break
			}
		}
		// The same claims, rightly signed, pass: the refusals above are for what the case changed.
		ok := s.mint(t, jwt.SigningMethodHS256, s.jwtSecret, jwt.MapClaims{"sub": id, "exp": hour})
		r := s.do(t, "GET", "/v1/points", nil, "Authorization", "Bearer "+ok)
		expectStatus(t, "Conventions: Authorization: Bearer <user JWT>: HS256, signed with JWT_SECRET, claims sub and exp", r, 200)
	})

	t.Run("QueueTokens", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"activeCapacity": 1}})
		other := s.createConcert(t, concertSpec{})
		a, b := s.newFan(t), s.newFan(t)
		aTok := s.admitted(t, a, c.ID)
		bt := s.mustJoin(t, b, c.ID)
		promiseNow(t, "Queue: admission is FIFO by arrival (capacity 1, one ACTIVE: the next waits)", bt.Status == "WAITING", "second fan: %+v", bt)
		schedules := "/v1/concerts/" + c.ID + "/schedules"

		r := s.do(t, "GET", schedules, nil, a.h(aTok)...)
		expectStatus(t, "Catalog (gated): GET /v1/concerts/{concertId}/schedules → 200 with an ACTIVE token", r, 200)

		const invalid = "Conventions: forged, altered, another user's or another concert's token: 401 QUEUE_TOKEN_INVALID"
		r = s.do(t, "GET", schedules, nil, a.h("forged.token")...)
		expectProblem(t, invalid+" (forged)", r, 401, "QUEUE_TOKEN_INVALID")
		r = s.do(t, "GET", schedules, nil, a.h(alter(aTok))...)
		expectProblem(t, invalid+" (altered)", r, 401, "QUEUE_TOKEN_INVALID")
		r = s.do(t, "GET", schedules, nil, b.h(aTok)...)
		expectProblem(t, invalid+" (another user's)", r, 401, "QUEUE_TOKEN_INVALID")
		otherTok := s.admitted(t, a, other.ID)
		r = s.do(t, "GET", schedules, nil, a.h(otherTok)...)
		expectProblem(t, invalid+" (another concert's)", r, 401, "QUEUE_TOKEN_INVALID")
		r = s.hold(t, a, otherTok, c.Schedules[0].ID, "R-1")
		expectProblem(t, invalid+" (another concert's, on a hold)", r, 401, "QUEUE_TOKEN_INVALID")

		r = s.do(t, "GET", schedules, nil, b.h(bt.Token)...)
		expectProblem(t, "Conventions: a gated call with a token still WAITING: 403 QUEUE_NOT_ACTIVE", r, 403, "QUEUE_NOT_ACTIVE")

		r = s.do(t, "DELETE", "/v1/queue", nil, a.h(aTok)...)
		expectStatus(t, "Queue: DELETE /v1/queue → 204", r, 204)
		r = s.do(t, "GET", schedules, nil, a.h(aTok)...)
		expectProblem(t, "Conventions: a gated call with an EXPIRED or DONE token: 410 QUEUE_TOKEN_EXPIRED", r, 410, "QUEUE_TOKEN_EXPIRED")
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		t.Parallel()
		f, g := s.newFan(t), s.newFan(t)
		const replay = "Conventions: Idempotency-Key: a retry with the same key and the same body returns the first response again without acting twice"
		first := s.charge(t, f, 500, "Idempotency-Key", "charge-1")
		promiseNow(t, "Points: POST /v1/points/charges → 201", first.status == 201, "got %s", first)
		again := s.charge(t, f, 500, "Idempotency-Key", "charge-1")
		var c1, c2 struct {
			ID      string `json:"id"`
			Balance int64  `json:"balance"`
		}
		_ = json.Unmarshal(first.body, &c1)
		_ = json.Unmarshal(again.body, &c2)
		promise(t, replay, again.status == first.status && c2.ID == c1.ID && c2.Balance == c1.Balance,
			"first %s; retry %s", first, again)
		promise(t, replay, s.balance(t, f) == 500, "balance after a charge of 500 and its retry is %d", s.balance(t, f))

		r := s.charge(t, f, 600, "Idempotency-Key", "charge-1")
		expectProblem(t, "Conventions: the same Idempotency-Key with a different body is 409 IDEMPOTENCY_CONFLICT", r, 409, "IDEMPOTENCY_CONFLICT")
		promise(t, "Conventions: an IDEMPOTENCY_CONFLICT acts not at all", s.balance(t, f) == 500, "balance %d, want 500", s.balance(t, f))

		r = s.charge(t, g, 700, "Idempotency-Key", "charge-1")
		var c3 struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(r.body, &c3)
		promise(t, "Conventions: Idempotency-Keys are scoped to the user", r.status == 201 && c3.ID != "" && c3.ID != c1.ID,
			"another user's charge with the same key: %s", r)

		// Printable characters: the space is one.
		spaced := s.charge(t, g, 100, "Idempotency-Key", "order 7 ~!")
		spacedAgain := s.charge(t, g, 100, "Idempotency-Key", "order 7 ~!")
		promise(t, "Conventions: Idempotency-Key (1-64 printable chars)", spaced.status == 201 && spacedAgain.status == 201 &&
			string(spaced.body) == string(spacedAgain.body), "a key with spaces: %s; again: %s", spaced, spacedAgain)
		r = s.charge(t, g, 100, "Idempotency-Key", "tab\tinside")
		expectProblem(t, "Conventions: Idempotency-Key (1-64 printable chars): a tab is not one", r, 400, "INVALID_REQUEST")
		r = s.charge(t, g, 100, "Idempotency-Key", "")
		expectProblem(t, "Conventions: Idempotency-Key (1-64 printable chars): an empty one is not a key", r, 400, "INVALID_REQUEST")
	})

	t.Run("AdminBearer", func(t *testing.T) {
		t.Parallel()
		const sentence = "Conventions: admin endpoints take Authorization: Bearer <ADMIN_TOKEN>; anything else is 401 UNAUTHENTICATED"
		c := s.createConcert(t, concertSpec{})
		path := "/admin/v1/concerts/" + c.ID + "/queue"
		for _, tt := range []struct {
			name string
			h    []string
		}{
			{"none", nil},
			{"wrong token", []string{"Authorization", "Bearer " + secret()}},
			{"the admin token with a character changed", []string{"Authorization", "Bearer " + alter(s.adminToken)}},
			{"a user JWT", s.newFan(t).h("")},
			{"not Bearer", []string{"Authorization", "Basic " + s.adminToken}},
		} {
			expectProblem(t, sentence+" ("+tt.name+")", s.do(t, "GET", path, nil, tt.h...), 401, "UNAUTHENTICATED")
		}
		r := s.do(t, "POST", "/admin/v1/concerts", map[string]any{"title": "x", "venue": "y",
			"schedules": []string{"2026-12-24T10:00:00Z"}, "sections": []map[string]any{{"name": "R", "price": 1, "seats": 1}}},
			"Authorization", "Bearer "+secret())
		expectProblem(t, sentence+" (create)", r, 401, "UNAUTHENTICATED")
	})
}

// alter changes one character in the middle of s to another of the same kind.
func alter(s string) string {
	b := []byte(s)
	i := len(b) / 2
	for ; i < len(b); i++ {
		c := b[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			break
		}
	}
	if i == len(b) {
		return s + "x"
	}
	switch {
	case b[i] >= '0' && b[i] <= '8', b[i] >= 'a' && b[i] < 'z', b[i] >= 'A' && b[i] < 'Z':
		b[i]++
	default:
		b[i]--
	}
	return string(b)
}
