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
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// seatBench is a concert of one 2,000-seat schedule on the real Redis (REDIS_URL), as make bench's seat
// map: sections VIP (500) and R (1,500), with every fan of fans ACTIVE and the seats of taken held or
// sold by an owner fan.
type seatBench struct {
	c         ticketrush.Concert
	server    *Server
	purchases *booking.Service
	fans      []seatFan
	store     *redis.Store
	waiting   *queue.Service
	users     *auth.Users
	reg       *prometheus.Registry
	client    rueidis.Client
}

// redisCPU is the Redis server's CPU time so far (INFO cpu, user and system): per op, Redis' share of a
// read or a hold. Meaningful on a Redis of the benchmark's own (TEST_REDIS_URL), not on one shared.
func (sb *seatBench) redisCPU(b testing.TB) time.Duration {
	info, err := sb.client.Do(context.Background(), sb.client.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// counter returns the value of a counter of the bench's service without labels (0 when absent).
func (sb *seatBench) counter(b testing.TB, name string) float64 {
	families, err := sb.reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

type seatFan struct{ jwt, token string }

// newBenchConcert loads a concert of one schedule with sections and queue settings q on the real Redis
// (REDIS_URL), with its waiting room, booking service and server; no fan yet (join, admitAll).
func newBenchConcert(b testing.TB, q ticketrush.QueueSettings, sections []ticketrush.Section) *seatBench {
	client, prefix := dbtest.Redis(b)
	store := redis.NewStore(client, prefix, prometheus.NewRegistry())
	c := ticketrush.Concert{ID: ticketrush.NewID(), Title: "T", Venue: "V", Queue: q, Sections: sections,
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID()}}}
	if _, err := store.LoadConcert(context.Background(), c, time.Now()); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	waiting := queue.NewService(store.Line, auth.NewQueueTokens(benchSecret), time.Now, log, prometheus.NewRegistry())
	reg := prometheus.NewRegistry()
	purchases := booking.NewService(store.Seats, store.Wallet, benchCatalog{c}, waiting, time.Now, log, reg)
	users := auth.NewUsers(benchSecret)
	return &seatBench{c: c, purchases: purchases, reg: reg, client: client, store: store, waiting: waiting, users: users,
		server: NewServer(Deps{API: true, Queue: waiting, Booking: purchases, Users: users, Registry: prometheus.NewRegistry(), Log: log})}
}

// benchSecret signs the bench's JWTs and queue tokens.
var benchSecret = []byte(strings.Repeat("s", 32))

// join joins user to the line and returns them as a fan with a JWT already verified (cached, as the
// fan's join left it).
func (sb *seatBench) join(b testing.TB, user string) seatFan {
	t, _, err := sb.waiting.Join(context.Background(), user, sb.c.ID)
	if err != nil {
		b.Fatal(err)
	}
	jwt, err := auth.Mint(benchSecret, user, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sb.users.Verify(jwt); err != nil {
		b.Fatal(err)
	}
	return seatFan{jwt: jwt, token: t.Token}
}

// admitAll ticks the line until nobody waits.
func (sb *seatBench) admitAll(b testing.TB) {
	for deadline := time.Now().Add(time.Minute); ; {
		r, err := sb.store.Line.Tick(context.Background(), sb.c.ID, time.Now(), 10_000)
		if err != nil {
			b.Fatal(err)
		}
		if r.Waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d fans still waiting", r.Waiting)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newSeatBench(b testing.TB, fans int, taken func(seat int) bool) *seatBench {
	q := ticketrush.DefaultQueueSettings()
	q.ActiveCapacity, q.AdmitPerSecond, q.HoldTTL, q.MaxHoldsPerUser = 1_000_000, 1_000_000, time.Hour, 2000
	sb := newBenchConcert(b, q, []ticketrush.Section{{Name: "VIP", Price: 165000, Seats: 500}, {Name: "R", Price: 143000, Seats: 1500}})
	ctx, c, purchases := context.Background(), sb.c, sb.purchases
	owner := sb.join(b, "owner")
	for i := 0; i < fans; i++ {
		sb.fans = append(sb.fans, sb.join(b, "fan-"+strconv.Itoa(i)))
	}
	sb.admitAll(b)
	if _, _, err := purchases.Charge(ctx, "owner", 10_000_000, ""); err != nil {
		b.Fatal(err)
	}
	var sold []string
	for i, seat := range sb.seats() {
		if !taken(i) {
			continue
		}
		res, err := purchases.Hold(ctx, "owner", owner.token, c.Schedules[0].ID, seat)
		if err != nil {
			b.Fatal(err)
		}
		if len(sold) < 60 && i%7 == 0 { // some sold: 60 of them (after every hold: a paid last hold ends the session)
			sold = append(sold, res.ID)
		}
	}
	for _, id := range sold {
		if _, _, err := purchases.Pay(ctx, "owner", id); err != nil {
			b.Fatal(err)
		}
	}
	return sb
}

// runView runs the seat view of the bench's service, refreshed every 200 ms as serve does
// (SnapshotRefresh), until the benchmark ends.
func (sb *seatBench) runView(b testing.TB) {
	sb.purchases.EnableSeatView()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sb.purchases.RunSeatView(ctx, 200*time.Millisecond)
	}()
	b.Cleanup(func() { stop(); <-done })
}

// gated is an in-process request of fan f (its JWT and queue token) with header's name, value pairs,
// those with a value.
func gated(method, target string, body io.Reader, f seatFan, header ...string) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Header.Set("Authorization", "Bearer "+f.jwt)
	r.Header.Set("X-Queue-Token", f.token)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			r.Header.Set(header[i], header[i+1])
		}
	}
	return r
}

