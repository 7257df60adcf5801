package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seriesOnMetrics returns every series /metrics shows.
func (s *service) seriesOnMetrics(t *testing.T) map[string]bool {
	t.Helper()
	res := s.do(t, req{method: "GET", path: "/metrics"})
	require.Equal(t, http.StatusOK, res.status)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(res.body))
	require.NoError(t, err)
	out := map[string]bool{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			out[name+fmt.Sprint(m.GetLabel())] = true
		}
	}
	return out
}

// TestBlackBoxFuzz sends malformed requests to every endpoint of the real server (odd methods, ids,
// headers, bodies; seeded, so a failure replays): no answer is a 5xx, every refusal is a problem
// document, and a second batch of as many new inputs adds (almost) no metric series.
func TestBlackBoxFuzz(t *testing.T) {
	s := startService(t, nil)
	concert := s.createConcert(t, queueSettings{})
	alice := newFan(t, "fuzz-alice")
	_, tk := s.join(t, alice, concert)

	routes := []string{"/v1/concerts", "/v1/concerts/{c}/queue", "/v1/concerts/{c}/queue/challenge", "/v1/queue",
		"/v1/concerts/{c}/schedules", "/v1/concerts/{c}/schedules/{x}/seats", "/v1/reservations", "/v1/reservations/{x}",
		"/v1/points", "/v1/points/charges", "/v1/points/history", "/v1/payments", "/v1/payments/{x}",
		"/admin/v1/concerts", "/admin/v1/concerts/{c}/queue", "/admin/v1/concerts/{c}/access-codes",
		"/healthz", "/readyz", "/nope", "/v1/", "//v1//queue"}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"}
	ids := []string{concert, "x", "", "..", "%00", "%2F", strings.Repeat("a", 300), "ÄÖ", "1;DROP TABLE seats", "-1", "{c}"}
	bodies := []string{"", "{", "[]", "null", `{"a":1}`, `{"amount":-1}`, `{"amount":1e309}`, `{"count":100001}`,
		`{"scheduleId":"x","seatId":"y"}`, `{"reservationId":"` + strings.Repeat("r", 100) + `"}`, `{"title":1}`,
		`{"challenge":"a.b","nonce":"n"}`, `{"accessCode":"` + strings.Repeat("Z", 16) + `"}`, "\xff\xfe", `{"queue":{"joinPowBits":33}}`,
		strings.Repeat(`{"a":`, 1000), `{"sections":[{"name":"A","price":1,"seats":200000}],"schedules":[` +
			strings.TrimSuffix(strings.Repeat(`"2026-12-24T10:00:00Z",`, 100), ",") + `],"title":"t","venue":"v"}`}
	auths := [][]string{nil, alice.auth(""), alice.auth(tk.Token), admin(), {"Authorization", "Bearer " + strings.Repeat("e", 5000)},
		{"Authorization", "Basic eDp5"}, {"Authorization", "Bearer a.b.c", "X-Queue-Token", "x.y"},
		{"Authorization", "Bearer " + alice.jwt, "X-Queue-Token", tk.Token + "A"}, {"X-Forwarded-For", "1.2.3.4, nonsense"}}

	batch := func(seed uint64, n int) {
		rng := rand.New(rand.NewPCG(seed, seed))
		for i := range n {
			method := methods[rng.IntN(len(methods))]
			if rng.IntN(4) == 0 {
				method = strings.ToUpper(string(rune('A'+rng.IntN(26)))) + "X" + string(rune('A'+i%26)) + string(rune('A'+(i/26)%26))
			}
			path := routes[rng.IntN(len(routes))]
			path = strings.ReplaceAll(path, "{c}", ids[rng.IntN(len(ids))])
			path = strings.ReplaceAll(path, "{x}", ids[rng.IntN(len(ids))])
			if rng.IntN(5) == 0 {
				path += "?limit=" + url.QueryEscape(ids[rng.IntN(len(ids))])
			}
			r := req{method: method, path: path, headers: append([]string(nil), auths[rng.IntN(len(auths))]...)}
			if b := bodies[rng.IntN(len(bodies))]; b != "" {
				r.body = b
			}
			if rng.IntN(6) == 0 {
				r.headers = append(r.headers, "Content-Type", "text/plain")
			}
			res, err := s.send(r)
			if !assert.NoError(t, err, "%s %s", method, path) {
				continue
			}
			assert.Less(t, res.status, 500, "%s %s: %s", method, path, res.body)
			if res.status >= 400 && method != "HEAD" {
				if !assert.Equal(t, "application/problem+json", res.header.Get("Content-Type"), "%s %s %d: %s", method, path, res.status, res.body) {
					continue
				}
				var p struct {
					Status int    `json:"status"`
					Code   string `json:"code"`
				}
				if assert.NoError(t, json.Unmarshal(res.body, &p), "%s %s", method, path) {
					assert.Equal(t, res.status, p.Status)
					assert.NotEmpty(t, p.Code)
				}
			}
		}
	}
	batch(1, 1500)
	before := s.seriesOnMetrics(t)
	batch(2, 1500)
	after := s.seriesOnMetrics(t)
	// New inputs may reach a (route, status) not reached before, but no label takes a value from the
	// inputs: the ~750 invented methods and the malformed ids name no series.
	t.Logf("metric series: %d after the first 1,500 requests, %d after 1,500 more", len(before), len(after))
	assert.Less(t, len(after), 450, "the series grow with the inputs")
	for k := range after {
		assert.NotRegexp(t, `value:"[A-Z]X[A-Z]{2}"|DROP|%00|ÄÖ|aaaaaaaa|\.\.`, k, "a label holds client input")
	}
}
