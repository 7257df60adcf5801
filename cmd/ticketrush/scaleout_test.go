//go:build scaleout

package main

// The scale-out test (`make scaleout`, which `make test` runs): the real binary as 3 api, 2 scheduler
// and 2 writebehind processes on a Redis Cluster of the test's own (ports 7100-7105, bus 17100-17105,
// so that killing one of its masters disturbs no other test), three concerts, fans spread over the api
// instances, and a master that serves a block of one concert's seats and the own slots of the two
// others SIGKILLed mid-sale.
// What the fans were told (the client ledger) is checked against Redis and Postgres at the end.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/linearize"
	"github.com/ticketrush/ticketrush/internal/redis"
)

const (
	scaleoutPorts    = 7100 // the private cluster's first port
	scaleoutConcerts = 3
	fansPerConcert   = 100
	seatsPerConcert  = 60
	activeCapacity   = 25
	killAfterPaid    = 60 // payments acknowledged before the master is killed
)

func TestScaleOut(t *testing.T) {
	pc := dbtest.StartPrivateCluster(t, scaleoutPorts)
	dbURL := dbtest.Postgres(t)
	bin, env := scaleoutBinary(t, pc.URL, dbURL)

	var nodes []*node
	for _, roles := range []string{"api", "api", "api", "scheduler", "scheduler", "writebehind", "writebehind"} {
		nodes = append(nodes, startNode(t, bin, roles, env))
	}
	apis := nodes[:3]
	pids := map[*node]int{}
	for _, n := range nodes {
		pids[n] = n.cmd.Process.Pid
	}

	// Three concerts and a master to kill. A concert's line is spread over the cluster (lineShards: 8 per
	// master) and so are its seats: its schedule's seats, holds and reservations live in a block of seat
	// slots, one a master (docs/scaleout.md, "One concert over every master: seat slots"). Where
	// each lives is read as the service reads it: the layout in the concert's settings (ReadLayout), the
	// schedule's blocks in it (Layout.Blocks), their keys. The master killed below serves a block of the
	// seats of concerts[0] and the own slots (the line's admissions, the holds' gate) of concerts[1] and
	// [2] (and a block of their seats too).
	rc := dbtest.Client(t, pc.URL)
	keys := redis.NewKeys("tr")
	var created, concerts []concertRef
	killed := 0
	for i := 0; concerts == nil; i++ {
		require.Less(t, i, 60, "no three concerts, one with seats on a master that serves the own slot of the two others")
		id, sched := createSaleConcert(t, apis[0].api, "Scale-out "+strconv.Itoa(i), seatsPerConcert, activeCapacity)
		created = append(created, placeConcert(t, pc, rc, keys, id, sched))
		concerts, killed = pickConcerts(created)
	}
	for i, c := range concerts { // the master of each line shard, as the service names the shard's keys
		for n := range c.layout.Shards {
			concerts[i].shards = append(concerts[i].shards, pc.MasterOf(t, rc, keys.Concert(c.id).Placed(c.layout.ShardAt).Shard(n).Places()))
		}
	}
	for _, c := range concerts {
		waitKnown(t, apis, c.id)
	}

	sl := startSale(t, apis, concerts, fansPerConcert, seatsPerConcert, activeCapacity)
	l, history := sl.l, sl.history

	// Mid-sale, the master of concerts[0]'s seats is SIGKILLed; its replica is elected and the sale goes
	// on. Just before, that master itself (not the cluster's routing) must serve the seat slot of
	// concerts[0] and hold seats of the sale in it: the kill lands on the seats it means to. The
	// checker's failover is for the seats of the seat slots that lived there, and only those.
	require.Eventually(t, func() bool { return l.paid.Load() >= killAfterPaid }, 2*time.Minute, 10*time.Millisecond,
		"%d payments acknowledged before the kill", l.paid.Load())
	seatsKey := concerts[0].seatsOn(keys, killed)
	taken := seatsOnNode(t, pc, killed, seatsKey)
	require.Positive(t, taken, "master %d holds no seat of concert %s (%s): the kill would miss the sale's seats",
		killed, concerts[0].id, seatsKey)
	killing := time.Now()
	pc.Kill(t, killed)
	killedAt := time.Now()
	byID := map[string]concertRef{}
	for _, c := range concerts {
		byID[c.id] = c
	}
	// A seat failed over when the seat slot of its block lived on the killed master.
	failedOver := func(s linearize.Seat) bool {
		c := byID[s.Concert]
		return c.blocks[c.layout.Slot(s.Schedule, s.ID)] == killed
	}
	history.Failover(killing, killedAt, failedOver)
	t.Logf("SIGKILLed master %d at %s into the sale, after %d payments: a seat slot of concert %s (%d seats taken), "+
		"the own slots of concerts %s and %s, and %s of the concerts' line shards",
		killed, killedAt.Sub(sl.started).Round(time.Millisecond), l.paid.Load(), concerts[0].id, taken, concerts[1].id,
		concerts[2].id, shardsOn(concerts, killed))

	sl.finish(t, 3*time.Minute)

	// The error window: from the kill to the end of the last request that failed (5xx, no answer) or
	// waited a second or more; the recovery: from the kill to the first hold or payment of concerts[0]
	// (whose seats were on the killed master) sent after the kill that succeeded.
	w := l.errorsSince(killedAt)
	t.Logf("scaleout: %d fans, %d charges, %d holds, %d payments acknowledged; after the kill %d requests failed and "+
		"%d took 1 s or more (slowest %s); error window %s; first write to the failed-over seats succeeded %s "+
		"after the kill; %d over-admission samples of %d",
		scaleoutConcerts*fansPerConcert, len(l.charges), len(l.holds), len(l.payments), w.failures, w.slow,
		w.slowest.Round(time.Millisecond), w.window.Round(time.Millisecond), w.firstWrite.Sub(killedAt).Round(time.Millisecond),
		sl.over.Load(), sl.samples.Load())

	// What the fans saw, checked by porcupine: each seat's history against the seat model (AVAILABLE,
	// HELD by one fan, SOLD), each line's against its capacity (internal/linearize). The failover's
	// documented losses are in the models: the seats on the dead master may lose what no replica had
	// confirmed (a cancel, a hold without an answer), and an admission the dead master took with it
	// shows as a fan told their token is not ACTIVE (an out). A refusal may read a seat view 1 s old.
	sl.checkHistory(t, "scaleout")
	assert.False(t, w.firstWrite.IsZero(), "no hold or payment of the failed-over seats succeeded after the kill")

	// No process restarted; each is ready on every probe (readiness follows the election).
	for _, n := range nodes {
		require.False(t, n.exited(), "%s process %d exited:\n%s", n.roles, pids[n], n.log())
		require.Equal(t, pids[n], n.cmd.Process.Pid)
		for i := range 20 {
			res, err := n.api.send(req{method: "GET", path: "/readyz"})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.status, "%s process, readyz probe %d after the failover: %s", n.roles, i, res.body)
		}
	}

	// The seats the checker failed over are those that did: a block's seat slot is served by another
	// master now (the killed one's replica, elected) exactly when the checker was told the seats of that
	// block failed over (the check asks a seat of each block).
	for _, c := range concerts {
		for _, slot := range c.layout.Blocks(c.sched) {
			seat := ""
			for i := 1; i <= seatsPerConcert && seat == ""; i++ {
				if id := fmt.Sprintf("R-%d", i); c.layout.Slot(c.sched, id) == slot {
					seat = id
				}
			}
			require.NotEmpty(t, seat, "no seat of concert %s in block %s", c.id, slot)
			now := pc.MasterOf(t, rc, keys.Concert(c.id).Schedule(slot).Seats())
			told := failedOver(linearize.Seat{Concert: c.id, Schedule: c.sched, ID: seat})
			assert.NotEqual(t, killed, now, "the seats of concert %s, block %s, are still on the killed master", c.id, slot)
			assert.Equal(t, now != c.blocks[slot], told, "concert %s, block %s: seats on master %d before the kill and %d "+
				"after, failed over for the checker: %v", c.id, slot, c.blocks[slot], now, told)
		}
	}

	// The write-behind's warnings during the outage: each kind logged at most once per 5 s (a worker
	// logged about 770 a second before), every one counted.
	for _, n := range nodes[5:] {
		logged := 0
		for _, line := range strings.Split(n.log(), "\n") {
			if strings.Contains(line, `"level":"WARN","msg":"writebehind: `) {
				logged++
			}
		}
		counted := n.api.sum("ticketrush_writebehind_warnings_total")
		t.Logf("scaleout: writebehind process %d logged %d warnings and counted %.0f", pids[n], logged, counted)
		assert.LessOrEqual(t, float64(logged), counted, "a logged warning that was not counted")
		assert.Less(t, logged, 100, "write-behind warnings are not rate-limited")
	}
	// The write-behind caught up, reconcile (the command) finds Redis and Postgres in agreement, and
	// nothing acknowledged was lost, no seat was sold twice, and the money adds up.
	checkRecords(t, bin, env, dbURL, nodes[5:], apis, l)
}

// pickConcerts returns three of created and a master to kill (nil when there are none yet): the first
// with seats (a block of its schedule's) on that master and its own slot elsewhere, the second and third
// with their own slots there. Killing it fails over a block of each one's seats that lives there, the
// admissions of the second and third, and the line shards (and their fans' gates) it served.
func pickConcerts(created []concertRef) ([]concertRef, int) {
	for _, a := range created {
		for _, m := range a.blocks {
			if m == a.own {
				continue
			}
			var others []concertRef
			for _, b := range created {
				if b.id != a.id && b.own == m {
					others = append(others, b)
				}
			}
			if len(others) >= 2 {
				return []concertRef{a, others[0], others[1]}, m
			}
		}
	}
	return nil, 0
}

// shardsOn says how many of each concert's line shards lived on master port.
func shardsOn(concerts []concertRef, port int) string {
	out := make([]string, len(concerts))
	for i, c := range concerts {
		n := 0
		for _, m := range c.shards {
			if m == port {
				n++
			}
		}
		out[i] = fmt.Sprintf("%d/%d", n, len(c.shards))
	}
	return strings.Join(out, ", ")
}
