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
	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
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
// seat_hold script on the real Redis (REDIS_URL), four seats per fan as in make bench's spread holds.
// ns/op includes waiting for Redis; allocs/op and the CPU profile are the service's own cost:
//
//	go test -run '^$' -bench BenchmarkHold -benchtime 20000x -count 5 ./internal/http/
func BenchmarkHold(b *testing.B) {
	client, prefix := dbtest.Redis(b)
	store := redis.NewStore(client, prefix, prometheus.NewRegistry())
	q := ticketrush.DefaultQueueSettings()
	q.ActiveCapacity, q.AdmitPerSecond, q.HoldTTL, q.MaxHoldsPerUser = 1_000_000, 1_000_000, time.Hour, 4
	const seats = 1 << 20
	c := ticketrush.Concert{ID: ticketrush.NewID(), Title: "T", Venue: "V", Queue: q,
		Sections:  []ticketrush.Section{{Name: "R", Price: 1000, Seats: seats}},
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID()}}}
	ctx := context.Background()
	if _, err := store.LoadConcert(ctx, c, time.Now()); err != nil {
		b.Fatal(err)
	}
	secret := []byte(strings.Repeat("s", 32))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	waiting := queue.NewService(store, auth.NewQueueTokens(secret), time.Now, log, prometheus.NewRegistry())
	purchases := booking.NewService(store, benchCatalog{c}, waiting, time.Now, log, prometheus.NewRegistry())
	users := auth.NewUsers(secret)
	s := NewServer(Deps{API: true, Queue: waiting, Booking: purchases, Users: users,
		Registry: prometheus.NewRegistry(), Log: log})

	type fan struct{ jwt, token string }
	fans := make([]fan, b.N/4+1)
	for i := range fans {
		user := "fan-" + strconv.Itoa(i)
		t, _, err := waiting.Join(ctx, user, c.ID)
		if err != nil {
			b.Fatal(err)
		}
		jwt, err := auth.Mint(secret, user, time.Hour, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := users.Verify(jwt); err != nil { // cached, as the fan's join left it
			b.Fatal(err)
		}
		fans[i] = fan{jwt: jwt, token: t.Token}
	}
	for deadline := time.Now().Add(time.Minute); ; {
		r, err := store.Tick(ctx, c.ID, time.Now(), 10_000)
		if err != nil {
			b.Fatal(err)
		}
		if r.Waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d fans still waiting", r.Waiting)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32) // 64 requests in flight on 2 CPUs, as make bench has
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			f := fans[i%len(fans)]
			body := `{"scheduleId":"` + c.Schedules[0].ID + `","seatId":"R-` + strconv.Itoa(i+1) + `"}`
			r := httptest.NewRequest("POST", "/v1/reservations", strings.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+f.jwt)
			r.Header.Set("X-Queue-Token", f.token)
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				b.Fatalf("hold: %d %s", w.Code, w.Body)
			}
		}
	})
}
