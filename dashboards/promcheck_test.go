//go:build promcheck

// The query check (`make promcheck`): build and start ticketrush on a loopback port with a fresh
// Postgres database and a private Redis, drive a short load through its HTTP API, start Debian's
// Prometheus on prometheus/prometheus.yml (target and intervals rewritten) scraping it every second, and
// evaluate every dashboard panel query and every alert expression through Prometheus' HTTP API. Every
// expression must parse; every panel query must return data, and every query over the concert
// variable must also return data for a second, quiet sale where every fan buys and nothing is
// cancelled, left or lapsed (so a counter a panel adds or divides must exist at 0 from the start). Then promtool checks and unit-tests the
// rules. The report lists which expressions returned nothing and which metric names were never scraped.

package dashboards_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
)

const (
	scrapeEvery = time.Second
	// dataWait bounds how long the check keeps asking for data that has not shown up yet although its
	// metrics exist (counters that move only after a TTL, rates that need a second sample).
	dataWait = 45 * time.Second
	// missingWait bounds how long it waits for metric names that have never been scraped.
	missingWait = 10 * time.Second
)

func TestPromQL(t *testing.T) {
	boards := loadBoards(t)
	rules := loadRules(t)
	for _, bin := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: run `make promcheck`, which installs Debian's prometheus package", bin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	svc := startService(t, ctx)
	prom := startPrometheus(t, ctx, svc.addr)

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { svc.load(loadCtx) })
	defer func() { stopLoad(); wg.Wait() }()

	// Rates need two scrapes of the load, so wait (by asking Prometheus) for a few.
	waitFor(t, ctx, 30*time.Second, "Prometheus to scrape ticketrush 4 times with load", func() bool {
		v, ok := prom.scalar(ctx, `min(count_over_time(ticketrush_queue_joined_total[1m]))`)
		return ok && v >= 4
	})

	report := &report{}
	var names map[string]bool

	// Panels: every query must parse and return data. Queries whose metrics all exist but return nothing
	// yet are asked again until dataWait: some counters move only after a TTL.
	type pending struct {
		expr string // with the variables expanded
		res  *result
	}
	var todo []pending
	for _, b := range boards {
		for _, p := range b.visualisations() {
			for _, q := range p.Targets {
				expr, _ := b.expand(q.Expr)
				r := &result{kind: "panel", where: fmt.Sprintf("%s / %s [%s]", b.Title, p.Title, q.RefID), expr: q.Expr}
				report.add(r)
				todo = append(todo, pending{expr, r})
				// The same query with the concert variable set to the quiet sale: counters that panel
				// adds or divides must exist at 0 although nothing was cancelled and nothing lapsed.
				// The on-sale panels (the draw's metrics) describe concerts with a sale only; the quiet sale has
				// none, so they have no data for it by design.
				if strings.Contains(q.Expr, "$concert") && !strings.Contains(q.Expr, "ticketrush_draw_") {
					quiet, _ := b.expand(strings.ReplaceAll(q.Expr, "$concert", svc.quiet.id))
					r := &result{kind: "panel", where: fmt.Sprintf("%s / %s [%s] (sale without cancels or lapses)", b.Title, p.Title, q.RefID), expr: q.Expr}
					report.add(r)
					todo = append(todo, pending{quiet, r})
				}
			}
		}
	}
	start := time.Now()
	for {
		names = prom.metricNames(ctx, t)
		var again []pending
		waitMore := false
		for _, p := range todo {
			p.res.missing = missing(metricNames(p.res.expr), names)
			p.res.series, p.res.err = prom.query(ctx, p.expr)
			if p.res.err == nil && p.res.series == 0 {
				again = append(again, p)
				// A metric with labels appears at its first event, so give missing ones a little time
				// too, but not all of dataWait: most are metrics that do not exist yet.
				waitMore = waitMore || len(p.res.missing) == 0 || time.Since(start) < missingWait
			}
		}
		if !waitMore || time.Since(start) > dataWait {
			break
		}
		todo = again
		time.Sleep(scrapeEvery) // the next scrape: Prometheus offers nothing to wait on
	}

	// Alerts: every expression must parse (most rightly return nothing), and Prometheus must have loaded
	// and evaluated every rule without error.
	for _, r := range rules {
		res := &result{kind: "alert", where: r.Group + " / " + r.name(), expr: r.Expr, optional: true}
		res.series, res.err = prom.query(ctx, r.Expr)
		res.missing = missing(metricNames(r.Expr), names)
		report.add(res)
	}
	waitFor(t, ctx, 15*time.Second, "Prometheus to evaluate every rule", func() bool {
		return prom.rulesEvaluated(ctx, len(rules))
	})
	report.ruleHealth = prom.ruleHealth(ctx, t)

	// promtool on the same files.
	dir, err := filepath.Abs("prometheus")
	require.NoError(t, err)
	for _, args := range [][]string{
		{"check", "config", prom.config},
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		if problem := promtool(ctx, dir, args...); problem != "" {
			report.promtool = append(report.promtool, problem)
		}
	}

	report.requests = svc.statusCounts()
	out := report.String()
	fmt.Print(out)
	if report.failed() {
		t.Errorf("the query check failed: see the report above")
	}
}

