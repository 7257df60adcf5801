// Package http is the HTTP adapter: the API of docs/api.md over the domain services.
package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ticketrush/ticketrush/internal/config"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Queue is the waiting room.
type Queue interface {
	Join(ctx context.Context, userID, concertID string) (ticketrush.Ticket, bool, error)
	JoinWith(ctx context.Context, userID, concertID string, pass ticketrush.JoinPass) (ticketrush.Ticket, bool, error)
	Status(ctx context.Context, userID, token string) (ticketrush.Ticket, error)
	Leave(ctx context.Context, userID, token string) error
	Watch(ctx context.Context, callTimeout time.Duration, userID, token string, emit func(ticketrush.Ticket) error) error
}

// Catalog is the concert catalog and its queue settings.
type Catalog interface {
	Create(ctx context.Context, c ticketrush.Concert, idempotencyKey string) (created ticketrush.Concert, done bool, err error)
	List() []ticketrush.ConcertSummary
	Concert(id string) (ticketrush.Concert, bool)
	PatchQueue(ctx context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error)
	QueueState(ctx context.Context, concertID string) (ticketrush.QueueState, error)
	IssueAccessCodes(ctx context.Context, concertID string, count int) ([]string, error)
}

// Challenges issues and checks the proof-of-work challenges of a join.
type Challenges interface {
	Issue(userID, concertID string, bits int, now time.Time) (string, time.Time)
	Pass(challenge, nonce, userID, concertID string, now time.Time) ticketrush.JoinPass
}

// Passes signs admission passes and serves the key set that verifies them (docs/pass.md).
type Passes interface {
	Sign(userID, concertID string, activeUntil time.Time) (string, error)
	KeySet() (jwks []byte, maxAge time.Duration)
}

// Users verifies user JWTs.
type Users interface {
	Verify(token string) (string, error)
}

// Check is one dependency readyz asks: nil while it answers.
type Check func(ctx context.Context) error

// Deps is what the server serves.
type Deps struct {
	API        bool // serve the /v1 and /admin routes; without it only /healthz, /readyz and /metrics
	Queue      Queue
	Catalog    Catalog
	Booking    Booking
	Users      Users
	AdminToken string
	Ledger     Ledger // the durable point ledger, for GET /v1/points/history
	Ready      map[string]Check
	Degraded   func() []string // what the service cannot promise while ready (readyz's "degraded")
	Registry   *prometheus.Registry
	Log        *slog.Logger
	// Timeout bounds every request's calls to Redis and Postgres (config.RequestTimeout when 0),
	// CreateTimeout those of an admin create (config.CreateTimeout when 0): a dependency that does not answer in time
	// is a 503 UNAVAILABLE with Retry-After, well before the server's write timeout cuts the response.
	Timeout, CreateTimeout time.Duration

	Limiter        *Limiter       // the per-instance request limit of every /v1 route; nil: off
	TrustedProxies []netip.Prefix // TRUSTED_PROXY_CIDRS: whose X-Forwarded-For names the client
	Challenges     Challenges
	Draws          Draws  // the on-sale's public draw
	Passes         Passes // the admission pass of an ACTIVE queue body; nil: pass is always null, no key set
	PassSite       string // where the fan page sends an admitted fan with their pass (GET /site.json); "": nowhere
}

// MaxHeaderBytes bounds a request's header block (net/http adds 4 KiB of slack): a JWT is a few hundred
// bytes, so a 1 MiB Authorization header is refused (431) before it is read whole or parsed.
const MaxHeaderBytes = 16 << 10

// Server routes the API.
type Server struct {
	Deps
	router      *httprouter.Router
	metrics     *httpMetrics
	unavailable *burstLog

	streams     context.Context // ends when the server stops: event streams end with it
	stopStreams context.CancelFunc
}

