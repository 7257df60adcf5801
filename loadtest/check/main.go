// Command check verifies the invariants of a sale after a load test, from k6's summary export (the
// setup data names the run's concert and fans; the counters say what the fans were told):
//
//   - through the API: the seats the service counts as sold are the seats fans were told they bought;
//   - in Redis, the hot truth: no seat sold twice; every SOLD seat has one PAID reservation and every PAID
//     reservation its seat; every sale exactly one debit of its price; a debit without a sale refunded; no
//     payment left half done; no balance negative; the fans' balances add up to what they were charged
//     less what they paid plus refunds;
//   - once the write-behind has drained (every consumer group of the concert's and the wallets' streams
//     caught up), in Postgres: no seat sold twice, the sales Redis has, and for every fan
//     balance = charges − payments + refunds by the ledger;
//   - `ticketrush reconcile` passes.
//
// What it cannot check fails too (no write-behind reading the streams, no durable record, no reconcile
// command): a run passes only when every invariant was checked. Keys are read under REDIS_KEY_PREFIX
// (default tr, as the service), through internal/redis, which owns the data layout. Any failure exits 1.
// Usage: go run ./loadtest/check -summary loadtest/out/onsale-summary.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
}

type options struct {
	summary, redisURL, databaseURL, prefix, bin, adminToken string
	drain                                                   time.Duration
}

type summary struct {
	Metrics   map[string]map[string]any `json:"metrics"`
	SetupData *setupData                `json:"setup_data"`
}

// setupData is what the k6 scenario's setup returned: the run's concert and fans.
type setupData struct {
	RunID      string   `json:"runId"`
	Scenario   string   `json:"scenario"`
	BaseURL    string   `json:"baseUrl"`
	ConcertID  string   `json:"concertId"`
	Schedules  []string `json:"schedules"`
	UserPrefix string   `json:"userPrefix"`
	Purchase   bool     `json:"purchase"`
	Sections   []struct {
		Seats int `json:"seats"`
	} `json:"sections"`
}

// count returns a counter's total from the summary, and whether the run recorded it.
func (s summary) count(name string) (int64, bool) {
	m, ok := s.Metrics[name]
	if !ok {
		return 0, false
	}
	v, ok := m["count"].(float64)
	return int64(v), ok
}

// report prints one line per check and remembers failures.
type report struct {
	w     io.Writer
	fails int
}

func (r *report) pass(name, format string, args ...any) { r.line("PASS", name, format, args...) }
func (r *report) fail(name, format string, args ...any) {
	r.fails++
	r.line("FAIL", name, format, args...)
}

func (r *report) line(verdict, name, format string, args ...any) {
	fmt.Fprintf(r.w, "  %s  %-28s %s\n", verdict, name, fmt.Sprintf(format, args...))
}

