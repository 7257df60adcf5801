package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rowLine returns the table line of row in out.
func rowLine(t *testing.T, out, row string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, row+" ") {
			return line
		}
	}
	t.Fatalf("no line for %q in\n%s", row, out)
	return ""
}

func TestTableDividesEachRowByItsCeiling(t *testing.T) {
	b := &bench{cfg: config{reps: 3, duration: 5 * time.Second, workers: 64}, commit: "abc1234",
		results: map[string][]measure{}, na: map[string]string{}, notes: map[string]string{}}
	set := func(row string, rates ...float64) {
		for _, r := range rates {
			b.results[row] = append(b.results[row], measure{rate: r, p50: time.Millisecond, p99: 10 * time.Millisecond})
		}
	}
	set(rowHello, 20_000, 10_000, 30_000) // median 20,000
	set(rowPolls, 16_000)                 // 80%: ok
	set(rowJoins, 9_000)                  // under 10,000/s
	set(rowSpread, 8_000)                 // 40%: ok
	set(rowContended, 13_000)             // 65%: missed
	b.results[rowContended][0].note = "1.6 rounds, 2000 won, 93.8% refused"
	b.notes[rowContended] = "rounds of 20,000 attempts"
	set(rowSeatMapBare, 2_000)
	set(rowSeatMap, 1_500) // 75% of the same bytes (7.5% of hello): ok
	b.na[rowSeatMapGz] = "the service does not gzip the seat map yet"
	var buf bytes.Buffer
	b.print(&buf, report{took: 3 * time.Minute, idle: &idleResult{concerts: 500, settle: 15 * time.Second,
		first:   idleCost{window: 10 * time.Second, commandsPerSec: 60_000, serviceCPU: 0.5, redisCPU: 0.4},
		settled: idleCost{window: 10 * time.Second, commandsPerSec: 12.4, serviceCPU: 0.004, redisCPU: 0.02}}})
	out := buf.String()

	assert.Contains(t, out, "at commit abc1234")
	tests := []struct {
		row       string
		want      []string
		wantNotIn []string
	}{
		{rowHello, []string{"20,000"}, []string{"%"}},
		{rowPolls, []string{"16,000", " 80% ", "≥ 78% of hello ok"}, nil},
		{rowJoins, []string{"≥ 10,000/s MISSED"}, nil},
		{rowSpread, []string{" 40% ", "≥ 40% of hello ok"}, nil},
		{rowContended, []string{" 65% ", "≥ 70% of hello MISSED"}, nil},
		{rowSeatMapBare, []string{"2,000"}, []string{"%"}},
		{rowSeatMap, []string{" 75% ", "≥ 70% of same bytes ok"}, nil},
		{rowSeatMapGz, []string{"n/a"}, []string{"ok", "MISSED"}},
		{rowPayments, []string{"n/a"}, nil},
	}
	for _, tt := range tests {
		line := rowLine(t, out, tt.row)
		for _, w := range tt.want {
			assert.Contains(t, line, w, tt.row)
		}
		for _, w := range tt.wantNotIn {
			assert.NotContains(t, line, w, tt.row)
		}
	}
	assert.Contains(t, out, "seat map gzip: n/a, the service does not gzip the seat map yet")
	assert.Contains(t, out, "\n  holds contended, ~95% refused: rounds of 20,000 attempts: 1.6 rounds, 2000 won, 93.8% refused\n")
	assert.Contains(t, out, "service 0.4%  < 1% ok, Redis 2.0%  < 1% MISSED")
	assert.Contains(t, out, "from 15s after the creations, over 10s: Redis 12 commands/s")
	assert.Contains(t, out, "(the first 10s after the creations: Redis 60,000 commands/s, service 50.0%, Redis 40.0% of a core)")
}

func TestGoalTextWithoutCeiling(t *testing.T) {
	assert.Equal(t, "≥ 70% of same bytes (no ceiling measured)", goalText(rowSeatMap, measure{rate: 100}, nil))
	assert.Equal(t, "", goalText(rowCharges, measure{rate: 100}, &measure{rate: 50}))
	assert.Equal(t, "≥ 3,000/s ok", goalText(rowPayments, measure{rate: 3000}, nil))
}

