//go:build partition

package main

// The partition suite (`make partition`, which `make test` runs; docs/faults.md, "Partitions"): the
// real binary as 3 api, 1 scheduler and 2 writebehind processes, each in a cgroup of its own, on a Redis
// Cluster whose six nodes each listen on and send from a loopback address of their own (127.0.0.31-36,
// ports 7300-7305), with links, not processes, failing mid-sale: cut (iptables DROP), lossy (a share of
// the packets dropped) or slow (a delaying proxy that the api processes' connections to each node go
// through from the start, by a DNAT rule). Each scenario runs a sale of its own concert and checks what
// the fans were told (the client ledger, the histories for the linearizability checker) against Redis
// and Postgres after reconcile, and prints one line that begins "PARTITION SUMMARY <scenario>:".

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/linearize"
	"github.com/ticketrush/ticketrush/internal/redis"
)

const (
	partitionPorts    = 7300 // the private cluster's first port (bus 17300-17305)
	partitionFans     = 60   // fans per wave; a scenario sends a second wave while its fault lasts
	partitionSeats    = 150
	partitionCapacity = 20
	// partitionNodeTimeout is the cluster's cluster-node-timeout: how long a master cut off from the
	// majority goes on taking writes, and how long before the majority elects its replica. 5 s (the
	// other test clusters use 2 s) gives the split brain's old master seconds of writes from the sale.
	partitionNodeTimeout = 5 * time.Second
	// partitionCut is how long a cut lasts: past the node timeout, so that the majority elects a
	// replica and a master alone notices it is in the minority.
	partitionCut = 10 * time.Second
	// partitionSyncDelay holds back the replicas' first full sync after the cluster forms
	// (repl-diskless-sync-delay; Redis's default is 5 s, set back after the first scenario), so that
	// the processes start and the first storm lands while every replica is still waiting for it.
	partitionSyncDelay = 20 * time.Second
	// requestBound is the longest a fan may wait for an answer: the service's request deadline (2 s,
	// docs/faults.md) and the slow link's round trip on top.
	requestBound = 3 * time.Second
)

// partitionHosts are the nodes' addresses, in port order.
var partitionHosts = []string{"127.0.0.31", "127.0.0.32", "127.0.0.33", "127.0.0.34", "127.0.0.35", "127.0.0.36"}

// partitionRig is the topology every scenario runs on.
type partitionRig struct {
	net     *dbtest.Net
	pc      *dbtest.PrivateCluster
	rc      rueidis.Client
	keys    redis.Keys
	bin     string
	env     []string
	dbURL   string
	nodes   []*node // api, api, api, scheduler, writebehind, writebehind
	apis    []*node
	wbs     []*node
	groups  []string              // each node's cgroup
	proxies map[int]*dbtest.Proxy // by node port: the api processes' path to that node
	pg      *dbtest.Proxy         // the write-behind processes' path to Postgres
	via     func(port int) string // the address of the api processes' proxy to a node
}

func TestPartition(t *testing.T) {
	r := &partitionRig{net: dbtest.NewNet(t), keys: redis.NewKeys("tr"), proxies: map[int]*dbtest.Proxy{}}
	r.dbURL = dbtest.Postgres(t)
	r.bin, r.env = scaleoutBinary(t, "", r.dbURL) // built before the cluster forms: its first sync waits for nobody
	r.pc = dbtest.StartSplittableCluster(t, partitionPorts, partitionHosts, partitionNodeTimeout, partitionSyncDelay)
	r.env = append(r.env, "REDIS_URL="+r.pc.URL)
	r.via = func(port int) string { return fmt.Sprintf("127.0.0.%d", 41+port-partitionPorts) }
	r.rc = dbtest.Client(t, r.pc.URL)
	r.pg = dbtest.NewProxy(t, "127.0.0.1:5432")
	wbEnv := append(append([]string(nil), r.env...), "DATABASE_URL="+r.pg.Through(t, r.dbURL))

	roles := []string{"api", "api", "api", "scheduler", "writebehind", "writebehind"}
	for i, role := range roles {
		r.groups = append(r.groups, r.net.Group(fmt.Sprintf("%s%d", role, i)))
	}
	// The api processes reach each node through a proxy of its own (on 127.0.0.41-46), redirected there
	// before they connect, so that scenario 3 can slow that path alone.
	for port := partitionPorts; port < partitionPorts+6; port++ {
		addr := fmt.Sprintf("%s:%d", r.via(port), port)
		r.proxies[port] = dbtest.NewProxyOn(t, addr, r.pc.Addr(port))
		for _, g := range r.groups[:3] {
			r.net.Redirect(dbtest.Link{FromGroup: g, To: r.pc.Host(port), Port: port}, addr)
		}
	}
	for i, role := range roles {
		env := r.env
		if role == "writebehind" {
			env = wbEnv
		}
		r.nodes = append(r.nodes, startNodeCmd(t, r.net.Command(r.groups[i], r.bin, "serve"), role, env))
	}
	r.apis, r.wbs = r.nodes[:3], r.nodes[4:]

	t.Run("just-formed", func(t *testing.T) { r.justFormed(t) })
	t.Run("split-brain", func(t *testing.T) { r.splitBrain(t) })
	t.Run("api-cut-off", func(t *testing.T) { r.apiCutOff(t) })
	t.Run("slow-lossy", func(t *testing.T) { r.slowLossy(t) })
	t.Run("writebehind-cut-off", func(t *testing.T) { r.writebehindCutOff(t) })
	t.Run("replica-resync", func(t *testing.T) { r.replicaResync(t) })
}