// result is the outcome of one expression.
type result struct {
	kind, where, expr string
	optional          bool // an alert: no data is the normal case
	series            int
	err               error
	missing           []string // metric names it reads that Prometheus never scraped
}

func (r *result) ok() bool { return r.err == nil && (r.optional || r.series > 0) }

type report struct {
	results    []*result
	ruleHealth []string // problems of the rules as Prometheus evaluates them
	promtool   []string // problems promtool found
	requests   map[int]int
}

func (rp *report) add(r *result) { rp.results = append(rp.results, r) }

func (rp *report) failed() bool {
	for _, r := range rp.results {
		if !r.ok() {
			return true
		}
	}
	return len(rp.ruleHealth) > 0 || len(rp.promtool) > 0
}

func (rp *report) String() string {
	var b strings.Builder
	codes := make([]int, 0, len(rp.requests))
	for c := range rp.requests {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	total := 0
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d × HTTP %d", rp.requests[c], c))
		total += rp.requests[c]
	}
	fmt.Fprintf(&b, "\npromcheck: the load sent %d requests: %s\n\n", total, strings.Join(parts, ", "))

	var panels, panelsOK, alerts, alertsOK, parseErrs int
	missingBy := map[string][]string{}
	var noData []*result
	for _, r := range rp.results {
		status := "ok     "
		switch {
		case r.err != nil:
			status = "ERROR  "
			parseErrs++
		case r.series == 0 && !r.optional:
			status = "NO DATA"
			noData = append(noData, r)
		case r.series == 0:
			status = "ok, 0 "
		}
		detail := fmt.Sprintf("%d series", r.series)
		if r.err != nil {
			detail = r.err.Error()
		}
		if len(r.missing) > 0 {
			detail += "; never scraped: " + strings.Join(r.missing, ", ")
		}
		fmt.Fprintf(&b, "%s %-5s %s: %s\n", status, r.kind, r.where, detail)
		if r.kind == "panel" {
			panels++
			if r.ok() {
				panelsOK++
			}
		} else {
			alerts++
			if r.ok() {
				alertsOK++
			}
		}
		for _, m := range r.missing {
			missingBy[m] = append(missingBy[m], r.where)
		}
	}

	fmt.Fprintf(&b, "\nsummary: %d of %d panel queries return data; %d of %d alert expressions parse and evaluate; %d expressions in all fail to parse or evaluate\n",
		panelsOK, panels, alertsOK, alerts, parseErrs)
	if len(missingBy) > 0 {
		names := make([]string, 0, len(missingBy))
		for n := range missingBy {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "\nmetrics queried but never scraped (%d):\n", len(names))
		for _, n := range names {
			fmt.Fprintf(&b, "  %s  (%d expressions)\n", n, len(missingBy[n]))
		}
	}
	var dataless []string
	for _, r := range noData {
		if len(r.missing) == 0 {
			dataless = append(dataless, fmt.Sprintf("  %s: %s", r.where, r.expr))
		}
	}
	if len(dataless) > 0 {
		fmt.Fprintf(&b, "\npanel queries with no data although every metric they read exists (%d):\n%s\n", len(dataless), strings.Join(dataless, "\n"))
	}
	if len(rp.ruleHealth) > 0 {
		fmt.Fprintf(&b, "\nrules Prometheus could not evaluate:\n  %s\n", strings.Join(rp.ruleHealth, "\n  "))
	} else {
		fmt.Fprintf(&b, "\nevery rule loaded and evaluated by Prometheus without error\n")
	}
	if len(rp.promtool) > 0 {
		fmt.Fprintf(&b, "\npromtool:\n%s\n", strings.Join(rp.promtool, "\n"))
	} else {
		fmt.Fprintf(&b, "promtool check config, check rules and test rules: SUCCESS\n")
	}
	return b.String()
}

