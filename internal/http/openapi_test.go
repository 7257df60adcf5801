package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The contract test: openapi.yaml, docs/api.md's contract written for tools, is checked against the real
// handlers with kin-openapi's request and response validators. Every case's request goes through
// openapi3filter.ValidateRequest and the real server; its response through ValidateResponse, which
// fails on a status the operation does not list, a field the schema does not allow, a missing required
// field, a wrong type or format, a problem code outside the response's enum.
//
// The server runs over the real services on a real Redis and Postgres (world_test.go), so a status the
// services answer is the status the contract sees.
//
// To add a route: describe it in openapi.yaml, register it in NewServer, give the world the fixtures
// its cases need (world_test.go), add its cases to apiCases (at least one success) and take it out of
// casesToCome.

// specPath is the project's OpenAPI document.
const specPath = "../../openapi.yaml"

// casesToCome are operations openapi.yaml describes (docs/api.md has them) that NewServer does not serve
// yet, so apiCases has no case for them. For these alone the test asks neither that NewServer
// registers them nor that a case exercises them.
var casesToCome = map[string]bool{}

// statusesNotProduced are documented statuses no case can produce, with the reason.
var statusesNotProduced = func() map[string]bool {
	out := map[string]bool{
		// The concert list is the catalog in memory: nothing it does can fail.
		"GET /v1/concerts 500": true, "GET /v1/concerts 503": true,
	}
	// 202: a create still being written when its 10 s bound passes; only a create of millions of seats
	// is that slow (catalog's TestCreateOutlivesItsRequest covers it with a stand-in for Postgres).
	out["POST /admin/v1/concerts 202"] = true
	return out
}()

// apiCase is one request and what the server must answer.
type apiCase struct {
	name   string
	method string
	path   string
	header http.Header
	body   string
	setup  func(*world) // changes the world before the server is built
	down   bool         // Redis is down: the world's private redis-server is shut down before the request
	broken bool         // the call fails with an unexpected error (see broken)
	// slowBody: the body does not arrive before the server's read deadline (the reader fails as net/http's
	// does when its read timeout passes).
	slowBody bool
	// limited: the server's per-instance rate limit is 1 a second with no burst, and the request is sent
	// once before the one checked (which the limit then refuses).
	limited bool

	status int
	code   string // the problem code of an error response
	// specRefuses marks a request that breaks openapi.yaml on purpose (no token, unknown field, ...):
	// the validator must refuse it as the server does.
	specRefuses bool
}

// hdr builds a header from name, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// asUser is the header of a call by user; with a queue token when one is given.
func asUser(user string, queueToken ...string) http.Header {
	h := hdr("Authorization", bearerOf(user))
	if len(queueToken) > 0 {
		h.Set("X-Queue-Token", queueToken[0])
	}
	return h
}

var asAdmin = hdr("Authorization", "Bearer "+testAdminToken)

// withType is h with Content-Type ct.
func withType(h http.Header, ct string) http.Header {
	h = h.Clone()
	h.Set("Content-Type", ct)
	return h
}

// jsonBody marks a header as carrying JSON.
func jsonBody(h http.Header) http.Header {
	h = h.Clone()
	h.Set("Content-Type", "application/json")
	return h
}

// padded is a valid JSON body over the 64 KiB limit.
func padded(body string) string {
	return body[:len(body)-1] + strings.Repeat(" ", maxBody) + "}"
}

const createBody = `{"title":"IU 2026","venue":"KSPO Dome",
 "schedules":["2026-12-24T10:00:00Z","2026-12-25T10:00:00Z"],
 "sections":[{"name":"VIP","price":165000,"seats":100},{"name":"R","price":143000,"seats":400}],
 "queue":{"activeCapacity":1000,"admitPerSecond":50,"activeTtlSeconds":1800,"holdTtlSeconds":300,"maxHoldsPerUser":4}}`

