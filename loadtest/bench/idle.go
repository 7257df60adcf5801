package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// idleResult is what a service with many concerts and nobody buying costs (docs/performance.md, "Idle cost":
// the work grows with concerts that have fans, not with concerts).
type idleResult struct {
	concerts int
	created  time.Duration // creating them
	// first is the window right after the creations, settled the one from settle after them on: a
	// service may keep a concert it just created (or that just had fans) awake for a while.
	first, settled idleCost
	settle         time.Duration
	top            string // the commands Redis ran most in the settled window
}

// idleCost is one window's cost.
type idleCost struct {
	window         time.Duration
	commandsPerSec float64 // Redis INFO stats total_commands_processed, per second
	serviceCPU     float64 // share of one core, /proc/<pid>/stat utime+stime
	redisCPU       float64
}

// idleReading is the counters at one moment.
type idleReading struct {
	at                  time.Time
	commands            int64
	serviceTicks, redis uint64
	calls               map[string]int64 // INFO commandstats calls by command
}

// costBetween is the cost from a to b, hz clock ticks a second (less the INFO that took reading b).
func costBetween(a, b idleReading, hz int) idleCost {
	secs := b.at.Sub(a.at).Seconds()
	c := idleCost{window: b.at.Sub(a.at).Round(100 * time.Millisecond)}
	if secs <= 0 {
		return c
	}
	c.commandsPerSec = float64(b.commands-a.commands-1) / secs
	c.serviceCPU = cpuShare(a.serviceTicks, b.serviceTicks, hz, secs)
	c.redisCPU = cpuShare(a.redis, b.redis, hz, secs)
	return c
}

// idle starts a service of its own on a fresh Redis and database, creates n small concerts through
// the admin API (every idleSales-th with a sale opening tomorrow, when idleSales > 0), lets it settle,
// and measures over the window.
func (b *bench) idle(ctx context.Context, base string) (*idleResult, error) {
	n, window := b.cfg.idleConcerts, b.cfg.idleWindow
	r, err := startRedis(ctx, filepath.Join(b.cfg.logs, "redis-idle"), true)
	if err != nil {
		return nil, err
	}
	defer r.close()
	dsn, drop, err := benchDatabase(ctx, base, "idle")
	if err != nil {
		return nil, err
	}
	defer drop()
	svc, a, err := b.startService(ctx, "ticketrush-idle.log", r.url(), dsn)
	if err != nil {
		return nil, err
	}
	defer svc.stop()

	t0 := time.Now()
	if err := b.createIdleConcerts(ctx, a, n, t0.Add(24*time.Hour)); err != nil {
		return nil, fmt.Errorf("idle: create %d concerts: %w", n, err)
	}
	res := &idleResult{concerts: n, created: time.Since(t0), settle: max(b.cfg.idleSettle, window)}

	hz := clockTicks()
	// Readings at 0 and window after the creations, and at settle and settle + window.
	var at [4]idleReading
	for k, offset := range []time.Duration{0, window, res.settle, res.settle + window} {
		if k > 0 {
			if err := sleepCtx(ctx, time.Until(at[0].at.Add(offset))); err != nil {
				return nil, err
			}
		}
		if at[k], err = readIdle(ctx, r, svc.cmd.Process.Pid); err != nil {
			return nil, err
		}
	}
	res.first = costBetween(at[0], at[1], hz)
	res.settled = costBetween(at[2], at[3], hz)
	res.top = topCalls(at[2].calls, at[3].calls, at[3].at.Sub(at[2].at), 4)
	return res, nil
}

