//go:build faults

// The fault suite (make faults): a purchase storm while a dependency or the API process fails, with a
// client-side ledger of every 2xx. After each fault: nothing acknowledged is lost (every charge and
// payment a client was told of is there, every balance is exactly what the ledger says), reconcile
// finds Redis and Postgres in agreement, and the figures (error window, what clients saw, time to
// recover, records checked, losses) are logged, with one summary line per fault.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

const (
	stormFans  = 12
	stormSeats = 24_000 // one section; each fan takes seats from its own range
	fundsEach  = 1_000_000
	faultFor   = 3 * time.Second // how long an outage lasts
)

// storm is fans buying seats as fast as they can against base(): charge once, then hold and pay, one
// seat after another. Every request that fails with a 5xx or no answer is retried with the same
// Idempotency-Key until it answers 2xx or a final 4xx, as a careful client does.
type storm struct {
	t          *testing.T
	base       func() string
	client     *http.Client
	concert    string
	schedule   string
	fans       []fan
	mu         sync.Mutex
	charged    map[string]int64            // fan -> points acknowledged
	paid       map[string]map[string]int64 // fan -> payment id -> amount acknowledged
	reserved   map[string]string           // payment id -> reservation id
	seen       map[int]int                 // status -> count (0: no answer)
	firstErr   time.Time
	lastErr    time.Time
	lastOK     atomic.Int64 // Unix ns of the latest 2xx write
	requests   atomic.Int64
	retries    atomic.Int64
	started    time.Time
	stop       chan struct{}
	wg         sync.WaitGroup
	seatCursor []atomic.Int64
}

func newStorm(t *testing.T, base func() string, concertID, scheduleID string) *storm {
	st := &storm{t: t, base: base, concert: concertID, schedule: scheduleID,
		client:  &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		charged: map[string]int64{}, paid: map[string]map[string]int64{}, reserved: map[string]string{},
		seen: map[int]int{}, stop: make(chan struct{}), seatCursor: make([]atomic.Int64, stormFans)}
	for i := range stormFans {
		st.fans = append(st.fans, buyer(t, fmt.Sprintf("storm%d", i)))
	}
	return st
}

// send makes one request and notes what came back; status 0 is no answer.
func (st *storm) send(method, path string, body any, headers ...string) (int, []byte) {
	st.requests.Add(1)
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, st.base()+path, rd)
	require.NoError(st.t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req.Header.Set("Content-Type", "application/json")
	status, out := 0, []byte(nil)
	if res, err := st.client.Do(req); err == nil {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(res.Body)
		res.Body.Close()
		status, out = res.StatusCode, buf.Bytes()
	}
	st.mu.Lock()
	st.seen[status]++
	if status == 0 || status >= 500 {
		now := time.Now()
		if st.firstErr.IsZero() {
			st.firstErr = now
		}
		st.lastErr = now
	}
	st.mu.Unlock()
	return status, out
}

// until retries one request until it answers 2xx or a 4xx; it gives up only when the test's own bound
// passes.
func (st *storm) until(method, path string, body any, headers ...string) (int, []byte) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		status, out := st.send(method, path, body, headers...)
		if status >= 200 && status < 500 {
			if status < 300 && method != "GET" {
				st.lastOK.Store(time.Now().UnixNano())
			}
			return status, out
		}
		if time.Now().After(deadline) {
			st.t.Errorf("%s %s: no final answer for 3 minutes (last %d %s)", method, path, status, out)
			return status, out
		}
		st.retries.Add(1)
		time.Sleep(50 * time.Millisecond) // a client's back-off between retries, not synchronisation
	}
}

func (st *storm) run() {
	st.started = time.Now()
	for i, f := range st.fans {
		st.wg.Go(func() { st.fan(i, f) })
	}
}