var apiCases = []apiCase{
	// Operations.
	{name: "healthz", method: "GET", path: "/healthz", status: 200},
	{name: "readyz", method: "GET", path: "/readyz", status: 200},
	{name: "readyz redis down", method: "GET", path: "/readyz", status: 503,
		setup: redisDownAtReady},
	{name: "readyz degraded", method: "GET", path: "/readyz", status: 200, setup: replicaSyncing},
	{name: "metrics", method: "GET", path: "/metrics", status: 200},
	{name: "pass key set", method: "GET", path: "/.well-known/jwks.json", status: 200},
	{name: "site, none", method: "GET", path: "/site.json", status: 200},
	{name: "site, a pass site", method: "GET", path: "/site.json", status: 200,
		setup: func(w *world) { w.deps.PassSite = "https://shop.example/tickets?lang=ko" }},
	{name: "fan page", method: "GET", path: "/", status: 200},
	{name: "fan concert page", method: "GET", path: "/concerts/c1", status: 200},
	{name: "admin console", method: "GET", path: "/admin", status: 200},
	{name: "page asset", method: "GET", path: "/static/fan.js", header: hdr("Accept-Encoding", "gzip"), status: 200},
	{name: "page asset missing", method: "GET", path: "/static/nope.js", status: 404, code: "NOT_FOUND"},
	{name: "page asset not modified", method: "GET", path: "/static/fan.js", header: hdr("If-None-Match", "{fanETag}"),
		status: 304, setup: func(w *world) {
			a, err := assets()
			require.NoError(w.t, err)
			w.ids["{fanETag}"] = a["fan.js"].etag
		}},

	// Catalog.
	{name: "concerts public", method: "GET", path: "/v1/concerts", status: 200},
	{name: "concerts with a token too", method: "GET", path: "/v1/concerts", header: asUser(userAlice), status: 200},
	{name: "concerts none", method: "GET", path: "/v1/concerts", status: 200,
		setup: noConcerts},

	// Queue: join.
	{name: "join new active", method: "POST", path: "/v1/concerts/" + concert2 + "/queue", header: asUser(userBob), status: 201},
	{name: "join new waiting", method: "POST", path: "/v1/concerts/" + concert1 + "/queue", header: asUser(userCarol), status: 201},
	{name: "join again active", method: "POST", path: "/v1/concerts/" + concert1 + "/queue", header: asUser(userAlice), status: 200},
	{name: "join again waiting", method: "POST", path: "/v1/concerts/" + concert1 + "/queue", header: asUser(userBob), status: 200},
	{name: "join no token", method: "POST", path: "/v1/concerts/" + concert1 + "/queue",
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "join bad token", method: "POST", path: "/v1/concerts/" + concert1 + "/queue",
		header: hdr("Authorization", "Bearer nope"), status: 401, code: "UNAUTHENTICATED"},
	{name: "join admin token", method: "POST", path: "/v1/concerts/" + concert1 + "/queue",
		header: asAdmin, status: 401, code: "UNAUTHENTICATED"},
	{name: "join unknown concert", method: "POST", path: "/v1/concerts/" + noConcert + "/queue",
		header: asUser(userAlice), status: 404, code: "NOT_FOUND"},
	{name: "join impossible concert id", method: "POST", path: "/v1/concerts/NOT-AN-ID/queue",
		header: asUser(userAlice), status: 404, code: "NOT_FOUND"},
	{name: "join redis down", method: "POST", path: "/v1/concerts/" + concert1 + "/queue",
		header: asUser(userAlice), down: true, status: 503, code: "UNAVAILABLE"},
	{name: "join internal error", method: "POST", path: "/v1/concerts/" + concert1 + "/queue",
		header: asUser(userAlice), broken: true, status: 500, code: "INTERNAL"},
	{name: "join sold out", method: "POST", path: "/v1/concerts/" + concert2 + "/queue",
		header: asUser(userBob), setup: soldOutC2, status: 409, code: "SOLD_OUT"},

	// Queue: status.
	{name: "status waiting", method: "GET", path: "/v1/queue", header: asUser(userBob, qtBobWaiting), status: 200},
	{name: "status active", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtAliceActive), status: 200},
	{name: "status expired", method: "GET", path: "/v1/queue", header: asUser(userCarol, qtCarolExpired), status: 200},
	{name: "status done", method: "GET", path: "/v1/queue", header: asUser(userDave, qtDaveDone), status: 200},
	{name: "status sold out", method: "GET", path: "/v1/queue", header: asUser("henry", qtHenrySoldOut), setup: soldOutC2,
		status: 200},
	{name: "status no queue token", method: "GET", path: "/v1/queue", header: asUser(userAlice),
		status: 401, code: "QUEUE_TOKEN_INVALID", specRefuses: true},
	{name: "status forged", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtForged),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "status another user's", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtBobWaiting),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "status no bearer", method: "GET", path: "/v1/queue", header: hdr("X-Queue-Token", qtAliceActive),
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "status internal error", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtAliceActive),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "status redis down", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtAliceActive),
		down: true, status: 503, code: "UNAVAILABLE"},

	// Queue: events.
	{name: "events done", method: "GET", path: "/v1/queue/events", header: asUser(userDave, qtDaveDone), status: 200},
	{name: "events internal error", method: "GET", path: "/v1/queue/events", header: asUser(userAlice, qtAliceActive),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "events forged", method: "GET", path: "/v1/queue/events", header: asUser(userAlice, qtForged),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "events redis down", method: "GET", path: "/v1/queue/events", header: asUser(userAlice, qtAliceActive),
		down: true, status: 503, code: "UNAVAILABLE"},

	// Queue: leave.
	{name: "leave with an unknown field", method: "DELETE", path: "/v1/queue", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"extra":1}`, status: 400, code: "INVALID_REQUEST"},
	{name: "leave with a body over 64 KiB", method: "DELETE", path: "/v1/queue", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{}` + strings.Repeat(" ", 65<<10), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "leave with a body not JSON", method: "DELETE", path: "/v1/queue", header: withType(jsonBody(asUser(userAlice, qtAliceActive)), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
	{name: "leave active", method: "DELETE", path: "/v1/queue", header: asUser(userAlice, qtAliceActive), status: 204},
	{name: "leave waiting", method: "DELETE", path: "/v1/queue", header: asUser(userBob, qtBobWaiting), status: 204},
	{name: "leave expired", method: "DELETE", path: "/v1/queue", header: asUser(userCarol, qtCarolExpired), status: 204},
	{name: "leave forged", method: "DELETE", path: "/v1/queue", header: asUser(userAlice, qtForged),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "leave bad bearer", method: "DELETE", path: "/v1/queue",
		header: hdr("Authorization", "Bearer nope", "X-Queue-Token", qtAliceActive), status: 401, code: "UNAUTHENTICATED"},
	{name: "leave internal error", method: "DELETE", path: "/v1/queue", header: asUser(userAlice, qtAliceActive),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "leave redis down", method: "DELETE", path: "/v1/queue", header: asUser(userAlice, qtAliceActive),
		down: true, status: 503, code: "UNAVAILABLE"},

	// Admin: create.
	{name: "create", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: createBody, status: 201},
	{name: "create with defaults", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T19:00:00+09:00"],"sections":[{"name":"A","price":0,"seats":1}]}`,
		status: 201},
	{name: "create active per seat", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"queue":{"activePerSeat":2}}`,
		status: 201},
	{name: "create active per seat negative", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"queue":{"activePerSeat":-1}}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create paused", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"queue":{"paused":true}}`,
		status: 201},
	{name: "create with a key, retried", method: "POST", path: "/admin/v1/concerts",
		header: jsonBody(hdr("Authorization", "Bearer "+testAdminToken, "Idempotency-Key", "adm-1")), body: createBody,
		status: 201, setup: func(w *world) { w.adminCreate(createBody, "adm-1") }},
	{name: "create with a key used for another concert", method: "POST", path: "/admin/v1/concerts",
		header: jsonBody(hdr("Authorization", "Bearer "+testAdminToken, "Idempotency-Key", "adm-2")), body: createBody,
		status: 409, code: "IDEMPOTENCY_CONFLICT", setup: func(w *world) {
			w.adminCreate(`{"title":"Other","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}]}`, "adm-2")
		}},
	{name: "create body not JSON", method: "POST", path: "/admin/v1/concerts", header: withType(jsonBody(asAdmin), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE", specRefuses: true},
	{name: "create body too slow", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), slowBody: true,
		status: 408, code: "REQUEST_TIMEOUT", specRefuses: true},
	{name: "create no token", method: "POST", path: "/admin/v1/concerts", header: jsonBody(hdr()), body: createBody,
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "create user token", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asUser(userAlice)),
		body: createBody, status: 401, code: "UNAUTHENTICATED"},
	{name: "create unknown field", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"genre":"pop"}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create unknown queue field", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"queue":{"speed":1}}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create no sections", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"]}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create bad time", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["tomorrow"],"sections":[{"name":"A","price":1,"seats":1}]}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create price not a number", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":"1","seats":1}]}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create bad section name", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A B","price":1,"seats":1}]}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create capacity 0", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		body:   `{"title":"T","venue":"V","schedules":["2027-01-01T10:00:00Z"],"sections":[{"name":"A","price":1,"seats":1}],"queue":{"activeCapacity":0}}`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create empty body", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin),
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "create not json", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: `{"title":`,
		status: 400, code: "INVALID_REQUEST", specRefuses: true},
	// kin-openapi's body decoder reads the first JSON value only, so the spec side lets this one pass.
	{name: "create two values", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: createBody + "{}",
		status: 400, code: "INVALID_REQUEST"},
	{name: "create over 64 KiB", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: padded(createBody),
		status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "create redis down", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: createBody,
		down: true, status: 503, code: "UNAVAILABLE"},
	{name: "create internal error", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: createBody,
		broken: true, status: 500, code: "INTERNAL"},

	// Admin: queue state.
	{name: "queue state", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue", header: asAdmin, status: 200},
	{name: "queue state unknown concert", method: "GET", path: "/admin/v1/concerts/" + noConcert + "/queue", header: asAdmin,
		status: 404, code: "NOT_FOUND"},
	{name: "queue state no token", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue",
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "queue state user token", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue", header: asUser(userAlice),
		status: 401, code: "UNAUTHENTICATED"},
	{name: "queue state internal error", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue", header: asAdmin,
		broken: true, status: 500, code: "INTERNAL"},
	{name: "queue state redis down", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue", header: asAdmin,
		down: true, status: 503, code: "UNAVAILABLE"},

	// Abuse: challenge, join body, access codes.
	{name: "challenge with an unknown field", method: "POST", path: "/v1/concerts/" + concert1 + "/queue/challenge", header: jsonBody(asUser(userAlice)),
		body: `{"extra":1}`, status: 400, code: "INVALID_REQUEST"},
	{name: "challenge with a body over 64 KiB", method: "POST", path: "/v1/concerts/" + concert1 + "/queue/challenge", header: jsonBody(asUser(userAlice)),
		body: `{}` + strings.Repeat(" ", 65<<10), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "challenge with a body not JSON", method: "POST", path: "/v1/concerts/" + concert1 + "/queue/challenge", header: withType(jsonBody(asUser(userAlice)), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
	{name: "challenge", method: "POST", path: "/v1/concerts/" + concert1 + "/queue/challenge", header: asUser(userAlice), status: 201},
	{name: "challenge unknown concert", method: "POST", path: "/v1/concerts/" + noConcert + "/queue/challenge", header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "challenge no jwt", method: "POST", path: "/v1/concerts/" + concert1 + "/queue/challenge", status: 401, code: "UNAUTHENTICATED",
		specRefuses: true},
	{name: "join with a body", method: "POST", path: "/v1/concerts/" + concert2 + "/queue", header: jsonBody(asUser(userBob)),
		body: `{"accessCode":"ABCDEFGHIJKLMNOP"}`, status: 201},
	{name: "join with an unknown field", method: "POST", path: "/v1/concerts/" + concert2 + "/queue", header: jsonBody(asUser(userBob)),
		body: `{"code":"x"}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "access codes", method: "POST", path: "/admin/v1/concerts/" + concert1 + "/access-codes", header: jsonBody(asAdmin),
		body: `{"count":3}`, status: 201},
	{name: "access codes 0", method: "POST", path: "/admin/v1/concerts/" + concert1 + "/access-codes", header: jsonBody(asAdmin),
		body: `{"count":0}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "access codes unknown concert", method: "POST", path: "/admin/v1/concerts/" + noConcert + "/access-codes", header: jsonBody(asAdmin),
		body: `{"count":3}`, status: 404, code: "NOT_FOUND"},
	{name: "join without the proof of work", method: "POST", path: "/v1/concerts/" + concert2 + "/queue", header: asUser(userBob),
		setup: powRequired, status: 403, code: "POW_REQUIRED"},
	{name: "join over 64 KiB", method: "POST", path: "/v1/concerts/" + concert2 + "/queue", header: jsonBody(asUser(userBob)),
		body: padded(`{"accessCode":"ABCDEFGHIJKLMNOP"}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "access codes over 64 KiB", method: "POST", path: "/admin/v1/concerts/" + concert1 + "/access-codes", header: jsonBody(asAdmin),
		body: padded(`{"count":3}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "access codes internal error", method: "POST", path: "/admin/v1/concerts/" + concert1 + "/access-codes", header: jsonBody(asAdmin),
		body: `{"count":3}`, broken: true, status: 500, code: "INTERNAL"},
	{name: "access codes redis down", method: "POST", path: "/admin/v1/concerts/" + concert1 + "/access-codes", header: jsonBody(asAdmin),
		body: `{"count":3}`, down: true, status: 503, code: "UNAVAILABLE"},
	{name: "access codes user token", method: "POST", path: "/admin/v1/concerts/" + concert1 + "/access-codes", header: jsonBody(asUser(userAlice)),
		body: `{"count":3}`, status: 401, code: "UNAUTHENTICATED"},

	// Admin: queue settings.
	{name: "patch", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"activeCapacity":10,"admitPerSecond":5,"paused":true}`, status: 200},
	{name: "patch body not JSON", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: withType(jsonBody(asAdmin), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE", specRefuses: true},
	{name: "patch body too slow", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		slowBody: true, status: 408, code: "REQUEST_TIMEOUT", specRefuses: true},
	{name: "patch active per seat", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"activePerSeat":3}`, status: 200},
	{name: "patch abandonment", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"abandonAfterSeconds":0,"noShowSeconds":60}`, status: 200},
	{name: "patch abandonment negative", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"abandonAfterSeconds":-1}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "patch nothing", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{}`, status: 200},
	{name: "patch capacity 0", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"activeCapacity":0}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "patch ttl", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"activeTtlSeconds":60}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "patch paused not a bool", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"paused":"yes"}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "patch unknown concert", method: "PATCH", path: "/admin/v1/concerts/" + noConcert + "/queue", header: jsonBody(asAdmin),
		body: `{"paused":true}`, status: 404, code: "NOT_FOUND"},
	{name: "patch user token", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asUser(userAlice)),
		body: `{"paused":true}`, status: 401, code: "UNAUTHENTICATED"},
	{name: "patch over 64 KiB", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: padded(`{"paused":true}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "patch internal error", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"paused":true}`, broken: true, status: 500, code: "INTERNAL"},
	{name: "patch redis down", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"paused":true}`, down: true, status: 503, code: "UNAVAILABLE"},

	// Catalog (gated): schedules.
	{name: "schedules", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userAlice, qtAliceActive), status: 200},
	{name: "schedules no queue token", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userAlice), status: 401, code: "QUEUE_TOKEN_INVALID", specRefuses: true},
	{name: "schedules another concert's token", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userAlice, qtAliceC2), status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "schedules another user's token", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userAlice, qtBobWaiting), status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "schedules bad bearer", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: hdr("Authorization", "Bearer nope", "X-Queue-Token", qtAliceActive), status: 401, code: "UNAUTHENTICATED"},
	{name: "schedules waiting", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userBob, qtBobWaiting), status: 403, code: "QUEUE_NOT_ACTIVE"},
	{name: "schedules expired", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userCarol, qtCarolExpired), status: 410, code: "QUEUE_TOKEN_EXPIRED"},
	{name: "schedules done", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userDave, qtDaveDone), status: 410, code: "QUEUE_TOKEN_EXPIRED"},
	{name: "schedules impossible concert id", method: "GET", path: "/v1/concerts/NOT-AN-ID/schedules",
		header: asUser(userAlice, qtAliceActive), status: 404, code: "NOT_FOUND"},
	{name: "schedules internal error", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userAlice, qtAliceActive), broken: true, status: 500, code: "INTERNAL"},
	{name: "schedules redis down", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userAlice, qtAliceActive), down: true, status: 503, code: "UNAVAILABLE"},

	// Catalog (gated): seats.
	{name: "seats", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userAlice, qtAliceActive), status: 200},
	{name: "seats not modified", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: func() http.Header {
			h := asUser(userAlice, qtAliceActive)
			h.Set("If-None-Match", "{seatsETag}")
			return h
		}(), status: 304, setup: func(w *world) {
			m, err := w.booking.SeatMap(context.Background(), userAlice, w.replace(concert1), w.replace(schedule1), w.replace(qtAliceActive))
			require.NoError(w.t, err)
			w.ids["{seatsETag}"] = m.Encoded(encodeSeatMap).(*seatMapBytes).etag
		}},
	{name: "seats unknown schedule", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule3 + "/seats",
		header: asUser(userAlice, qtAliceActive), status: 404, code: "NOT_FOUND"},
	{name: "seats waiting", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userBob, qtBobWaiting), status: 403, code: "QUEUE_NOT_ACTIVE"},
	{name: "seats expired", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userCarol, qtCarolExpired), status: 410, code: "QUEUE_TOKEN_EXPIRED"},
	{name: "seats forged", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userAlice, qtForged), status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "seats no bearer", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: hdr("X-Queue-Token", qtAliceActive), status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "seats internal error", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userAlice, qtAliceActive), broken: true, status: 500, code: "INTERNAL"},
	{name: "seats redis down", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userAlice, qtAliceActive), down: true, status: 503, code: "UNAVAILABLE"},

	// Reservations: hold (gated).
	{name: "hold", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, status: 201},
	{name: "hold body not JSON", method: "POST", path: "/v1/reservations", header: withType(jsonBody(asUser(userAlice, qtAliceActive)), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE", specRefuses: true},
	{name: "hold body too slow", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		slowBody: true, status: 408, code: "REQUEST_TIMEOUT", specRefuses: true},
	{name: "hold held seat", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"VIP-1"}`, status: 409, code: "SEAT_UNAVAILABLE"},
	{name: "hold sold seat", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"VIP-2"}`, status: 409, code: "SEAT_UNAVAILABLE"},
	{name: "hold past the limit", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceC2)),
		body: `{"scheduleId":"` + schedule3 + `","seatId":"A-2"}`, status: 409, code: "HOLD_LIMIT_REACHED"},
	{name: "hold unknown seat", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"VIP-9"}`, status: 404, code: "NOT_FOUND"},
	{name: "hold unknown schedule", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"nosuch","seatId":"VIP-1"}`, status: 404, code: "NOT_FOUND"},
	{name: "hold no seat", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `"}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "hold unknown field", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3","price":1}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "hold over 64 KiB", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: padded(`{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "hold waiting", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userBob, qtBobWaiting)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, status: 403, code: "QUEUE_NOT_ACTIVE"},
	{name: "hold expired", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userCarol, qtCarolExpired)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, status: 410, code: "QUEUE_TOKEN_EXPIRED"},
	{name: "hold forged", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtForged)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "hold no queue token", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, status: 401, code: "QUEUE_TOKEN_INVALID", specRefuses: true},
	{name: "hold internal error", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, broken: true, status: 500, code: "INTERNAL"},
	{name: "hold redis down", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, down: true, status: 503, code: "UNAVAILABLE"},

	// Reservations: read and cancel.
	{name: "reservation held", method: "GET", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice), status: 200},
	{name: "reservation paid", method: "GET", path: "/v1/reservations/" + resAlicePaid, header: asUser(userAlice), status: 200},
	{name: "reservation expired", method: "GET", path: "/v1/reservations/" + resAliceExpired, header: asUser(userAlice), status: 200},
	{name: "reservation cancelled", method: "GET", path: "/v1/reservations/" + resAliceCancelled, header: asUser(userAlice), status: 200},
	{name: "reservation of another user", method: "GET", path: "/v1/reservations/" + resErinHeld, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "reservation unknown", method: "GET", path: "/v1/reservations/" + noReservation, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "reservation no bearer", method: "GET", path: "/v1/reservations/" + resAliceHeld,
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "reservation internal error", method: "GET", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "reservation redis down", method: "GET", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice),
		down: true, status: 503, code: "UNAVAILABLE"},
	{name: "cancel with an unknown field", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: jsonBody(asUser(userAlice)),
		body: `{"extra":1}`, status: 400, code: "INVALID_REQUEST"},
	{name: "cancel with a body over 64 KiB", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: jsonBody(asUser(userAlice)),
		body: `{}` + strings.Repeat(" ", 65<<10), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "cancel with a body not JSON", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: withType(jsonBody(asUser(userAlice)), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE"},
	{name: "cancel", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice), status: 204},
	{name: "cancel paid", method: "DELETE", path: "/v1/reservations/" + resAlicePaid, header: asUser(userAlice),
		status: 409, code: "RESERVATION_NOT_HELD"},
	{name: "cancel another user's", method: "DELETE", path: "/v1/reservations/" + resErinHeld, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "cancel bad bearer", method: "DELETE", path: "/v1/reservations/" + resAliceHeld,
		header: hdr("Authorization", "Bearer nope"), status: 401, code: "UNAUTHENTICATED"},
	{name: "cancel internal error", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "cancel redis down", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice),
		down: true, status: 503, code: "UNAVAILABLE"},

	// Points.
	{name: "balance", method: "GET", path: "/v1/points", header: asUser(userAlice), status: 200},
	{name: "history", method: "GET", path: "/v1/points/history", header: asUser(userAlice), status: 200},
	{name: "history limit", method: "GET", path: "/v1/points/history?limit=1", header: asUser(userAlice), status: 200},
	{name: "history never seen", method: "GET", path: "/v1/points/history", header: asUser(userFrank), status: 200},
	{name: "history limit 0", method: "GET", path: "/v1/points/history?limit=0", header: asUser(userAlice), status: 400,
		code: "INVALID_REQUEST", specRefuses: true},
	{name: "history limit 101", method: "GET", path: "/v1/points/history?limit=101", header: asUser(userAlice), status: 200},
	{name: "history no bearer", method: "GET", path: "/v1/points/history", status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "history internal error", method: "GET", path: "/v1/points/history", header: asUser(userAlice),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "history ledger down", method: "GET", path: "/v1/points/history", header: asUser(userAlice), status: 503,
		code: "UNAVAILABLE", setup: ledgerDown},
	{name: "balance never seen", method: "GET", path: "/v1/points", header: asUser(userFrank), status: 200},
	{name: "balance no bearer", method: "GET", path: "/v1/points", status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "balance internal error", method: "GET", path: "/v1/points", header: asUser(userAlice),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "balance redis down", method: "GET", path: "/v1/points", header: asUser(userAlice),
		down: true, status: 503, code: "UNAVAILABLE"},
	{name: "charge", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":200000}`, status: 201},
	{name: "charge body not JSON", method: "POST", path: "/v1/points/charges", header: withType(jsonBody(asUser(userBob)), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE", specRefuses: true},
	{name: "charge body too slow", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		slowBody: true, status: 408, code: "REQUEST_TIMEOUT", specRefuses: true},
	{name: "charge with a key", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userBob), "Idempotency-Key", "k-1")), body: `{"amount":200000}`, status: 201},
	{name: "charge replayed", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", idemAlice)), body: `{"amount":10000}`, status: 201},
	{name: "charge key reused", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", idemAlice)), body: `{"amount":20000}`,
		status: 409, code: "IDEMPOTENCY_CONFLICT"},
	{name: "charge past the balance limit", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userCarol)),
		body: `{"amount":1001}`, status: 409, code: "BALANCE_LIMIT", setup: carolNearLimit},
	{name: "charge to the balance limit", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userCarol)),
		body: `{"amount":1000}`, status: 201, setup: carolNearLimit},
	{name: "charge 0", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":0}`, status: 400, code: "INVALID_AMOUNT", specRefuses: true},
	{name: "charge negative", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":-5}`, status: 400, code: "INVALID_AMOUNT", specRefuses: true},
	{name: "charge over 10,000,000", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":10000001}`, status: 400, code: "INVALID_AMOUNT", specRefuses: true},
	{name: "charge fraction", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":1.5}`, status: 400, code: "INVALID_AMOUNT", specRefuses: true},
	{name: "charge string", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":"100"}`, status: 400, code: "INVALID_AMOUNT", specRefuses: true},
	{name: "charge no amount", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{}`, status: 400, code: "INVALID_AMOUNT", specRefuses: true},
	{name: "charge unknown field", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":100,"currency":"KRW"}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "charge key too long", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userBob), "Idempotency-Key", strings.Repeat("k", 65))),
		body:   `{"amount":100}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "charge key empty", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userBob), "Idempotency-Key", "")),
		body:   `{"amount":100}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "charge over 64 KiB", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: padded(`{"amount":100}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "charge bad bearer", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", "Bearer nope")), body: `{"amount":100}`, status: 401, code: "UNAUTHENTICATED"},
	{name: "charge internal error", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":100}`, broken: true, status: 500, code: "INTERNAL"},
	{name: "charge redis down", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":100}`, down: true, status: 503, code: "UNAVAILABLE"},

	// Payments.
	{name: "pay", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceHeld + `"}`, status: 201},
	{name: "pay body not JSON", method: "POST", path: "/v1/payments", header: withType(jsonBody(asUser(userAlice)), "text/plain"),
		body: `{}`, status: 415, code: "UNSUPPORTED_MEDIA_TYPE", specRefuses: true},
	{name: "pay body too slow", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		slowBody: true, status: 408, code: "REQUEST_TIMEOUT", specRefuses: true},
	{name: "pay with a key", method: "POST", path: "/v1/payments",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", "pay-1")),
		body:   `{"reservationId":"` + resAliceHeld + `"}`, status: 201},
	{name: "pay replayed with its key", method: "POST", path: "/v1/payments",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", "pay-1")),
		body:   `{"reservationId":"` + resAliceHeld + `"}`, status: 201, setup: alicePaidHeldWithKey},
	{name: "pay paid again", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAlicePaid + `"}`, status: 200},
	{name: "pay key reused", method: "POST", path: "/v1/payments",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", idemAlice)),
		body:   `{"reservationId":"` + resAliceHeld + `"}`, status: 409, code: "IDEMPOTENCY_CONFLICT"},
	{name: "pay short balance", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userErin)),
		body: `{"reservationId":"` + resErinHeld + `"}`, status: 409, code: "INSUFFICIENT_BALANCE"},
	{name: "pay expired", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceExpired + `"}`, status: 410, code: "RESERVATION_EXPIRED"},
	{name: "pay cancelled", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceCancelled + `"}`, status: 409, code: "RESERVATION_NOT_HELD"},
	{name: "pay another user's", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resErinHeld + `"}`, status: 404, code: "NOT_FOUND"},
	{name: "pay unknown", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + noReservation + `"}`, status: 404, code: "NOT_FOUND"},
	{name: "pay no reservation", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "pay over 64 KiB", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: padded(`{"reservationId":"` + resAliceHeld + `"}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "pay no bearer", method: "POST", path: "/v1/payments", header: jsonBody(hdr()),
		body: `{"reservationId":"` + resAliceHeld + `"}`, status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "pay redis down", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceHeld + `"}`, down: true, status: 503, code: "UNAVAILABLE"},
	{name: "pay internal error", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceHeld + `"}`, broken: true, status: 500, code: "INTERNAL"},
	{name: "payment", method: "GET", path: "/v1/payments/p" + resAlicePaid, header: asUser(userAlice), status: 200},
	{name: "payment of a held reservation", method: "GET", path: "/v1/payments/p" + resAliceHeld, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "payment of another user", method: "GET", path: "/v1/payments/p" + resAlicePaid, header: asUser(userBob),
		status: 404, code: "NOT_FOUND"},
	{name: "payment bad bearer", method: "GET", path: "/v1/payments/p" + resAlicePaid,
		header: hdr("Authorization", "Bearer nope"), status: 401, code: "UNAUTHENTICATED"},
	{name: "payment internal error", method: "GET", path: "/v1/payments/p" + resAlicePaid, header: asUser(userAlice),
		broken: true, status: 500, code: "INTERNAL"},
	{name: "payment redis down", method: "GET", path: "/v1/payments/p" + resAlicePaid, header: asUser(userAlice),
		down: true, status: 503, code: "UNAVAILABLE"},
}

// request builds the case's request with the world's ids in place of the placeholders.
func (tt apiCase) request(w *world) *http.Request {
	var body io.Reader = strings.NewReader(w.replace(tt.body))
	if tt.slowBody {
		body = io.MultiReader(strings.NewReader(`{"amo`), iotest.ErrReader(os.ErrDeadlineExceeded))
	}
	r := httptest.NewRequest(tt.method, w.replace(tt.path), body)
	for k, v := range tt.header {
		for _, x := range v {
			r.Header.Add(k, w.replace(x))
		}
	}
	return r
}

// setUp applies the case's setup and its rate limit to the world.
func (w *world) setUp(tt apiCase) {
	if tt.setup != nil {
		tt.setup(w)
	}
	if tt.limited {
		at := time.Now()
		w.deps.Limiter = NewLimiter(1, 1, func() time.Time { return at })
	}
}

// newCaseWorld builds the world of one case (its setup applied): on the real Redis under a fresh prefix, or, when the case
// wants Redis down, on a private redis-server that is shut down once the fixtures are made. The latter's
// client does not retry: rueidis retries a read-only script until the request's context ends, and
// these requests have no deadline.
func (c *contract) newCaseWorld(t *testing.T, tt apiCase) *world {
	t.Helper()
	if !tt.down {
		rc, prefix := dbtest.Redis(t)
		w := c.newWorld(t, rc, prefix)
		w.setUp(tt)
		if tt.broken {
			broken(w)
		}
		return w
	}
	u := dbtest.PrivateRedis(t)
	opt, err := rueidis.ParseURL(u)
	require.NoError(t, err)
	opt.DisableCache, opt.DisableRetry = true, true
	rc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	w := c.newWorld(t, rc, dbtest.Name("t"))
	w.setUp(tt)
	err = rc.Do(context.Background(), rc.B().Shutdown().Nosave().Build()).Error()
	require.Error(t, err, "SHUTDOWN answers only by closing the connection")
	require.Error(t, w.store.Ping(context.Background()), "Redis is down")
	return w
}

func TestOpenAPIContract(t *testing.T) {
	_, router := loadSpec(t)
	// The event stream's body is text: its events are checked as queue bodies by the stream's own test.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	opts := &openapi3filter.Options{
		AuthenticationFunc:    authenticate,
		IncludeResponseStatus: true, // a status the operation does not list is an error
		SkipSettingDefaults:   true,
		MultiError:            true,
	}
	c := newContract(t)
	succeeded := map[string]bool{} // operations with a 2xx case
	exercised := map[string]bool{} // operations with any case
	produced := map[string]bool{}  // "operation status" the server answered
	var mu sync.Mutex
	firstSuccess := map[string]apiCase{} // operation -> its first success case
	run := func(tt apiCase) {
		t.Run(tt.name, func(t *testing.T) {
			w := c.newCaseWorld(t, tt)
			srv := w.server()
			ctx := context.Background()

			req := tt.request(w)
			route, params, err := router.FindRoute(req)
			require.NoError(t, err, "openapi.yaml has no operation for %s %s", tt.method, tt.path)
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
			err = openapi3filter.ValidateRequest(ctx, in)
			if tt.specRefuses {
				assert.Error(t, err, "openapi.yaml accepts a request the case says it refuses")
			} else {
				assert.NoError(t, err, "the request breaks openapi.yaml")
			}

			if tt.limited {
				srv.ServeHTTP(httptest.NewRecorder(), tt.request(w)) // takes the one token there is
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, tt.request(w))
			res := rec.Result()
			t.Cleanup(func() { _ = res.Body.Close() })
			require.Equal(t, tt.status, res.StatusCode, "body: %s", rec.Body.String())

			err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
				RequestValidationInput: in, Status: res.StatusCode, Header: res.Header, Body: res.Body, Options: opts,
			})
			assert.NoError(t, err, "the response breaks openapi.yaml; body: %s", rec.Body.String())

			if tt.code != "" {
				assert.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
				assert.Contains(t, rec.Body.String(), `"code":"`+tt.code+`"`)
			}
			op := operationKey(route.Method, route.Path)
			mu.Lock()
			defer mu.Unlock()
			exercised[op] = true
			produced[op+" "+strconv.Itoa(res.StatusCode)] = true
			if res.StatusCode < 300 {
				succeeded[op] = true
				if _, ok := firstSuccess[op]; !ok {
					firstSuccess[op] = tt
				}
			}
		})
	}
	for _, tt := range apiCases {
		run(tt)
	}

	// 429: every operation that documents it, by its first success case sent past the rate limit.
	doc, _ := loadSpec(t)
	for path, item := range doc.Paths.Map() {
		for method, operation := range item.Operations() {
			op := operationKey(method, path)
			tt, ok := firstSuccess[op]
			if !ok || operation.Responses.Status(http.StatusTooManyRequests) == nil || produced[op+" 429"] {
				continue
			}
			tt.name, tt.limited, tt.status, tt.code, tt.specRefuses = tt.name+" past the rate limit", true, 429, "RATE_LIMITED", false
			run(tt)
		}
	}

	// Every status openapi.yaml documents for an operation is one a case produced.
	for path, item := range doc.Paths.Map() {
		for method, operation := range item.Operations() {
			op := operationKey(method, path)
			if casesToCome[op] {
				continue
			}
			for status := range operation.Responses.Map() {
				if status == "default" || statusesNotProduced[op+" "+status] {
					continue
				}
				assert.True(t, produced[op+" "+status], "no case produces %s %s, which openapi.yaml documents: add one", op, status)
			}
		}
	}

	for _, r := range registeredRoutes(t, routesOnly()) {
		if !casesToCome[r] {
			assert.True(t, succeeded[r], "apiCases has no success case for %s: add one", r)
		}
	}
	for op := range casesToCome {
		assert.False(t, exercised[op], "apiCases has cases for %s: take it out of casesToCome", op)
	}
}

// TestOpenAPIRoutes checks that openapi.yaml describes every route NewServer registers, and that
// NewServer serves every operation openapi.yaml describes, but for casesToCome.
func TestOpenAPIRoutes(t *testing.T) {
	doc, _ := loadSpec(t)
	described := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described[operationKey(method, path)] = true
		}
	}
	registered := map[string]bool{}
	for _, r := range registeredRoutes(t, routesOnly()) {
		registered[r] = true
		assert.True(t, described[r], "NewServer registers %s, which openapi.yaml does not describe", r)
	}
	for op := range described {
		if !casesToCome[op] {
			assert.True(t, registered[op], "openapi.yaml describes %s, which NewServer does not register", op)
		}
	}
	for op := range casesToCome {
		assert.True(t, described[op], "casesToCome lists %s, which openapi.yaml does not describe", op)
	}
}

