package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The contract test: openapi.yaml, the API.md contract written for tools, is checked against the real
// handlers with kin-openapi's request and response validators. Every case's request goes through
// openapi3filter.ValidateRequest and the real server; its response through ValidateResponse, which
// fails on a status the operation does not list, a field the schema does not allow, a missing required
// field, a wrong type or format, a problem code outside the response's enum.
//
// To add a route: describe it in openapi.yaml, register it in NewServer, give its dependency a fake in
// fakes_test.go, add its cases to apiCases (at least one success) and take it out of casesToCome.

// specPath is the project's OpenAPI document.
const specPath = "../../openapi.yaml"

// casesToCome are operations openapi.yaml describes (API.md has them) that NewServer does not serve
// yet, so apiCases has no case for them. For these alone the test asks neither that NewServer
// registers them nor that a case exercises them.
var casesToCome = map[string]bool{}

// apiCase is one request and what the server must answer.
type apiCase struct {
	name   string
	method string
	path   string
	header http.Header
	body   string
	setup  func(*fakes) // changes the fakes before the server is built

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

// unavailable makes every dependency answer that Redis or Postgres is down; broken, fail unexpectedly.
func unavailable(f *fakes) { failAll(f, ticketrush.ErrUnavailable) }
func broken(f *fakes)      { failAll(f, errDown) }

func failAll(f *fakes, err error) { f.Queue.Err, f.Catalog.Err, f.Booking.Err = err, err, err }

var apiCases = []apiCase{
	// Operations.
	{name: "healthz", method: "GET", path: "/healthz", status: 200},
	{name: "readyz", method: "GET", path: "/readyz", status: 200},
	{name: "readyz redis down", method: "GET", path: "/readyz", status: 503,
		setup: func(f *fakes) { f.Ready["redis"] = func(context.Context) error { return errDown } }},
	{name: "metrics", method: "GET", path: "/metrics", status: 200},

	// Catalog.
	{name: "concerts public", method: "GET", path: "/v1/concerts", status: 200},
	{name: "concerts with a token too", method: "GET", path: "/v1/concerts", header: asUser(userAlice), status: 200},
	{name: "concerts none", method: "GET", path: "/v1/concerts", status: 200,
		setup: func(f *fakes) { f.Catalog = &fakeCatalog{concerts: map[string]ticketrush.Concert{}} }},

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
		header: asUser(userAlice), setup: unavailable, status: 503, code: "UNAVAILABLE"},
	{name: "join internal error", method: "POST", path: "/v1/concerts/" + concert1 + "/queue",
		header: asUser(userAlice), setup: broken, status: 500, code: "INTERNAL"},
	{name: "join sold out", method: "POST", path: "/v1/concerts/" + concert1 + "/queue",
		header: asUser(userAlice), setup: func(f *fakes) { f.Queue.Err = ticketrush.ErrSoldOut }, status: 409, code: "SOLD_OUT"},

	// Queue: status.
	{name: "status waiting", method: "GET", path: "/v1/queue", header: asUser(userBob, qtBobWaiting), status: 200},
	{name: "status active", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtAliceActive), status: 200},
	{name: "status expired", method: "GET", path: "/v1/queue", header: asUser(userCarol, qtCarolExpired), status: 200},
	{name: "status done", method: "GET", path: "/v1/queue", header: asUser(userDave, qtDaveDone), status: 200},
	{name: "status sold out", method: "GET", path: "/v1/queue", header: asUser(userBob, qtBobSoldOut), status: 200},
	{name: "status no queue token", method: "GET", path: "/v1/queue", header: asUser(userAlice),
		status: 401, code: "QUEUE_TOKEN_INVALID", specRefuses: true},
	{name: "status forged", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtForged),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "status another user's", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtBobWaiting),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "status no bearer", method: "GET", path: "/v1/queue", header: hdr("X-Queue-Token", qtAliceActive),
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "status redis down", method: "GET", path: "/v1/queue", header: asUser(userAlice, qtAliceActive),
		setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Queue: events.
	{name: "events done", method: "GET", path: "/v1/queue/events", header: asUser(userDave, qtDaveDone), status: 200},
	{name: "events forged", method: "GET", path: "/v1/queue/events", header: asUser(userAlice, qtForged),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "events redis down", method: "GET", path: "/v1/queue/events", header: asUser(userAlice, qtAliceActive),
		setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Queue: leave.
	{name: "leave active", method: "DELETE", path: "/v1/queue", header: asUser(userAlice, qtAliceActive), status: 204},
	{name: "leave waiting", method: "DELETE", path: "/v1/queue", header: asUser(userBob, qtBobWaiting), status: 204},
	{name: "leave expired", method: "DELETE", path: "/v1/queue", header: asUser(userCarol, qtCarolExpired), status: 204},
	{name: "leave forged", method: "DELETE", path: "/v1/queue", header: asUser(userAlice, qtForged),
		status: 401, code: "QUEUE_TOKEN_INVALID"},
	{name: "leave bad bearer", method: "DELETE", path: "/v1/queue",
		header: hdr("Authorization", "Bearer nope", "X-Queue-Token", qtAliceActive), status: 401, code: "UNAUTHENTICATED"},
	{name: "leave redis down", method: "DELETE", path: "/v1/queue", header: asUser(userAlice, qtAliceActive),
		setup: unavailable, status: 503, code: "UNAVAILABLE"},

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
	// openapi.yaml takes application/json only; the server reads any body as JSON.
	{name: "create text/plain", method: "POST", path: "/admin/v1/concerts",
		header: hdr("Authorization", "Bearer "+testAdminToken, "Content-Type", "text/plain"), body: createBody,
		status: 201, specRefuses: true},
	{name: "create over 64 KiB", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: padded(createBody),
		status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "create redis down", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: createBody,
		setup: unavailable, status: 503, code: "UNAVAILABLE"},
	{name: "create internal error", method: "POST", path: "/admin/v1/concerts", header: jsonBody(asAdmin), body: createBody,
		setup: broken, status: 500, code: "INTERNAL"},

	// Admin: queue state.
	{name: "queue state", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue", header: asAdmin, status: 200},
	{name: "queue state unknown concert", method: "GET", path: "/admin/v1/concerts/" + noConcert + "/queue", header: asAdmin,
		status: 404, code: "NOT_FOUND"},
	{name: "queue state no token", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue",
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "queue state user token", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue", header: asUser(userAlice),
		status: 401, code: "UNAUTHENTICATED"},
	{name: "queue state redis down", method: "GET", path: "/admin/v1/concerts/" + concert1 + "/queue", header: asAdmin,
		setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Admin: queue settings.
	{name: "patch", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"activeCapacity":10,"admitPerSecond":5,"paused":true}`, status: 200},
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
	{name: "patch redis down", method: "PATCH", path: "/admin/v1/concerts/" + concert1 + "/queue", header: jsonBody(asAdmin),
		body: `{"paused":true}`, setup: unavailable, status: 503, code: "UNAVAILABLE"},

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
	{name: "schedules redis down", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules",
		header: asUser(userAlice, qtAliceActive), setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Catalog (gated): seats.
	{name: "seats", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userAlice, qtAliceActive), status: 200},
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
	{name: "seats redis down", method: "GET", path: "/v1/concerts/" + concert1 + "/schedules/" + schedule1 + "/seats",
		header: asUser(userAlice, qtAliceActive), setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Reservations: hold (gated).
	{name: "hold", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, status: 201},
	{name: "hold held seat", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"VIP-1"}`, status: 409, code: "SEAT_UNAVAILABLE"},
	{name: "hold sold seat", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"VIP-2"}`, status: 409, code: "SEAT_UNAVAILABLE"},
	{name: "hold past the limit", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, status: 409, code: "HOLD_LIMIT_REACHED",
		setup: func(f *fakes) {
			c := f.Catalog.concerts[concert1]
			c.Queue.MaxHoldsPerUser = 1
			f.Catalog.concerts[concert1] = c
		}},
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
	{name: "hold redis down", method: "POST", path: "/v1/reservations", header: jsonBody(asUser(userAlice, qtAliceActive)),
		body: `{"scheduleId":"` + schedule1 + `","seatId":"R-3"}`, setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Reservations: read and cancel.
	{name: "reservation held", method: "GET", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice), status: 200},
	{name: "reservation paid", method: "GET", path: "/v1/reservations/" + resAlicePaid, header: asUser(userAlice), status: 200},
	{name: "reservation expired", method: "GET", path: "/v1/reservations/" + resAliceExpired, header: asUser(userAlice), status: 200},
	{name: "reservation cancelled", method: "GET", path: "/v1/reservations/" + resAliceCancelled, header: asUser(userAlice), status: 200},
	{name: "reservation of another user", method: "GET", path: "/v1/reservations/" + resBobHeld, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "reservation unknown", method: "GET", path: "/v1/reservations/" + noReservation, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "reservation no bearer", method: "GET", path: "/v1/reservations/" + resAliceHeld,
		status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "reservation redis down", method: "GET", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice),
		setup: unavailable, status: 503, code: "UNAVAILABLE"},
	{name: "cancel", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice), status: 204},
	{name: "cancel paid", method: "DELETE", path: "/v1/reservations/" + resAlicePaid, header: asUser(userAlice),
		status: 409, code: "RESERVATION_NOT_HELD"},
	{name: "cancel another user's", method: "DELETE", path: "/v1/reservations/" + resBobHeld, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "cancel bad bearer", method: "DELETE", path: "/v1/reservations/" + resAliceHeld,
		header: hdr("Authorization", "Bearer nope"), status: 401, code: "UNAUTHENTICATED"},
	{name: "cancel redis down", method: "DELETE", path: "/v1/reservations/" + resAliceHeld, header: asUser(userAlice),
		setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Points.
	{name: "balance", method: "GET", path: "/v1/points", header: asUser(userAlice), status: 200},
	{name: "history", method: "GET", path: "/v1/points/history", header: asUser(userAlice), status: 200},
	{name: "history limit", method: "GET", path: "/v1/points/history?limit=1", header: asUser(userAlice), status: 200},
	{name: "history never seen", method: "GET", path: "/v1/points/history", header: asUser(userDave), status: 200},
	{name: "history limit 0", method: "GET", path: "/v1/points/history?limit=0", header: asUser(userAlice), status: 400,
		code: "INVALID_REQUEST", specRefuses: true},
	{name: "history limit 101", method: "GET", path: "/v1/points/history?limit=101", header: asUser(userAlice), status: 400,
		code: "INVALID_REQUEST", specRefuses: true},
	{name: "history no bearer", method: "GET", path: "/v1/points/history", status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "history ledger down", method: "GET", path: "/v1/points/history", header: asUser(userAlice), status: 503,
		code: "UNAVAILABLE", setup: func(f *fakes) { f.Ledger.Err = ticketrush.ErrUnavailable }},
	{name: "balance never seen", method: "GET", path: "/v1/points", header: asUser(userDave), status: 200},
	{name: "balance no bearer", method: "GET", path: "/v1/points", status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "balance redis down", method: "GET", path: "/v1/points", header: asUser(userAlice),
		setup: unavailable, status: 503, code: "UNAVAILABLE"},
	{name: "charge", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":200000}`, status: 201},
	{name: "charge with a key", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userBob), "Idempotency-Key", "k-1")), body: `{"amount":200000}`, status: 201},
	{name: "charge replayed", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", idemAlice)), body: `{"amount":10000}`, status: 201},
	{name: "charge key reused", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", idemAlice)), body: `{"amount":20000}`,
		status: 409, code: "IDEMPOTENCY_CONFLICT"},
	{name: "charge past the balance limit", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userCarol)),
		body: `{"amount":1001}`, status: 409, code: "BALANCE_LIMIT"},
	{name: "charge to the balance limit", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userCarol)),
		body: `{"amount":1000}`, status: 201},
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
	{name: "charge over 64 KiB", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: padded(`{"amount":100}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "charge bad bearer", method: "POST", path: "/v1/points/charges",
		header: jsonBody(hdr("Authorization", "Bearer nope")), body: `{"amount":100}`, status: 401, code: "UNAUTHENTICATED"},
	{name: "charge redis down", method: "POST", path: "/v1/points/charges", header: jsonBody(asUser(userBob)),
		body: `{"amount":100}`, setup: unavailable, status: 503, code: "UNAVAILABLE"},

	// Payments.
	{name: "pay", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceHeld + `"}`, status: 201},
	{name: "pay with a key", method: "POST", path: "/v1/payments",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", "pay-1")),
		body:   `{"reservationId":"` + resAliceHeld + `"}`, status: 201},
	{name: "pay paid again", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAlicePaid + `"}`, status: 200},
	{name: "pay key reused", method: "POST", path: "/v1/payments",
		header: jsonBody(hdr("Authorization", bearerOf(userAlice), "Idempotency-Key", idemAlice)),
		body:   `{"reservationId":"` + resAliceHeld + `"}`, status: 409, code: "IDEMPOTENCY_CONFLICT"},
	{name: "pay short balance", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userBob)),
		body: `{"reservationId":"` + resBobHeld + `"}`, status: 409, code: "INSUFFICIENT_BALANCE"},
	{name: "pay expired", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceExpired + `"}`, status: 410, code: "RESERVATION_EXPIRED"},
	{name: "pay cancelled", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceCancelled + `"}`, status: 409, code: "RESERVATION_NOT_HELD"},
	{name: "pay another user's", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resBobHeld + `"}`, status: 404, code: "NOT_FOUND"},
	{name: "pay unknown", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + noReservation + `"}`, status: 404, code: "NOT_FOUND"},
	{name: "pay no reservation", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{}`, status: 400, code: "INVALID_REQUEST", specRefuses: true},
	{name: "pay over 64 KiB", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: padded(`{"reservationId":"` + resAliceHeld + `"}`), status: 413, code: "PAYLOAD_TOO_LARGE"},
	{name: "pay no bearer", method: "POST", path: "/v1/payments", header: jsonBody(hdr()),
		body: `{"reservationId":"` + resAliceHeld + `"}`, status: 401, code: "UNAUTHENTICATED", specRefuses: true},
	{name: "pay redis down", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceHeld + `"}`, setup: unavailable, status: 503, code: "UNAVAILABLE"},
	{name: "pay internal error", method: "POST", path: "/v1/payments", header: jsonBody(asUser(userAlice)),
		body: `{"reservationId":"` + resAliceHeld + `"}`, setup: broken, status: 500, code: "INTERNAL"},
	{name: "payment", method: "GET", path: "/v1/payments/p" + resAlicePaid, header: asUser(userAlice), status: 200},
	{name: "payment of a held reservation", method: "GET", path: "/v1/payments/p" + resAliceHeld, header: asUser(userAlice),
		status: 404, code: "NOT_FOUND"},
	{name: "payment of another user", method: "GET", path: "/v1/payments/p" + resAlicePaid, header: asUser(userBob),
		status: 404, code: "NOT_FOUND"},
	{name: "payment bad bearer", method: "GET", path: "/v1/payments/p" + resAlicePaid,
		header: hdr("Authorization", "Bearer nope"), status: 401, code: "UNAUTHENTICATED"},
	{name: "payment redis down", method: "GET", path: "/v1/payments/p" + resAlicePaid, header: asUser(userAlice),
		setup: unavailable, status: 503, code: "UNAVAILABLE"},
}

