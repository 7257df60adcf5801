package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptTree is a copy of the repository's scripts/ in a directory of its own, so that the scripts'
// .data/ is the test's.
func scriptTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "scripts"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	for _, f := range []string{"run.sh", "stop.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "scripts", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, "scripts", f), b, 0o755))
	}
	return root
}

// startSleeper starts a long-running process named name (a copy of sleep, so /proc/<pid>/comm is name) and
// returns it with a channel that is closed when it has exited.
func startSleeper(t *testing.T, root, name string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	b, err := os.ReadFile(sleep)
	require.NoError(t, err)
	bin := filepath.Join(root, "bin", name)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	cmd := exec.Command(bin, "300")
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return cmd, exited
}

func pidfile(t *testing.T, root, path string, pid int) string {
	t.Helper()
	f := filepath.Join(root, ".data", path)
	require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
	require.NoError(t, os.WriteFile(f, []byte(strconv.Itoa(pid)+"\n"), 0o644))
	return f
}

func exited(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestMakeStop: scripts/stop.sh stops exactly the processes recorded under .data/ that are still what
// the set-up started (the service, redis-server, postgres; cluster nodes included), waits for them,
// leaves a pid that now names another program alone, and clears stale pidfiles.
func TestMakeStop(t *testing.T) {
	root := scriptTree(t)
	service, serviceGone := startSleeper(t, root, "ticketrush")
	node, nodeGone := startSleeper(t, root, "redis-server")
	other, otherGone := startSleeper(t, root, "sleep")
	_, unrecordedGone := startSleeper(t, root, "postgres")
	pidfile(t, root, "run/ticketrush.pid", service.Process.Pid)
	pidfile(t, root, "cluster/7001/redis.pid", node.Process.Pid)
	reused := pidfile(t, root, "redis/redis.pid", other.Process.Pid) // the pid now names another program
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	stale := pidfile(t, root, "postgres/postmaster.pid", dead.Process.Pid)

	out, err := exec.Command(filepath.Join(root, "scripts", "stop.sh")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("%s", out)
	// stop.sh waits for what it stops: both have exited by the time it returns (give the reaper a moment).
	require.Eventually(t, func() bool { return exited(serviceGone) && exited(nodeGone) }, 10*time.Second, 10*time.Millisecond)
	assert.False(t, exited(otherGone), "a pid that now names another program is left alone")
	assert.False(t, exited(unrecordedGone), "a process no pidfile names is left alone")
	assert.FileExists(t, reused, "the pidfile of what was left alone stays")
	assert.NoFileExists(t, stale, "a stale pidfile is removed")
	assert.NoFileExists(t, filepath.Join(root, ".data", "run", "ticketrush.pid"))
	assert.Contains(t, string(out), "stopped 2 process(es)")

	out, err = exec.Command(filepath.Join(root, "scripts", "stop.sh")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "left alone", "a second stop stops nothing more")
}

// TestMakeRunRefusesSecondStart: scripts/run.sh --check (the first step of make run) refuses while the
// service make run started is alive, and says where and how to stop it; it refuses when something else
// holds the address; it lets a start go ahead otherwise, clearing a stale pidfile.
func TestMakeRunRefusesSecondStart(t *testing.T) {
	root := scriptTree(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + ln.Addr().String()
	check := func() (string, int) {
		cmd := exec.Command(filepath.Join(root, "scripts", "run.sh"), "--check", "bin/ticketrush", addr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			return string(out), exit.ExitCode()
		}
		return string(out), 0
	}

	out, code := check()
	assert.Equal(t, 1, code, "%s", out)
	assert.Contains(t, out, "something not started by make run already listens on "+ln.Addr().String())

	service, _ := startSleeper(t, root, "ticketrush")
	pidfile(t, root, "run/ticketrush.pid", service.Process.Pid)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".data", "run", "ticketrush.addr"), []byte(addr+"\n"), 0o644))
	out, code = check()
	assert.Equal(t, 1, code, "%s", out)
	assert.Contains(t, out, "ticketrush is already running at "+addr+" (pid "+strconv.Itoa(service.Process.Pid))
	assert.Contains(t, out, "make stop stops it")

	require.NoError(t, service.Process.Kill())
	require.NoError(t, ln.Close())
	require.Eventually(t, func() bool { _, code := check(); return code == 0 }, 10*time.Second, 20*time.Millisecond,
		"the service gone and the address free: make run may start")
	assert.NoFileExists(t, filepath.Join(root, ".data", "run", "ticketrush.pid"), "the stale pidfile is cleared")
}

// TestMakeHelp: `make help` lists every target of the Makefile, one line each, from its `##` comment.
func TestMakeHelp(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	targets := regexp.MustCompile(`(?m)^([a-z0-9-]+):(?:[^=]|$)`).FindAllStringSubmatch(string(mk), -1)
	require.NotEmpty(t, targets)

	out, err := exec.Command("make", "-s", "-C", filepath.Join("..", ".."), "help").Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	listed := map[string]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		require.GreaterOrEqual(t, len(f), 2, "a target and its description on one line: %q", l)
		_, dup := listed[f[0]]
		assert.False(t, dup, "%s listed twice", f[0])
		listed[f[0]] = l
	}
	for _, m := range targets {
		assert.Contains(t, listed, m[1], "make help lists %s", m[1])
	}
	assert.Len(t, lines, len(targets), "one line per target")
}

// TestMakeUpWithoutDocker: without a docker command, make up and make down say so in one line instead of
// a traceback, and run nothing.
func TestMakeUpWithoutDocker(t *testing.T) {
	mk, err := exec.LookPath("make")
	require.NoError(t, err)
	for _, target := range []string{"up", "down"} {
		t.Run(target, func(t *testing.T) {
			cmd := exec.Command(mk, "-s", "-C", filepath.Join("..", ".."), target)
			cmd.Env = []string{"PATH=" + t.TempDir()} // no docker, no docker-compose: nothing to run
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			require.Error(t, err)
			msg := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			require.NotEmpty(t, msg)
			assert.Equal(t, "make "+target+" needs Docker: the docker command is not installed (https://docs.docker.com/engine/install/); make run needs no Docker", msg[0])
			assert.LessOrEqual(t, len(msg), 2, "our line and make's own error line, nothing more: %s", stderr.String())
			assert.Empty(t, stdout.String())
		})
	}
}