// missing returns the names that Prometheus has never scraped.
func missing(names []string, scraped map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !scraped[n] {
			out = append(out, n)
		}
	}
	return out
}

// promtool runs promtool in dir and returns "" when it succeeds, else what it said.
func promtool(ctx context.Context, dir string, args ...string) string {
	cmd := exec.CommandContext(ctx, "promtool", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return ""
}

func waitFor(t *testing.T, ctx context.Context, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("gave up waiting for %s after %s", what, limit)
		}
		time.Sleep(200 * time.Millisecond) // polling another process: nothing to synchronise on
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// startProcess starts cmd with its output in a log file, and stops it (SIGTERM, then SIGKILL) at the
// end of the test, showing the end of the log if the test failed.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start(), "start %s", name)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			raw, _ := os.ReadFile(logPath)
			if len(raw) > 4000 {
				raw = raw[len(raw)-4000:]
			}
			t.Logf("end of the %s log:\n%s", name, raw)
		}
	})
}

// service is ticketrush running for the check.
type service struct {
	addr, base  string
	jwtSecret   []byte
	adminToken  string
	client      *http.Client
	mu          sync.Mutex
	statuses    map[int]int
	concertID   string
	scheduleIDs []string
	saleID      string // a concert with a sale: its pre-queue fills, then it is drawn
	quiet       sale   // a concert where every fan buys: nobody cancels, leaves or lapses
}

// sale is a concert of the check and its schedules.
type sale struct {
	id        string
	schedules []string
}