// runParallel runs step b.N times (i counting from 1), 64 at once, and reports this process's CPU and
// Redis' per op (cpu-µs/op, redis-cpu-µs/op).
func (sb *seatBench) runParallel(b *testing.B, step func(i int)) {
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	cpu, rcpu := dbtest.ProcessCPU(b), sb.redisCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			step(int(next.Add(1)))
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(dbtest.ProcessCPU(b)-cpu)/1e3/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(sb.redisCPU(b)-rcpu)/1e3/float64(b.N), "redis-cpu-µs/op")
}

// seats lists the schedule's seat ids in map order.
func (sb *seatBench) seats() []string {
	var out []string
	for _, sec := range sb.c.Sections {
		for n := 1; n <= sec.Seats; n++ {
			out = append(out, sec.Name+"-"+strconv.Itoa(n))
		}
	}
	return out
}

// BenchmarkSeatMap prices a seat map read of a 2,000-seat schedule (about 127 KB of JSON, a third of it
// held, 60 seats sold) through the real handler, booking service, the gate on the real Redis (REDIS_URL),
// by 64 fans at once, with the seat view running. cpu-µs/op is this process's CPU per read,
// redis-cpu-µs/op Redis' (meaningful on a Redis of the benchmark's own: TEST_REDIS_URL):
//
//	go test -run '^$' -bench BenchmarkSeatMap -benchtime 5000x -count 5 ./internal/http/
func BenchmarkSeatMap(b *testing.B) {
	sb := newSeatBench(b, 64, func(seat int) bool { return seat%3 == 0 })
	sb.runView(b)
	path := "/v1/concerts/" + sb.c.ID + "/schedules/" + sb.c.Schedules[0].ID + "/seats"
	w := httptest.NewRecorder()
	sb.server.ServeHTTP(w, gated("GET", path, nil, sb.fans[0]))
	etag := w.Header().Get("ETag") // the map does not change during the benchmark
	for _, tt := range []struct {
		name     string
		encoding string
		status   int
	}{{"identity", "", http.StatusOK}, {"gzip", "gzip", http.StatusOK}, {"not_modified", "", http.StatusNotModified}} {
		b.Run(tt.name, func(b *testing.B) {
			match := ""
			if tt.status == http.StatusNotModified {
				match = etag
			}
			var bytes atomic.Int64
			sb.runParallel(b, func(i int) {
				w := httptest.NewRecorder()
				sb.server.ServeHTTP(w, gated("GET", path, nil, sb.fans[i%len(sb.fans)],
					"Accept-Encoding", tt.encoding, "If-None-Match", match))
				if w.Code != tt.status {
					b.Fatalf("seat map: %d %s", w.Code, w.Body)
				}
				bytes.Add(int64(w.Body.Len()))
			})
			b.ReportMetric(float64(bytes.Load())/float64(b.N), "bytes/read")
		})
	}
}

