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
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/redis"
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

// ---- Redis ----

// redis checks the run's concert in Redis: its reservations, seat maps, debits and the fans' balances.
func (c *checker) redis(ctx context.Context) {
	in := redis.NewInspector(c.rdb, c.cfg.prefix)
	res, err := in.Reservations(ctx, c.s.SetupData.ConcertID)
	if err != nil {
		c.r.fail("redis: reservations", "%v", err)
		return
	}
	c.redisReservations(res)
	if !c.redisSeatMaps(ctx, in, res) {
		return
	}
	debits, refunds, ok := c.redisDebits(ctx, in, res)
	if !ok {
		return
	}
	c.redisBalances(ctx, in, debits, refunds)
}

// redisReservations keeps the PAID reservations of res (c.paidRes) and checks that no seat was sold
// twice and no payment is half done.
func (c *checker) redisReservations(res map[string]ticketrush.Reservation) {
	statuses := map[ticketrush.ReservationStatus]int{}
	paidBySeat := map[string][]string{}
	c.paidRes = map[string]ticketrush.Reservation{}
	for id, v := range res {
		statuses[v.Status]++
		if v.Status == ticketrush.ReservationPaid {
			seat := v.ScheduleID + "/" + v.SeatID
			paidBySeat[seat] = append(paidBySeat[seat], id)
			c.paidRes[id] = v
		}
	}
	var twice []string
	for seat, ids := range paidBySeat {
		if len(ids) > 1 {
			twice = append(twice, fmt.Sprintf("%s by %s", seat, strings.Join(ids, ", ")))
		}
	}
	sort.Strings(twice)
	c.r.expect(len(twice) == 0, "redis: no seat sold twice", "%d reservations %v%s", len(res), statuses, list(twice))
	c.r.expect(statuses[ticketrush.ReservationPaying] == 0, "redis: no payment half done", "%d reservations PAYING after the run",
		statuses[ticketrush.ReservationPaying])
}

// redisSeatMaps checks the seat maps: every SOLD seat names a PAID reservation of that seat, and every
// PAID one is SOLD. It returns false when a map could not be read.
func (c *checker) redisSeatMaps(ctx context.Context, in *redis.Inspector, res map[string]ticketrush.Reservation) bool {
	d := c.s.SetupData
	var bad []string
	soldSeats := 0
	for _, sch := range d.Schedules {
		seats, err := in.SeatStates(ctx, d.ConcertID, sch)
		if err != nil {
			c.r.fail("redis: seat maps", "%v", err)
			return false
		}
		for seat, st := range seats {
			if st.Kind != redis.SeatSold {
				continue
			}
			soldSeats++
			id := st.Reservation
			if v, ok := c.paidRes[id]; !ok || v.SeatID != seat || v.ScheduleID != sch {
				bad = append(bad, fmt.Sprintf("%s/%s SOLD to %s (%s)", sch, seat, id, res[id].Status))
			}
		}
	}
	if soldSeats != len(c.paidRes) {
		bad = append(bad, fmt.Sprintf("%d seats SOLD, %d reservations PAID", soldSeats, len(c.paidRes)))
	}
	c.r.expect(len(bad) == 0 && int64(soldSeats) == c.sold, "redis: SOLD seats = PAID", "%d SOLD seats, %d PAID reservations, the admin API counts %d%s",
		soldSeats, len(c.paidRes), c.sold, list(bad))
	return true
}