// NewServer builds the router.
func NewServer(d Deps) *Server {
	if d.Timeout <= 0 {
		d.Timeout = config.RequestTimeout
	}
	if d.CreateTimeout <= 0 {
		d.CreateTimeout = config.CreateTimeout
	}
	s := &Server{Deps: d, router: httprouter.New(), metrics: newHTTPMetrics(d.Registry),
		unavailable: newBurstLog(d.Log, unavailableBurst)}
	s.streams, s.stopStreams = context.WithCancel(context.Background())
	s.router.HandleMethodNotAllowed = true
	s.router.NotFound = s.fallback(ticketrush.ErrNotFound)
	s.router.MethodNotAllowed = s.fallback(errMethod)
	s.router.PanicHandler = func(w http.ResponseWriter, r *http.Request, v any) {
		s.Log.Error("panic", "route", r.URL.Path, "panic", v)
		writeError(w, errors.New("panic"))
	}

	s.handle("GET", "/healthz", s.healthz)
	s.handle("GET", "/readyz", s.readyz)
	s.router.Handler("GET", "/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{Registry: d.Registry}))

	if !d.API {
		return s
	}
	s.handle("GET", "/.well-known/jwks.json", s.keySet)
	s.handle("GET", "/site.json", s.site)
	s.handle("GET", "/v1/concerts", s.listConcerts)
	s.handle("POST", "/v1/concerts/:concertId/queue", s.joinQueue)
	s.handle("POST", "/v1/concerts/:concertId/queue/challenge", s.queueChallenge)
	s.handle("GET", "/v1/queue", s.queueStatus)
	s.handle("DELETE", "/v1/queue", s.leaveQueue)
	s.handleStream("GET", "/v1/queue/events", s.queueEvents)
	s.bookingRoutes()
	s.handle("GET", "/v1/points/history", s.pointsHistory)
	s.handle("GET", "/v1/concerts/:concertId/draw", s.getDraw)
	s.handleStream("GET", "/v1/concerts/:concertId/draw/keys", s.getDrawKeys) // up to 65 MB: a long answer

	s.router.Handle("POST", "/admin/v1/concerts", s.instrument("/admin/v1/concerts", s.CreateTimeout, s.admin(s.createConcert)))
	s.handle("GET", "/admin/v1/concerts/:concertId/queue", s.admin(s.getQueue))
	s.handle("PATCH", "/admin/v1/concerts/:concertId/queue", s.admin(s.patchQueue))
	// Issuing up to 100,000 codes writes as much as a create does (a Postgres row and a Redis field each):
	// it has a create's bound, not a call's.
	s.router.Handle("POST", "/admin/v1/concerts/:concertId/access-codes", s.instrument("/admin/v1/concerts/:concertId/access-codes",
		s.CreateTimeout, s.admin(s.issueAccessCodes)))
	s.pageRoutes()
	return s
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// handlerFunc is a route's handler; a returned error is written as a problem document.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// publicRoutes are the /v1 routes that need no JWT (docs/api.md), rate limited per client address.
var publicRoutes = map[string]bool{
	"GET /v1/concerts": true, "GET /v1/concerts/:concertId/draw": true, "GET /v1/concerts/:concertId/draw/keys": true,
}

// Handle adds a route, instrumented under its pattern and bounded by the request timeout; /v1 routes are
// rate limited per instance.
func (s *Server) handle(method, pattern string, h handlerFunc) {
	if strings.HasPrefix(pattern, "/v1/") {
		h = s.limited(h, publicRoutes[method+" "+pattern])
	}
	s.router.Handle(method, pattern, s.instrument(pattern, s.Timeout, h))
}

// handleStream adds a long-lived route: instrumented and rate limited like handle, but with no deadline
// on the request itself (an event stream lasts as long as its fan waits, the draw's keys file of a
// million entrants is 65 MB); the handler bounds each of its own calls to Redis and Postgres by
// s.Timeout, and each write by streamWriteTimeout.
func (s *Server) handleStream(method, pattern string, h handlerFunc) {
	s.router.Handle(method, pattern, s.instrument(pattern, 0, s.limited(h, publicRoutes[method+" "+pattern])))
}

// instrument runs h with a deadline of timeout on the request's context (none when timeout is 0) (every Redis and Postgres call
// of the request inherits it), writes its error as a problem document, logs a 5xx (a burst of 503s
// once) and counts the request.
func (s *Server) instrument(pattern string, timeout time.Duration, h handlerFunc) httprouter.Handle {
	var (
		series      *routeSeries
		unavailable prometheus.Counter
	)
	if s.metrics != nil {
		series = s.metrics.route(pattern)
		unavailable = s.metrics.unavailable.WithLabelValues(pattern) // at 0 from the start: the API dashboard plots 503s by route
	}
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		start := time.Now()
		rs := &requestState{Context: r.Context(), sw: statusWriter{ResponseWriter: w, status: http.StatusOK}}
		if timeout > 0 {
			rs.until = start.Add(timeout)
		}
		defer rs.end()
		r = r.WithContext(rs)
		sw := &rs.sw
		if err := h(sw, r, p); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ticketrush.ErrUnavailable) {
				err = errors.Join(ticketrush.ErrUnavailable, err) // a dependency did not answer in time
			}
			switch status := writeError(sw, err); {
			case status == http.StatusServiceUnavailable:
				if unavailable != nil {
					unavailable.Inc()
				}
				s.unavailable.note(pattern, r.Method, err)
			case status >= 500:
				s.Log.Error("request failed", "route", pattern, "method", r.Method, "status", status, "err", err)
			}
		}
		if series != nil { // nil only in the benchmark that prices the instrumentation
			series.observe(r.Method, sw.status, time.Since(start))
		}
	}
}