func TestDurabilityLines(t *testing.T) {
	d := &durability{drained: true, ok: false, caughtUp: 1500 * time.Millisecond, countsAfter: time.Second,
		counts:    []countCheck{{what: "holds (reservations)", acked: 10, postgres: 10}, {what: "payments", acked: 5, postgres: 4}},
		reconcile: "redis and postgres agree (0.3 s)"}
	out := strings.Join(d.lines(), "\n")
	assert.Contains(t, out, "no event lost: MISSED; backlog empty 1.5 s after the runs")
	assert.Contains(t, out, "holds (reservations) 10 acknowledged, 10 in Postgres;")
	assert.Contains(t, out, "payments 5 acknowledged, 4 in Postgres MISMATCH")
	d.ok, d.counts[1].postgres = true, 5
	assert.Contains(t, strings.Join(d.lines(), "\n"), "no event lost: ok;")
	assert.NotContains(t, strings.Join(d.lines(), "\n"), "MISMATCH")
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP ticketrush_writebehind_lag_seconds Age of the oldest event.
# TYPE ticketrush_writebehind_lag_seconds gauge
ticketrush_writebehind_lag_seconds 0.25
ticketrush_writebehind_warnings_total{kind="backlog"} 7
ticketrush_writebehind_warnings_total{kind="redis"} 3
go_goroutines 42
ticketrush_writebehind_backlog_events 1.2e+03
`
	m := parseMetrics(text)
	assert.Equal(t, map[string]float64{"ticketrush_writebehind_lag_seconds": 0.25,
		"ticketrush_writebehind_warnings_total": 7, "ticketrush_writebehind_backlog_events": 1200}, m)

	l := &lagSampler{max: map[string]float64{}}
	l.add(m)
	l.add(map[string]float64{metricLag: 1.5, metricBacklog: 10})
	assert.Equal(t, []string{
		"ticketrush_writebehind_backlog_events: highest 1200 over 2 samples, one a second",
		"ticketrush_writebehind_lag_seconds: highest 1.5 over 2 samples, one a second  < 1 s MISSED",
	}, l.lines())
}

func TestParseStat(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 1234 and 56; the name has a space and parentheses in it.
	line := "4242 (ticket (rush) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 56 0 0 20 0 12 0 5000 1000000 2000\n"
	got, err := parseStat([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, uint64(1290), got)

	for _, bad := range []string{"", "4242 no name S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 12a 56 0"} {
		_, err := parseStat([]byte(bad))
		assert.Error(t, err, bad)
	}
	assert.InDelta(t, 0.05, cpuShare(100, 150, 100, 10), 1e-9) // 50 ticks of 10 ms over 10 s
	assert.Zero(t, cpuShare(150, 100, 100, 10))

	t0 := time.Unix(1000, 0)
	c := costBetween(idleReading{at: t0, commands: 1000, serviceTicks: 10, redis: 20},
		idleReading{at: t0.Add(10 * time.Second), commands: 1101, serviceTicks: 15, redis: 120}, 100)
	assert.Equal(t, idleCost{window: 10 * time.Second, commandsPerSec: 10, serviceCPU: 0.005, redisCPU: 0.1}, c)
}

func TestCommandCalls(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_evalsha:calls=120,usec=3000,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_xreadgroup:calls=40,usec=100,usec_per_call=2.50\r\ncmdstat_info:calls=3,usec=30,usec_per_call=10.00\r\n"
	before := commandCalls(info)
	assert.Equal(t, map[string]int64{"evalsha": 120, "xreadgroup": 40, "info": 3}, before)
	after := map[string]int64{"evalsha": 220, "xreadgroup": 60, "info": 5, "hget": 30}
	assert.Equal(t, "EVALSHA 50/s, HGET 15/s", topCalls(before, after, 2*time.Second, 2))
	assert.Equal(t, "EVALSHA 50/s, HGET 15/s, XREADGROUP 10/s, INFO 1/s", topCalls(before, after, 2*time.Second, 9))
}

func TestInfoField(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nprocess_id:777\r\n# Stats\r\ntotal_commands_processed:123456\r\n"
	v, ok := infoField(info, "process_id")
	assert.True(t, ok)
	assert.Equal(t, "777", v)
	v, ok = infoField(info, "total_commands_processed")
	assert.True(t, ok)
	assert.Equal(t, "123456", v)
	_, ok = infoField(info, "process")
	assert.False(t, ok)
}

func TestVersionCommit(t *testing.T) {
	tests := []struct{ give, want string }{
		{"ticketrush (devel)\ncommit 3f9fbb8d1e2a4b5c6d7e8f901234567890abcdef\ngo1.26.8\n", "3f9fbb8"},
		{"ticketrush (devel)\ncommit 3f9fbb8d1e2a (with uncommitted changes) 2026-11-23T06:00:00Z\ngo1.26.8\n", "3f9fbb8 (with uncommitted changes)"},
		{"ticketrush (devel)\ncommit unknown\ngo1.26.8\n", ""},
		{"something else\n", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, versionCommit(tt.give), tt.give)
	}
}

func TestRoundsFor(t *testing.T) {
	tests := []struct {
		rate    float64
		seconds float64
		want    int
	}{
		{20_000, 5, 8},   // 100,000 attempts, x1.25 = 6.25 rounds of 20,000, +1
		{1_000, 1, 2},    // at least two
		{1e9, 5, 100},    // at most the schedules of a concert
		{16_000, 10, 11}, // 160,000 x 1.25 = 10 rounds, +1
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, roundsFor(tt.rate, tt.seconds, 20_000, 100), "%v/s for %vs", tt.rate, tt.seconds)
	}
}

// TestContentionNeverHitsTheHoldLimit plays a contended run against a stand-in for the hold script
// (a seat is won once; a fan holding per seats is refused HOLD_LIMIT_REACHED) with the workers taking
// turns at random: no fan may reach the limit, the pool may not run out, every attempt lands in its
// round, and each round keeps the on-sale's shape.
func TestContentionNeverHitsTheHoldLimit(t *testing.T) {
	const attempts, seats, per, workers, rounds = 2000, 100, 4, 16, 5
	schedules := []string{"s0", "s1", "s2", "s3", "s4"}
	fans := make([]fan, poolSize(rounds, seats, per, workers))
	for i := range fans {
		fans[i] = fan{user: "f" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}
	}
	c := newContention(attempts, seats, per, workers, schedules, fans)
	taken := map[string]bool{}
	holds := map[*fan]int{}
	rng := []int{}
	for i := range c.total() {
		rng = append(rng, (i*7919)%workers) // workers in a scrambled order
	}
	for i := range c.total() {
		w := rng[i]
		f, schedule, seat, err := c.pick(w, i)
		require.NoError(t, err, "attempt %d", i)
		require.Equal(t, schedules[i/attempts], schedule, "attempt %d", i)
		require.True(t, seat >= 1 && seat <= seats)
		key := schedule + "/" + string(rune(seat))
		switch {
		case taken[key]:
			require.True(t, c.record(w, http.StatusConflict, "SEAT_UNAVAILABLE"))
		case holds[f] >= per:
			require.True(t, c.record(w, http.StatusConflict, "HOLD_LIMIT_REACHED"))
		default:
			taken[key] = true
			holds[f]++
			require.True(t, c.record(w, http.StatusCreated, ""))
		}
	}
	assert.Zero(t, c.limited.Load(), "fans sent on after their limit")
	assert.Equal(t, int64(c.total()), c.won.Load()+c.refused.Load())
	refused := float64(c.refused.Load()) / float64(c.total())
	assert.Greater(t, refused, 0.94)
	assert.Less(t, refused, 0.96)
	_, _, _, err := c.pick(0, c.total())
	assert.Error(t, err, "an attempt past the last round")
	assert.False(t, c.record(0, http.StatusConflict, "RATE_LIMITED"))
	assert.False(t, c.record(0, http.StatusServiceUnavailable, ""))
	assert.Contains(t, c.note(int64(c.total())), "ran out of prepared rounds")
	assert.Contains(t, c.note(int64(c.total()/2)), "2.5 rounds, 500 won")
}

func TestBlobServerSendsTheSameBytesAndHeaders(t *testing.T) {
	mux := http.NewServeMux()
	s := &blobServer{blobs: map[string]blob{}}
	mux.HandleFunc("PUT /blob/{name}", s.put)
	mux.HandleFunc("GET /blob/{name}", s.get)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	body := bytes.Repeat([]byte{0x1f, 0x8b, 'x'}, 50_000)
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/blob/gzip", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Blob-Encoding", "gzip")
	req.Header.Set("X-Blob-ETag", `"v1"`)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	client := newClient(1)
	get := func(ifNoneMatch string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/blob/gzip", nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", "gzip")
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	resp, got := get("")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, bytes.Equal(body, got), "the bytes put, %d, and got, %d", len(body), len(got))
	assert.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, `"v1"`, resp.Header.Get("ETag"))
	assert.Equal(t, int64(len(body)), resp.ContentLength)
	resp, got = get(`"v1"`)
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)
	assert.Zero(t, len(got), "a 304 has no body")
	resp, _ = get(`"v0"`)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// fakeProc writes a /proc of stat files: pid -> "name utime stime", and the machine's first line.
func fakeProc(t *testing.T, procs map[int]string, machine string) string {
	t.Helper()
	dir := t.TempDir()
	for pid, p := range procs {
		f := strings.Fields(p)
		line := fmt.Sprintf("%d (%s) S 1 1 1 0 -1 0 0 0 0 0 %s %s 0 0 20 0 1 0 1 1 1\n", pid, f[0], f[1], f[2])
		require.NoError(t, os.MkdirAll(filepath.Join(dir, strconv.Itoa(pid)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, strconv.Itoa(pid), "stat"), []byte(line), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(machine+"\ncpu0 1 2 3 4 5 6 7 8 0 0\n"), 0o644))
	return dir
}

func TestCPUPerRequestByProcess(t *testing.T) {
	// The generator (pid 10), the service (20), hello-world (21), Redis (30), two Postgres processes
	// (40, 41) and a process of someone else (50), whose ticks only the machine's busy time counts.
	before := fakeProc(t, map[int]string{10: "bench 100 0", 20: "ticketrush 200 0", 21: "bench 5 0", 30: "redis-server 300 0",
		40: "postgres 10 0", 41: "postgres 20 0", 50: "other 7 0"}, "cpu  1000 0 500 9000 100 10 20 30 0 0")
	after := fakeProc(t, map[int]string{10: "bench 150 10", 20: "ticketrush 300 20", 21: "bench 5 0", 30: "redis-server 330 10",
		40: "postgres 30 0", 41: "postgres 25 5", 50: "other 27 0"}, "cpu  1200 0 555 9500 400 15 30 500 0 0")
	m := cpuMeter{proc: before, hz: 100, self: 10, redis: 30}
	r0, err := m.read(20)
	require.NoError(t, err)
	assert.Equal(t, cpuReading{generator: 100, server: 200, redis: 300, postgres: 30, busy: 1530}, r0)
	m.proc = after
	r1, err := m.read(20)
	require.NoError(t, err)
	assert.Equal(t, cpuReading{generator: 160, server: 320, redis: 340, postgres: 60, busy: 1800}, r1)

	// 270 busy ticks of 10 ms over 1,000 requests: 60 generator, 120 service, 40 Redis, 30 Postgres
	// and 20 beyond them (the other process; not the steal of 470 ticks, nor idle or iowait).
	c, err := m.split(r0, r1, 1000)
	require.NoError(t, err)
	assert.InDeltaMapValues(t, map[string]float64{"generator": 600, "server": 1200, "redis": 400, "postgres": 300, "other": 200},
		map[string]float64{"generator": c.generator, "server": c.server, "redis": c.redis, "postgres": c.postgres, "other": c.other}, 1e-9)
	assert.InDelta(t, 2700, c.total(), 1e-9)

	// hello-world's rows read its process as the server, the others the service's.
	b := &bench{cpu: &m, servicePID: 20, helloPID: 21}
	for row, want := range map[string]uint64{rowHello: 5, rowSeatMapBare: 5, rowSeatMapGzBare: 5, rowJoins: 320, rowSeatMap: 320} {
		r, err := b.cpuReading(row)
		require.NoError(t, err)
		assert.Equal(t, want, r.server, row)
	}
	_, err = (&bench{}).cpuReading(rowJoins)
	assert.Error(t, err, "no meter")

	_, err = m.split(r0, r1, 0)
	assert.Error(t, err, "no requests")
	_, err = m.read(99) // no such process
	assert.Error(t, err)
	_, err = parseBusy([]byte("intr 1 2 3\n"))
	assert.Error(t, err)
	assert.Equal(t, "ticket (rush) x", statName([]byte("4242 (ticket (rush) x) S 1")))
}

func TestCPUTableBoundsEachRowByHello(t *testing.T) {
	b := &bench{cfg: config{reps: 3, duration: 5 * time.Second, workers: 64}, results: map[string][]measure{}}
	cpu := func(gen, srv, redis, pg, other float64) measure {
		return measure{rate: 1, hasCPU: true, cpu: cpuSplit{generator: gen, server: srv, redis: redis, postgres: pg, other: other}}
	}
	b.results[rowHello] = []measure{cpu(70, 50, 0, 0, 0), cpu(60, 40, 0, 0, 0), cpu(80, 60, 0, 0, 100)} // medians: 70 50 0 0 0
	b.results[rowJoins] = []measure{cpu(100, 150, 100, 20, 30), {rate: 1}}                              // a run without /proc
	b.results[rowPolls] = []measure{{rate: 1}}
	var buf bytes.Buffer
	b.printCPU(&buf, rows)
	out := buf.String()
	assert.Regexp(t, `hello-world \(net/http\) +70\.0 +50\.0 +0\.0 +0\.0 +0\.0 +120\.0 *\n`, out)
	assert.Regexp(t, `joins .* +100\.0 +150\.0 +100\.0 +20\.0 +30\.0 +400\.0 +30% *\n`, out) // 120 ÷ 400
	assert.NotContains(t, out, "polls", "a row no run read /proc for has no line")

	b.results = map[string][]measure{rowHello: {{rate: 1}}}
	buf.Reset()
	b.printCPU(&buf, rows)
	assert.Contains(t, buf.String(), "CPU per request: n/a")
}