// createIdleConcerts creates n small concerts through a from 8 goroutines, every idleSales-th with a
// sale opening at opens, and returns the errors of those that failed.
func (b *bench) createIdleConcerts(ctx context.Context, a *api, n int, opens time.Time) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				var sale time.Time
				if b.cfg.idleSales > 0 && (i+1)%b.cfg.idleSales == 0 {
					sale = opens
				}
				if _, err := a.createConcertWithSale(ctx, "bench idle "+strconv.Itoa(i), 1,
					[]section{{Name: "R", Price: 1000, Seats: 100}}, queueSettings{}, sale); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readIdle reads the counters of the idle service (pid servicePID) and its Redis r: one INFO a reading
// (commandstats is in "everything"); the bench started the redis-server itself, so its pid is known.
func readIdle(ctx context.Context, r *privateRedis, servicePID int) (idleReading, error) {
	info, err := r.client.Do(ctx, r.client.B().Info().Section("everything").Build()).ToString()
	if err != nil {
		return idleReading{}, err
	}
	c, ok := infoField(info, "total_commands_processed")
	if !ok {
		return idleReading{}, errors.New("INFO has no total_commands_processed")
	}
	cmds, err := strconv.ParseInt(c, 10, 64)
	if err != nil {
		return idleReading{}, fmt.Errorf("INFO total_commands_processed: %w", err)
	}
	st, err := procTicks("/proc", servicePID)
	if err != nil {
		return idleReading{}, err
	}
	rt, err := procTicks("/proc", r.cmd.Process.Pid)
	if err != nil {
		return idleReading{}, err
	}
	return idleReading{at: time.Now(), commands: cmds, serviceTicks: st, redis: rt, calls: commandCalls(info)}, nil
}

// commandCalls reads the calls of each command out of INFO commandstats.
func commandCalls(info string) map[string]int64 {
	out := map[string]int64{}
	for name, v := range commandStats(info, "calls") {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[name] = n
		}
	}
	return out
}

// commandStats reads one field of every command out of INFO commandstats
// ("cmdstat_evalsha:calls=12,usec=...,usec_per_call=..."): command -> the field's value.
func commandStats(info, field string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, stats, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, field+"="); ok {
				out[name] = v
			}
		}
	}
	return out
}

// topCalls describes the n commands called most between two readings, per second.
func topCalls(before, after map[string]int64, d time.Duration, n int) string {
	type rate struct {
		name string
		per  float64
	}
	var rs []rate
	for name, c := range after {
		if delta := c - before[name]; delta > 0 && d > 0 {
			rs = append(rs, rate{name, float64(delta) / d.Seconds()})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].per > rs[j].per || rs[i].per == rs[j].per && rs[i].name < rs[j].name })
	var parts []string
	for _, r := range rs[:min(n, len(rs))] {
		parts = append(parts, fmt.Sprintf("%s %s/s", strings.ToUpper(r.name), thousands(r.per)))
	}
	return strings.Join(parts, ", ")
}

// cpuShare is the share of one core used between two readings of utime+stime, in clock ticks.
func cpuShare(before, after uint64, hz int, seconds float64) float64 {
	if seconds <= 0 || hz <= 0 || after < before {
		return 0
	}
	return float64(after-before) / float64(hz) / seconds
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// infoField returns the value of name in an INFO reply ("name:value" lines).
func infoField(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// procTicks reads utime+stime (clock ticks, every thread) of a process from <proc>/<pid>/stat (proc is
// /proc, or a test's copy).
func procTicks(proc string, pid int) (uint64, error) {
	data, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseStat(data)
}

// parseStat reads utime (field 14) and stime (field 15) of a /proc/<pid>/stat line. The command name,
// field 2, is in parentheses and may hold spaces and parentheses itself: the fields are counted from
// the last ')'.
func parseStat(data []byte) (uint64, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat: no ')' in %q", snippet(data))
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the name", len(f))
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat utime: %w", err)
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat stime: %w", err)
	}
	return utime + stime, nil
}

// clockTicks is the kernel's USER_HZ (getconf CLK_TCK), 100 on every Linux this runs on.
func clockTicks() int {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && v > 0 {
			return v
		}
	}
	return 100
}
