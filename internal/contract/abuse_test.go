package contract

import (
	"crypto/sha256"
	"encoding/json"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	rateLimited = "Abuse: past the limit the answer is 429 RATE_LIMITED with Retry-After (whole seconds, at least 1), and nothing is done"
	burst       = 40 // USER_RATE_BURST's production default
)

// burstOf sends n copies of one request at once and returns the replies.
func (s *server) burstOf(t testing.TB, n int, method, path string, body any, headers ...string) []reply {
	t.Helper()
	out := make([]reply, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = s.try(method, path, body, headers...) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return out
}

// checkLimited checks every 429 among replies and returns how many of them answered ok and how many 429.
func checkLimited(t testing.TB, replies []reply, ok int) (oks, limited int) {
	t.Helper()
	for _, r := range replies {
		switch r.status {
		case ok:
			oks++
		case http.StatusTooManyRequests:
			limited++
			expectProblem(t, rateLimited, r, 429, "RATE_LIMITED")
			secs, err := strconv.Atoi(r.header.Get("Retry-After"))
			promise(t, rateLimited+" (Retry-After whole seconds, at least 1)", err == nil && secs >= 1, "Retry-After %q", r.header.Get("Retry-After"))
		default:
			promise(t, rateLimited, false, "unexpected %s", r)
		}
	}
	return oks, limited
}

// abuse checks docs/api.md "Abuse: rate limits, proof of work, access codes".
func abuse(t *testing.T, s *server) {
	t.Run("UserRateLimit", func(t *testing.T) {
		t.Parallel()
		const limit = "Abuse: every /v1 endpoint limits each user (USER_RATE_LIMIT 20/s, USER_RATE_BURST 40 by default)"
		reader := s.newFan(t)
		oks, limited := checkLimited(t, s.burstOf(t, 3*burst, "GET", "/v1/points", nil, reader.h("")...), 200)
		promise(t, limit+" (reads)", limited > 0 && oks >= burst/2, "%d reads at once by one user: %d answered, %d limited", 3*burst, oks, limited)

		// Charges: what was refused did nothing, so the balance is the sum of the charges answered 201.
		payer := s.newFan(t)
		oks, limited = checkLimited(t, s.burstOf(t, 3*burst, "POST", "/v1/points/charges", map[string]any{"amount": 1}, payer.h("")...), 201)
		promise(t, limit+" (state changes)", limited > 0 && oks >= burst/2, "%d charges at once by one user: %d answered, %d limited", 3*burst, oks, limited)
		var bal int64 = -1
		eventually(t, rateLimited+" (a refused charge moves no points)", 10*time.Second, 500*time.Millisecond, func() (bool, string) {
			r, err := s.try("GET", "/v1/points", nil, payer.h("")...)
			if err != nil || r.status != 200 {
				return false, "balance not readable yet"
			}
			var b struct{ Balance int64 }
			_ = json.Unmarshal(r.body, &b)
			bal = b.Balance
			return true, ""
		})
		promise(t, rateLimited+" (a refused charge moves no points)", bal == int64(oks), "balance %d after %d charges of 1 answered 201", bal, oks)

		// Another user is not limited by the first one's burst.
		expectStatus(t, "Abuse: the limit is per user", s.do(t, "GET", "/v1/points", nil, s.newFan(t).h("")...), 200)
	})

	t.Run("ProofOfWork", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"joinPowBits": 8}})
		f, g, h := s.newFan(t), s.newFan(t), s.newFan(t)
		challenge := func(x fan) (string, int) {
			r := s.do(t, "POST", "/v1/concerts/"+c.ID+"/queue/challenge", nil, x.h("")...)
			var ch struct {
				Challenge string     `json:"challenge"`
				Bits      int        `json:"bits"`
				ExpiresAt *time.Time `json:"expiresAt"`
			}
			const sentence = `Abuse: POST /v1/concerts/{concertId}/queue/challenge (user JWT) → 201 {"challenge","bits","expiresAt"}; a challenge lasts 2 minutes`
			promiseNow(t, sentence, r.status == 201 && json.Unmarshal(r.body, &ch) == nil && ch.Challenge != "" && ch.Bits == 8 &&
				ch.ExpiresAt != nil && ch.ExpiresAt.After(time.Now().Add(100*time.Second)) && ch.ExpiresAt.Before(time.Now().Add(130*time.Second)), "%s", r)
			return ch.Challenge, ch.Bits
		}

		r := s.join(t, f, c.ID, nil)
		expectProblem(t, "Abuse: joinPowBits > 0: a join without a proof is 403 POW_REQUIRED", r, 403, "POW_REQUIRED")
		ch, n := challenge(f)
		r = s.join(t, f, c.ID, map[string]any{"challenge": ch, "nonce": nonce(ch, n, false)})
		expectProblem(t, "Abuse: a wrong proof is 403 POW_INVALID", r, 403, "POW_INVALID")

		ch, n = challenge(f)
		good := nonce(ch, n, true)
		r = s.join(t, f, c.ID, map[string]any{"challenge": ch, "nonce": good})
		expectStatus(t, "Abuse: a join with {challenge, nonce} where SHA-256(challenge + nonce) starts with bits zero bits → 201", r, 201)
		ft := asTicket(t, r)
		r = s.join(t, f, c.ID, nil)
		expectStatus(t, "Abuse: a rejoin by a fan who already holds a live token needs no proof (200)", r, 200)
		expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, f.h(ft.Token)...), 204)
		r = s.join(t, f, c.ID, map[string]any{"challenge": ch, "nonce": good})
		expectProblem(t, "Abuse: a challenge works once (reused: 403 POW_INVALID)", r, 403, "POW_INVALID")

		gch, gn := challenge(g)
		r = s.join(t, h, c.ID, map[string]any{"challenge": gch, "nonce": nonce(gch, gn, true)})
		expectProblem(t, "Abuse: a challenge is bound to the user (another user's: 403 POW_INVALID)", r, 403, "POW_INVALID")
		r = s.join(t, g, c.ID, map[string]any{"challenge": gch, "nonce": nonce(gch, gn, true)})
		expectStatus(t, "Abuse: a valid proof of the challenge's own user works (201)", r, 201)
	})

	t.Run("AccessCodes", func(t *testing.T) {
		t.Parallel()
		c := s.createConcert(t, concertSpec{Queue: map[string]any{"accessCodeRequired": true}})
		r := s.do(t, "POST", "/admin/v1/concerts/"+c.ID+"/access-codes", map[string]any{"count": 2}, s.admin()...)
		var codes struct {
			Codes []string `json:"codes"`
		}
		promiseNow(t, `Admin: POST .../access-codes {"count"} → 201 {"codes":[...]}`, r.status == 201 && json.Unmarshal(r.body, &codes) == nil &&
			len(codes.Codes) == 2, "%s", r)
		f, g := s.newFan(t), s.newFan(t)
		expectProblem(t, "Abuse: accessCodeRequired: missing: 403 ACCESS_CODE_REQUIRED", s.join(t, f, c.ID, nil), 403, "ACCESS_CODE_REQUIRED")
		expectProblem(t, "Abuse: accessCodeRequired: unknown: 403 ACCESS_CODE_INVALID", s.join(t, f, c.ID, map[string]any{"accessCode": "no-such-code"}), 403, "ACCESS_CODE_INVALID")
		code := map[string]any{"accessCode": codes.Codes[0]}
		r = s.join(t, f, c.ID, code)
		expectStatus(t, "Abuse: a join with an accessCode issued by the admin endpoint → 201", r, 201)
		ft := asTicket(t, r)
		expectProblem(t, "Abuse: a code belongs to the first user who joins with it (another user's: 403 ACCESS_CODE_INVALID)", s.join(t, g, c.ID, code), 403, "ACCESS_CODE_INVALID")
		expectStatus(t, "Queue: 200 the caller's existing token (a rejoin with the code)", s.join(t, f, c.ID, code), 200)
		expectStatus(t, "Queue: DELETE /v1/queue → 204", s.do(t, "DELETE", "/v1/queue", nil, f.h(ft.Token)...), 204)
		expectStatus(t, "Abuse: a code belongs to the first user who joins with it (that user may rejoin with it)", s.join(t, f, c.ID, code), 201)
		expectStatus(t, "Abuse: another issued code works for another user", s.join(t, g, c.ID, map[string]any{"accessCode": codes.Codes[1]}), 201)
	})
}

