package writebehind

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// Tests that run the real binary: `ticketrush serve` with ROLES=writebehind as a process of its own,
// killed and restarted, or cut off from Postgres. Each has a private Redis, where the binary runs under
// the default key prefix tr (one test empties Redis, which the shared server must never see), and a
// fresh database.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds cmd/ticketrush once per test run.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ticketrush-writebehind-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "ticketrush")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/ticketrush")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/ticketrush: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// serviceEnv is the environment of the binary on a Redis and a database.
func serviceEnv(redisURL, dbURL string) []string {
	return append(os.Environ(),
		"HTTP_ADDR=127.0.0.1:0",
		"REDIS_URL="+redisURL,
		"DATABASE_URL="+dbURL,
		"JWT_SECRET=writebehind-test-jwt-secret-0123456789abcdef",
		"QUEUE_TOKEN_SECRET=writebehind-test-queue-secret-0123456789ab",
		"ADMIN_TOKEN=writebehind-test-admin-0123456789abcdefghij",
		"ROLES=writebehind",
	)
}

// proc is one `ticketrush serve` process.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	logs strings.Builder
	done chan struct{}
}

// startWorker starts `ticketrush serve` with ROLES=writebehind and waits until it listens.
func startWorker(t *testing.T, redisURL, dbURL string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(binary(t), "serve"), done: make(chan struct{})}
	p.cmd.Env = serviceEnv(redisURL, dbURL)
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = p.cmd.Stdout
	require.NoError(t, p.cmd.Start())
	listening := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.Addr
			}
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		if t.Failed() {
			t.Logf("worker %d log:\n%s", p.cmd.Process.Pid, p.log())
		}
	})
	select {
	case p.addr = <-listening:
	case <-p.done:
		t.Fatalf("the worker exited before listening:\n%s", p.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker did not listen within a minute:\n%s", p.log())
	}
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

// metric reads an unlabelled metric from the process's /metrics (-1 when it cannot).
func (p *proc) metric(name string) float64 {
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// written counts the events in Postgres.
func (s *sale) written() int {
	var n int
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM written_events`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// runReconcile runs `ticketrush reconcile` and returns its output and exit code.
func runReconcile(t *testing.T, redisURL, dbURL string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), "reconcile", "--wait", "30s")
	cmd.Env = serviceEnv(redisURL, dbURL)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

// A load of charges, holds and payments while the worker process is killed with SIGKILL five times
// and started again: after the drain every event is in Postgres exactly once and reconcile (the
// command, too) finds nothing; a difference makes it exit non-zero.
// It kills the worker, not Redis; on a cluster, the scale-out test kills write-behind's Redis master
// instead and checks the same agreement.
func TestWorkerKilledFiveTimes(t *testing.T) {
	t.Parallel()
	redisURL, dbURL := dbtest.PrivateRedis(t), dbtest.Postgres(t)
	s := newSale(t, redisURL, "tr", dbURL, 2*time.Second)
	load, stop := context.WithCancel(context.Background())
	defer stop()
	loaded := make(chan struct{})
	go func() { defer close(loaded); s.load(load, 8) }()

	ctx := context.Background()
	p := startWorker(t, redisURL, dbURL)
	claimed := false
	for kill := range 5 {
		before := s.written()
		eventually(t, 60*time.Second, fmt.Sprintf("worker %d writes", kill+1), func() bool { return s.written() > before })
		if kill%2 == 1 {
			p.kill() // whenever: most likely between two batches
		} else {
			// In the middle of a batch: the ledger is locked, so the worker waits inside its
			// transaction with the batch read and not acknowledged; then it dies.
			tx, err := s.db.Pool().Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "LOCK TABLE ledger IN ACCESS EXCLUSIVE MODE")
			require.NoError(t, err)
			eventually(t, 30*time.Second, "the worker waits on the ledger inside a batch", func() bool {
				var waiting int
				err := s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'ledger'::regclass`).Scan(&waiting)
				return err == nil && waiting > 0
			})
			pending, _, err := Backlog(ctx, s.rdb, "tr", "", []string{s.concert.ID})
			require.NoError(t, err)
			assert.Positive(t, pending)
			p.kill()
			require.NoError(t, tx.Rollback(ctx))
		}
		p = startWorker(t, redisURL, dbURL)
		if kill == 4 {
			// The last worker takes over what the killed ones left pending, once it has been idle for
			// the claim time.
			eventually(t, 60*time.Second, "a worker claims the entries a killed one left", func() bool {
				claimed = strings.Contains(p.log(), "claimed pending entries")
				return claimed
			})
		}
	}
	stop()
	<-loaded
	s.drain(90 * time.Second)
	assert.True(t, claimed)

	s.checkExactlyOnce(nil)
	s.checkClients()
	s.reconcile()
	out, code := runReconcile(t, redisURL, dbURL)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "agree")

	// One point too many in Redis: reconcile says so and fails.
	var user string
	for u := range s.users() {
		user = u
		break
	}
	require.NoError(t, s.rdb.Do(ctx, s.rdb.B().Hincrby().Key(s.store.Keys().Wallet(user).Balances()).Field(user).Increment(1).Build()).Error())
	out, code = runReconcile(t, redisURL, dbURL)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "balance of "+user)
}