// TestOpenAPIDocument checks that openapi.yaml loads as OpenAPI 3.1 and is a valid document, that its
// Problem.code lists exactly the codes of the error table (ticketrush.Codes), and that every response
// that names codes does so under the status the table gives each.
func TestOpenAPIDocument(t *testing.T) {
	doc, _ := loadSpec(t)
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	var listed []string
	for _, c := range doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum {
		listed = append(listed, c.(string))
	}
	assert.ElementsMatch(t, problemCodes(), listed, "Problem.code in openapi.yaml and the error table differ")

	checked := 0
	check := func(where, status string, ref *openapi3.ResponseRef) {
		if ref == nil || ref.Value == nil {
			return
		}
		for _, media := range ref.Value.Content {
			for _, code := range responseCodes(media.Schema) {
				info, ok := ticketrush.LookupCode(ticketrush.Code(code))
				if assert.True(t, ok, "%s names %s, which the error table does not have", where, code) {
					assert.Equal(t, strconv.Itoa(info.Status), status, "%s lists %s under %s; the error table says %d", where, code, status, info.Status)
				}
				checked++
			}
		}
	}
	for name, ref := range doc.Components.Responses {
		if st, ok := responseStatus(ref); ok {
			check("components.responses."+name, st, ref)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, ref := range op.Responses.Map() {
				check(method+" "+path, status, ref)
			}
		}
	}
	assert.Positive(t, checked, "no response in openapi.yaml names a code")
}