func (st *storm) fan(i int, f fan) {
	status, body := st.until("POST", "/v1/points/charges", map[string]int64{"amount": fundsEach},
		append(f.auth(""), "Idempotency-Key", "fund-"+f.id)...)
	if status != http.StatusCreated {
		st.t.Errorf("charge %s: %d %s", f.id, status, body)
		return
	}
	st.mu.Lock()
	st.charged[f.id] += fundsEach
	st.paid[f.id] = map[string]int64{}
	st.mu.Unlock()
	token := ""
	for {
		select {
		case <-st.stop:
			return
		default:
		}
		if token == "" {
			status, body := st.until("POST", "/v1/concerts/"+st.concert+"/queue", nil, f.auth("")...)
			var tk ticket
			if status/100 != 2 || json.Unmarshal(body, &tk) != nil {
				st.t.Errorf("join %s: %d %s", f.id, status, body)
				return
			}
			for tk.Status == "WAITING" { // admitted at the next tick
				time.Sleep(20 * time.Millisecond) // a client's poll interval
				status, body = st.until("GET", "/v1/queue", nil, f.auth(tk.Token)...)
				if status != http.StatusOK || json.Unmarshal(body, &tk) != nil {
					st.t.Errorf("poll %s: %d %s", f.id, status, body)
					return
				}
			}
			if tk.Status != "ACTIVE" {
				st.t.Errorf("join %s: %s", f.id, body)
				return
			}
			token = tk.Token
		}
		n := st.seatCursor[i].Add(1)
		if n > stormSeats/stormFans {
			return // this fan's seats are all bought
		}
		seat := fmt.Sprintf("R-%d", int64(i)*(stormSeats/stormFans)+n)
		status, body := st.until("POST", "/v1/reservations", map[string]string{"scheduleId": st.schedule, "seatId": seat}, f.auth(token)...)
		switch status {
		case http.StatusConflict:
			continue // held by a hold whose answer was lost: the seat is this fan's, unpaid, and lapses
		case http.StatusGone:
			token = "" // DONE after the last payment: join again
			continue
		}
		var r reservation
		if status != http.StatusCreated || json.Unmarshal(body, &r) != nil {
			st.t.Errorf("hold %s %s: %d %s", f.id, seat, status, body)
			return
		}
		status, body = st.until("POST", "/v1/payments", map[string]string{"reservationId": r.ID},
			append(f.auth(""), "Idempotency-Key", "pay-"+r.ID)...)
		var p payment
		if status/100 != 2 || json.Unmarshal(body, &p) != nil {
			st.t.Errorf("pay %s: %d %s", r.ID, status, body)
			return
		}
		st.mu.Lock()
		st.paid[f.id][p.ID] = p.Amount
		st.reserved[p.ID] = r.ID
		st.mu.Unlock()
	}
}

func (st *storm) end() {
	close(st.stop)
	st.wg.Wait()
}

// verify checks the ledger against the service: every payment and charge acknowledged is there, each
// balance is exactly what was charged minus what was paid. It returns the records checked and lost.
func (st *storm) verify() (checked, lost int) {
	st.mu.Lock()
	charged, paid, reserved := map[string]int64{}, map[string]map[string]int64{}, map[string]string{}
	for k, v := range st.charged {
		charged[k] = v
	}
	for k, v := range st.paid {
		paid[k] = v
	}
	for k, v := range st.reserved {
		reserved[k] = v
	}
	st.mu.Unlock()
	for _, f := range st.fans {
		want := charged[f.id]
		for id, amount := range paid[f.id] {
			want -= amount
			status, body := st.until("GET", "/v1/payments/"+id, nil, f.auth("")...)
			var p payment
			checked++
			if status != http.StatusOK || json.Unmarshal(body, &p) != nil || p.Amount != amount || p.ReservationID != reserved[id] {
				lost++
				st.t.Errorf("payment %s acknowledged, now %d %s", id, status, body)
			}
		}
		status, body := st.until("GET", "/v1/points", nil, f.auth("")...)
		var b struct{ Balance int64 }
		checked++
		if status != http.StatusOK || json.Unmarshal(body, &b) != nil || b.Balance != want {
			lost++
			st.t.Errorf("balance of %s: %d %s, the client ledger says %d", f.id, status, body, want)
		}
	}
	return checked, lost
}