// Postgres unreachable for 30 s during a load: the sale goes on, the backlog grows, and once Postgres
// is back it drains and nothing is lost.
func TestPostgresUnreachable(t *testing.T) {
	t.Parallel()
	redisURL, dbURL := dbtest.PrivateRedis(t), dbtest.Postgres(t)
	s := newSale(t, redisURL, "tr", dbURL, 2*time.Second)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := dbtest.NewProxy(t, u.Host)
	p := startWorker(t, redisURL, proxy.Through(t, dbURL))

	load, stop := context.WithCancel(context.Background())
	defer stop()
	loaded := make(chan struct{})
	go func() { defer close(loaded); s.load(load, 8) }()
	eventually(t, 60*time.Second, "the worker writes", func() bool { return s.written() > 0 })

	proxy.Cut()
	cutAt := time.Now()
	atCut := s.written()
	var backlogs []float64
	var lag float64
	// The outage lasts 30 s; meanwhile the sale goes on and nothing reaches Postgres.
	tick := time.NewTicker(500 * time.Millisecond)
	for time.Since(cutAt) < 30*time.Second {
		<-tick.C
		if b := p.metric("ticketrush_writebehind_backlog_events"); b >= 0 {
			backlogs = append(backlogs, b)
		}
		lag = max(lag, p.metric("ticketrush_writebehind_lag_seconds"))
	}
	tick.Stop()
	assert.LessOrEqual(t, s.written()-atCut, 4000, "nothing but a batch in flight reached postgres while it was cut off")
	require.NotEmpty(t, backlogs)
	assert.Greater(t, backlogs[len(backlogs)-1], backlogs[0], "the backlog grows")
	assert.Greater(t, backlogs[len(backlogs)-1], 1000.0, "the backlog grows")
	assert.Greater(t, lag, 20.0, "the lag grows")
	s.mu.Lock()
	assert.Empty(t, s.failures, "the sale goes on without postgres")
	s.mu.Unlock()

	proxy.Heal()
	eventually(t, 60*time.Second, "the backlog drains while the sale goes on", func() bool {
		b := p.metric("ticketrush_writebehind_backlog_events")
		return b >= 0 && b < 500
	})
	stop()
	<-loaded
	s.drain(60 * time.Second)
	eventually(t, 10*time.Second, "the lag metric is back to 0", func() bool {
		return p.metric("ticketrush_writebehind_lag_seconds") == 0
	})
	s.checkExactlyOnce(nil)
	s.checkClients()
	s.reconcile()
}

// readyz reads the process's /readyz: its status and body.
func (p *proc) readyz() (int, string) {
	resp, err := http.Get("http://" + p.addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// An emptied Redis, seen by a running service and by one that starts: /readyz answers 503 (naming
// redis_state) until `ticketrush restore` has run; then it is 200 and reconcile agrees.
// On a cluster: TestRestoreOnCluster (restore and reconcile after the sale's keys left every master)
// and cmd/ticketrush's scale-out test (readiness through a master's failover).
func TestReadyUntilRestored(t *testing.T) {
	t.Parallel()
	redisURL, dbURL := dbtest.PrivateRedis(t), dbtest.Postgres(t)
	s := newSale(t, redisURL, "tr", dbURL, time.Minute)
	p := startWorker(t, redisURL, dbURL)
	load, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	s.load(load, 4)
	s.drain(30 * time.Second)
	status, body := p.readyz()
	require.Equal(t, http.StatusOK, status, body)

	ctx := context.Background()
	require.NoError(t, s.rdb.Do(ctx, s.rdb.B().Flushall().Build()).Error())
	status, body = p.readyz()
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "redis_state")
	again := startWorker(t, redisURL, dbURL)
	status, body = again.readyz()
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "redis_state")
	assert.Contains(t, again.log(), "redis is not whole")

	cmd := exec.Command(binary(t), "restore")
	cmd.Env = serviceEnv(redisURL, dbURL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "restored 1 concerts")
	for _, w := range []*proc{p, again} {
		eventually(t, 10*time.Second, "ready again", func() bool { status, _ := w.readyz(); return status == http.StatusOK })
	}
	out2, code := runReconcile(t, redisURL, dbURL)
	assert.Equal(t, 0, code, out2)
	cmd = exec.Command(binary(t), "restore")
	cmd.Env = serviceEnv(redisURL, dbURL)
	out, err = cmd.CombinedOutput()
	assert.Error(t, err, "a second restore is refused")
	assert.Contains(t, string(out), "--force")
}