func startService(t *testing.T, ctx context.Context) *service {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "ticketrush")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ticketrush")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/ticketrush:\n%s", out)

	s := &service{
		addr:       freeAddr(t),
		jwtSecret:  []byte(dbtest.Name("promcheck-jwt-secret-0123456789-")),
		adminToken: dbtest.Name("admin-token-0123456789abcdefghij-"),
		client:     &http.Client{Timeout: 5 * time.Second},
		statuses:   map[int]int{},
	}
	s.base = "http://" + s.addr
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(),
		"HTTP_ADDR="+s.addr,
		"REDIS_URL="+dbtest.PrivateRedis(t),
		"DATABASE_URL="+dbtest.Postgres(t),
		"JWT_SECRET="+string(s.jwtSecret),
		"QUEUE_TOKEN_SECRET="+dbtest.Name("promcheck-queue-secret-0123456789-"),
		"ADMIN_TOKEN="+s.adminToken,
		"ROLES=api,scheduler,writebehind",
	)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	startProcess(t, "ticketrush", cmd)
	waitFor(t, ctx, 30*time.Second, "ticketrush /readyz", func() bool {
		resp, err := s.client.Get(s.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// The concert the load buys from: a small active set, a slow admission rate and short TTLs, so that
	// fans wait, get admitted by the scheduler, and tokens and holds lapse within the run.
	s.concertID, s.scheduleIDs = s.createConcert(t, map[string]any{
		"title": "promcheck", "venue": "loopback",
		"schedules": []string{"2030-01-01T10:00:00Z", "2030-01-02T10:00:00Z"},
		"sections":  []map[string]any{{"name": "VIP", "price": 1000, "seats": 100}, {"name": "R", "price": 500, "seats": 200}},
		"queue": map[string]any{"activeCapacity": 4, "admitPerSecond": 2, "activeTtlSeconds": 3,
			"holdTtlSeconds": 2, "maxHoldsPerUser": 2},
	})
	// The quiet sale: everyone is admitted at once, tokens and holds outlast the check, and every fan
	// pays, so its cancel, leave and lapse counters stay at 0 (and must exist at 0).
	s.quiet.id, s.quiet.schedules = s.createConcert(t, map[string]any{
		"title": "promcheck quiet", "venue": "loopback",
		"schedules": []string{"2030-02-01T10:00:00Z"},
		"sections":  []map[string]any{{"name": "R", "price": 500, "seats": 1000}},
		"queue": map[string]any{"activeCapacity": 10000, "admitPerSecond": 1000, "activeTtlSeconds": 3600,
			"holdTtlSeconds": 3600, "maxHoldsPerUser": 2},
	})
	// The on-sale panels: a sale whose pre-queue is open at once and whose opening comes a few scrapes in.
	s.saleID, _ = s.createConcert(t, map[string]any{
		"title": "promcheck on-sale", "venue": "loopback", "schedules": []string{"2030-01-03T10:00:00Z"},
		"sections": []map[string]any{{"name": "R", "price": 500, "seats": 50}},
		"sale":     map[string]any{"opensAt": time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339Nano)},
	})
	return s
}

// createConcert creates a concert through the admin API and returns its id and schedule ids.
func (s *service) createConcert(t *testing.T, body map[string]any) (string, []string) {
	t.Helper()
	var created struct {
		ID        string `json:"id"`
		Schedules []struct {
			ID string `json:"id"`
		} `json:"schedules"`
	}
	status := s.do("POST", "/admin/v1/concerts", "Bearer "+s.adminToken, "", body, &created)
	require.Equal(t, http.StatusCreated, status, "create the concert %v", body["title"])
	var schedules []string
	for _, sc := range created.Schedules {
		schedules = append(schedules, sc.ID)
	}
	return created.ID, schedules
}

// do sends a request and decodes a JSON answer into out (when given); it returns the status, 0 when
// the request failed.
func (s *service) do(method, path, authz, queueToken string, body any, out any) int {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return 0
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if queueToken != "" {
		req.Header.Set("X-Queue-Token", queueToken)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		_ = json.NewDecoder(resp.Body).Decode(out)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	s.mu.Lock()
	s.statuses[resp.StatusCode]++
	s.mu.Unlock()
	return resp.StatusCode
}

func (s *service) statusCounts() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for k, v := range s.statuses {
		out[k] = v
	}
	return out
}

// fan is one user of the load.
type fan struct {
	n          int
	authz      string
	queueToken string
	status     string
}

type ticket struct {
	Token  string `json:"token"`
	Status string `json:"status"`
}

// load walks fans through the API until ctx ends: each round two new fans join; up to eight WAITING
// fans poll (some leave the line); ACTIVE fans do one of: buy a seat, hold and cancel, hold and let the hold
// lapse, try a seat someone holds, pay without points, give the slot back, or nothing (the token
// lapses). Admin calls, unauthenticated and unknown routes come along for the 4xx panels.
func (s *service) load(ctx context.Context) {
	var waiting []*fan
	n := 0
	for round := 0; ctx.Err() == nil; round++ {
		s.do("GET", "/v1/concerts", "", "", nil, nil)
		s.do("GET", "/readyz", "", "", nil, nil)
		s.do("GET", "/v1/queue", "", "", nil, nil)                                   // 401
		s.do("GET", "/v1/nowhere", "", "", nil, nil)                                 // 404 unmatched
		s.do("POST", "/v1/concerts/nosuchconcert/queue", s.user(9999), "", nil, nil) // 404
		s.do("GET", "/admin/v1/concerts/"+s.concertID+"/queue", "Bearer "+s.adminToken, "", nil, nil)
		if round%5 == 0 {
			s.do("PATCH", "/admin/v1/concerts/"+s.concertID+"/queue", "Bearer "+s.adminToken, "",
				map[string]any{"admitPerSecond": 2}, nil)
		}

		s.buyQuietly(n)
		s.do("POST", "/v1/concerts/"+s.saleID+"/queue", s.user(100_000+round), "", nil, nil) // pre-queue, then the line
		for range 2 {
			f := &fan{n: n, authz: s.user(n)}
			n++
			var tk ticket
			if s.do("POST", "/v1/concerts/"+s.concertID+"/queue", f.authz, "", nil, &tk) >= 300 {
				continue
			}
			f.queueToken, f.status = tk.Token, tk.Status
			if f.status == "ACTIVE" {
				s.shop(f)
			} else {
				waiting = append(waiting, f)
			}
		}

		// The eight who waited longest poll; the others wait their turn (and may lapse).
		var still []*fan
		for i, f := range waiting {
			if i >= 8 {
				still = append(still, f)
				continue
			}
			var tk ticket
			if s.do("GET", "/v1/queue", f.authz, f.queueToken, nil, &tk) != http.StatusOK {
				continue
			}
			switch {
			case tk.Status == "ACTIVE":
				s.shop(f)
			case tk.Status == "WAITING" && f.n%4 == 1:
				s.do("DELETE", "/v1/queue", f.authz, f.queueToken, nil, nil)
			case tk.Status == "WAITING":
				still = append(still, f)
			}
		}
		waiting = still

		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond): // pace the load: a few rounds a scrape
		}
	}
}

