package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// stores is a Redis key prefix and a Postgres database that a command would write to if it ran: fresh,
// so that anything in them afterwards was put there by the command.
type stores struct {
	env map[string]string
}

func freshStores(t *testing.T) stores {
	t.Helper()
	return stores{env: map[string]string{
		"HTTP_ADDR":          "127.0.0.1:0",
		"REDIS_URL":          dbtest.RedisURL(),
		"REDIS_KEY_PREFIX":   dbtest.Name("cli"),
		"DATABASE_URL":       dbtest.Postgres(t),
		"JWT_SECRET":         testJWTSecret,
		"QUEUE_TOKEN_SECRET": testQueueSecret,
		"ADMIN_TOKEN":        testAdminToken,
	}}
}

func (s stores) getenv(k string) string { return s.env[k] }

// requireUntouched fails unless the prefix has no Redis keys and the database no tables.
func (s stores) requireUntouched(t *testing.T, what string) {
	t.Helper()
	c := dbtest.Client(t, s.env["REDIS_URL"])
	keys, err := c.Do(context.Background(), c.B().Keys().Pattern(s.env["REDIS_KEY_PREFIX"]+":*").Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Empty(t, keys, "%s wrote Redis keys", what)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := pgx.Connect(ctx, s.env["DATABASE_URL"])
	require.NoError(t, err)
	defer db.Close(ctx)
	var tables []string
	rows, err := db.Query(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	require.NoError(t, rows.Err())
	assert.Empty(t, tables, "%s created tables", what)
}

var commands = []string{"serve", "demo", "token", "migrate", "reconcile", "restore", "migrate-layout", "version"}

// TestHelpTouchesNothing: every command answers -h and --help with its usage and flags and returns at
// once, without opening Redis or Postgres.
func TestHelpTouchesNothing(t *testing.T) {
	s := freshStores(t)
	for _, cmd := range commands {
		for _, h := range []string{"-h", "--help"} {
			t.Run(cmd+" "+h, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var out bytes.Buffer
				err := run(ctx, []string{cmd, h}, s.getenv, &out)
				require.NoError(t, err)
				require.NoError(t, ctx.Err(), "the command ran until the deadline instead of printing its help")
				assert.True(t, strings.HasPrefix(out.String(), "usage: ticketrush "+cmd), "got %q", out.String())
				s.requireUntouched(t, cmd+" "+h)
			})
		}
	}
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"--help"}, s.getenv, &out))
	for _, cmd := range commands {
		assert.Contains(t, out.String(), "\n  "+cmd+" ", "the usage lists %s", cmd)
	}
}

// TestHelpDescribesFlags: a command's help names each of its flags with its default.
func TestHelpDescribesFlags(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"token", []string{"-user string", "-ttl duration", `(default 1h0m0s)`}},
		{"reconcile", []string{"-wait duration", "(default 1m0s)"}},
		{"restore", []string{"-force"}},
		{"demo", []string{"-addr string", "-user string", "-setup", `(default "demo-fan")`}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), []string{tt.give, "-h"}, func(string) string { return "" }, &out))
			for _, w := range tt.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}

// TestBadCommandLinesTouchNothing: unknown flags, stray arguments, unknown commands and a missing
// required flag are usage errors (main exits 2 on them) and nothing is opened.
func TestBadCommandLinesTouchNothing(t *testing.T) {
	s := freshStores(t)
	var lines [][]string
	for _, cmd := range commands {
		lines = append(lines, []string{cmd, "--bogus"}, []string{cmd, "stray"})
	}
	lines = append(lines, []string{}, []string{"nope"}, []string{"token"}, []string{"token", "--ttl", "soon", "--user", "u"},
		[]string{"reconcile", "--wait"})
	for _, args := range lines {
		t.Run(strings.Join(append([]string{"ticketrush"}, args...), " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out bytes.Buffer
			err := run(ctx, args, s.getenv, &out)
			require.Error(t, err)
			require.NoError(t, ctx.Err(), "the command ran until the deadline")
			assert.True(t, errors.As(err, new(usageError)), "want a usage error, got %T %v", err, err)
			assert.Contains(t, err.Error(), "usage: ticketrush")
			assert.Empty(t, out.String(), "nothing on stdout")
			s.requireUntouched(t, strings.Join(args, " "))
		})
	}
}