// 0. A cluster just formed: the service ready, every replica still waiting for its first full sync. A
// storm of charges through every api process is answered, taken unreplicated and counted, not refused
// 503 for want of a replica that has nothing yet.
func (r *partitionRig) justFormed(t *testing.T) {
	const charges, clients = 200, 32
	r.ready(t, 30*time.Second, "on the cluster just formed")
	syncing, replicas := 0, r.pc.Replicas(t)
	for _, port := range replicas {
		if !r.pc.Synced(t, port) {
			syncing++
		}
	}
	began := time.Now()
	var answered, refused, failed atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range jobs {
				f := newFan(t, dbtest.Name("jf-"))
				res, err := r.apis[i%len(r.apis)].api.send(req{method: "POST", path: "/v1/points/charges",
					headers: append(f.auth(""), "Idempotency-Key", dbtest.Name("charge-")), body: map[string]any{"amount": 100}})
				switch {
				case err != nil:
					failed.Add(1)
				case res.status >= 500:
					refused.Add(1)
				case res.status == http.StatusCreated:
					answered.Add(1)
				}
			}
		})
	}
	for i := range charges {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	unreplicated := r.unreplicated()
	fmt.Printf("PARTITION SUMMARY just-formed: %d charges from %d clients in %s, %d of %d replicas not yet synced at the start; "+
		"%d answered 201, %d refused, %d unanswered; %.0f taken unreplicated\n", charges, clients,
		time.Since(began).Round(time.Millisecond), syncing, len(replicas), answered.Load(), refused.Load(), failed.Load(), unreplicated)
	assert.Positive(t, syncing, "the replicas had synced before the storm: the scenario missed its window")
	assert.Positive(t, unreplicated, "no charge was taken while a replica synced: the scenario missed its window")
	assert.Equal(t, int64(charges), answered.Load(), "charges not answered 201 on the cluster just formed")

	r.inSync(t)
}

// inSync makes the cluster's full syncs wait Redis's default 5 s and waits until every replica has
// synced: the other scenarios run on a cluster in sync, each on its own too (-run picks one), where the
// replica elected in a failover has the master's data.
func (r *partitionRig) inSync(t *testing.T) {
	t.Helper()
	for port := partitionPorts; port < partitionPorts+6; port++ {
		node, err := r.pc.Node(port)
		require.NoError(t, err)
		require.NoError(t, node.Do(context.Background(), node.B().ConfigSet().ParameterValue().ParameterValue("repl-diskless-sync-delay", "5").Build()).Error())
		node.Close()
	}
	for _, port := range r.pc.Replicas(t) {
		require.Eventually(t, func() bool { return r.pc.Synced(t, port) }, time.Minute, 20*time.Millisecond,
			"replica %d never finished its sync", port)
	}
}