// responseCodes collects the codes a problem response's schema allows (code: {enum: [...]}, in the
// schema or any allOf part).
func responseCodes(s *openapi3.SchemaRef) []string {
	if s == nil || s.Value == nil {
		return nil
	}
	var out []string
	if c := s.Value.Properties["code"]; c != nil && c.Value != nil && s.Ref == "" {
		for _, v := range c.Value.Enum {
			out = append(out, v.(string))
		}
	}
	for _, part := range s.Value.AllOf {
		out = append(out, responseCodes(part)...)
	}
	return out
}

// responseStatus is the status a shared response is for, from its schema's status: {const: N}.
func responseStatus(ref *openapi3.ResponseRef) (string, bool) {
	for _, media := range ref.Value.Content {
		var walk func(*openapi3.SchemaRef) (string, bool)
		walk = func(s *openapi3.SchemaRef) (string, bool) {
			if s == nil || s.Value == nil {
				return "", false
			}
			if st := s.Value.Properties["status"]; st != nil && st.Value != nil && st.Value.Const != nil {
				return fmt.Sprint(st.Value.Const), true
			}
			for _, part := range s.Value.AllOf {
				if v, ok := walk(part); ok {
					return v, true
				}
			}
			return "", false
		}
		if v, ok := walk(media.Schema); ok {
			return v, true
		}
	}
	return "", false
}