// expect passes when ok, fails otherwise.
func (r *report) expect(ok bool, name, format string, args ...any) {
	if ok {
		r.pass(name, format, args...)
	} else {
		r.fail(name, format, args...)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var cfg options
	fs.StringVar(&cfg.summary, "summary", "", "k6 --summary-export file of the run (required)")
	// The URLs' defaults come from the environment after parsing, so that a usage message never prints
	// their credentials.
	fs.StringVar(&cfg.redisURL, "redis", "", "the service's Redis (default $REDIS_URL, else redis://127.0.0.1:6379/0)")
	fs.StringVar(&cfg.databaseURL, "database", "", "the service's Postgres (default $DATABASE_URL, else a local ticketrush database)")
	fs.StringVar(&cfg.prefix, "prefix", config.KeyPrefix(getenv), "the service's Redis key prefix (REDIS_KEY_PREFIX)")
	fs.StringVar(&cfg.bin, "ticketrush", "bin/ticketrush", "the service binary, for `ticketrush reconcile`")
	fs.DurationVar(&cfg.drain, "drain", 60*time.Second, "how long to wait for the write-behind to drain")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.redisURL = or(cfg.redisURL, or(getenv("REDIS_URL"), "redis://127.0.0.1:6379/0"))
	cfg.databaseURL = or(cfg.databaseURL, or(getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/ticketrush?sslmode=disable"))
	cfg.adminToken = or(getenv("ADMIN_TOKEN"), "dev-admin-token-change-me-0123456789ab")
	if cfg.summary == "" {
		return errors.New("-summary is required")
	}
	raw, err := os.ReadFile(cfg.summary)
	if err != nil {
		return err
	}
	var s summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %w", cfg.summary, err)
	}
	if s.SetupData == nil || s.SetupData.ConcertID == "" {
		return fmt.Errorf("%s has no setup data: the run's setup did not finish", cfg.summary)
	}
	d := s.SetupData
	fans, _ := s.count("fans_started")
	fmt.Fprintf(stdout, "invariant check: %s run %s, concert %s, %d fans (%s0..%d)\n",
		d.Scenario, d.RunID, d.ConcertID, fans, d.UserPrefix, max(fans-1, 0))
	r := &report{w: stdout}
	c := &checker{cfg: cfg, s: s, r: r, http: &http.Client{Timeout: 10 * time.Second}}
	for i := range fans {
		c.users = append(c.users, d.UserPrefix+strconv.FormatInt(i, 10))
	}
	c.api(ctx)
	opt, err := rueidis.ParseURL(cfg.redisURL)
	var rc rueidis.Client
	if err == nil {
		opt.DisableCache = true
		rc, err = rueidis.NewClient(opt)
	}
	if err != nil {
		r.fail("redis", "cannot reach %s: %v", redact(cfg.redisURL), err)
	} else {
		defer rc.Close()
		c.rdb = rc
		c.redis(ctx)
		if c.drain(ctx) {
			c.postgres(ctx)
		}
	}
	c.reconcile(ctx)
	if r.fails > 0 {
		return fmt.Errorf("%d invariant(s) broken", r.fails)
	}
	fmt.Fprintln(stdout, "  all invariants hold")
	return nil
}

type checker struct {
	cfg   options
	s     summary
	r     *report
	http  *http.Client
	rdb   rueidis.Client
	users []string

	sold     int64 // what the admin API counts
	paidRes  map[string]ticketrush.Reservation
	redisBal map[string]int64
}

// ---- API ----

func (c *checker) api(ctx context.Context) {
	d := c.s.SetupData
	var q struct {
		Seats struct{ Available, Held, Sold int64 } `json:"seats"`
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.BaseURL+"/admin/v1/concerts/"+d.ConcertID+"/queue", nil)
	req.Header.Set("Authorization", "Bearer "+c.cfg.adminToken)
	resp, err := c.http.Do(req)
	if err != nil {
		c.r.fail("api: seat counts", "GET /admin/v1/concerts/{id}/queue: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&q) != nil {
		c.r.fail("api: seat counts", "GET /admin/v1/concerts/{id}/queue: %d", resp.StatusCode)
		return
	}
	c.sold = q.Seats.Sold
	total := 0
	for _, sec := range d.Sections {
		total += sec.Seats * len(d.Schedules)
	}
	c.r.expect(q.Seats.Sold <= int64(total), "api: sold within the house", "%d sold of %d seats (%d held, %d available)",
		q.Seats.Sold, total, q.Seats.Held, q.Seats.Available)
	if paid, ok := c.s.count("seats_paid"); ok {
		c.r.expect(paid == q.Seats.Sold, "api: sold = seats paid", "the service counts %d sold, fans were told they paid for %d", q.Seats.Sold, paid)
	} else if !d.Purchase || d.Scenario == "poll-storm" {
		c.r.expect(q.Seats.Sold == 0, "api: nothing sold", "%d sold by a run that buys nothing", q.Seats.Sold)
	}
}

// reconcile runs `ticketrush reconcile` on the same Redis, key prefix and Postgres; a binary without
// the command fails the check.
func (c *checker) reconcile(ctx context.Context) {
	help, _ := exec.CommandContext(ctx, c.cfg.bin, "help").CombinedOutput()
	if !strings.Contains(string(help), "reconcile") {
		c.r.fail("ticketrush reconcile", "%s has no reconcile command: build it (make build)", c.cfg.bin)
		return
	}
	cmd := exec.CommandContext(ctx, c.cfg.bin, "reconcile")
	cmd.Env = append(os.Environ(), "REDIS_URL="+c.cfg.redisURL, "DATABASE_URL="+c.cfg.databaseURL,
		"REDIS_KEY_PREFIX="+c.cfg.prefix)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.r.fail("ticketrush reconcile", "%v\n%s", err, out)
		return
	}
	c.r.pass("ticketrush reconcile", "%s", strings.TrimSpace(lastLine(string(out))))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ---- small helpers ----

// list formats problems after a check's figures: ": a; b; c", at most ten of them.
func list(items []string) string {
	if len(items) == 0 {
		return ""
	}
	if len(items) > 10 {
		items = append(items[:10:10], fmt.Sprintf("and %d more", len(items)-10))
	}
	return ": " + strings.Join(items, "; ")
}

func errText(err error) []string {
	if err == nil {
		return nil
	}
	return []string{err.Error()}
}

// redact hides the password of a URL before it is printed.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparseable URL)"
	}
	return u.Redacted()
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
