package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	svcconfig "github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/redis"
)

// ownerOf is the index of the master that holds key (EXISTS on each: a master that does not serve the
// key's slot answers MOVED).
func ownerOf(ctx context.Context, masters []rueidis.Client, key string) (int, error) {
	for i, m := range masters {
		if n, err := m.Do(ctx, m.B().Exists().Key(key).Build()).AsInt64(); err == nil && n == 1 {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no master holds %s", key)
}

// shardsBeside counts the line's shards of a concert whose fans wait, and those of them that the
// concert's own master serves.
func shardsBeside(ctx context.Context, store *redis.Store, c rueidis.Client, masters []rueidis.Client, concertID string, own int) (shards, beside int, err error) {
	l, _, err := store.Keys().ReadLayout(ctx, c, concertID)
	if err != nil {
		return 0, 0, err
	}
	k := store.Keys().Concert(concertID).Placed(l.ShardAt)
	for n := range l.Shards {
		if i, err := ownerOf(ctx, masters, k.Shard(n).Places()); err == nil && i == own {
			beside++
		}
	}
	return l.Shards, beside, nil
}

// startCluster starts a Redis Cluster of the bench's own with scripts/cluster.sh (masters masters and as
// many replicas, configured as `make cluster`'s) on free ports from 7400 up (the tests own 7000-7005,
// 7100-7105, 7200-7205 and 7300-7305), its data, logs and pidfiles under dir, and returns its URL; stop
// stops its nodes (by their pidfiles) and removes dir. Other engineers' tests run on the shared local
// cluster, and their calls would be counted with the measure's.
func startCluster(ctx context.Context, dir string, masters int) (url string, stop func(), err error) {
	if dir, err = filepath.Abs(dir); err != nil {
		return "", nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, err
	}
	nodes, base := 2*masters, 0
	for b := 7400; b < 8000 && base == 0; b += 20 {
		if portsFree(b, nodes) && portsFree(b+10000, nodes) {
			base = b
		}
	}
	if base == 0 {
		return "", nil, fmt.Errorf("no %d free ports (and their cluster bus ports) from 7400 to 7999", nodes)
	}
	env := append(os.Environ(), "CLUSTER_PORT="+strconv.Itoa(base), "CLUSTER_DIR="+dir, "CLUSTER_MASTERS="+strconv.Itoa(masters))
	stop = func() {
		cmd := exec.Command("scripts/cluster.sh", "stop")
		cmd.Env = env
		_ = cmd.Run()
		_ = os.RemoveAll(dir)
	}
	cmd := exec.CommandContext(ctx, "scripts/cluster.sh")
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("scripts/cluster.sh on ports %d-%d: %w: %s", base, base+nodes-1, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), stop, nil
}

// portsFree reports whether nothing listens on the n loopback ports from first on.
func portsFree(first, n int) bool {
	for p := first; p < first+n; p++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// ownCluster starts a cluster of masters masters of the bench's own (startCluster) unless
// -capacity-cluster is off; stop stops it. Without one it says why.
func (b *bench) ownCluster(ctx context.Context, masters int) (c rueidis.Client, stop func(), na string) {
	stop = func() {}
	if b.cfg.capacityCluster == "off" {
		return nil, stop, "skipped (-capacity-cluster off)"
	}
	fmt.Fprintf(os.Stderr, "bench: starting a Redis Cluster of %d masters of the bench's own (scripts/cluster.sh)\n", masters)
	u, stop, err := startCluster(ctx, filepath.Join(b.cfg.logs, fmt.Sprintf("cluster%d", masters)), masters)
	if err != nil {
		return nil, func() {}, err.Error()
	}
	if c, err = clusterClient(u); err != nil {
		return nil, stop, err.Error()
	}
	return c, stop, ""
}

// clusterClient connects to the Redis Cluster at u.
func clusterClient(u string) (rueidis.Client, error) {
	opt, err := rueidis.ParseURL(u)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", svcconfig.Redact(u), err)
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("the cluster at %s does not answer: %v", svcconfig.Redact(u), err)
	}
	if !redis.IsCluster(c) {
		c.Close()
		return nil, fmt.Errorf("%s is not a Redis Cluster", svcconfig.Redact(u))
	}
	return c, nil
}

// capacityCluster connects to the cluster the capacity is measured on: -capacity-cluster, or one of
// the bench's own (startCluster), which stop stops. Without one it says why.
func (b *bench) capacityCluster(ctx context.Context) (c rueidis.Client, stop func(), na string) {
	stop = func() {}
	u := b.cfg.capacityCluster
	switch u {
	case "off":
		return nil, stop, "skipped (-capacity-cluster off)"
	case "":
		return b.ownCluster(ctx, 3)
	}
	c, err := clusterClient(u)
	if err != nil {
		return nil, stop, "-capacity-cluster " + err.Error()
	}
	return c, stop, ""
}
