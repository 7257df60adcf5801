//go:build scaleout

package main

// Readiness after a failover (`make scaleout`; docs/faults.md, "Readiness"): three api instances and a
// scheduler and write-behind instance on the scale-out test's private cluster (ports 7100-7105). The
// master that holds the state marker (and a third of the wallet shards) is SIGKILLed. Once its replica is
// elected, every live node serves every slot and reports cluster_state:ok, and one more second has
// passed, a load balancer probes each instance every 50 ms: at least 198 of 200 /readyz probes must answer
// 200 on every instance, and as many reads of wallets that lived on the dead master. Nothing touches the
// dead master's slots between the kill and the probes but the processes' own loops, so a client that read
// the slot map only after a failed command would still name the dead master after the election; the
// client's own read of the map every second (redis.SlotMapRefresh) is what this holds.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
)

const (
	failoverProbes   = 200 // probes counted per instance after the failover
	failoverMinReady = 198 // of which at least this many must answer 200
	probeEvery       = 50 * time.Millisecond
	settleAfterWhole = time.Second // from the cluster being whole to the first counted probe
)

// probeResult is one probe of a load balancer: when it was sent and what came back.
type probeResult struct {
	at     time.Time
	took   time.Duration
	status int // 0: no answer
	body   string
}

// balancer probes one instance every probeEvery, as the load balancer did: n probes from a given
// time; with fans, each round also reads the balance of one of them (GET /v1/points, a keyed Redis read
// of their wallet shard).
type balancer struct {
	n      *node
	fans   []fan
	ready  []probeResult
	wallet []probeResult
}