// concert creates a concert for one scenario, on a cluster in sync, and returns where it lives.
func (r *partitionRig) concert(t *testing.T, name string) concertRef {
	t.Helper()
	r.inSync(t)
	id, sched := createSaleConcert(t, r.apis[0].api, "Partition "+name, partitionSeats, partitionCapacity)
	ref := placeConcert(t, r.pc, r.rc, r.keys, id, sched)
	waitKnown(t, r.apis, id)
	return ref
}

// fault is one scenario's fault: begin starts it (mid-sale), heal ends it.
type fault struct {
	begin func() (heal func())
	lasts time.Duration
	// failover says that the fault may move the seats on the concert's seat master to its replica
	// (for the checker: what no replica confirmed may be lost).
	failover bool
}

// result is what a scenario measured.
type result struct {
	sale          *sale
	began, healed time.Time
	w             errorWindow
	recovered     time.Duration // from the heal to the end of the last failed request after it (0: none)
	ready         time.Duration // from the heal until every process answered /readyz 200
	verdict       string
	lost          int
}

// run runs a sale on c with f in the middle: a first wave of fans, the fault once some payments are
// acknowledged, a second wave while it lasts, the heal, and then every check.
func (r *partitionRig) run(t *testing.T, name string, c concertRef, f fault) result {
	t.Helper()
	sl := startSale(t, r.apis, []concertRef{c}, partitionFans, partitionSeats, partitionCapacity)
	sl.l.probe = r.probe
	require.Eventually(t, func() bool { return sl.l.paid.Load() >= 10 }, 2*time.Minute, 10*time.Millisecond,
		"%d payments acknowledged before the fault", sl.l.paid.Load())
	res := result{sale: sl, began: time.Now()}
	heal := f.begin()
	time.Sleep(f.lasts / 3) // the fault's duration: what is being tested, not synchronisation
	sl.add(t, r.apis, []concertRef{c}, partitionFans, partitionSeats)
	time.Sleep(f.lasts - f.lasts/3)
	heal()
	res.healed = time.Now()
	if f.failover {
		sl.history.Failover(res.began, res.healed, func(s linearize.Seat) bool { return s.Concert == c.id })
	}

	// Readiness: every process answers 200 again within a few seconds of the heal, none restarted.
	for _, n := range r.nodes {
		require.False(t, n.exited(), "%s process exited:\n%s", n.roles, n.log())
	}
	r.ready(t, 15*time.Second, "after the heal")
	res.ready = time.Since(res.healed)
	sl.finish(t, 2*time.Minute)

	res.w = sl.l.errorsSince(res.began)
	if last := sl.l.lastFailure(); last.After(res.healed) {
		res.recovered = last.Sub(res.healed)
	}
	assert.LessOrEqual(t, res.w.slowest, requestBound, "a request waited past the request deadline")
	assert.Less(t, res.recovered, 10*time.Second, "requests still failed long after the heal")
	res.verdict = fmt.Sprint(sl.checkHistory(t, "partition-"+name))
	res.lost = checkRecords(t, r.bin, r.env, r.dbURL, r.wbs, r.apis, sl.l)
	assert.Zero(t, sl.l.joinsLost.Load(), "acknowledged joins lost:\n%s", strings.Join(sl.l.lostJoins, "\n"))
	if len(sl.l.lostFans) > 0 { // what the concert's outbox says of them
		evs, err := r.rc.Do(context.Background(), r.rc.B().Xrange().Key(r.keys.Concert(c.id).Events()).Start("-").End("+").Build()).ToArray()
		require.NoError(t, err)
		for _, e := range evs {
			kv, _ := e.AsXRangeEntry()
			for _, u := range sl.l.lostFans {
				if strings.Contains(fmt.Sprint(kv.FieldValues), u) {
					t.Logf("event %s %v", kv.ID, kv.FieldValues)
				}
			}
		}
	}
	t.Logf("%s: fault from %s to %s", name, res.began.Format("15:04:05.000"), res.healed.Format("15:04:05.000"))
	l := sl.l
	l.mu.Lock()
	summary := fmt.Sprintf("PARTITION SUMMARY %s: acknowledged %d joins, %d charges, %d holds, %d cancels, %d payments; "+
		"%d lost; %d refused and %d unknown answers after the fault began; error window %s (slowest answer %s); "+
		"recovered %s after the heal, every process ready %s after it; checker %s",
		name, l.joins.Load(), len(l.charges), len(l.holds), len(l.cancels), len(l.payments),
		res.lost+int(l.joinsLost.Load()), res.w.refused, res.w.failures-res.w.refused,
		res.w.window.Round(time.Millisecond), res.w.slowest.Round(time.Millisecond),
		res.recovered.Round(time.Millisecond), res.ready.Round(time.Millisecond), res.verdict)
	l.mu.Unlock()
	fmt.Println(summary) // a line of its own in make partition's output
	return res
}

