package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// acked counts what the service acknowledged to the bench (201s): each must reach Postgres through
// the write-behind.
type acked struct {
	holds, payments, charges atomic.Int64
}

func (a *acked) charge(status int) bool {
	if status == http.StatusCreated {
		a.charges.Add(1)
	}
	return status == http.StatusCreated
}

// payment counts a 201; a 200 is the same payment answered again (Idempotency-Key), already counted.
func (a *acked) payment(status int) bool {
	if status == http.StatusCreated {
		a.payments.Add(1)
	}
	return status == http.StatusCreated || status == http.StatusOK
}

// durability is the write-behind's account after the HTTP runs.
type durability struct {
	caughtUp    time.Duration // from the end of the runs until the backlog was empty
	countsAfter time.Duration // from then until Postgres held what was acknowledged (or gave up)
	drained     bool
	noMetric    bool // the service has no backlog metric to wait for
	counts      []countCheck
	deadLetters int64  // events the worker dead-lettered (ticketrush_writebehind_dead_letters)
	reconcile   string // the reconcile command's verdict
	ok          bool
}

type countCheck struct {
	what            string
	acked, postgres int64
}

// metrics reads the service's /metrics: every ticketrush_ sample, the highest over label sets.
func (a *api) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(body)), nil
}

// parseMetrics reads the Prometheus text format's ticketrush_ samples, keeping the highest value of
// each name over its label sets.
func parseMetrics(text string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "ticketrush_") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := f[0]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if old, seen := out[name]; err == nil && (!seen || v > old) {
			out[name] = v
		}
	}
	return out
}

const (
	metricBacklog     = "ticketrush_writebehind_backlog_events"
	metricLag         = "ticketrush_writebehind_lag_seconds"
	metricDeadLetters = "ticketrush_writebehind_dead_letters_total"
)

// checkDurability waits for the write-behind to empty its backlog, then holds Postgres against what
// the service acknowledged to the bench, and runs `ticketrush reconcile` (Redis against Postgres).
func (b *bench) checkDurability(ctx context.Context, dsn string) *durability {
	d := &durability{}
	b.waitForBacklog(ctx, d)
	r0 := b.reconcile(ctx, dsn, d)
	// The counts, until they match or a minute has passed: the worker finds a new concert's stream
	// within a few seconds, and until then neither its backlog nor its lag counts that stream's events.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		d.reconcile += "; connect postgres: " + err.Error()
		d.ok = false
		return d
	}
	defer conn.Close(ctx)
	if !b.countAcked(ctx, conn, d, r0) {
		return d
	}
	if m, err := b.api.metrics(ctx); err == nil && m[metricDeadLetters] > 0 {
		d.deadLetters = int64(m[metricDeadLetters])
		d.ok = false
	}
	return d
}

// waitForBacklog waits, up to 2 minutes, for the write-behind's backlog and lag to be 0, or finds the
// service has no such metric, and notes which in d.
func (b *bench) waitForBacklog(ctx context.Context, d *durability) {
	t0 := time.Now()
	for time.Since(t0) < 2*time.Minute && ctx.Err() == nil {
		m, err := b.api.metrics(ctx)
		v, ok := m[metricBacklog]
		if err == nil && !ok {
			d.noMetric = true // a service without the write-behind's metrics: the counts and reconcile still tell
			break
		}
		if err == nil && v == 0 && m[metricLag] == 0 {
			d.drained = true
			break
		}
		_ = sleepCtx(ctx, 200*time.Millisecond)
	}
	d.caughtUp = time.Since(t0)
	d.ok = d.drained || d.noMetric
}

// reconcile runs `ticketrush reconcile` on the service's Redis and dsn and notes its last line, or its
// error, in d. It returns when the command started.
func (b *bench) reconcile(ctx context.Context, dsn string, d *durability) time.Time {
	cmd := exec.CommandContext(ctx, b.cfg.bin, "reconcile", "--wait", "60s")
	cmd.Env = append(withoutVars(os.Environ(), "REDIS_URL", "DATABASE_URL", "REDIS_KEY_PREFIX"),
		"REDIS_URL="+b.redis.url(), "DATABASE_URL="+dsn)
	r0 := time.Now()
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	switch {
	case err == nil:
		d.reconcile = fmt.Sprintf("%s (%.1f s)", lines[len(lines)-1], time.Since(r0).Seconds())
	default:
		d.ok = false
		if len(lines) > 3 {
			lines = append(lines[:3], fmt.Sprintf("… %d lines", len(lines)))
		}
		d.reconcile = fmt.Sprintf("%v: %s", err, strings.Join(lines, " | "))
	}
	return r0
}

// countAcked counts in Postgres the holds, payments and charges the service acknowledged, until they
// match or a minute from c0 has passed, and notes the counts in d. It returns false when a count
// failed (noted in d.reconcile).
func (b *bench) countAcked(ctx context.Context, conn *pgx.Conn, d *durability, c0 time.Time) bool {
	checks := []struct {
		what  string
		acked int64
		query string
	}{
		{"holds (reservations)", b.acked.holds.Load(), "SELECT count(*) FROM reservations"},
		{"payments", b.acked.payments.Load(), "SELECT count(*) FROM payments"},
		{"payments in the ledger", b.acked.payments.Load(), "SELECT count(*) FROM ledger WHERE type = 'PAYMENT'"},
		{"charges in the ledger", b.acked.charges.Load(), "SELECT count(*) FROM ledger WHERE type = 'CHARGE'"},
	}
	for {
		d.counts = d.counts[:0]
		match := true
		for _, c := range checks {
			var n int64
			if err := conn.QueryRow(ctx, c.query).Scan(&n); err != nil {
				d.reconcile += "; " + c.query + ": " + err.Error()
				d.ok = false
				return false
			}
			d.counts = append(d.counts, countCheck{what: c.what, acked: c.acked, postgres: n})
			match = match && n == c.acked
		}
		if match || time.Since(c0) > time.Minute || ctx.Err() != nil {
			d.ok = d.ok && match
			d.countsAfter = time.Since(c0)
			return true
		}
		_ = sleepCtx(ctx, 200*time.Millisecond)
	}
}

// lines describes the account for the table.
func (d *durability) lines() []string {
	drain := fmt.Sprintf("backlog empty %.1f s after the runs", d.caughtUp.Seconds())
	if d.noMetric {
		drain = "no " + metricBacklog + " to wait for"
	} else if !d.drained {
		drain = fmt.Sprintf("backlog NOT seen empty (%s) %.0f s after the runs", metricBacklog, d.caughtUp.Seconds())
	}
	var parts []string
	for _, c := range d.counts {
		mark := ""
		if c.acked != c.postgres {
			mark = " MISMATCH"
		}
		parts = append(parts, fmt.Sprintf("%s %d acknowledged, %d in Postgres%s", c.what, c.acked, c.postgres, mark))
	}
	if d.deadLetters > 0 {
		parts = append(parts, fmt.Sprintf("%d dead letters", d.deadLetters))
	}
	out := []string{"no event lost: " + strings.TrimSpace(verdict(d.ok, "")) + "; " + drain +
		fmt.Sprintf(", reconcile and the counts %.1f s more", d.countsAfter.Seconds())}
	if len(parts) > 0 {
		out = append(out, "  "+strings.Join(parts, "; "))
	}
	out = append(out, "  ticketrush reconcile: "+d.reconcile)
	return out
}
