package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// clusterPorts are this package's private cluster's ports (7200-7205, bus 17200-17205): test packages
// run in parallel, and each that starts a cluster owns its range.
const clusterPorts = 7200

// masterOnPort reports whether the live nodes' slot map still names port as a master.
func masterOnPort(t *testing.T, c rueidis.Client, port int) bool {
	shards, err := c.Do(context.Background(), c.B().ClusterSlots().Build()).ToArray()
	require.NoError(t, err)
	for _, sh := range shards {
		r, _ := sh.ToArray()
		node, _ := r[2].ToArray()
		if p, _ := node[1].AsInt64(); int(p) == port {
			return true
		}
	}
	return false
}

// TestPingFollowsFailover: readiness and ticketrush_redis_up say whether the service reaches its slots.
// A master is SIGKILLed: while nobody serves its slots Ping fails; once its replica is elected every
// probe passes, although rueidis keeps the dead node's address (a keyless PING went to a random
// connection, the dead one included, and failed about one probe in ten).
func TestPingFollowsFailover(t *testing.T) {
	pc := dbtest.StartPrivateCluster(t, clusterPorts)
	c := dbtest.Client(t, pc.URL)
	reg := prometheus.NewRegistry()
	s := NewStore(c, "tr", reg)
	s.NeedConcerts(func() []string { return []string{"c1", "c2", "c3"} })
	ctx := context.Background()
	require.NoError(t, s.Ping(ctx))

	port := pc.MasterOf(t, c, s.keys.WalletShard(0).Balances())
	other := pc.Base
	if other == port {
		other++
	}
	// The client of one live node, to read the slot map without going through the dead one.
	live, ok := c.Nodes()["127.0.0.1:"+strconv.Itoa(other)]
	require.True(t, ok, "no client of node %d", other)
	pc.Kill(t, port)
	before := masterOnPort(t, live, port)
	err := s.Ping(ctx)
	if before && masterOnPort(t, live, port) {
		t.Logf("ping while master %d is down and not yet replaced: %v", port, err)
		assert.Error(t, err, "Ping passes while a master serving a wallet shard's slots is dead")
	}

	require.Eventually(t, func() bool { return s.Ping(ctx) == nil }, 30*time.Second, 50*time.Millisecond,
		"Ping never passed after the replica's election")
	for i := range 100 {
		require.NoError(t, s.Ping(ctx), "probe %d after the failover", i)
	}
	for i := range 20 {
		require.Equal(t, 1.0, redisUp(t, reg), "redis_up scrape %d after the failover", i)
	}
}

// redisUp scrapes ticketrush_redis_up from reg.
func redisUp(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "ticketrush_redis_up" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no ticketrush_redis_up")
	return 0
}
