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
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

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

// PrivateCluster is a Redis Cluster of the test's own (3 masters, 3 replicas, started by
// scripts/cluster.sh), for tests that kill a node.
type PrivateCluster struct {
	URL   string
	Base  int      // nodes listen on Base..Base+5 (and Base+10000.. for the cluster bus)
	Dir   string   // each node's data, log and pidfile under Dir/<port>/
	Hosts []string // the address of each node, in port order
	env   []string // scripts/cluster.sh's environment
	exe   string   // scripts/cluster.sh
}

// Host is the address of the node on port.
func (pc *PrivateCluster) Host(port int) string { return pc.Hosts[port-pc.Base] }

// Addr is the host:port of the node on port.
func (pc *PrivateCluster) Addr(port int) string {
	return net.JoinHostPort(pc.Host(port), strconv.Itoa(port))
}

// Node is a client of the node on port alone (not the cluster's routing); the caller closes it.
func (pc *PrivateCluster) Node(port int) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{pc.Addr(port)}, ForceSingleClient: true,
		DisableCache: true, DisableRetry: true})
}

// StartPrivateCluster starts a cluster on ports base..base+5 (and their bus ports base+10000..): ports
// the calling package owns, since test packages run in parallel. It is stopped at the end of the test.
func StartPrivateCluster(t testing.TB, base int) *PrivateCluster {
	t.Helper()
	return startPrivateCluster(t, base, true, nil)
}

// StartSplittableCluster is StartFormingCluster with each node on an address of its own (hosts, six
// loopback addresses such as 127.0.0.31), which it also sends from, so that a Net can cut or slow the
// link between two nodes, with a cluster-node-timeout of nodeTimeout, and with the replicas' first full
// sync held back syncDelay (repl-diskless-sync-delay) after they ask.
func StartSplittableCluster(t testing.TB, base int, hosts []string, nodeTimeout, syncDelay time.Duration) *PrivateCluster {
	t.Helper()
	return startPrivateCluster(t, base, false, hosts, "CLUSTER_NODE_TIMEOUT="+strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
		"CLUSTER_SYNC_DELAY="+strconv.Itoa(int(syncDelay.Seconds())))
}

// StartFormingCluster is StartPrivateCluster returning as soon as every slot is served, while the
// replicas are in their first full sync, which it holds back 30 s after they ask (a 5 s delay could
// pass on a loaded machine before the test's first write).
func StartFormingCluster(t testing.TB, base int) *PrivateCluster {
	t.Helper()
	return startPrivateCluster(t, base, false, nil, "CLUSTER_SYNC_DELAY=30")
}

func startPrivateCluster(t testing.TB, base int, synced bool, hosts []string, env ...string) *PrivateCluster {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		if root == filepath.Dir(root) {
			t.Fatal("no go.mod above the test's directory")
		}
	}
	if hosts == nil {
		hosts = []string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"}
	}
	pc := &PrivateCluster{Base: base, Dir: t.TempDir(), Hosts: hosts, exe: filepath.Join(root, "scripts", "cluster.sh")}
	pc.env = append(os.Environ(), "CLUSTER_PORT="+strconv.Itoa(base), "CLUSTER_DIR="+pc.Dir,
		"CLUSTER_HOSTS="+strings.Join(hosts, " "))
	pc.env = append(pc.env, env...)
	if !synced {
		pc.env = append(pc.env, "CLUSTER_SYNCED=0")
	}
	t.Cleanup(func() {
		stop := exec.Command(pc.exe, "stop")
		stop.Env = pc.env
		_ = stop.Run()
	})
	pc.URL = pc.start(t, "")
	return pc
}

// start runs scripts/cluster.sh, which starts the nodes that are not running and forms the cluster
// (synced "0": without waiting for the replicas' sync), and returns the URL it prints.
func (pc *PrivateCluster) start(t testing.TB, synced string) string {
	t.Helper()
	cmd := exec.Command(pc.exe)
	cmd.Env = pc.env
	if synced != "" {
		cmd.Env = append(cmd.Env, "CLUSTER_SYNCED="+synced)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("start a private cluster on ports %d-%d: %v\n%s", pc.Base, pc.Base+5, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Resync SIGKILLs the node on port (a replica), empties its data but keeps its cluster config, and
// starts it again: it rejoins as the replica it was and asks its master for a full sync. It returns
// once the node answers, without waiting for the sync.
func (pc *PrivateCluster) Resync(t testing.TB, port int) {
	t.Helper()
	pc.Kill(t, port)
	dir := filepath.Join(pc.Dir, strconv.Itoa(port))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if name := e.Name(); name != "nodes.conf" && name != "redis.log" {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, name)))
		}
	}
	pc.start(t, "0")
}