func (st *storm) payments() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for _, p := range st.paid {
		n += len(p)
	}
	return n
}

// report logs the figures of one fault and its summary line.
func (st *storm) report(fault string, faultAt, healedAt time.Time, checked, lost int) {
	st.mu.Lock()
	seen := map[int]int{}
	for k, v := range st.seen {
		seen[k] = v
	}
	firstErr, lastErr := st.firstErr, st.lastErr
	st.mu.Unlock()
	var codes []int
	for k := range seen {
		codes = append(codes, k)
	}
	sort.Ints(codes)
	var saw []string
	for _, c := range codes {
		saw = append(saw, fmt.Sprintf("%d×%d", c, seen[c]))
	}
	window := time.Duration(0)
	if !firstErr.IsZero() {
		window = lastErr.Sub(firstErr)
	}
	recover := time.Duration(0)
	if ok := st.lastOK.Load(); ok > healedAt.UnixNano() {
		recover = time.Unix(0, ok).Sub(healedAt)
	}
	st.t.Logf("%s: fault at +%s, healed at +%s", fault, faultAt.Sub(st.started).Round(time.Millisecond), healedAt.Sub(st.started).Round(time.Millisecond))
	st.t.Logf("FAULT SUMMARY %s: error window %s; clients saw %s (0 = no answer) in %d requests, %d retried; "+
		"recovered %s after the heal (first acknowledged write); %d payments acknowledged, %d records checked, %d lost",
		fault, window.Round(time.Millisecond), strings.Join(saw, " "), st.requests.Load(), st.retries.Load(),
		recover.Round(time.Millisecond), st.payments(), checked, lost)
}

// waitPayments waits until the storm has acknowledged n more payments than before.
func (st *storm) waitPayments(t *testing.T, more int) {
	before := st.payments()
	require.Eventually(t, func() bool { return st.payments() >= before+more }, 2*time.Minute, 10*time.Millisecond,
		"the storm makes progress")
}

// reconcileAgrees runs `ticketrush reconcile` with env and requires agreement.
func reconcileAgrees(t *testing.T, env map[string]string) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"reconcile", "--wait", "90s"}, func(k string) string { return env[k] }, &out)
	require.NoError(t, err, "reconcile: %s", out.String())
	assert.Contains(t, out.String(), "redis and postgres agree")
}

func faultEnv(t *testing.T, redisURL, dbURL string) map[string]string {
	return map[string]string{
		"REDIS_URL": redisURL, "REDIS_KEY_PREFIX": dbtest.Name("f"), "DATABASE_URL": dbURL,
		"JWT_SECRET": testJWTSecret, "QUEUE_TOKEN_SECRET": testQueueSecret, "ADMIN_TOKEN": testAdminToken,
		// Each storm fan buys as fast as the service answers, well past a fan's 20 requests a second, so
		// the per-user limit is off here as in startService; a 429 is a final answer the storm fails on.
		// TestFaultAPIKilledMidPayment starts its own process from this env and once met the default.
		"USER_RATE_LIMIT": "0",
	}
}

func stormConcert(t *testing.T, s *service) (string, string) {
	return s.saleConcertSeats(t, stormSeats)
}