// publicRateLimit checks the per-address limit of the public endpoints. It spends the limit of the
// address every test of the suite calls from, so it runs after the sections.
func publicRateLimit(t *testing.T, s *server) {
	oks, limited := checkLimited(t, s.burstOf(t, 3*burst, "GET", "/v1/concerts", nil), 200)
	promise(t, "Abuse: every /v1 endpoint limits each user (the public ones each client address)", limited > 0 && oks >= burst/2,
		"%d calls of GET /v1/concerts at once from one address: %d answered, %d limited", 3*burst, oks, limited)
}

// nonce finds a nonce for the challenge whose SHA-256(challenge + nonce) starts with at least n zero bits
// (valid) or with fewer (not valid).
func nonce(challenge string, n int, valid bool) string {
	for i := 0; ; i++ {
		cand := "n" + strconv.Itoa(i)
		sum := sha256.Sum256([]byte(challenge + cand))
		if (leadingZeros(sum[:]) >= n) == valid {
			return cand
		}
	}
}

func leadingZeros(b []byte) int {
	z := 0
	for _, x := range b {
		if x != 0 {
			return z + bits.LeadingZeros8(x)
		}
		z += 8
	}
	return z
}

// operations checks docs/api.md "Operations".
func operations(t *testing.T, s *server) {
	expectStatus(t, "Operations: GET /healthz 200 while the process lives", s.do(t, "GET", "/healthz", nil), 200)
	expectStatus(t, "Operations: GET /readyz 200 only while Redis and Postgres answer", s.do(t, "GET", "/readyz", nil), 200)
	r := s.do(t, "GET", "/metrics", nil)
	promise(t, "Operations: GET /metrics Prometheus text format", r.status == 200 &&
		(strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || strings.HasPrefix(r.header.Get("Content-Type"), "application/openmetrics-text")) &&
		strings.Contains(string(r.body), "# TYPE ") && strings.Contains(string(r.body), "\nticketrush_"),
		"%d Content-Type %q, %d bytes", r.status, r.header.Get("Content-Type"), len(r.body))
}