func (b *balancer) run(from time.Time, n int, stop <-chan struct{}) {
	select {
	case <-stop:
		return
	case <-time.After(time.Until(from)): // the time the probes start, not a wait for a condition
	}
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for i := range n {
		b.ready = append(b.ready, probeOnce(b.n.api, req{method: "GET", path: "/readyz"}))
		if len(b.fans) > 0 {
			f := b.fans[i%len(b.fans)]
			b.wallet = append(b.wallet, probeOnce(b.n.api, req{method: "GET", path: "/v1/points", headers: f.auth("")}))
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func probeOnce(s *service, r req) probeResult {
	at := time.Now()
	res, err := s.send(r)
	if err != nil {
		return probeResult{at: at, took: time.Since(at), body: err.Error()}
	}
	return probeResult{at: at, took: time.Since(at), status: res.status, body: string(res.body)}
}

// answered200 counts the probes answered 200, describes the first few others and gives the slowest
// answer.
func answered200(probes []probeResult) (int, []string, time.Duration) {
	ok := 0
	var others []string
	var slowest time.Duration
	for _, p := range probes {
		slowest = max(slowest, p.took)
		if p.status == http.StatusOK {
			ok++
		} else if len(others) < 5 {
			others = append(others, fmt.Sprintf("%s: %d %s", p.at.Format("15:04:05.000"), p.status, strings.TrimSpace(p.body)))
		}
	}
	return ok, others, slowest.Round(time.Millisecond)
}

// lastOther says when the last probe that was not answered 200 was sent, relative to whole.
func lastOther(probes []probeResult, whole time.Time) string {
	for i := len(probes) - 1; i >= 0; i-- {
		if probes[i].status != http.StatusOK {
			return probes[i].at.Sub(whole).Round(time.Millisecond).String()
		}
	}
	return "never"
}

// clusterWhole reports whether the live node's slot map covers every slot with a master other than
// dead, and the node reports cluster_state:ok.
func clusterWhole(ctx context.Context, c rueidis.Client, dead int) (bool, string) {
	info, err := c.Do(ctx, c.B().ClusterInfo().Build()).ToString()
	if err != nil {
		return false, err.Error()
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return false, "cluster_state is not ok"
	}
	slots, err := c.Do(ctx, c.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return false, err.Error()
	}
	covered := int64(0)
	for _, sh := range slots {
		r, err := sh.ToArray()
		if err != nil || len(r) < 3 {
			return false, "malformed CLUSTER SLOTS reply"
		}
		lo, _ := r[0].AsInt64()
		hi, _ := r[1].AsInt64()
		master, _ := r[2].ToArray()
		if len(master) < 2 {
			return false, "malformed CLUSTER SLOTS reply"
		}
		if port, _ := master[1].AsInt64(); int(port) == dead {
			return false, fmt.Sprintf("slots %d-%d still have the dead master %d", lo, hi, dead)
		}
		covered += hi - lo + 1
	}
	if covered != 16384 {
		return false, fmt.Sprintf("%d slots served", covered)
	}
	return true, ""
}

func TestScaleOutReadinessAfterFailover(t *testing.T) {
	pc := dbtest.StartPrivateCluster(t, scaleoutPorts)
	dbURL := dbtest.Postgres(t)
	bin, env := scaleoutBinary(t, pc.URL, dbURL)
	var nodes []*node
	for _, roles := range []string{"api", "api", "api", "scheduler,writebehind"} {
		nodes = append(nodes, startNode(t, bin, roles, env))
	}
	apis := nodes[:3]

	// A concert, so that readiness checks its slot as well as the wallet shards'.
	res := apis[0].api.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": "Failover", "venue": "Cluster Hall", "schedules": []string{"2026-12-24T10:00:00Z"},
		"sections": []map[string]any{{"name": "R", "price": scaleSeatPrice, "seats": 10}},
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var concert struct{ ID string }
	require.NoError(t, json.Unmarshal(res.body, &concert))
	for _, a := range apis {
		require.Eventually(t, func() bool {
			res, err := a.api.send(req{method: "GET", path: "/admin/v1/concerts/" + concert.ID + "/queue", headers: admin()})
			return err == nil && res.status == http.StatusOK
		}, 30*time.Second, 50*time.Millisecond, "the concert never reached an api instance")
	}
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			res, err := n.api.send(req{method: "GET", path: "/readyz"})
			return err == nil && res.status == http.StatusOK
		}, 30*time.Second, 50*time.Millisecond, "%s process never ready before the kill", n.roles)
	}

	// The master to kill holds the state marker; fans whose wallets it holds.
	rc := dbtest.Client(t, pc.URL)
	keys := redis.NewKeys("tr")
	killed := pc.MasterOf(t, rc, keys.State())
	var fans []fan
	for i := 0; len(fans) < 8; i++ {
		require.Less(t, i, 500, "no 8 wallets on master %d", killed)
		id := dbtest.Name("fo-")
		if pc.MasterOf(t, rc, keys.Wallet(id).Balances()) == killed {
			fans = append(fans, newFan(t, id))
		}
	}
	// One client per live node, to watch the election from each node's side.
	live := map[int]rueidis.Client{}
	for port := pc.Base; port < pc.Base+6; port++ {
		if port == killed {
			continue
		}
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(port)},
			ForceSingleClient: true, DisableCache: true})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		live[port] = c
	}

	pc.Kill(t, killed)
	killedAt := time.Now()
	ctx := context.Background()
	var why string
	require.Eventually(t, func() bool {
		for port, c := range live {
			if ok, reason := clusterWhole(ctx, c, killed); !ok {
				why = fmt.Sprintf("node %d: %s", port, reason)
				return false
			}
		}
		return true
	}, time.Minute, 50*time.Millisecond, "the cluster was not whole a minute after the kill: %s", &why)
	whole := time.Now()
	t.Logf("SIGKILLed master %d; %s later every live node served every slot and reported cluster_state:ok; "+
		"the probes start %s after that", killed, whole.Sub(killedAt).Round(time.Millisecond), settleAfterWhole)

	// Load balancers probe every instance, 200 times each at 50 ms: 10 s, and more on a slow machine.
	stop := make(chan struct{})
	var probing sync.WaitGroup
	lbs := make([]*balancer, len(nodes))
	for i, n := range nodes {
		lbs[i] = &balancer{n: n}
		if i < len(apis) {
			lbs[i].fans = fans
		}
		probing.Go(func() { lbs[i].run(whole.Add(settleAfterWhole), failoverProbes, stop) })
	}
	probed := make(chan struct{})
	go func() { probing.Wait(); close(probed) }()
	select {
	case <-probed:
	case <-time.After(settleAfterWhole + failoverProbes*probeEvery + 2*time.Minute):
		close(stop)
		<-probed
		t.Fatalf("the balancers did not send their %d probes in time", failoverProbes)
	}
	for i, lb := range lbs {
		require.False(t, lb.n.exited(), "%s process exited:\n%s", lb.n.roles, lb.n.log())
		ok, others, slowest := answered200(lb.ready)
		t.Logf("failover readiness: %s instance %d: %d of %d /readyz probes answered 200 (the slowest in %s); "+
			"the last other was sent %s after the cluster was whole", lb.n.roles, i, ok, len(lb.ready), slowest,
			lastOther(lb.ready, whole))
		assert.GreaterOrEqual(t, ok, failoverMinReady, "%s instance %d: /readyz after the failover; first others:\n%s",
			lb.n.roles, i, strings.Join(others, "\n"))
		if len(lb.fans) == 0 {
			continue
		}
		ok, others, slowest = answered200(lb.wallet)
		t.Logf("failover readiness: %s instance %d: %d of %d reads of wallets on the dead master answered 200 "+
			"(the slowest in %s); the last other was sent %s after the cluster was whole", lb.n.roles, i, ok,
			len(lb.wallet), slowest, lastOther(lb.wallet, whole))
		assert.GreaterOrEqual(t, ok, failoverMinReady, "%s instance %d: wallet reads after the failover; first others:\n%s",
			lb.n.roles, i, strings.Join(others, "\n"))
	}
}
