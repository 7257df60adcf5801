package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// deadlineServer is a server whose routes are the test's: /bounded under the request timeout, /stream
// without one (as handleStream adds the event stream).
func deadlineServer(timeout time.Duration, bounded, stream handlerFunc) *Server {
	s := NewServer(Deps{Registry: prometheus.NewRegistry(), Log: slog.New(slog.DiscardHandler), Timeout: timeout})
	s.router.Handle("GET", "/bounded", s.instrument("/bounded", s.Timeout, bounded))
	s.router.Handle("GET", "/stream", s.instrument("/stream", 0, stream))
	return s
}

// serve sends one GET to s with a context that can be cancelled, as net/http serves a request (the
// connection's, which outlives the request: it ends with the test), and returns the recorded answer.
func serve(t *testing.T, s *Server, path string) *httptest.ResponseRecorder {
	conn, hangUp := context.WithCancel(context.Background())
	t.Cleanup(hangUp)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequestWithContext(conn, "GET", path, nil))
	return w
}

// TestRequestDeadline: a bounded route's context has its deadline from the request's start, ends with
// DeadlineExceeded when a dependency has not answered by then (a 503), and ends when the handler
// returns, whether or not anything waited on it; an event stream's context has no deadline.
func TestRequestDeadline(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var seen []context.Context
	s := deadlineServer(timeout,
		func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			ctx := r.Context()
			seen = append(seen, ctx)
			d, ok := ctx.Deadline()
			if !assert.True(t, ok, "a bounded request has a deadline") {
				return nil
			}
			assert.WithinDuration(t, time.Now().Add(timeout), d, timeout, "the deadline is the request's start plus the timeout")
			if r.URL.Query().Get("wait") == "" {
				return nil // answered from memory: nothing waits on the context
			}
			select { // a dependency that never answers, bounded by the request's context as a client call is
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Minute):
				return errors.New("the request's deadline never came")
			}
		},
		func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			_, ok := r.Context().Deadline()
			assert.False(t, ok, "an event stream has no deadline of the request")
			assert.NoError(t, r.Context().Err())
			return nil
		})

	w := serve(t, s, "/bounded?wait=1")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, "a dependency that does not answer in time is a 503: %s", w.Body)
	require.Len(t, seen, 1)
	assert.ErrorIs(t, context.Cause(seen[0]), context.DeadlineExceeded)

	w = serve(t, s, "/bounded")
	assert.Equal(t, http.StatusOK, w.Code)
	require.Len(t, seen, 2)
	select {
	case <-seen[1].Done(): // asked only now: the context ended with its handler all the same
	default:
		t.Fatal("a request's context outlives its handler")
	}
	assert.ErrorIs(t, seen[1].Err(), context.Canceled)
	assert.Equal(t, http.StatusOK, serve(t, s, "/stream").Code)

	// A context derived from the request's ends with it, long before the request's deadline.
	var derived context.Context
	s = deadlineServer(time.Hour, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		var cancel context.CancelFunc
		derived, cancel = context.WithTimeout(r.Context(), time.Hour)
		_ = cancel // ended by its parent, which the test checks
		return nil
	}, nil)
	assert.Equal(t, http.StatusOK, serve(t, s, "/bounded").Code)
	require.NotNil(t, derived)
	select {
	case <-derived.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a context derived from the request's did not end with it")
	}
}

// TestPollFromMemoryMakesNoTimer: a handler that answers without waiting on its context (a poll from
// the instance's view) costs the same allocations with the request deadline as without one: the
// deadline's timer, and its registration with the connection's context, are made only when something
// waits.
func TestPollFromMemoryMakesNoTimer(t *testing.T) {
	answer := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		_, _ = r.Context().Deadline()
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	s := deadlineServer(time.Second, answer, answer)
	conn, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	allocs := func(path string) float64 {
		r := httptest.NewRequestWithContext(conn, "GET", path, nil)
		w := httptest.NewRecorder()
		return testing.AllocsPerRun(200, func() { s.ServeHTTP(w, r) })
	}
	assert.Equal(t, allocs("/stream"), allocs("/bounded"),
		"allocations of a request that never waits, without a deadline and with one")
}