// redisDebits checks the money of res: each sale one debit of its price; a debit without a sale
// refunded. It returns the sums debited and refunded, and false when they could not be read.
func (c *checker) redisDebits(ctx context.Context, in *redis.Inspector, res map[string]ticketrush.Reservation) (debits, refunds int64, ok bool) {
	var moneyBad []string
	ids := make([]string, 0, len(res))
	for id := range res {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	sorted := make([]ticketrush.Reservation, len(ids))
	for i, id := range ids {
		sorted[i] = res[id]
	}
	money, err := in.Money(ctx, sorted)
	if err != nil {
		c.r.fail("redis: debits", "%v", err)
		return 0, 0, false
	}
	for i, id := range ids {
		v := res[id]
		debit, refund := money[i].Debit, money[i].Refund
		if debit != nil {
			debits += debit.Amount
		}
		if refund != nil {
			refunds += refund.Amount
		}
		switch {
		case v.Status == ticketrush.ReservationPaid && (debit == nil || debit.Amount != v.Price || refund != nil):
			moneyBad = append(moneyBad, fmt.Sprintf("%s PAID with debit %v refund %v", id, debit, refund))
		case v.Status != ticketrush.ReservationPaid && v.Status != ticketrush.ReservationPaying && debit != nil && refund == nil:
			moneyBad = append(moneyBad, fmt.Sprintf("%s %s debited %d and not refunded", id, v.Status, debit.Amount))
		}
	}
	c.r.expect(len(moneyBad) == 0, "redis: one debit per sale", "%d debited, %d refunded%s", debits, refunds, list(moneyBad))
	return debits, refunds, true
}

// redisBalances keeps the balances of the run's fans (c.redisBal) and checks that none is negative and
// that they add up with what was charged, debited and refunded.
func (c *checker) redisBalances(ctx context.Context, in *redis.Inspector, debits, refunds int64) {
	var err error
	c.redisBal, err = in.Balances(ctx, c.users)
	if err != nil {
		c.r.fail("redis: balances", "%v", err)
		return
	}
	var sum int64
	var negative []string
	for _, u := range c.users {
		n := c.redisBal[u]
		sum += n
		if n < 0 {
			negative = append(negative, fmt.Sprintf("%s %d", u, n))
		}
	}
	c.r.expect(len(negative) == 0, "redis: no balance negative", "%d fans%s", len(c.users), list(negative))
	charged, okC := c.s.count("points_charged")
	paid, okP := c.s.count("points_paid")
	if !okC && !okP {
		c.r.expect(sum == 0 && debits == 0, "redis: money adds up", "no money moved in this run: balances sum to %d, debits %d", sum, debits)
		return
	}
	c.r.expect(paid == debits, "redis: debits = payments", "the service debited %d, fans were told they paid %d", debits, paid)
	c.r.expect(sum == charged-debits+refunds, "redis: money adds up", "balances sum to %d; charged %d − debited %d + refunded %d = %d",
		sum, charged, debits, refunds, charged-debits+refunds)
}

// ---- write-behind drain ----

// drain waits until every consumer group of the concert's stream and of every wallet shard's stream
// has nothing pending and nothing unread. It reports whether Postgres can be checked.
func (c *checker) drain(ctx context.Context) bool {
	streams, err := redis.NewKeys(c.cfg.prefix).AllEventStreams(ctx, c.rdb, []string{c.s.SetupData.ConcertID})
	if err != nil {
		c.r.fail("write-behind drained", "%v", err)
		return false
	}
	start := time.Now()
	for {
		behind, groups, err := c.behind(ctx, streams)
		if err != nil {
			c.r.fail("write-behind drained", "%v", err)
			return false
		}
		if groups == 0 {
			c.r.fail("write-behind drained", "no consumer group reads the streams: the write-behind is not running, so Postgres cannot be checked")
			return false
		}
		if len(behind) == 0 {
			c.r.pass("write-behind drained", "%d groups caught up after %s", groups, time.Since(start).Round(100*time.Millisecond))
			return true
		}
		if time.Since(start) > c.cfg.drain {
			c.r.fail("write-behind drained", "still behind after %s: %s", c.cfg.drain, strings.Join(behind, "; "))
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *checker) behind(ctx context.Context, streams []string) (behind []string, groups int, err error) {
	cmds := make(rueidis.Commands, len(streams))
	for i, s := range streams {
		cmds[i] = c.rdb.B().XinfoGroups().Key(s).Build()
	}
	for i, reply := range c.rdb.DoMulti(ctx, cmds...) {
		msg, err := reply.ToMessage()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				continue
			}
			return nil, 0, fmt.Errorf("XINFO GROUPS %s: %w", streams[i], err)
		}
		list, err := redis.ParseStreamGroups(msg)
		if err != nil {
			return nil, 0, err
		}
		for _, g := range list {
			groups++
			lag := g.Lag
			if lag < 0 { // lag unknown (nil): compare the group's position with the stream's end
				info, err := c.rdb.Do(ctx, c.rdb.B().XinfoStream().Key(streams[i]).Build()).AsMap()
				if err != nil {
					return nil, 0, err
				}
				end := info["last-generated-id"]
				if id, _ := end.ToString(); id != g.LastDelivered {
					lag = 1
				} else {
					lag = 0
				}
			}
			if g.Pending > 0 || lag > 0 {
				behind = append(behind, fmt.Sprintf("%s group %s: %d pending, %d unread", streams[i], g.Name, g.Pending, lag))
			}
		}
	}
	return behind, groups, nil
}

// ---- Postgres ----

// postgres checks the durable record of the run's concert: no seat sold twice, the sales as in Redis,
// one debit per sale and every fan's balance as the ledger has it.
func (c *checker) postgres(ctx context.Context) {
	db, err := pgx.Connect(ctx, c.cfg.databaseURL)
	if err != nil {
		c.r.fail("postgres", "cannot reach %s: %v", redact(c.cfg.databaseURL), err)
		return
	}
	defer db.Close(ctx)
	var present bool
	if err := db.QueryRow(ctx, `SELECT to_regclass('ledger') IS NOT NULL AND to_regclass('reservations') IS NOT NULL
		AND to_regclass('payments') IS NOT NULL`).Scan(&present); err != nil || !present {
		c.r.fail("postgres", "no ledger, reservations and payments tables (%v): the durable record cannot be checked", err)
		return
	}
	c.postgresSoldTwice(ctx, db)
	c.postgresSales(ctx, db)
	c.postgresDebits(ctx, db)
	c.postgresBalances(ctx, db)
}

// query runs the query of check name, failing the check (nil rows) when it does not run.
func (c *checker) query(ctx context.Context, db *pgx.Conn, name, sql string, args ...any) pgx.Rows {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		c.r.fail(name, "%v (the schema changed? update loadtest/check)", err)
		return nil
	}
	return rows
}

