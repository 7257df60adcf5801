// Package dbtest gives tests the services they need: a fresh Postgres database, a fresh Redis key
// prefix on the real Redis, miniredis, or a private redis-server. A service that is absent fails the
// test and says how to start it; nothing here skips.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/config"
)

const howToStart = "run `make services` (or `make test`, which starts Redis and Postgres itself)"

// RedisURL is the real Redis the tests use: TEST_REDIS_URL, else REDIS_URL (what make test started),
// else the local default.
func RedisURL() string {
	for _, v := range []string{"TEST_REDIS_URL", "REDIS_URL"} {
		if u := os.Getenv(v); u != "" {
			return u
		}
	}
	return "redis://127.0.0.1:6379/0"
}

// PostgresURL is the server the tests create their databases on: TEST_DATABASE_URL, else the server of
// DATABASE_URL, else the local default; its database (postgres) is only used to create and drop others.
func PostgresURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	if u, err := url.Parse(os.Getenv("DATABASE_URL")); err == nil && u.Host != "" {
		u.Path = "/postgres"
		return u.String()
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Name returns a fresh lowercase name for a database, key prefix or id.
func Name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Redis returns a client of the real Redis and a fresh key prefix; keys under it are deleted at the end.
func Redis(t testing.TB) (rueidis.Client, string) {
	t.Helper()
	c := client(t, RedisURL())
	prefix := Name("t")
	t.Cleanup(func() { deletePrefix(c, prefix) })
	return c, prefix
}

// MiniRedis returns a client of a fresh miniredis.
func MiniRedis(t testing.TB) (rueidis.Client, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	return client(t, "redis://"+m.Addr()), m
}

// PrivateRedis starts a redis-server of the test's own on a free port (for tests that read server-wide
// figures such as INFO commandstats, or that empty the server) and returns its URL.
func PrivateRedis(t testing.TB) string {
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
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	u := "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			conn.Close()
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("private redis-server on port %d did not answer: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen: nothing to synchronise on
	}
}

// Client returns a client of the Redis at u, closed at the end of the test.
func Client(t testing.TB, u string) rueidis.Client { t.Helper(); return client(t, u) }

func client(t testing.TB, u string) rueidis.Client {
	t.Helper()
	opt, err := rueidis.ParseURL(u)
	if err != nil {
		t.Fatalf("Redis URL %s: does not parse", config.Redact(u))
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("Redis at %s is not answering (%v): %s", config.Redact(u), err, howToStart)
	}
	t.Cleanup(c.Close)
	return c
}

func deletePrefix(c rueidis.Client, prefix string) {
	ctx := context.Background()
	var cursor uint64
	for {
		r, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return
		}
		for _, k := range r.Elements {
			c.Do(ctx, c.B().Unlink().Key(k).Build())
		}
		if r.Cursor == 0 {
			return
		}
		cursor = r.Cursor
	}
}

// Postgres creates a fresh database, drops it at the end, and returns its URL.
func Postgres(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, PostgresURL())
	if err != nil {
		t.Fatalf("Postgres at %s is not answering (%v): %s", config.Redact(PostgresURL()), err, howToStart)
	}
	defer admin.Close(context.Background())
	name := Name("tr_test_")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, PostgresURL())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
