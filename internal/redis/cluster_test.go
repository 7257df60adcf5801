package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
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

// TestPingFollowsFailoverOnCluster: readiness and ticketrush_redis_up say whether the service reaches its slots.
// A master is SIGKILLed: while nobody serves its slots Ping fails; once its replica is elected every
// probe passes, although rueidis keeps the dead node's address (a keyless PING went to a random
// connection, the dead one included, and failed about one probe in ten).
func TestPingFollowsFailoverOnCluster(t *testing.T) {
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

// TestOpenFollowsElectionUntouchedOnCluster: a client from Open reads the slot map on its own, every
// SlotMapRefresh, so a key of a master that was replaced is read on the first try once the cluster is
// whole, even when no command touched its slots since the kill (rueidis otherwise reads the map again
// only after a command fails, so the first read after the election would go to the dead node).
func TestOpenFollowsElectionUntouchedOnCluster(t *testing.T) {
	pc := dbtest.StartPrivateCluster(t, clusterPorts)
	ctx := context.Background()
	c, err := Open(ctx, pc.URL)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	key := NewKeys(dbtest.Name("t")).WalletShard(0).Balances()
	require.NoError(t, c.Do(ctx, c.B().Exists().Key(key).Build()).Error())

	port := pc.MasterOf(t, c, key)
	var live []rueidis.Client // each live node's own client, to watch the election from its side
	for p := pc.Base; p < pc.Base+6; p++ {
		if p == port {
			continue
		}
		node, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(p)},
			ForceSingleClient: true, DisableCache: true})
		require.NoError(t, err)
		t.Cleanup(node.Close)
		live = append(live, node)
	}
	pc.Kill(t, port)
	require.Eventually(t, func() bool {
		for _, node := range live {
			if masterOnPort(t, node, port) {
				return false
			}
		}
		return true
	}, time.Minute, 50*time.Millisecond, "the replica of master %d was never elected", port)

	// The bound under test, not a wait for a condition: rueidis reads the map within a second of each
	// period, so within 2 × SlotMapRefresh it has read a map with the new master; a second more for a
	// slow machine.
	time.Sleep(2*SlotMapRefresh + time.Second)
	assert.NoError(t, c.Do(ctx, c.B().Exists().Key(key).Build()).Error(),
		"the first read of a slot of the dead master %d after its replica's election", port)
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