func (s *service) user(n int) string { return s.userNamed("fan-" + strconv.Itoa(n)) }

func (s *service) userNamed(name string) string {
	tok, err := auth.Mint(s.jwtSecret, name, time.Hour, time.Now())
	if err != nil {
		panic(err)
	}
	return "Bearer " + tok
}

// buyQuietly is one fan of the quiet sale: join (admitted at once), hold the first free seat, charge
// and pay. Nothing is cancelled, left or let lapse.
func (s *service) buyQuietly(n int) {
	authz := s.userNamed("quiet-" + strconv.Itoa(n)) // not a fan of the other sale: a wallet of its own
	var tk ticket
	if s.do("POST", "/v1/concerts/"+s.quiet.id+"/queue", authz, "", nil, &tk) >= 300 || tk.Status != "ACTIVE" {
		return
	}
	schedule := s.quiet.schedules[0]
	var seats []seat
	s.do("GET", "/v1/concerts/"+s.quiet.id+"/schedules/"+schedule+"/seats", authz, tk.Token, nil, &seats)
	for _, st := range seats {
		if st.Status != "AVAILABLE" {
			continue
		}
		var res struct {
			ID string `json:"id"`
		}
		if s.do("POST", "/v1/reservations", authz, tk.Token,
			map[string]string{"scheduleId": schedule, "seatId": st.ID}, &res) != http.StatusCreated {
			return
		}
		s.do("POST", "/v1/points/charges", authz, "", map[string]int64{"amount": st.Price}, nil)
		s.do("POST", "/v1/payments", authz, "", map[string]string{"reservationId": res.ID}, nil)
		return
	}
}

type seat struct {
	ID     string `json:"id"`
	Price  int64  `json:"price"`
	Status string `json:"status"`
}