func (tt apiCase) request() *http.Request {
	r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
	for k, v := range tt.header {
		r.Header[k] = slices.Clone(v)
	}
	return r
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
	succeeded := map[string]bool{} // operations with a 2xx case
	exercised := map[string]bool{} // operations with any case
	for _, tt := range apiCases {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes()
			if tt.setup != nil {
				tt.setup(f)
			}
			srv := f.server()
			ctx := context.Background()

			req := tt.request()
			route, params, err := router.FindRoute(req)
			require.NoError(t, err, "openapi.yaml has no operation for %s %s", tt.method, tt.path)
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
			err = openapi3filter.ValidateRequest(ctx, in)
			if tt.specRefuses {
				assert.Error(t, err, "openapi.yaml accepts a request the case says it refuses")
			} else {
				assert.NoError(t, err, "the request breaks openapi.yaml")
			}

			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, tt.request())
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
			exercised[op] = true
			if res.StatusCode < 300 {
				succeeded[op] = true
			}
		})
	}

	for _, r := range registeredRoutes(t, newFakes().server()) {
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
	for _, r := range registeredRoutes(t, newFakes().server()) {
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

// TestOpenAPIDocument checks that openapi.yaml loads as OpenAPI 3.1 and is a valid document, and that
// every problem code API.md's table has appears in it.
func TestOpenAPIDocument(t *testing.T) {
	doc, _ := loadSpec(t)
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	codes := doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum
	for _, c := range problemCodes() {
		assert.Contains(t, codes, c, "Problem.code lacks %s", c)
	}
}

// problemCodes are API.md's codes and the server's own: its error table and its own refusals.
func problemCodes() []string {
	out := []string{"INVALID_REQUEST", "PAYLOAD_TOO_LARGE", "METHOD_NOT_ALLOWED", "INTERNAL", "RATE_LIMITED"}
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