// requestState is what instrument keeps of one request: its bounded context, its status writer (one
// allocation for both) and the user its bearer JWT verified as, once something verified it (the
// limiter does before the handler), so that a request verifies its JWT once.
//
// The context is the request's own, bounded by until: Deadline reports the bound at once, and the
// timer that ends it at the bound is made only when something asks for Done or Err, as every call to
// Redis or Postgres does. A poll answered from the instance's view asks for neither, and a
// context.WithTimeout per request (a timer, and a child registered with the connection's context) cost
// that poll about as much as its JWT check or its reply (perf, make bench's poll row). When the handler returns, the context ends (Canceled), as a
// deferred cancel of a WithTimeout would end it.
type requestState struct {
	context.Context // the request's own, unbounded
	sw              statusWriter
	user            string    // the user its bearer token verified as; "" until verified
	until           time.Time // the request's deadline; zero: none (an event stream)

	mu     sync.Mutex
	timed  context.Context // the context bounded by until, once something waited on it
	cancel context.CancelFunc
	ended  bool // the handler returned
}

type requestStateKey struct{}

func (rs *requestState) Value(key any) any {
	if key == (requestStateKey{}) {
		return rs
	}
	rs.mu.Lock()
	timed := rs.timed
	rs.mu.Unlock()
	if timed != nil { // a context derived from rs finds the bounded one's cancellation through Value
		return timed.Value(key)
	}
	return rs.Context.Value(key)
}

func (rs *requestState) Deadline() (time.Time, bool) {
	if rs.until.IsZero() {
		return rs.Context.Deadline()
	}
	if d, ok := rs.Context.Deadline(); ok && d.Before(rs.until) {
		return d, true
	}
	return rs.until, true
}

func (rs *requestState) Done() <-chan struct{} { return rs.bounded().Done() }

func (rs *requestState) Err() error { return rs.bounded().Err() }

// bounded is the request's context with its deadline, made on first use (after end, ended already);
// a request without a deadline has its own.
func (rs *requestState) bounded() context.Context {
	if rs.until.IsZero() {
		return rs.Context
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.timed == nil {
		rs.timed, rs.cancel = context.WithDeadline(rs.Context, rs.until)
		if rs.ended {
			rs.cancel()
		}
	}
	return rs.timed
}

// end ends a bounded request's context when its handler returns.
func (rs *requestState) end() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.ended = true
	if rs.cancel != nil {
		rs.cancel()
	}
}

// stateOf returns the requestState of an instrumented request, nil for any other.
func stateOf(r *http.Request) *requestState {
	rs, _ := r.Context().Value(requestStateKey{}).(*requestState)
	return rs
}

