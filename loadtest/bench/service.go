package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// startService starts bin/ticketrush serve on redisURL and dsn, its log in logName, and waits until
// it is ready.
func (b *bench) startService(ctx context.Context, logName, redisURL, dsn string) (*proc, *api, error) {
	env := b.env
	svcEnv := append(withoutVars(os.Environ(), "HTTP_ADDR", "REDIS_URL", "DATABASE_URL", "ROLES"),
		"HTTP_ADDR=127.0.0.1:0", "REDIS_URL="+redisURL, "DATABASE_URL="+dsn,
		"JWT_SECRET="+env("JWT_SECRET", devJWTSecret), "QUEUE_TOKEN_SECRET="+env("QUEUE_TOKEN_SECRET", devQueueSecret),
		"ADMIN_TOKEN="+env("ADMIN_TOKEN", devAdminToken),
		// The bench measures the service's own speed: each generator client is one fan sending as fast as
		// it can, which the per-user rate limit (an abuse defence, measured by BenchmarkLimited) would refuse.
		"USER_RATE_LIMIT=0")
	logPath := filepath.Join(b.cfg.logs, logName)
	svc, addr, err := start(ctx, "ticketrush", logPath, svcEnv, listeningAddr, b.cfg.bin, "serve")
	if err != nil {
		return nil, nil, err
	}
	a := &api{base: "http://" + addr, admin: env("ADMIN_TOKEN", devAdminToken),
		secret: []byte(env("JWT_SECRET", devJWTSecret)), client: newClient(b.cfg.workers)}
	if err := waitReady(ctx, a, logPath); err != nil {
		svc.stop()
		return nil, nil, err
	}
	return svc, a, nil
}

// commitOf is the commit the binary under test was built from (its `version`), else this tree's.
func commitOf(ctx context.Context, bin string) string {
	if out, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		if c := versionCommit(string(out)); c != "" {
			return c
		}
	}
	return treeCommit(ctx) + " (this tree)"
}

// treeCommit is this tree's short commit, with "(with uncommitted changes)" when a tracked file
// differs from it, as `ticketrush version` says; "unknown" outside git.
func treeCommit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if diff, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(diff) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

// versionCommit reads the short commit out of `ticketrush version`'s "commit <sha> [(with uncommitted
// changes)] [time]" line.
func versionCommit(out string) string {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "commit ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || f[0] == "unknown" {
			return ""
		}
		c := f[0]
		if len(c) > 7 {
			c = c[:7]
		}
		if strings.Contains(rest, "uncommitted") {
			c += " (with uncommitted changes)"
		}
		return c
	}
	return ""
}

func envOr(getenv func(string) string) func(name, def string) string {
	return func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
}

func withoutVars(env []string, names ...string) []string {
	out := env[:0:0]
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}

func waitReady(ctx context.Context, a *api, logPath string) error {
	for range 100 {
		if code, err := a.call(ctx, http.MethodGet, "/readyz", "", nil, nil); err == nil && code == 200 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("ticketrush did not become ready; see " + logPath)
}

// probe checks that the binary under test serves the purchase path (docs/api.md: Holds, Points,
// Payments). A binary built from this repository does; a binary given by -ticketrush that does not gets
// n/a in the purchase rows instead of a failed run.
func (b *bench) probe(ctx context.Context) error {
	var missing []string
	for _, r := range [][2]string{{"POST", "/v1/reservations"}, {"POST", "/v1/points/charges"}, {"POST", "/v1/payments"}} {
		ok, code, err := b.api.routeServed(ctx, r[0], r[1])
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, fmt.Sprintf("%s %s (%d)", r[0], r[1], code))
		}
	}
	b.purchase = len(missing) == 0
	if !b.purchase {
		why := "not served yet: " + strings.Join(missing, ", ")
		for _, row := range []string{rowCharges, rowSpread, rowContended, rowPayments, rowSeatMap, rowSeatMapGz, rowSeatMap304} {
			b.na[row] = why
		}
	}
	return nil
}
