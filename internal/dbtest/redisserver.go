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

	"github.com/ticketrush/ticketrush/internal/config"
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

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// StartRedisServer starts a private redis-server with appendonly on and appendfsync fsync ("always",
// "everysec" or "no"), killed at the end of the test. Its port is a free one; when another process takes
// that port before redis-server binds it (tests run in parallel), it starts again on another.
func StartRedisServer(t testing.TB, fsync string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed: %s", howToStart)
	}
	r := &RedisServer{t: t, bin: bin, dir: t.TempDir(), fsync: fsync}
	t.Cleanup(r.Kill)
	for attempt := 0; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r.port = l.Addr().(*net.TCPAddr).Port
		r.URL = "redis://127.0.0.1:" + strconv.Itoa(r.port) + "/0"
		l.Close()
		if r.start() {
			return r
		}
		if attempt == 4 {
			t.Fatalf("private redis-server did not start on 5 free ports; see %s", filepath.Join(r.dir, "redis.log"))
		}
	}
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Restart starts the server again on its port and directory (after Kill), and waits until it answers.
func (r *RedisServer) Restart() {
	r.t.Helper()
	if !r.start() {
		r.t.Fatalf("private redis-server on port %d did not start again; see %s", r.port, filepath.Join(r.dir, "redis.log"))
	}
}

// start runs redis-server on r.port and waits until it answers PING as this process (INFO's
// process_id), or exits (the port was taken), or 30 s pass.
func (r *RedisServer) start() bool {
	r.t.Helper()
	args := append([]string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", r.fsync, "--maxmemory-policy", "noeviction",
		"--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log")}, config.RedisServerArgs...)
	cmd := exec.Command(r.bin, args...)
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for !r.answersAs(cmd.Process.Pid) {
		select {
		case <-exited:
			return false
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("private redis-server on port %d did not answer within 30 s", r.port)
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen and load: nothing to synchronise on
	}
	return true
}

// answersAs reports whether the server on r.port answers, and is the process pid.
func (r *RedisServer) answersAs(pid int) bool {
	conn, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return false
	}
	rd := bufio.NewReader(conn)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return false
		}
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strings.TrimSpace(v) == strconv.Itoa(pid)
		}
	}
}

// Kill kills the process (SIGKILL) and waits for it to exit.
func (r *RedisServer) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies on SIGKILL too; keep it simple
	_ = r.cmd.Process.Kill()
	<-r.exited
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