// probe reads what Redis holds of a fan of a concert: their place in their line shard, their ACTIVE
// seq and time, the head, and the leaves and quits logged on the concert's slot.
func (r *partitionRig) probe(concertID, user string) string {
	ctx := context.Background()
	k := r.keys.Concert(concertID)
	l, _, err := r.keys.ReadLayout(ctx, r.rc, concertID)
	if err != nil {
		return err.Error()
	}
	sh := k.Placed(l.ShardAt).Shard(redis.LineShard(user, l.Shards))
	get := func(cmd rueidis.Completed) string {
		v, err := r.rc.Do(ctx, cmd).ToString()
		if err != nil {
			return err.Error()
		}
		return v
	}
	all := func(cmd rueidis.Completed) string {
		v, err := r.rc.Do(ctx, cmd).AsStrSlice()
		if err != nil {
			return err.Error()
		}
		return strings.Join(v, ",")
	}
	return fmt.Sprintf("place %s, aseq %s, active %s, head %s, tail %s, left [%s], quit [%s], owed [%s]",
		get(r.rc.B().Hget().Key(sh.Places()).Field(user).Build()),
		get(r.rc.B().Hget().Key(k.ActiveSeq()).Field(user).Build()),
		get(r.rc.B().Zscore().Key(k.Active()).Member(user).Build()),
		get(r.rc.B().Get().Key(k.Head()).Build()), get(r.rc.B().Get().Key(k.Seq()).Build()),
		all(r.rc.B().Zrange().Key(k.Left()).Min("0").Max("-1").Build()),
		all(r.rc.B().Zrange().Key(k.Quit()).Min("0").Max("-1").Build()),
		all(r.rc.B().Zrange().Key(k.Owed()).Min("0").Max("-1").Build()))
}

// serviceGroups are the cgroups of every service process but the first api's.
func (r *partitionRig) serviceGroups(from int) []string { return r.groups[from:] }

// cutFromNode is every link from the groups to the node on port: to its address and, for the api
// processes, to their proxy for it.
func (r *partitionRig) cutFromNode(groups []string, port int) []dbtest.Link {
	var links []dbtest.Link
	for _, g := range groups {
		links = append(links, dbtest.Link{FromGroup: g, To: r.pc.Host(port)}, dbtest.Link{FromGroup: g, To: r.via(port)})
	}
	return links
}

// 1. The split brain: the master of the concert's seats is cut off from every other node (its replica
// included) and from every service process but the first api instance, for longer than the cluster's
// node timeout. The majority elects its replica; the first api instance goes on talking to the old
// master until the old master, alone, refuses. The cut heals and the old master rejoins as a replica.
func (r *partitionRig) splitBrain(t *testing.T) {
	c := r.concert(t, "split-brain")
	m := c.seats
	var links []dbtest.Link
	for port := partitionPorts; port < partitionPorts+6; port++ {
		if port != m {
			links = append(links, dbtest.Link{From: r.pc.Host(m), To: r.pc.Host(port)}, dbtest.Link{From: r.pc.Host(port), To: r.pc.Host(m)})
		}
	}
	links = append(links, r.cutFromNode(r.serviceGroups(1), m)...)
	// How long the old master takes writes after the cut: a write into the seats' slot, straight to it
	// from this process (which the cut spares), every 20 ms until it refuses.
	tag := c.seatsKey[strings.IndexByte(c.seatsKey, '{') : strings.IndexByte(c.seatsKey, '}')+1]
	old, err := r.pc.Node(m)
	require.NoError(t, err)
	defer old.Close()
	var tookWrites time.Duration
	res := r.run(t, "split-brain", c, fault{lasts: partitionCut, failover: true, begin: func() func() {
		cut := r.net.Cut(links...)
		probed := watch(partitionCut, &tookWrites, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			return old.Do(ctx, old.B().Set().Key(tag+"probe").Value("1").Build()).Error() != nil
		})
		return func() { <-probed; cut.Heal() }
	}})
	t.Logf("split-brain: the old master took writes for %s after the cut", tookWrites.Round(time.Millisecond))
	// What the api process that still reached the old master was answered while the cut lasted.
	l := res.sale.l
	l.mu.Lock()
	byPath := map[string][2]int{}
	for _, o := range l.outcomes {
		if o.via == r.apis[0].api.url && o.write && o.at.After(res.began) && o.at.Before(res.healed) {
			n := byPath[route(o.path)]
			if o.done {
				n[0]++
			} else {
				n[1]++
			}
			byPath[route(o.path)] = n
		}
	}
	l.mu.Unlock()
	t.Logf("split-brain: the first api process's writes during the cut (acknowledged, not): %v", byPath)
	require.Eventually(t, func() bool { return r.pc.Role(t, m) == "slave" }, 30*time.Second, 50*time.Millisecond,
		"the old master %d did not rejoin as a replica", m)
}

