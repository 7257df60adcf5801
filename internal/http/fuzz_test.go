package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The fuzz targets of the HTTP adapter (make fuzz runs each for a bounded time; the seeds run in every
// go test). Their property: whatever comes in, nothing panics, nothing is a 5xx, and every refusal is a
// problem document of the error table.

// checkProblem asserts that a refusal is an RFC 9457 problem of the error table.
func checkProblem(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code < 400 {
		return
	}
	if rec.Code == http.StatusRequestHeaderFieldsTooLarge {
		return // net/http's own, before the router
	}
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"), "status %d: %s", rec.Code, rec.Body)
	var p problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p), "%s", rec.Body)
	assert.Equal(t, rec.Code, p.Status)
	known := false
	for _, c := range ticketrush.Codes() {
		known = known || (string(c.Code) == p.Code && c.Status == p.Status)
	}
	assert.True(t, known, "code %s %d is not in the error table", p.Code, p.Status)
}

// FuzzDecodeBodies: every request body type, any bytes: decode returns nil or a 400/413 problem.
func FuzzDecodeBodies(f *testing.F) {
	for _, seed := range []string{`{}`, `{"scheduleId":"a","seatId":"b"}`, `{"amount":1}`, `{"reservationId":"x"}`,
		`{"count":5}`, `{"accessCode":"A","challenge":"c","nonce":"n"}`, `{"title":"t","schedules":["2026-12-24T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"queue":{"joinPowBits":3}}`,
		`{"activeCapacity":1e400}`, `[`, `{"a":1}`, `{} {}`, "\xff", `{"schedules":["nope"]}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, target := range requestTypes {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/", strings.NewReader(body))
			err := decode(rec, r, target())
			if err == nil {
				continue
			}
			info := ticketrush.ErrorInfo(err)
			assert.Contains(t, []int{400, 413}, info.Status, "%v", err)
		}
	})
}

// FuzzProblemWriter: any error, any detail: one valid problem document whose status and code are the
// table's, and a 5xx whose detail says nothing of the cause.
func FuzzProblemWriter(f *testing.F) {
	f.Add(0, "seat VIP-1 is held", "redis: connection refused at 10.0.0.1:6379")
	f.Add(3, "\x00\xff<script>", "")
	codes := ticketrush.Codes()
	f.Fuzz(func(t *testing.T, which int, detail, cause string) {
		var err error
		if which < 0 || which >= len(codes) {
			err = errors.New(cause) // no code: a 500
		} else {
			sentinel, ok := ticketrush.ErrorOf(codes[which].Code)
			require.True(t, ok)
			err = ticketrush.WithDetail(sentinel, detail)
		}
		rec := httptest.NewRecorder()
		status := writeError(rec, err)
		assert.Equal(t, status, rec.Code)
		checkProblem(t, rec)
		if which < 0 || which >= len(codes) { // an error without a code: the table's words, not the cause's
			var p problem
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
			assert.Equal(t, problem{Type: "about:blank", Title: "Internal error", Status: 500, Code: "INTERNAL",
				Detail: ticketrush.ErrorInfo(ticketrush.ErrInternal).Detail}, p, "a 5xx leaks its cause")
		}
	})
}

// FuzzRouter: any method, path and headers through the whole server over the fakes: no panic, no 5xx,
// every refusal a problem document, and the metric series bounded.
func FuzzRouter(f *testing.F) {
	f.Add("GET", "/v1/concerts", "Authorization", "Bearer jwt-alice", "")
	f.Add("BREW", "/v1/queue", "X-Queue-Token", qtAliceActive, "")
	f.Add("POST", "/v1/concerts/"+concert1+"/queue", "Content-Type", "application/json", `{"nonce":"x","challenge":"y"}`)
	f.Add("POST", "/admin/v1/concerts/"+concert1+"/access-codes", "Authorization", "Bearer "+testAdminToken, `{"count":2}`)
	f.Add("DELETE", "/v1/reservations/../../etc", "Authorization", "Bearer jwt-bob", "")
	f.Add("PATCH", "/admin/v1/concerts/x/queue", "Authorization", "Bearer "+testAdminToken, `{"joinPowBits":99}`)
	rc, prefix := dbtest.Redis(f)
	d := newContract(f).newWorld(f, rc, prefix).deps
	srv := NewServer(d)
	f.Fuzz(func(t *testing.T, method, path, name, value, body string) {
		r, err := http.NewRequest(method, "http://x"+path, bytes.NewReader([]byte(body)))
		if err != nil {
			return // not a request a client could send
		}
		if http.CanonicalHeaderKey(name) != "" && validHeader(name, value) {
			r.Header.Set(name, value)
		}
		if r.Header.Get("Authorization") == "" {
			r.Header.Set("Authorization", bearerOf(userAlice))
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		assert.Less(t, rec.Code, 500, "%s %s: %s", method, path, rec.Body)
		checkProblem(t, rec)
		assert.Less(t, seriesCount(t, d.Registry), 2000, "metric series grow with the inputs")
	})
}

// validHeader reports whether net/http would send name: value (a fuzzed header it would refuse is
// dropped, as a client could not send it).
func validHeader(name, value string) bool {
	if name == "" || strings.ContainsAny(name, " \t\r\n:") || strings.ContainsAny(value, "\r\n\x00") {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] <= ' ' || name[i] >= 0x7f {
			return false
		}
	}
	return true
}