// fallback answers requests no route takes, counted under the route label "unmatched".
func (s *Server) fallback(err error) http.Handler {
	h := s.instrument("unmatched", s.Timeout, func(http.ResponseWriter, *http.Request, httprouter.Params) error { return err })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, nil) })
}

// unavailableBurst is how long one log line stands for the 503s that follow it.
const unavailableBurst = 10 * time.Second

// burstLog logs the first 503 of a burst and then one line per window with how many it left out, so
// that an outage of a dependency is one log line every few seconds, not one per request.
type burstLog struct {
	log    *slog.Logger
	window time.Duration
	mu     sync.Mutex
	last   time.Time
	quiet  int
}

func newBurstLog(log *slog.Logger, window time.Duration) *burstLog {
	return &burstLog{log: log, window: window}
}

func (b *burstLog) note(route, method string, err error) {
	b.mu.Lock()
	now := time.Now()
	if now.Sub(b.last) < b.window {
		b.quiet++
		b.mu.Unlock()
		return
	}
	quiet := b.quiet
	b.last, b.quiet = now, 0
	b.mu.Unlock()
	b.log.Error("dependency unavailable", "route", route, "method", method, "status", http.StatusServiceUnavailable,
		"err", err, "not_logged_since_last", quiet)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the connection's writer (flush, write deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// user returns the user id of the request's bearer JWT.
func (s *Server) user(r *http.Request) (string, error) {
	token, ok := bearer(r)
	if !ok {
		if r.Header.Get("Authorization") == "" {
			return "", ticketrush.WithDetail(ticketrush.ErrUnauthenticated, "the Authorization header is missing; send Authorization: Bearer <JWT>")
		}
		return "", ticketrush.WithDetail(ticketrush.ErrUnauthenticated, "the Authorization header must be Bearer <JWT>")
	}
	rs := stateOf(r)
	if rs != nil && rs.user != "" { // a request has one Authorization header: the same token
		return rs.user, nil
	}
	user, err := s.Users.Verify(token)
	if err == nil && rs != nil {
		rs.user = user
	}
	return user, err
}

// admin guards a handler with the admin token.
func (s *Server) admin(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		token, ok := bearer(r)
		if !ok || !s.isAdminToken(token) {
			return ticketrush.ErrUnauthenticated
		}
		return h(w, r, p)
	}
}

// isAdminToken compares SHA-256 digests in constant time, so that neither the token's bytes nor its
// length show in the time a refusal takes.
func (s *Server) isAdminToken(token string) bool {
	if s.AdminToken == "" {
		return false
	}
	got, want := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(s.AdminToken))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	return strings.TrimSpace(h[7:]), true
}

// userAndConcert reads the caller's user id and the route's concert id.
func (s *Server) userAndConcert(r *http.Request, p httprouter.Params) (string, string, error) {
	user, err := s.user(r)
	if err != nil {
		return "", "", err
	}
	id, err := concertID(p)
	return user, id, err
}

// concertID returns the route's concert id, or ErrNotFound for one that cannot exist.
func concertID(p httprouter.Params) (string, error) {
	id := p.ByName("concertId")
	if !ticketrush.ValidID(id) {
		return "", ticketrush.ErrNotFound
	}
	return id, nil
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	failing := []string{}
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(s.Ready))
	for name, check := range s.Ready { // at once: a check that waits out the deadline starves no other
		go func() { results <- result{name, check(ctx)} }()
	}
	for range s.Ready {
		if r := <-results; r.err != nil {
			failing = append(failing, r.name)
			s.Log.Warn("not ready", "check", r.name, "err", r.err)
		}
	}
	if len(failing) > 0 {
		sort.Strings(failing)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		return json.NewEncoder(w).Encode(struct {
			problem
			Failing []string `json:"failing"`
		}{problem{Type: "about:blank", Title: "Not ready", Status: 503, Code: "UNAVAILABLE",
			Detail: "a dependency does not answer"}, failing})
	}
	var degraded []string
	if s.Degraded != nil {
		degraded = s.Degraded()
	}
	writeJSON(w, http.StatusOK, struct {
		Status   string   `json:"status"`
		Degraded []string `json:"degraded,omitempty"`
	}{"ready", degraded})
	return nil
}
