package dbtest

import (
	"bufio"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RedisServer is a private redis-server that a fault test stops, kills and restarts: its own port and
// directory, with the append-only file on, so that a restart after SIGKILL reloads what it had.
//
// The fsync policy matters for SIGKILL: with appendfsync everysec (how services.sh and the compose file
// run Redis), Redis postpones writing its log for up to 2 s while the previous fsync is still running
// (a slow disk) and answers clients meanwhile, so a killed process can lose acknowledged writes; the
// fault suite measured it. With always, a write is in the log before its answer.
type RedisServer struct {
	URL   string // redis://127.0.0.1:port/0
	t     testing.TB
	bin   string
	dir   string
	port  int
	fsync string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedisServer starts a private redis-server with appendonly on and appendfsync fsync ("always",
// "everysec" or "no"), killed at the end of the test.
func StartRedisServer(t testing.TB, fsync string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed: %s", howToStart)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &RedisServer{URL: "redis://127.0.0.1:" + strconv.Itoa(port) + "/0", t: t, bin: bin, dir: t.TempDir(), port: port, fsync: fsync}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.cmd != nil {
			_ = r.cmd.Process.Signal(syscall.SIGCONT)
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		}
	})
	r.Restart()
	return r
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Restart starts the server (again, after Kill) on the same port and directory, and returns once it
// answers PING: the append-only file is loaded.
func (r *RedisServer) Restart() {
	r.t.Helper()
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", r.fsync, "--maxmemory-policy", "noeviction",
		"--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for !r.pong() {
		if time.Now().After(deadline) {
			r.t.Fatalf("private redis-server on port %d did not answer PING within 30 s", r.port)
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen and load: nothing to synchronise on
	}
}

// pong reports whether the server answers PING with PONG (not LOADING, not a refused connection).
func (r *RedisServer) pong() bool {
	conn, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// Kill sends SIGKILL and waits for the process to end: nothing gets a chance to flush.
func (r *RedisServer) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies on SIGKILL too; keep it simple
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// Pause stops the process (SIGSTOP): connections stay open and nothing answers, as with a hung server.
func (r *RedisServer) Pause() { r.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (r *RedisServer) Resume() { r.signal(syscall.SIGCONT) }

func (r *RedisServer) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		_ = r.cmd.Process.Signal(sig)
	}
}