// TestFaultRedisKilledMidStorm: the service's Redis (appendonly) is SIGKILLed in the middle of a
// purchase storm and restarted from its append-only file.
//
// Redis runs with appendfsync always here. With everysec (services.sh, docker-compose.yml) this test
// lost 35 of 71 acknowledged payments on this machine: Redis postpones writing its log for up to 2 s
// while an fsync is still running on a busy disk, and answers clients meanwhile (docs/faults.md).
func TestFaultRedisKilledMidStorm(t *testing.T) {
	rs := dbtest.StartRedisServer(t, "always")
	env := faultEnv(t, rs.URL, dbtest.Postgres(t))
	s := startService(t, env)
	concertID, scheduleID := stormConcert(t, s)
	st := newStorm(t, func() string { return s.url }, concertID, scheduleID)
	st.run()
	st.waitPayments(t, 30)

	faultAt := time.Now()
	rs.Kill()
	st.mu.Lock()
	st.firstErr, st.lastErr = time.Time{}, time.Time{}
	st.mu.Unlock()
	require.Eventually(t, func() bool { st.mu.Lock(); defer st.mu.Unlock(); return !st.firstErr.IsZero() },
		30*time.Second, 5*time.Millisecond, "clients see the outage")
	time.Sleep(faultFor) // the outage itself: Redis stays down this long
	rs.Restart()
	healedAt := time.Now()
	st.waitPayments(t, 30)
	st.end()

	checked, lost := st.verify()
	reconcileAgrees(t, env)
	st.report("redis SIGKILL and restart", faultAt, healedAt, checked, lost)
	assert.Zero(t, lost)
}

// TestFaultPostgresCutOff: Postgres is cut off from the service (a TCP proxy drops every connection)
// for a while in the middle of a purchase storm. Sales go on (Redis is the hot path); the write-behind
// waits and then writes everything.
func TestFaultPostgresCutOff(t *testing.T) {
	dbURL := dbtest.Postgres(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := dbtest.NewProxy(t, u.Host)
	rs := dbtest.StartRedisServer(t, "always")
	env := faultEnv(t, rs.URL, proxy.Through(t, dbURL))
	s := startService(t, env)
	concertID, scheduleID := stormConcert(t, s)
	st := newStorm(t, func() string { return s.url }, concertID, scheduleID)
	st.run()
	st.waitPayments(t, 30)

	faultAt := time.Now()
	proxy.Cut()
	st.waitPayments(t, 60) // sales go on while Postgres is away
	time.Sleep(faultFor)   // the outage itself
	proxy.Heal()
	healedAt := time.Now()
	st.waitPayments(t, 20)
	st.end()
	require.Eventually(t, func() bool {
		lines, err := s.tryMetricLines("ticketrush_writebehind_backlog_events")
		return err == nil && len(lines) == 1 && strings.HasSuffix(lines[0], " 0")
	}, 2*time.Minute, 20*time.Millisecond, "the write-behind drains")
	t.Logf("postgres cut off: the write-behind drained its backlog %s after the heal", time.Since(healedAt).Round(time.Millisecond))

	checked, lost := st.verify()
	env["DATABASE_URL"] = dbURL
	reconcileAgrees(t, env)
	st.report("postgres cut off", faultAt, healedAt, checked, lost)
	assert.Zero(t, lost)
}

// TestFaultAPIKilledMidPayment: the API process is SIGKILLed in the middle of a payment storm and
// started again; clients retry with their keys. Payments the dead process left claimed are finished by
// the retry (or the sweeper).
func TestFaultAPIKilledMidPayment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ticketrush")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build: %s", out)

	rs := dbtest.StartRedisServer(t, "always")
	env := faultEnv(t, rs.URL, dbtest.Postgres(t))
	var base atomic.Value
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "HTTP_ADDR=127.0.0.1:0")
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		sink := newLogSink()
		cmd.Stdout, cmd.Stderr = sink, sink
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		select {
		case addr := <-sink.listening:
			base.Store("http://" + addr)
		case <-time.After(60 * time.Second):
			t.Fatalf("the service did not listen:\n%s", sink.String())
		}
		return cmd
	}
	cmd := start()
	s := &service{url: base.Load().(string), client: &http.Client{Timeout: 30 * time.Second}}
	concertID, scheduleID := stormConcert(t, s)
	st := newStorm(t, func() string { return base.Load().(string) }, concertID, scheduleID)
	st.run()
	st.waitPayments(t, 30)

	faultAt := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	start()
	healedAt := time.Now()
	st.waitPayments(t, 30)
	st.end()

	checked, lost := st.verify()
	reconcileAgrees(t, env)
	st.report("api SIGKILL mid-payment", faultAt, healedAt, checked, lost)
	assert.Zero(t, lost)
}