// 2. The reverse: every service process loses the master of the concert's seats, which the cluster
// still sees (no election).
func (r *partitionRig) apiCutOff(t *testing.T) {
	c := r.concert(t, "api-cut-off")
	m := c.seats
	// Readiness tells the truth meanwhile: an api process that cannot reach a master of the slots it
	// needs answers /readyz 503, naming redis, within the probe's 2 s deadline and a second more.
	var unready time.Duration
	var said string
	r.run(t, "api-cut-off", c, fault{lasts: partitionCut, begin: func() func() {
		cut := r.net.Cut(r.cutFromNode(r.serviceGroups(0), m)...)
		probed := watch(partitionCut, &unready, func() bool {
			res, err := r.apis[1].api.send(req{method: "GET", path: "/readyz"})
			said = string(res.body)
			return err == nil && res.status == http.StatusServiceUnavailable
		})
		return func() { <-probed; cut.Heal() }
	}})
	t.Logf("api-cut-off: /readyz answered 503 %s after the cut: %s", unready.Round(time.Millisecond), said)
	assert.NotZero(t, unready, "/readyz never said the api process could not reach a master")
	assert.Less(t, unready, 4*time.Second, "/readyz said so late")
	assert.Contains(t, said, "redis")
	assert.Equal(t, "master", r.pc.Role(t, m), "the cluster elected a replica of %d, which it could see", m)
}

// 3. A slow and lossy link: 100 ms each way and 5% of the packets dropped between the api processes and
// the master of the concert's seats, and the same between the write-behind processes and Postgres, for
// 30 s.
func (r *partitionRig) slowLossy(t *testing.T) {
	c := r.concert(t, "slow-lossy")
	m := c.seats
	var links []dbtest.Link
	for _, g := range r.groups[:3] {
		links = append(links, dbtest.Link{FromGroup: g, To: r.via(m), Port: m})
	}
	pgHost, port, err := net.SplitHostPort(r.pg.Addr())
	require.NoError(t, err)
	pgPort, err := strconv.Atoi(port)
	require.NoError(t, err)
	for _, g := range r.groups[4:] {
		links = append(links, dbtest.Link{FromGroup: g, To: pgHost, Port: pgPort})
	}
	r.run(t, "slow-lossy", c, fault{lasts: 30 * time.Second, begin: func() func() {
		r.proxies[m].Slow(100 * time.Millisecond)
		r.pg.Slow(100 * time.Millisecond)
		lossy := r.net.Lossy(0.05, links...)
		return func() {
			lossy.Heal()
			r.proxies[m].Slow(0)
			r.pg.Slow(0)
		}
	}})
}

