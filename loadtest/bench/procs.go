package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	svcconfig "github.com/ticketrush/ticketrush/internal/config"
)

// proc is a child process the bench started and stops.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs name with args and env, writes its output to logPath, and waits until ready returns a
// non-empty string for one of its stdout lines (the address it listens on, say). A nil ready does not
// wait.
func start(ctx context.Context, name, logPath string, env []string, ready func(line string) string, bin string, args ...string) (*proc, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, "", fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(p.done)
		defer logf.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		sent := ready == nil
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if !sent {
				if v := ready(line); v != "" {
					found <- v
					sent = true
				}
			}
		}
		_, _ = io.Copy(logf, out)
		_ = cmd.Wait()
	}()
	if ready == nil {
		return p, "", nil
	}
	select {
	case v := <-found:
		return p, v, nil
	case <-p.done:
		return nil, "", fmt.Errorf("%s exited before it was ready; see %s", name, logPath)
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, "", fmt.Errorf("%s was not ready within 60 s; see %s", name, logPath)
	case <-ctx.Done():
		p.stop()
		return nil, "", ctx.Err()
	}
}

// stop sends SIGTERM to the process (and its group), then SIGKILL after 15 s.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// freePort returns a loopback TCP port nobody listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// privateRedis is a redis-server the bench starts for itself.
type privateRedis struct {
	*proc
	port   int
	client rueidis.Client
	data   string
}

// startRedis starts an empty redis-server on a free loopback port, its log in dir and its data in
// dir/data (removed before and after). persist turns on the append-only file with fsync every second,
// as the service runs it (scripts/services.sh); without it nothing is written to disk.
func startRedis(ctx context.Context, dir string, persist bool) (*privateRedis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.RemoveAll(data); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", data, "--save", "",
		"--maxmemory-policy", "noeviction", "--daemonize", "no", "--logfile", ""}
	args = append(args, svcconfig.RedisServerArgs...)
	if persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec")
	} else {
		args = append(args, "--appendonly", "no")
	}
	p, _, err := start(ctx, "redis-server", filepath.Join(dir, "redis.log"), os.Environ(), nil, "redis-server", args...)
	if err != nil {
		return nil, err
	}
	var c rueidis.Client
	for range 100 {
		c, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(port)}, DisableCache: true})
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("redis-server on port %d did not answer: %w", port, err)
	}
	return &privateRedis{proc: p, port: port, client: c, data: data}, nil
}

func (r *privateRedis) close() {
	if r == nil {
		return
	}
	r.client.Close()
	r.stop()
	_ = os.RemoveAll(r.data)
}

func (r *privateRedis) url() string { return "redis://127.0.0.1:" + strconv.Itoa(r.port) + "/0" }

// usedMemory reads INFO memory used_memory.
func (r *privateRedis) usedMemory(ctx context.Context) (int64, error) {
	info, err := r.client.Do(ctx, r.client.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		return 0, err
	}
	v, ok := infoField(info, "used_memory")
	if !ok {
		return 0, errors.New("INFO memory has no used_memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

// listeningAddr picks the bound address out of the service's JSON log line "listening".
func listeningAddr(line string) string {
	var l struct {
		Msg  string `json:"msg"`
		Addr string `json:"addr"`
	}
	if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "listening" {
		return ""
	}
	return l.Addr
}

// helloAddr picks the address out of the hello server's first line.
func helloAddr(line string) string {
	addr, _ := strings.CutPrefix(line, "listening ")
	if addr == line {
		return ""
	}
	return addr
}

// benchDatabase creates a database of its own next to the one DATABASE_URL names, so that the bench's
// concerts never reach the shared catalog; drop removes it. suffix tells the bench's databases apart.
func benchDatabase(ctx context.Context, base, suffix string) (dsn string, drop func(), err error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	name := fmt.Sprintf("ticketrush_bench_%d", os.Getpid())
	if suffix != "" {
		name += "_" + suffix
	}
	admin := *u
	admin.Path = "/postgres"
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return "", nil, fmt.Errorf("connect postgres (make services starts it): %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	own := *u
	own.Path = "/" + name
	drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin.String())
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", name, err)
		}
	}
	return own.String(), drop, nil
}