// shop is what an admitted fan does, chosen by the fan's number.
func (s *service) shop(f *fan) {
	schedule := s.scheduleIDs[f.n%len(s.scheduleIDs)]
	s.do("GET", "/v1/concerts/"+s.concertID+"/schedules", f.authz, f.queueToken, nil, nil)
	var seats []seat
	s.do("GET", "/v1/concerts/"+s.concertID+"/schedules/"+schedule+"/seats", f.authz, f.queueToken, nil, &seats)
	var free, taken *seat
	for i := range seats {
		switch {
		case seats[i].Status == "AVAILABLE" && free == nil:
			free = &seats[i]
		case seats[i].Status != "AVAILABLE" && taken == nil:
			taken = &seats[i]
		}
	}
	hold := func(st *seat) (string, bool) {
		var res struct {
			ID string `json:"id"`
		}
		ok := s.do("POST", "/v1/reservations", f.authz, f.queueToken,
			map[string]string{"scheduleId": schedule, "seatId": st.ID}, &res) == http.StatusCreated
		return res.ID, ok
	}
	switch f.n % 7 {
	case 0, 3: // buy a seat
		if free == nil {
			return
		}
		if id, ok := hold(free); ok {
			s.do("POST", "/v1/points/charges", f.authz, "", map[string]int64{"amount": free.Price}, nil)
			s.do("GET", "/v1/points", f.authz, "", nil, nil)
			s.do("POST", "/v1/payments", f.authz, "", map[string]string{"reservationId": id}, nil)
			s.do("GET", "/v1/reservations/"+id, f.authz, "", nil, nil)
			s.do("GET", "/v1/points/history?limit=10", f.authz, "", nil, nil)
		}
	case 1: // hold, then cancel
		if free == nil {
			return
		}
		if id, ok := hold(free); ok {
			s.do("DELETE", "/v1/reservations/"+id, f.authz, "", nil, nil)
		}
		s.do("DELETE", "/v1/queue", f.authz, f.queueToken, nil, nil)
	case 2: // hold and let it lapse
		if free != nil {
			hold(free)
		}
	case 4: // try a seat that is taken (409 SEAT_UNAVAILABLE), then give the slot back
		if taken != nil {
			hold(taken)
		}
		s.do("DELETE", "/v1/queue", f.authz, f.queueToken, nil, nil)
	case 5: // pay with no points (409 INSUFFICIENT_BALANCE)
		if free == nil {
			return
		}
		if id, ok := hold(free); ok {
			s.do("POST", "/v1/payments", f.authz, "", map[string]string{"reservationId": id}, nil)
		}
	case 6: // do nothing: the token lapses after activeTtlSeconds
	}
}

// prometheus is Debian's Prometheus running for the check.
type prometheus struct {
	base, config string
	client       *http.Client
}