// problemCodes are the codes of the error table: every code the server writes.
func problemCodes() []string {
	var out []string
	for _, c := range ticketrush.Codes() {
		out = append(out, string(c.Code))
	}
	return out
}

// loadSpec loads and validates openapi.yaml and returns it with a router over its operations.
// kin-openapi reads OpenAPI 3.1 natively (type arrays such as [string, "null"], const, examples), and
// openapi3filter validates a 3.1 document's requests and responses with its JSON Schema 2020-12
// validator.
func loadSpec(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(specPath)
	require.NoError(t, err)
	require.True(t, doc.IsOpenAPI31OrLater(), "openapi.yaml should be OpenAPI 3.1")
	require.NoError(t, doc.Validate(loader.Context), "openapi.yaml is not a valid OpenAPI document")
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	return doc, router
}

// authenticate checks that a request carries what a security scheme asks for; whether the credential
// is good is the server's business, which the cases check.
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s, r := in.SecurityScheme, in.RequestValidationInput.Request
	switch {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		h := r.Header.Get("Authorization")
		if len(h) <= len("bearer ") || !strings.EqualFold(h[:len("bearer ")], "bearer ") {
			return errors.New("no bearer token")
		}
	case s.Type == "apiKey" && s.In == "header":
		if r.Header.Get(s.Name) == "" {
			return fmt.Errorf("no %s header", s.Name)
		}
	default:
		return fmt.Errorf("security scheme %s is not checked by this test", in.SecuritySchemeName)
	}
	return nil
}

