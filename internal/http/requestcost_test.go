package http

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// countingUsers verifies any token as the user it names and counts the calls.
type countingUsers struct{ calls atomic.Int64 }

func (u *countingUsers) Verify(token string) (string, error) {
	u.calls.Add(1)
	if token == "bad" {
		return "", ticketrush.ErrUnauthenticated
	}
	return token, nil
}

// seatOnce is a Booking whose Hold takes seat R-1 and refuses every other.
type seatOnce struct {
	Booking
	user atomic.Value
}

func (b *seatOnce) Hold(_ context.Context, user, _, _, seat string) (ticketrush.Reservation, error) {
	b.user.Store(user)
	if seat != "R-1" {
		return ticketrush.Reservation{}, ticketrush.ErrSeatUnavailable
	}
	return ticketrush.Reservation{ID: "r1", UserID: user, SeatID: seat, Status: ticketrush.ReservationHeld,
		ExpiresAt: time.Unix(1_800_000_600, 0), CreatedAt: time.Unix(1_800_000_000, 0)}, nil
}

func holdRequestFor(jwt, seat string) *http.Request {
	r := httptest.NewRequest("POST", "/v1/reservations", strings.NewReader(`{"scheduleId":"s","seatId":"`+seat+`"}`))
	r.Header.Set("Authorization", "Bearer "+jwt)
	return r
}

// TestUserVerifiedOncePerRequest: with the per-user limiter on, the limiter's check of the JWT is the
// handler's too (a JWT is verified once, not twice); each request still verifies its own.
func TestUserVerifiedOncePerRequest(t *testing.T) {
	users, booking := &countingUsers{}, &seatOnce{}
	s := NewServer(Deps{API: true, Users: users, Booking: booking, Limiter: NewLimiter(1000, 1000, time.Now),
		Registry: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for i, user := range []string{"fan-1", "fan-2"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, holdRequestFor(user, "R-1"))
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		assert.Equal(t, int64(i+1), users.calls.Load(), "verifications after request %d", i+1)
		assert.Equal(t, user, booking.user.Load(), "the handler acts for the request's own user")
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, holdRequestFor("bad", "R-1"))
	assert.Equal(t, http.StatusUnauthorized, rec.Code, "a JWT the limiter could not verify is refused by the handler")
}

// TestRequestMetricsBySeries: the cached series of a route keep method and status apart.
func TestRequestMetricsBySeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := NewServer(Deps{API: true, Users: &countingUsers{}, Booking: &seatOnce{}, Registry: reg,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, seat := range []string{"R-1", "R-2", "R-3"} {
		s.ServeHTTP(httptest.NewRecorder(), holdRequestFor("fan-1", seat))
	}
	s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("PUT", "/v1/reservations", nil))
	got, latency := map[string]float64{}, map[string]float64{}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := labels["route"] + " " + labels["method"] + " " + labels["status"]
			switch mf.GetName() {
			case "ticketrush_http_requests_total":
				got[key] = m.GetCounter().GetValue()
			case "ticketrush_http_request_duration_seconds":
				latency[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	assert.Equal(t, map[string]float64{"/v1/reservations POST 201": 1, "/v1/reservations POST 409": 2,
		"unmatched PUT 405": 1}, got)
	assert.Equal(t, got, latency, "one latency series per route, method and status, beside its count")
}