// deadlineCatalog records the deadline of the context its IssueAccessCodes is called with.
type deadlineCatalog struct {
	Catalog
	left time.Duration
}

func (c *deadlineCatalog) IssueAccessCodes(ctx context.Context, _ string, count int) ([]string, error) {
	if d, ok := ctx.Deadline(); ok {
		c.left = time.Until(d)
	}
	return make([]string, count), nil
}

// TestAccessCodesHaveACreatesBound: issuing access codes (up to 100,000: a Postgres row and a Redis field
// each) runs under the admin create's bound, not a call's 2 s, which 100,000 codes passed on a busy
// machine (503 where docs/api.md, "Admin", answers 201).
func TestAccessCodesHaveACreatesBound(t *testing.T) {
	cat := &deadlineCatalog{}
	s := NewServer(Deps{API: true, Catalog: cat, AdminToken: testAdminToken, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.DiscardHandler), Timeout: 2 * time.Second, CreateTimeout: 10 * time.Second})
	r := httptest.NewRequest("POST", "/admin/v1/concerts/concert00001/access-codes", strings.NewReader(`{"count":3}`))
	r.Header.Set("Authorization", "Bearer "+testAdminToken)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	require.Equal(t, http.StatusCreated, w.Code, "%s", w.Body)
	assert.Greater(t, cat.left, 5*time.Second, "the issue's context has the create's 10 s, not the 2 s of a call")
}

// oneSale is a catalog of one concert with a sale; nothing else of it is called here.
type oneSale struct {
	Catalog
	c ticketrush.Concert
}

func (o oneSale) Concert(id string) (ticketrush.Concert, bool) { return o.c, id == o.c.ID }

// slowDraws is a drawn sale whose keys file takes as long as hold to write: a big file to a slow reader.
type slowDraws struct {
	hold time.Duration
	got  chan error // what WriteDrawKeys found of its context and its bound
}

func (slowDraws) DrawState(ctx context.Context, _ string) (ticketrush.DrawState, error) {
	if _, ok := ctx.Deadline(); !ok {
		return ticketrush.DrawState{}, errors.New("the draw's state read has no bound")
	}
	return ticketrush.DrawState{Sealed: true, Entrants: 2, Digest: "d", DrawnAt: time.Now()}, nil
}

func (d slowDraws) WriteDrawKeys(ctx context.Context, _ string, n int64, call time.Duration, w io.Writer) error {
	first := strings.Repeat("a", 64) + "\n"
	if _, err := io.WriteString(w, first); err != nil {
		return err
	}
	time.Sleep(d.hold) // the reader takes the first part this long: the next read of Redis comes after
	switch _, bounded := ctx.Deadline(); {
	case ctx.Err() != nil:
		d.got <- fmt.Errorf("the context ended %v into the file: %w", d.hold, ctx.Err())
	case bounded:
		d.got <- errors.New("the file has a deadline of the request")
	case call <= 0:
		d.got <- errors.New("no bound on each read of Redis")
	default:
		d.got <- nil
	}
	_, err := io.WriteString(w, strings.Repeat("b", 64)+"\n")
	return err
}

// TestDrawKeysOutliveTheRequestTimeout: the draw's keys file (65 MB for a million entrants) is a long
// answer: its request has no deadline, so a file still being read past the request timeout is
// written whole; the draw state it starts from and each read of Redis are bounded by the timeout.
func TestDrawKeysOutliveTheRequestTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	c := ticketrush.Concert{ID: "c0000000001", Sale: &ticketrush.Sale{}}
	d := slowDraws{hold: 3 * timeout, got: make(chan error, 1)}
	s := NewServer(Deps{API: true, Catalog: oneSale{c: c}, Draws: d, Timeout: timeout, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.DiscardHandler)})
	w := serve(t, s, "/v1/concerts/"+c.ID+"/draw/keys")
	require.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
	require.NoError(t, <-d.got)
	assert.Equal(t, strings.Repeat("a", 64)+"\n"+strings.Repeat("b", 64)+"\n", w.Body.String())
}