// startPrometheus runs Prometheus on prometheus/prometheus.yml with the ticketrush target set to
// target, itself to its own address, 1 s intervals, and the rule files by absolute path.
func startPrometheus(t *testing.T, ctx context.Context, target string) *prometheus {
	t.Helper()
	addr := freeAddr(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, rewriteConfig(t, target, addr), 0o644))

	cmd := exec.CommandContext(ctx, "prometheus",
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	startProcess(t, "prometheus", cmd)
	p := &prometheus{base: "http://" + addr, config: cfgPath, client: &http.Client{Timeout: 10 * time.Second}}
	waitFor(t, ctx, 30*time.Second, "Prometheus /-/ready", func() bool {
		resp, err := p.client.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

func rewriteConfig(t *testing.T, target, self string) []byte {
	t.Helper()
	var cfg map[string]any
	readYAML(t, filepath.Join("prometheus", "prometheus.yml"), &cfg)
	global, _ := cfg["global"].(map[string]any)
	if global == nil {
		global = map[string]any{}
	}
	global["scrape_interval"] = scrapeEvery.String()
	global["scrape_timeout"] = scrapeEvery.String()
	global["evaluation_interval"] = scrapeEvery.String()
	cfg["global"] = global

	files, _ := cfg["rule_files"].([]any)
	for i, f := range files {
		abs, err := filepath.Abs(filepath.Join("prometheus", f.(string)))
		require.NoError(t, err)
		files[i] = abs
	}
	jobs, _ := cfg["scrape_configs"].([]any)
	for _, j := range jobs {
		job := j.(map[string]any)
		switch job["job_name"] {
		case "ticketrush":
			job["static_configs"] = []any{map[string]any{"targets": []string{target}}}
		case "prometheus":
			job["static_configs"] = []any{map[string]any{"targets": []string{self}}}
		default:
			t.Fatalf("prometheus.yml scrapes a job the check does not know how to point here: %v", job["job_name"])
		}
		delete(job, "scrape_interval")
		delete(job, "scrape_timeout")
	}
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	return out
}

type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

// get calls the HTTP API: a POST with the form when there is one (queries can be long), else a GET.
func (p *prometheus) get(ctx context.Context, path string, form url.Values) (apiResponse, error) {
	method, body := "GET", io.Reader(nil)
	if len(form) > 0 {
		method, body = "POST", strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return apiResponse{}, err
	}
	if len(form) > 0 {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return apiResponse{}, err
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&r); err != nil {
		return r, fmt.Errorf("%s: HTTP %d, %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return r, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return r, nil
}

// query runs an instant query and returns how many series (or 1 for a scalar) it returned; the error
// is Prometheus' own (errorType bad_data for an expression that does not parse).
func (p *prometheus) query(ctx context.Context, expr string) (int, error) {
	r, err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return 0, err
	}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		return 0, err
	}
	if data.ResultType == "scalar" || data.ResultType == "string" {
		return 1, nil
	}
	var series []json.RawMessage
	if err := json.Unmarshal(data.Result, &series); err != nil {
		return 0, err
	}
	return len(series), nil
}

// scalar returns the value of a query whose answer is one sample.
func (p *prometheus) scalar(ctx context.Context, expr string) (float64, bool) {
	r, err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return 0, false
	}
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if json.Unmarshal(r.Data, &data) != nil || len(data.Result) != 1 {
		return 0, false
	}
	s, _ := data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// metricNames returns every metric name Prometheus has scraped.
func (p *prometheus) metricNames(ctx context.Context, t *testing.T) map[string]bool {
	t.Helper()
	r, err := p.get(ctx, "/api/v1/label/__name__/values", url.Values{})
	require.NoError(t, err)
	var names []string
	require.NoError(t, json.Unmarshal(r.Data, &names))
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Name           string `json:"name"`
			Health         string `json:"health"`
			LastError      string `json:"lastError"`
			LastEvaluation string `json:"lastEvaluation"`
		} `json:"rules"`
	} `json:"groups"`
}

func (p *prometheus) rules(ctx context.Context) (ruleGroups, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", p.base+"/api/v1/rules", nil)
	if err != nil {
		return ruleGroups{}, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return ruleGroups{}, err
	}
	defer resp.Body.Close()
	var r struct {
		Data ruleGroups `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&r)
	return r.Data, err
}

// rulesEvaluated reports whether Prometheus has loaded want rules and evaluated each at least once.
func (p *prometheus) rulesEvaluated(ctx context.Context, want int) bool {
	g, err := p.rules(ctx)
	if err != nil {
		return false
	}
	n := 0
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			if r.Health == "unknown" || strings.HasPrefix(r.LastEvaluation, "0001-") {
				return false
			}
			n++
		}
	}
	return n == want
}

// ruleHealth returns the rules Prometheus reports unhealthy.
func (p *prometheus) ruleHealth(ctx context.Context, t *testing.T) []string {
	t.Helper()
	g, err := p.rules(ctx)
	if err != nil {
		return []string{errors.Join(errors.New("read /api/v1/rules"), err).Error()}
	}
	var bad []string
	for _, grp := range g.Groups {
		for _, r := range grp.Rules {
			if r.Health != "ok" {
				bad = append(bad, fmt.Sprintf("%s / %s: %s %s", grp.Name, r.Name, r.Health, r.LastError))
			}
		}
	}
	return bad
}