// 4. The write-behind processes cut off from every Redis node while they hold claimed entries.
func (r *partitionRig) writebehindCutOff(t *testing.T) {
	c := r.concert(t, "writebehind-cut-off")
	var links []dbtest.Link
	for port := partitionPorts; port < partitionPorts+6; port++ {
		for _, g := range r.groups[4:] {
			links = append(links, dbtest.Link{FromGroup: g, To: r.pc.Host(port)})
		}
	}
	// What the sale wrote meanwhile waits in the concert's outboxes: its own stream (admissions, the
	// holds' gate), each line shard's (joins, leaves) and its schedule's seat slot's (holds, cancels,
	// sales). Each consumer group's lag (entries not read) and pending entries (read, not acknowledged),
	// read at the heal.
	streams := []string{r.keys.Concert(c.id).Events()}
	for _, slot := range c.layout.Blocks(c.sched) {
		streams = append(streams, r.keys.Concert(c.id).Schedule(slot).Events())
	}
	for n := range c.layout.Shards {
		streams = append(streams, r.keys.Concert(c.id).Placed(c.layout.ShardAt).Shard(n).Events())
	}
	var backlog, claimed int64
	r.run(t, "writebehind-cut-off", c, fault{lasts: partitionCut, begin: func() func() {
		cut := r.net.Cut(links...)
		return func() {
			for _, stream := range streams {
				groups, err := r.rc.Do(context.Background(), r.rc.B().XinfoGroups().Key(stream).Build()).ToArray()
				if err != nil && strings.Contains(err.Error(), "no such key") {
					continue // a shard nobody joined
				}
				require.NoError(t, err, stream)
				for _, g := range groups {
					m, err := g.AsMap()
					require.NoError(t, err)
					lag, pending := m["lag"], m["pending"]
					l, _ := lag.AsInt64()
					p, _ := pending.AsInt64()
					backlog += l + p
					claimed += p
				}
			}
			cut.Heal()
		}
	}})
	t.Logf("writebehind-cut-off: %d events of the concert (its %d streams) waited for the write-behind at the heal, "+
		"%d of them claimed (read, not yet acknowledged)", backlog, len(streams), claimed)
	assert.Positive(t, backlog, "the sale wrote nothing while the write-behind was cut off")
}

// 5. The replica of the concert's seat master restarted empty: it asks for a full sync, which the master
// starts 5 s later (repl-diskless-sync-delay) and which takes a moment more. Money calls on that master
// are answered meanwhile (taken without a replica's copy, counted), not refused.
func (r *partitionRig) replicaResync(t *testing.T) {
	c := r.concert(t, "replica-resync")
	m := c.seats
	replica := r.pc.ReplicaOf(t, m)
	before := r.unreplicated()
	res := r.run(t, "replica-resync", c, fault{lasts: 4 * time.Second, begin: func() func() {
		r.pc.Resync(t, replica)
		return func() { // the fault lasts until the replica has the master's data again
			require.Eventually(t, func() bool { return r.pc.Synced(t, replica) }, time.Minute, 20*time.Millisecond,
				"replica %d never finished its sync", replica)
		}
	}})
	after := r.unreplicated()
	t.Logf("replica-resync: %.0f writes taken without a replica's copy", after-before)
	assert.Positive(t, after-before, "no write landed while the replica synced: the scenario missed its window")
	assert.Zero(t, res.w.refused, "answers refused (5xx) while the replica synced")
}

// route is a request's method and the first two segments of its path: "POST /v1/reservations".
func route(request string) string {
	method, path, _ := strings.Cut(request, " ")
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	return method + " /" + strings.Join(parts[:min(2, len(parts))], "/")
}

// ready waits up to within for every process to answer /readyz 200.
func (r *partitionRig) ready(t *testing.T, within time.Duration, when string) {
	t.Helper()
	for _, n := range r.nodes {
		require.Eventually(t, func() bool {
			res, err := n.api.send(req{method: "GET", path: "/readyz"})
			return err == nil && res.status == http.StatusOK
		}, within, 20*time.Millisecond, "%s process not ready %s", n.roles, when)
	}
}

// unreplicated is the writes the api processes took without a replica's copy so far.
func (r *partitionRig) unreplicated() float64 {
	n := 0.0
	for _, a := range r.apis {
		n += a.api.sum("ticketrush_redis_unreplicated_writes_total")
	}
	return n
}

// watch asks seen every 20 ms, from now until it answers true or d has passed, and then sets *took to
// how long that was (0: never). The channel closes when it stops.
func watch(d time.Duration, took *time.Duration, seen func() bool) <-chan struct{} {
	at, done := time.Now(), make(chan struct{})
	go func() {
		defer close(done)
		for time.Since(at) < d {
			if seen() {
				*took = time.Since(at)
				return
			}
			time.Sleep(20 * time.Millisecond) // the probe's pace, not synchronisation
		}
	}()
	return done
}
