package contract

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// binary is the ticketrush binary TestMain built for this run.
var binary string

// TestMain builds cmd/ticketrush once, from the module this package is in, into a temporary directory:
// the suite runs what `go build` makes of the tree, the way it is shipped.
func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "contract suite:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "ticketrush-contract-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "contract suite:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "ticketrush")
	build := exec.Command("go", "build", "-o", binary, "./cmd/ticketrush")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "contract suite: go build ./cmd/ticketrush: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above the package directory")
		}
		dir = filepath.Dir(dir)
	}
}

// server is one `ticketrush serve` process under test.
type server struct {
	url        string
	client     *http.Client // plain calls: a hung call fails its test instead of the whole run
	stream     *http.Client // event streams: no client timeout, each stream has its own deadline
	jwtSecret  []byte
	adminToken string
	out        *syncBuffer // the process's stdout and stderr
}

// startServer starts `ticketrush serve` with only the environment production requires: its address, its
// Redis (dbtest.RedisURL: the cluster in make test's second pass) under a key prefix of its own, a fresh
// Postgres database and three strong secrets. Nothing else is set, so the request deadline, the rate
// limits, the roles and every other setting are production's defaults. The process is stopped with
// SIGTERM at the end of the test, must exit 0, and its Redis keys are deleted.
func startServer(t *testing.T) *server {
	t.Helper()
	redisURL := dbtest.RedisURL()
	prefix := dbtest.Name("ct")
	databaseURL := dbtest.Postgres(t)
	rc := dbtest.Client(t, redisURL)
	t.Cleanup(func() { dbtest.DeletePrefix(rc, prefix) })

	s := &server{
		jwtSecret:  []byte(secret()),
		adminToken: secret(),
		out:        &syncBuffer{},
		client:     &http.Client{Timeout: 30 * time.Second},
		stream:     &http.Client{},
	}
	var (
		cmd    *exec.Cmd
		exited chan error
	)
	// A free port is found by binding it and letting go; another process may take it in between, so a
	// start that fails to listen is tried again on another port.
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		s.out.Reset()
		cmd = exec.Command(binary, "serve")
		cmd.Env = []string{
			"HTTP_ADDR=" + addr,
			"REDIS_URL=" + redisURL,
			"REDIS_KEY_PREFIX=" + prefix,
			"DATABASE_URL=" + databaseURL,
			"JWT_SECRET=" + string(s.jwtSecret),
			"QUEUE_TOKEN_SECRET=" + secret(),
			"ADMIN_TOKEN=" + s.adminToken,
		}
		cmd.Stdout, cmd.Stderr = s.out, s.out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s serve: %v", binary, err)
		}
		exited = make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		s.url = "http://" + addr
		if s.waitReady(t, exited) {
			break
		}
		if attempt == 2 || !strings.Contains(s.out.String(), "address already in use") {
			t.Fatalf("ticketrush serve did not become ready (GET /readyz 200) within a minute; its output:\n%s", s.out.String())
		}
	}
	t.Cleanup(func() {
		s.client.CloseIdleConnections()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM ticketrush serve: %v", err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("ticketrush serve exited with %v after SIGTERM, want exit status 0", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("ticketrush serve did not exit within 30 s of SIGTERM (killed)")
		}
		if t.Failed() {
			t.Logf("ticketrush serve output (last 64 KiB):\n%s", s.out.Tail(64<<10))
		}
	})
	return s
}

// waitReady polls GET /readyz until it answers 200 (true) or the process exits or a minute passes (false).
func (s *server) waitReady(t *testing.T, exited chan error) bool {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			return false
		default:
		}
		res, err := s.client.Get(s.url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// secret is 32 random bytes as 64 hex characters.
func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer for a process's output, written by its copier goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// Tail is the last n bytes written.
func (b *syncBuffer) Tail(n int) string {
	s := b.String()
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}