// buildBinary builds the command into dir/bin/ticketrush, the path the printed walk uses.
func buildBinary(t *testing.T, flags ...string) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "bin", "ticketrush")
	cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, flags...), ".")...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return dir, bin
}

// TestExitCodes runs the built binary: help exits 0, a bad command line 2, a failure 1.
func TestExitCodes(t *testing.T) {
	s := freshStores(t)
	_, bin := buildBinary(t)
	tests := []struct {
		give   []string
		want   int
		stdout string
		stderr string
	}{
		{[]string{"migrate", "--help"}, 0, "usage: ticketrush migrate", ""},
		{[]string{"serve", "-h"}, 0, "usage: ticketrush serve", ""},
		{[]string{"token", "--help"}, 0, "-ttl duration", ""},
		{[]string{"migrate", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"serve", "--foo"}, 2, "", "flag provided but not defined: -foo"},
		{[]string{"restore", "now"}, 2, "", `unexpected argument "now"`},
		{[]string{"token"}, 2, "", "--user is required"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{nil, 2, "", "no command given"},
		{[]string{"token", "--user", "not a user id"}, 1, "", "user id"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.give, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tt.give...)
			for k, v := range s.env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, code, "stdout %q, stderr %q", stdout.String(), stderr.String())
			assert.Contains(t, stdout.String(), tt.stdout)
			assert.Contains(t, stderr.String(), tt.stderr)
			s.requireUntouched(t, strings.Join(tt.give, " "))
		})
	}
}

// TestVersion: `version` and `--version` of a binary built as `make build` builds it print the module
// version, the commit it was built from and the Go version.
func TestVersion(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	rev := strings.TrimSpace(string(head))
	_, bin := buildBinary(t, "-ldflags", "-X main.commit="+rev)
	for _, arg := range []string{"version", "--version"} {
		t.Run(arg, func(t *testing.T) {
			out, err := exec.Command(bin, arg).Output()
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			require.Len(t, lines, 3, "%s", out)
			assert.Equal(t, "ticketrush (devel)", lines[0], "a work-tree build has no module version")
			assert.True(t, strings.HasPrefix(lines[1], "commit "+rev), "got %q, HEAD is %s", lines[1], rev)
			assert.Equal(t, runtime.Version(), lines[2])
		})
	}
	// Through run (a test binary has no VCS stamp and no linked commit): the same lines, commit unknown.
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"version"}, os.Getenv, &out))
	assert.Equal(t, "ticketrush (devel)\ncommit unknown\n"+runtime.Version()+"\n", out.String())
}

// TestVersionOf: the build info's own VCS stamp is read, and wins over a commit given at link time.
func TestVersionOf(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "abc123"},
		{Key: "vcs.time", Value: "2026-11-23T03:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	tests := []struct {
		name   string
		bi     *debug.BuildInfo
		ok     bool
		linked string
		want   string
	}{
		{"stamped", stamped, true, "", "ticketrush v1.2.3\ncommit abc123 (with uncommitted changes) 2026-11-23T03:00:00Z\ngo1.99.1\n"},
		{"stamp wins", stamped, true, "def456", "ticketrush v1.2.3\ncommit abc123 (with uncommitted changes) 2026-11-23T03:00:00Z\ngo1.99.1\n"},
		{"linked only", &debug.BuildInfo{GoVersion: "go1.99.1"}, true, "def456", "ticketrush (devel)\ncommit def456\ngo1.99.1\n"},
		{"no build info", nil, false, "", "ticketrush (devel)\ncommit unknown\n" + runtime.Version() + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, versionOf(tt.bi, tt.ok, tt.linked).String())
		})
	}
}
