package http

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// benchCatalog is one concert, for the purchase path.
type benchCatalog struct{ c ticketrush.Concert }

func (b benchCatalog) Concert(id string) (ticketrush.Concert, bool) { return b.c, id == b.c.ID }
func (b benchCatalog) IDs() []string                                { return []string{b.c.ID} }
func (b benchCatalog) ScheduleConcert(id string) (string, bool) {
	_, ok := b.c.Schedule(id)
	return b.c.ID, ok
}

// BenchmarkHold prices a winning hold through the real handler, booking service, token checks and the
// seat_hold script on the real Redis (REDIS_URL), four seats per fan as in make bench's spread holds;
// in_process through ServeHTTP, http through a net/http server on loopback with 64 keep-alive
// connections (the client's cost counts too). ns/op includes waiting for Redis; cpu-ns/op, allocs/op
// and the CPU profile are the process's own cost:
//
//	go test -run '^$' -bench BenchmarkHold -benchtime 20000x -count 5 ./internal/http/
func BenchmarkHold(b *testing.B) {
	for _, transport := range []string{"in_process", "http"} {
		b.Run(transport, func(b *testing.B) {
			s, fans, schedule := holdSetup(b)
			send := func(r *http.Request) int {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				return w.Code
			}
			if transport == "http" {
				ts := httptest.NewServer(s)
				defer ts.Close()
				hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
				defer hc.CloseIdleConnections()
				send = func(r *http.Request) int {
					out, err := http.NewRequest(r.Method, ts.URL+r.URL.Path, r.Body)
					if err != nil {
						b.Fatal(err)
					}
					out.Header = r.Header
					res, err := hc.Do(out)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					return res.StatusCode
				}
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32) // 64 requests in flight on 2 CPUs, as make bench has
			b.ResetTimer()
			defer reportCPU(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1) - 1)
					f := fans[i%len(fans)]
					body := `{"scheduleId":"` + schedule + `","seatId":"R-` + strconv.Itoa(i+1) + `"}`
					r := httptest.NewRequest("POST", "/v1/reservations", strings.NewReader(body))
					r.Header.Set("Authorization", "Bearer "+f.jwt)
					r.Header.Set("X-Queue-Token", f.token)
					if code := send(r); code != http.StatusCreated {
						b.Fatalf("hold: %d", code)
					}
				}
			})
		})
	}
}

// holdSetup loads a concert of a million seats and admits b.N/4+1 fans (JWTs verified once, as a
// fan's join leaves them cached).
func holdSetup(b *testing.B) (*Server, []seatFan, string) {
	q := ticketrush.DefaultQueueSettings()
	q.ActiveCapacity, q.AdmitPerSecond, q.HoldTTL, q.MaxHoldsPerUser = 1_000_000, 1_000_000, time.Hour, 4
	sb := newBenchConcert(b, q, []ticketrush.Section{{Name: "R", Price: 1000, Seats: 1 << 20}})
	fans := make([]seatFan, b.N/4+1)
	for i := range fans {
		fans[i] = sb.join(b, "fan-"+strconv.Itoa(i))
	}
	sb.admitAll(b)
	return sb.server, fans, sb.c.Schedules[0].ID
}

// fixedHold is a Booking whose Hold answers at once, with res or err: BenchmarkHoldHandler prices the
// HTTP layer alone.
type fixedHold struct {
	Booking
	res ticketrush.Reservation
	err error
}

func (f fixedHold) Hold(context.Context, string, string, string, string) (ticketrush.Reservation, error) {
	return f.res, f.err
}

// BenchmarkHoldHandler prices what the HTTP layer adds to a winning hold (routing, the request bound,
// the JWT check, the limiter, decoding the body, the reply, the metrics) without Redis, so that its
// ns/op and allocs/op hold still on a busy machine; with the per-user limiter on (as served by
// default) and off (as make bench runs), and a hold refused (409 SEAT_UNAVAILABLE, a problem document:
// most holds of a contended sale):
//
//	go test -run '^$' -bench BenchmarkHoldHandler -count 5 ./internal/http/
func BenchmarkHoldHandler(b *testing.B) {
	secret := []byte(strings.Repeat("s", 32))
	now := time.Now()
	res := ticketrush.Reservation{ID: ticketrush.NewID() + ticketrush.NewID(), UserID: "fan-1", ConcertID: ticketrush.NewID(),
		ScheduleID: ticketrush.NewID(), SeatID: "R-1", Price: 1000, Status: ticketrush.ReservationHeld,
		ExpiresAt: now.Add(10 * time.Minute).Truncate(time.Millisecond), CreatedAt: now.Truncate(time.Millisecond)}
	jwt, err := auth.Mint(secret, "fan-1", time.Hour, now)
	if err != nil {
		b.Fatal(err)
	}
	body := `{"scheduleId":"` + res.ScheduleID + `","seatId":"R-1"}`
	for _, tt := range []struct {
		name  string
		limit *Limiter
		err   error
		want  int
	}{
		{"limiter_off", nil, nil, http.StatusCreated},
		{"limiter_on", NewLimiter(1_000_000_000, 1_000_000, time.Now), nil, http.StatusCreated},
		{"refused", nil, ticketrush.ErrSeatUnavailable, http.StatusConflict},
	} {
		b.Run(tt.name, func(b *testing.B) {
			s := NewServer(Deps{API: true, Booking: fixedHold{res: res, err: tt.err}, Users: auth.NewUsers(secret), Limiter: tt.limit,
				Registry: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			r := httptest.NewRequest("POST", "/v1/reservations", nil)
			r.Header.Set("Authorization", "Bearer "+jwt)
			r.Header.Set("X-Queue-Token", "t")
			r.Header.Set("Content-Type", "application/json")
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				r.Body = io.NopCloser(strings.NewReader(body))
				clear(w.h)
				w.code = 0
				s.ServeHTTP(w, r)
				if w.code != tt.want {
					b.Fatalf("hold: %d", w.code)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps the status only: the benchmark prices the server, not
// a recorder.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// reportCPU reports the process's CPU time (user and system, every goroutine: GC and the Redis
// client's included) per op from now until the returned func runs:
// on this shared machine a benchmark's ns/op counts the time other processes had the CPU, its
// cpu-ns/op does not.
func reportCPU(b *testing.B) func() {
	start := dbtest.ProcessCPU(b)
	return func() { b.ReportMetric(float64(dbtest.ProcessCPU(b)-start)/float64(b.N), "cpu-ns/op") }
}
