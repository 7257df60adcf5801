package dbtest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
)

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
