// Package http is the HTTP adapter: the API of ../shared/API.md over the domain services.
package http

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Queue is the waiting room.
type Queue interface {
	Join(ctx context.Context, userID, concertID string) (ticketrush.Ticket, bool, error)
	Status(ctx context.Context, userID, token string) (ticketrush.Ticket, error)
	Leave(ctx context.Context, userID, token string) error
	Watch(ctx context.Context, userID, token string, emit func(ticketrush.Ticket) error) error
}

// Catalog is the concert catalog and its queue settings.
type Catalog interface {
	Create(ctx context.Context, c ticketrush.Concert) (ticketrush.Concert, error)
	List() []ticketrush.ConcertSummary
	Concert(id string) (ticketrush.Concert, bool)
	PatchQueue(ctx context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error)
	QueueState(ctx context.Context, concertID string) (ticketrush.QueueState, error)
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
	Registry   *prometheus.Registry
	Log        *slog.Logger
}

// Server routes the API.
type Server struct {
	Deps
	router  *httprouter.Router
	metrics *httpMetrics

	streams     context.Context // ends when the server stops: event streams end with it
	stopStreams context.CancelFunc
}

// NewServer builds the router.
func NewServer(d Deps) *Server {
	s := &Server{Deps: d, router: httprouter.New(), metrics: newHTTPMetrics(d.Registry)}
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
	s.handle("GET", "/v1/concerts", s.listConcerts)
	s.handle("POST", "/v1/concerts/:concertId/queue", s.joinQueue)
	s.handle("GET", "/v1/queue", s.queueStatus)
	s.handle("DELETE", "/v1/queue", s.leaveQueue)
	s.handle("GET", "/v1/queue/events", s.queueEvents)
	s.bookingRoutes()
	s.handle("GET", "/v1/points/history", s.pointsHistory)

	s.handle("POST", "/admin/v1/concerts", s.admin(s.createConcert))
	s.handle("GET", "/admin/v1/concerts/:concertId/queue", s.admin(s.getQueue))
	s.handle("PATCH", "/admin/v1/concerts/:concertId/queue", s.admin(s.patchQueue))
	return s
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// handlerFunc is a route's handler; a returned error is written as a problem document.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// Handle adds a route, instrumented under its pattern.
func (s *Server) handle(method, pattern string, h handlerFunc) {
	s.router.Handle(method, pattern, s.instrument(pattern, h))
}

func (s *Server) instrument(pattern string, h handlerFunc) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		if err := h(sw, r, p); err != nil {
			if status := writeError(sw, err); status >= 500 {
				s.Log.Error("request failed", "route", pattern, "method", r.Method, "status", status, "err", err)
			}
		}
		if s.metrics != nil { // nil only in the benchmark that prices the instrumentation
			s.metrics.observe(pattern, r.Method, sw.status, time.Since(start))
		}
	}
}

// fallback answers requests no route takes, counted under the route label "unmatched".
func (s *Server) fallback(err error) http.Handler {
	h := s.instrument("unmatched", func(http.ResponseWriter, *http.Request, httprouter.Params) error { return err })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, nil) })
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
	return s.Users.Verify(token)
}

// admin guards a handler with the admin token.
func (s *Server) admin(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		token, ok := bearer(r)
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.AdminToken)) != 1 {
			return ticketrush.ErrUnauthenticated
		}
		return h(w, r, p)
	}
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
	for name, check := range s.Ready {
		if err := check(ctx); err != nil {
			failing = append(failing, name)
			s.Log.Warn("not ready", "check", name, "err", err)
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
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
