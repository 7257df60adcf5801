// Package dbtest gives tests the services they need: a fresh Postgres database, a fresh Redis key
// prefix on the real Redis, miniredis, or a private redis-server. A service that is absent fails the
// test and says how to start it; nothing here skips.
package dbtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
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
	t.Cleanup(func() { DeletePrefix(c, prefix) })
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
	return StartRedisServer(t, "no").URL
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
		t.Fatalf("Redis at %s is not answering (%v): %s (a cluster: `make cluster`)", config.Redact(u), err, howToStart)
	}
	t.Cleanup(c.Close)
	return c
}

// DeletePrefix deletes the keys under prefix. SCAN covers one node, so on a cluster it scans every
// master (a replica holds copies of its master's keys) and deletes each key through c, which routes it
// to its slot's master.
func DeletePrefix(c rueidis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, node := range Masters(c) {
		var cursor uint64
		for {
			r, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				break
			}
			for _, k := range r.Elements {
				c.Do(ctx, c.B().Unlink().Key(k).Build())
			}
			if r.Cursor == 0 {
				break
			}
			cursor = r.Cursor
		}
	}
}

// Masters returns a client of each master node of c that answers: c itself on a single Redis, the node
// clients of the masters on a cluster (nodes whose ROLE is master), in the order of their addresses.
func Masters(c rueidis.Client) []rueidis.Client {
	out, _ := MastersOf(context.Background(), c)
	return out
}

// MastersOf is Masters, with the first node that does not answer ROLE, or a cluster without a master,
// as its error.
func MastersOf(ctx context.Context, c rueidis.Client) ([]rueidis.Client, error) {
	if c.Mode() != rueidis.ClientModeCluster {
		return []rueidis.Client{c}, nil
	}
	nodes := c.Nodes()
	var out []rueidis.Client
	var err error
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		node := nodes[addr]
		role, rerr := node.Do(ctx, node.B().Role().Build()).ToArray()
		if rerr != nil || len(role) == 0 {
			err = cmp.Or(err, fmt.Errorf("ROLE of %s: %v", addr, rerr))
			continue
		}
		if r, _ := role[0].ToString(); r == "master" {
			out = append(out, node)
		}
	}
	if err == nil && len(out) == 0 {
		err = errors.New("the cluster shows no master")
	}
	return out, err
}

// ClusterURL is the shared local Redis Cluster of `scripts/cluster.sh` (ports 7000-7005), or
// TEST_REDIS_CLUSTER_URL. It fails the test when the cluster does not answer as a cluster.
func ClusterURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_REDIS_CLUSTER_URL")
	if u == "" {
		u = "redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002&addr=127.0.0.1:7003&addr=127.0.0.1:7004&addr=127.0.0.1:7005"
	}
	if c := client(t, u); c.Mode() != rueidis.ClientModeCluster {
		t.Fatalf("Redis at %s is not a cluster: run `make cluster` (scripts/cluster.sh) to start one", u)
	}
	return u
}

// Cluster returns a client of the shared Redis Cluster (ClusterURL) and a fresh key prefix; keys under
// it are deleted from every master at the end.
func Cluster(t testing.TB) (rueidis.Client, string) {
	t.Helper()
	c := client(t, ClusterURL(t))
	prefix := Name("t")
	t.Cleanup(func() { DeletePrefix(c, prefix) })
	return c, prefix
}

// OnCluster reports whether the Redis the tests use (RedisURL) is a cluster: the cluster pass of
// `make test` runs the same packages with TEST_REDIS_URL set to the cluster.
func OnCluster(t testing.TB) bool {
	t.Helper()
	return client(t, RedisURL()).Mode() == rueidis.ClientModeCluster
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