// routesOnly is a server for listing routes: registering them needs no dependency.
func routesOnly() *Server {
	return NewServer(Deps{API: true, Registry: prometheus.NewRegistry(), Log: slog.New(slog.DiscardHandler)})
}

func operationKey(method, path string) string { return strings.ToUpper(method) + " " + path }

var routeParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// registeredRoutes returns "METHOD /path/{param}" for every route on the server's router. httprouter
// does not list its routes, so this walks its trees by reflection (reading only); should httprouter's
// internals change, it fails here rather than pass with nothing. Each route found is checked with
// the router's own Lookup.
func registeredRoutes(t *testing.T, s *Server) []string {
	t.Helper()
	trees := reflect.ValueOf(s.router).Elem().FieldByName("trees")
	require.True(t, trees.IsValid() && trees.Kind() == reflect.Map,
		"httprouter.Router has no trees map any more: update registeredRoutes")
	var out []string
	for it := trees.MapRange(); it.Next(); {
		method := it.Key().String()
		walkRoutes(t, it.Value(), "", func(pattern string) {
			concrete := routeParam.ReplaceAllString(pattern, "x")
			h, _, _ := s.router.Lookup(method, concrete)
			require.NotNil(t, h, "walked a route %s %s the router does not serve", method, pattern)
			out = append(out, operationKey(method, routeParam.ReplaceAllString(pattern, "{$1}")))
		})
	}
	require.NotEmpty(t, out)
	slices.Sort(out)
	return out
}

func walkRoutes(t *testing.T, n reflect.Value, prefix string, visit func(pattern string)) {
	require.Equal(t, reflect.Pointer, n.Kind())
	n = n.Elem()
	path, handle, children := n.FieldByName("path"), n.FieldByName("handle"), n.FieldByName("children")
	require.True(t, path.IsValid() && handle.IsValid() && children.IsValid(),
		"httprouter's node changed: update registeredRoutes")
	pattern := prefix + path.String()
	if !handle.IsNil() {
		visit(pattern)
	}
	for i := range children.Len() {
		walkRoutes(t, children.Index(i), pattern, visit)
	}
}