// BenchmarkHoldRefused prices a refused hold, as most holds of an on-sale are: 1,000 fans ask for seats
// of a 2,000-seat schedule that are all taken (held for an hour, 60 of them sold), 64 at once, through
// the real handler, booking service, and the seat_hold script on the real Redis (REDIS_URL), with the
// seat view running. %in-memory is the share refused from the view: each fan's first attempt in a
// second goes to the script (it proves the token ACTIVE), so it grows with the attempts per fan:
//
//	go test -run '^$' -bench BenchmarkHoldRefused -benchtime 40000x -count 5 ./internal/http/
func BenchmarkHoldRefused(b *testing.B) {
	sb := newSeatBench(b, 1000, func(int) bool { return true })
	sb.runView(b)
	seats := sb.seats()
	sb.runParallel(b, func(i int) {
		body := `{"scheduleId":"` + sb.c.Schedules[0].ID + `","seatId":"` + seats[(i*7919)%len(seats)] + `"}`
		w := httptest.NewRecorder()
		sb.server.ServeHTTP(w, gated("POST", "/v1/reservations", strings.NewReader(body), sb.fans[i%len(sb.fans)]))
		if w.Code != http.StatusConflict {
			b.Fatalf("hold: %d %s", w.Code, w.Body)
		}
	})
	b.ReportMetric(100*sb.counter(b, "ticketrush_holds_refused_in_memory_total")/float64(b.N), "%in-memory")
}

// BenchmarkSeatMapHTTP reads the 2,000-seat map over real TCP on loopback, 64 clients at once, from the
// service (seat view running, the gate in Redis) and from a bare net/http handler that writes the same
// bytes from memory, as docs/performance.md compares them (reads/s of each; the clients share the machine):
//
//	go test -run '^$' -bench BenchmarkSeatMapHTTP -benchtime 20000x -count 5 ./internal/http/
func BenchmarkSeatMapHTTP(b *testing.B) {
	sb := newSeatBench(b, 64, func(seat int) bool { return seat%3 == 0 })
	sb.runView(b)
	path := "/v1/concerts/" + sb.c.ID + "/schedules/" + sb.c.Schedules[0].ID + "/seats"
	probe := httptest.NewRecorder()
	sb.server.ServeHTTP(probe, gated("GET", path, nil, sb.fans[0]))
	body := probe.Body.Bytes()
	bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	for _, tt := range []struct {
		name    string
		handler http.Handler
		gzip    bool
	}{{"bare", bare, false}, {"ticketrush", sb.server, false}, {"ticketrush_gzip", sb.server, true}} {
		b.Run(tt.name, func(b *testing.B) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: !tt.gzip}}
			var next atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					f := sb.fans[int(next.Add(1))%len(sb.fans)]
					req, _ := http.NewRequest("GET", srv.URL+path, nil)
					req.Header.Set("Authorization", "Bearer "+f.jwt)
					req.Header.Set("X-Queue-Token", f.token)
					res, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					if res.StatusCode != http.StatusOK || int(n) != len(body) {
						b.Fatalf("seat map: %d, %d bytes", res.StatusCode, n)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reads/s")
		})
	}
}