// postgresSoldTwice checks that no seat has two PAID reservations.
func (c *checker) postgresSoldTwice(ctx context.Context, db *pgx.Conn) {
	if rows := c.query(ctx, db, "postgres: no seat sold twice", `SELECT schedule_id, seat_id, count(*) FROM reservations
		WHERE concert_id = $1 AND status = 'PAID' GROUP BY 1, 2 HAVING count(*) > 1`, c.s.SetupData.ConcertID); rows != nil {
		var twice []string
		for rows.Next() {
			var sch, seat string
			var n int
			if err := rows.Scan(&sch, &seat, &n); err == nil {
				twice = append(twice, fmt.Sprintf("%s/%s ×%d", sch, seat, n))
			}
		}
		c.r.expect(rows.Err() == nil && len(twice) == 0, "postgres: no seat sold twice", "%d seats sold twice%s", len(twice), list(append(twice, errText(rows.Err())...)))
	}
}

// postgresSales checks that the PAID reservations and the payments are Redis's sales.
func (c *checker) postgresSales(ctx context.Context, db *pgx.Conn) {
	var paid, payments int
	err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM reservations WHERE concert_id = $1 AND status = 'PAID'),
		(SELECT count(*) FROM payments p JOIN reservations r ON r.id = p.reservation_id WHERE r.concert_id = $1)`, c.s.SetupData.ConcertID).Scan(&paid, &payments)
	if err != nil {
		c.r.fail("postgres: sales", "%v (the schema changed? update loadtest/check)", err)
	} else {
		c.r.expect(paid == len(c.paidRes) && payments == paid, "postgres: sales = Redis", "%d PAID reservations and %d payments, Redis has %d sales", paid, payments, len(c.paidRes))
	}
}

// postgresDebits checks each reservation: payments − refunds in the ledger is 1 when PAID, else 0.
func (c *checker) postgresDebits(ctx context.Context, db *pgx.Conn) {
	if rows := c.query(ctx, db, "postgres: one debit per sale", `SELECT r.id, r.status,
		coalesce(sum(CASE l.type WHEN 'PAYMENT' THEN 1 WHEN 'REFUND' THEN -1 ELSE 0 END), 0)
		FROM reservations r LEFT JOIN ledger l ON l.reservation_id = r.id WHERE r.concert_id = $1 GROUP BY r.id, r.status`, c.s.SetupData.ConcertID); rows != nil {
		var bad []string
		n := 0
		for rows.Next() {
			var id, status string
			var net int
			if err := rows.Scan(&id, &status, &net); err != nil {
				continue
			}
			n++
			if want := map[bool]int{true: 1, false: 0}[status == "PAID"]; net != want {
				bad = append(bad, fmt.Sprintf("%s %s: %d net debits", id, status, net))
			}
		}
		c.r.expect(rows.Err() == nil && len(bad) == 0, "postgres: one debit per sale", "%d reservations%s", n, list(append(bad, errText(rows.Err())...)))
	}
}

// postgresBalances checks every fan: balance (Redis) = charges − payments + refunds (ledger), and no
// balance in the ledger ever went negative.
func (c *checker) postgresBalances(ctx context.Context, db *pgx.Conn) {
	if rows := c.query(ctx, db, "postgres: balances = ledger", `SELECT user_id, sum(delta), min(balance_after) FROM ledger
		WHERE starts_with(user_id, $1) GROUP BY user_id`, c.s.SetupData.UserPrefix); rows != nil {
		ledger := map[string]int64{}
		var bad []string
		for rows.Next() {
			var user string
			var sum, minAfter int64
			if err := rows.Scan(&user, &sum, &minAfter); err != nil {
				continue
			}
			ledger[user] = sum
			if minAfter < 0 {
				bad = append(bad, fmt.Sprintf("%s went to %d", user, minAfter))
			}
		}
		for _, u := range c.users {
			if ledger[u] != c.redisBal[u] {
				bad = append(bad, fmt.Sprintf("%s: balance %d, ledger %d", u, c.redisBal[u], ledger[u]))
			}
		}
		c.r.expect(rows.Err() == nil && len(bad) == 0, "postgres: balances = ledger", "%d fans, %d in the ledger%s", len(c.users), len(ledger), list(append(bad, errText(rows.Err())...)))
	}
}

// ---- reconcile ----

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