// TestReplicatedStepsWaitForAReplicaOnCluster: with WaitForReplica a hold or a charge is answered only once
// a replica has it. Replicas that are connected but stopped (SIGSTOP: they lag) make the steps fail with
// ErrNotReplicated, 503, instead of acknowledging a write a failover would lose (a join and a cancel
// too); a step that does not wait (an admission round) goes on. Masters whose replicas are gone
// (SIGKILL) have nothing to wait for: the steps go on, counted in
// ticketrush_redis_unreplicated_writes_total.
func TestReplicatedStepsWaitForAReplicaOnCluster(t *testing.T) {
	pc := dbtest.StartPrivateCluster(t, clusterPorts)
	c := dbtest.Client(t, pc.URL)
	reg := prometheus.NewRegistry()
	s := NewStore(c, dbtest.Name("t"), reg)
	s.WaitForReplica(config.ReplicaWait)
	ctx := context.Background()
	fans := sale(t, s, nil, "alice", "bob")
	// a concert whose seats live in slots of their own: the hold's seat step (seat_take) waits too
	spread := NewStore(c, dbtest.Name("t"), prometheus.NewRegistry())
	spread.WaitForReplica(config.ReplicaWait)
	spreadFans := spreadSale(t, spread, nil, "erin")
	replicas := pc.Replicas(t)
	require.Len(t, replicas, 3)

	held, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
	require.NoError(t, err, "a hold with its replicas up")
	_, _, err = s.Wallet.Charge(ctx, "alice", 500, "", "", t0)
	require.NoError(t, err, "a charge with its replicas up")

	for _, port := range replicas {
		pc.Signal(t, port, syscall.SIGSTOP)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			for _, port := range replicas {
				pc.Signal(t, port, syscall.SIGCONT)
			}
		}
	})
	_, _, err = s.Seats.Hold(ctx, fans["bob"], sA, "VIP-2", 100, t0)
	assert.ErrorIs(t, err, ErrNotReplicated, "a hold acknowledged while no replica has it")
	assert.ErrorIs(t, err, ticketrush.ErrUnavailable)
	_, _, err = s.Wallet.Charge(ctx, "bob", 500, "", "", t0)
	assert.ErrorIs(t, err, ErrNotReplicated, "a charge acknowledged while no replica has it")
	_, _, err = spread.Seats.Hold(ctx, spreadFans["erin"], sA, "VIP-1", 100, t0)
	assert.ErrorIs(t, err, ErrNotReplicated, "a hold of a seat in its own slot acknowledged while no replica has it")
	_, err = s.Line.Join(ctx, cid, "carol", t0)
	assert.ErrorIs(t, err, ErrNotReplicated, "a join acknowledged while no replica has the fan's place")
	_, err = s.Seats.Cancel(ctx, "alice", held.ID, t0)
	assert.ErrorIs(t, err, ErrNotReplicated, "a cancel acknowledged while no replica has it")
	_, err = s.Line.Tick(ctx, cid, t0, 10)
	assert.NoError(t, err, "an admission round does not wait")

	for _, port := range replicas {
		pc.Signal(t, port, syscall.SIGCONT)
		pc.Kill(t, port)
	}
	stopped = false
	// The masters notice their replicas' closed connections; then nothing is left to wait for.
	require.Eventually(t, func() bool {
		_, _, err := s.Wallet.Charge(ctx, "dave", 100, "", "", t0)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "a master without a replica still takes charges")
	_, _, err = s.Seats.Hold(ctx, fans["bob"], sA, "VIP-3", 100, t0)
	require.NoError(t, err)
	assert.Positive(t, counter(t, reg, "ticketrush_redis_unreplicated_writes_total"))

	// A master left alone is not waited for on every step (each wait would last config.ReplicaWait in vain):
	// 20 charges in one slot send WAIT once, or again only once aloneFor has passed.
	master, err := rueidis.NewClient(rueidis.ClientOption{ForceSingleClient: true, DisableCache: true,
		InitAddress: []string{"127.0.0.1:" + strconv.Itoa(pc.MasterOf(t, c, s.keys.Wallet("dave").Balances()))}})
	require.NoError(t, err)
	defer master.Close()
	waits := func() int {
		info, err := master.Do(ctx, master.B().Info().Section("commandstats").Build()).ToString()
		require.NoError(t, err)
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls="); ok {
				n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				require.NoError(t, err)
				return n
			}
		}
		return 0
	}
	before := waits()
	for range 20 {
		_, _, err := s.Wallet.Charge(ctx, "dave", 1, "", "", t0)
		require.NoError(t, err)
	}
	assert.Less(t, waits()-before, 5, "WAITs sent to a master without a replica for 20 charges")
}

// counter sums the samples of a counter family of reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// On a cluster just formed every replica is still in its first full sync, which Redis starts 5 s after
// the replica asks: the money steps of its master are answered, taken unreplicated and counted, not
// refused for as long as the sync takes; meanwhile the store says how many slots are in that state.
func TestJustFormedClusterTakesChargesOnCluster(t *testing.T) {
	pc := dbtest.StartFormingCluster(t, clusterPorts)
	c := dbtest.Client(t, pc.URL)
	ctx := context.Background()
	syncing := 0
	for port := pc.Base; port < pc.Base+6; port++ {
		node, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(port)},
			ForceSingleClient: true, DisableCache: true})
		require.NoError(t, err)
		info, err := node.Do(ctx, node.B().Info().Section("replication").Build()).ToString()
		node.Close()
		require.NoError(t, err)
		if strings.Contains(info, "role:master") && !strings.Contains(info, "state=online") {
			syncing++
		}
	}
	require.Positive(t, syncing, "the test needs a master whose replica is still in its first sync")

	reg := prometheus.NewRegistry()
	s := NewStore(c, dbtest.Name("t"), reg)
	s.WaitForReplica(config.ReplicaWait)
	const fans = 60 // over the 64 wallet shards: every master's
	errs := make(chan error, fans)
	var wg sync.WaitGroup
	for i := range fans {
		wg.Go(func() {
			_, _, err := s.Wallet.Charge(ctx, fmt.Sprintf("fresh-%d", i), 500, "", "", t0)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	refused := 0
	for err := range errs {
		if err != nil {
			refused++
			assert.ErrorIs(t, err, ErrNotReplicated)
		}
	}
	assert.Zero(t, refused, "charges refused while the replicas were in their first sync, of %d", fans)
	assert.Positive(t, counter(t, reg, "ticketrush_redis_unreplicated_writes_total"))
	assert.Positive(t, s.UnreplicatedSlots(), "the store says its writes are taken unreplicated")
}