// Signal sends sig to the node on port (SIGSTOP and SIGCONT to make a replica lag).
func (pc *PrivateCluster) Signal(t testing.TB, port int, sig os.Signal) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(pc.Dir, strconv.Itoa(port), "redis.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	require.NoError(t, p.Signal(sig))
}

// Replicas returns the ports of the nodes whose ROLE is replica.
func (pc *PrivateCluster) Replicas(t testing.TB) []int {
	t.Helper()
	var out []int
	for port := pc.Base; port < pc.Base+6; port++ {
		node, err := pc.Node(port)
		require.NoError(t, err)
		role, err := node.Do(context.Background(), node.B().Role().Build()).ToArray()
		node.Close()
		require.NoError(t, err)
		if r, _ := role[0].ToString(); r == "slave" {
			out = append(out, port)
		}
	}
	return out
}

// Kill SIGKILLs the node on port and returns once it is gone.
func (pc *PrivateCluster) Kill(t testing.TB, port int) {
	t.Helper()
	pc.Signal(t, port, os.Kill)
	_ = os.Remove(filepath.Join(pc.Dir, strconv.Itoa(port), "redis.pid")) // its pid may be reused
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", pc.Addr(port), 100*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err != nil
	}, 10*time.Second, 10*time.Millisecond, "node %d still answers after SIGKILL", port)
}

// MasterOf returns the port of the master that serves key's slot, asking a node that answers (a keyless
// command through c may go to a dead one).
func (pc *PrivateCluster) MasterOf(t testing.TB, c rueidis.Client, key string) int {
	t.Helper()
	ctx := context.Background()
	var slot int64
	var shards []rueidis.RedisMessage
	var err error
	for _, node := range c.Nodes() {
		if slot, err = node.Do(ctx, node.B().ClusterKeyslot().Key(key).Build()).AsInt64(); err != nil {
			continue
		}
		if shards, err = node.Do(ctx, node.B().ClusterSlots().Build()).ToArray(); err == nil {
			break
		}
	}
	require.NoError(t, err)
	for _, sh := range shards {
		r, err := sh.ToArray()
		require.NoError(t, err)
		lo, _ := r[0].AsInt64()
		hi, _ := r[1].AsInt64()
		if slot >= lo && slot <= hi {
			node, err := r[2].ToArray()
			require.NoError(t, err)
			port, err := node[1].AsInt64()
			require.NoError(t, err)
			return int(port)
		}
	}
	t.Fatalf("no master serves slot %d of %s", slot, key)
	return 0
}

// Role is the ROLE of the node on port: "master" or "slave".
func (pc *PrivateCluster) Role(t testing.TB, port int) string {
	t.Helper()
	node, err := pc.Node(port)
	if err != nil {
		return ""
	}
	defer node.Close()
	role, err := node.Do(context.Background(), node.B().Role().Build()).ToArray()
	if err != nil || len(role) == 0 {
		return ""
	}
	r, _ := role[0].ToString()
	return r
}

// ReplicaOf returns the port of a replica of the master on port.
func (pc *PrivateCluster) ReplicaOf(t testing.TB, master int) int {
	t.Helper()
	node, err := pc.Node(master)
	require.NoError(t, err)
	defer node.Close()
	role, err := node.Do(context.Background(), node.B().Role().Build()).ToArray()
	require.NoError(t, err)
	replicas, err := role[2].ToArray()
	require.NoError(t, err)
	require.NotEmpty(t, replicas, "master %d has no replica", master)
	r, err := replicas[0].ToArray()
	require.NoError(t, err)
	port, err := r[1].ToString()
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return p
}

// Synced reports whether the replica on port has its master's data: the link up and no sync running.
func (pc *PrivateCluster) Synced(t testing.TB, port int) bool {
	t.Helper()
	node, err := pc.Node(port)
	if err != nil {
		return false
	}
	defer node.Close()
	info, err := node.Do(context.Background(), node.B().Info().Section("replication").Build()).ToString()
	return err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0")
}
