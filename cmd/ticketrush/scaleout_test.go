//go:build scaleout

package main

// The scale-out test (`make scaleout`, which `make test` runs): the real binary as 3 api, 2 scheduler
// and 2 writebehind processes on a Redis Cluster of the test's own (ports 7100-7105, bus 17100-17105,
// so that killing one of its masters disturbs no other test), three concerts whose seats live on three
// different masters, fans spread over the api instances, and the master of one concert's seats
// SIGKILLed mid-sale.
// What the fans were told (the client ledger) is checked against Redis and Postgres at the end.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/linearize"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

const (
	scaleoutPorts    = 7100 // the private cluster's first port
	scaleoutConcerts = 3
	fansPerConcert   = 100
	seatsPerConcert  = 60
	scaleSeatPrice   = 100
	activeCapacity   = 25
	killAfterPaid    = 60 // payments acknowledged before the master is killed
	// staleRefusal is how old a seat view's read may be when an api instance refuses a hold from it: 5
	// refreshes of 200 ms (docs/design.md, "The seat view"; SnapshotRefresh, booking's trustReads).
	// A seat freed through another instance may be refused that long after: the checker widens
	// every SEAT_UNAVAILABLE by it towards the past.
	staleRefusal = 5 * 200 * time.Millisecond
	// stalePoll is how old an api instance's view of a line may be when it answers a poll WAITING: 5
	// refreshes of 200 ms (docs/design.md, "How the waiting room works").
	stalePoll = 5 * 200 * time.Millisecond
)

// scaleQueue is the queue settings of the sale's concerts, for the models: the capacity set at the
// create, the defaults (docs/api.md, Admin) for the rest.
func scaleQueue() linearize.Queue {
	d := ticketrush.DefaultQueueSettings()
	return linearize.Queue{Capacity: activeCapacity, ActiveTTL: d.ActiveTTL, NoShow: d.NoShow,
		MaxHolds: d.MaxHoldsPerUser, HoldTTL: d.HoldTTL}
}

// node is one `ticketrush serve` process.
type node struct {
	roles string
	cmd   *exec.Cmd
	api   *service
	done  chan struct{}
	mu    sync.Mutex
	logs  strings.Builder
}

func (n *node) log() string { n.mu.Lock(); defer n.mu.Unlock(); return n.logs.String() }

func (n *node) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

func startNode(t *testing.T, bin, roles string, env []string) *node {
	t.Helper()
	n := &node{roles: roles, cmd: exec.Command(bin, "serve"), done: make(chan struct{})}
	n.cmd.Env = append(env, "ROLES="+roles)
	out, err := n.cmd.StdoutPipe()
	require.NoError(t, err)
	n.cmd.Stderr = n.cmd.Stdout
	require.NoError(t, n.cmd.Start())
	listening := make(chan string, 1)
	go func() {
		defer close(n.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			n.mu.Lock()
			n.logs.WriteString(line + "\n")
			n.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.Addr
			}
		}
		_ = n.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		<-n.done
		if t.Failed() {
			log := n.log()
			if len(log) > 20000 {
				log = log[len(log)-20000:]
			}
			t.Logf("%s process %d log (tail):\n%s", roles, n.cmd.Process.Pid, log)
		}
	})
	select {
	case addr := <-listening:
		n.api = &service{url: "http://" + addr, client: &http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	case <-n.done:
		t.Fatalf("%s process exited before listening:\n%s", roles, n.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s process did not listen within a minute:\n%s", roles, n.log())
	}
	return n
}

// outcome is one request a fan made: when, and whether it failed for want of the service (5xx or no
// answer) rather than being answered.
type outcome struct {
	at      time.Time
	failed  bool
	concert int
	write   bool // a hold or a payment
	done    bool // answered 2xx
	took    time.Duration
}

// ledger is what the fans were told.
type ledger struct {
	mu       sync.Mutex
	charges  map[string]int64  // charge id -> amount
	holds    map[string]string // reservation id -> user
	payments map[string]string // reservation id -> payment id
	users    map[string]bool
	outcomes []outcome
	paid     atomic.Int64
}

func (l *ledger) record(o outcome) { l.mu.Lock(); l.outcomes = append(l.outcomes, o); l.mu.Unlock() }

// scaleFan is one fan of the sale: charge, join, wait for ACTIVE, hold a seat (every third fan cancels
// their first hold and holds another), pay; a request the service could not answer (5xx, no answer)
// is sent again, with the same Idempotency-Key. Every join, admission, hold, cancel, payment and leave
// goes into rec as the fan saw it, for the linearizability check (see op).
type scaleFan struct {
	fan
	api     *service
	concert int
	id      string // the concert's id
	sched   string
	cancels bool // cancel the first hold
	l       *ledger
	rec     *linearize.Recorder
	stop    <-chan struct{}

	seenActive time.Time // when the fan saw their token ACTIVE
	unsure     bool      // a hold of the fan's got no answer: it may be open, and keep the token from DONE
}

// op records a request in the Recorder: begin starts the operation as the request goes out, end ends
// it from an answer of the service (2xx, 4xx). A try the service could not answer (5xx, no answer) ends
// Unknown: it may or may not have happened. A request that acts once however often it is sent (once:
// a payment with its Idempotency-Key, a join, a leave) is one operation from its first try's call to
// the answer; any other (a hold, a cancel) is an operation per try.
type op struct {
	once    bool
	begin   func() *linearize.Call
	end     func(*linearize.Call, response)
	unknown func() // optional: a try ended Unknown
}

func (f *scaleFan) send(r req, write bool, rec ...op) (response, bool) {
	var c *linearize.Call
	for {
		if len(rec) > 0 && c == nil {
			c = rec[0].begin()
		}
		start := time.Now()
		res, err := f.api.send(r)
		failed := err != nil || res.status >= 500
		f.l.record(outcome{at: time.Now(), failed: failed, concert: f.concert, write: write,
			done: err == nil && res.status < 300, took: time.Since(start)})
		switch {
		case c == nil:
		case failed && rec[0].unknown != nil:
			rec[0].unknown()
		}
		if c != nil && (!failed || !rec[0].once) {
			if failed {
				c.End(linearize.Unknown)
			} else {
				rec[0].end(c, res)
			}
			c = nil
		}
		if !failed {
			return res, true
		}
		select {
		case <-f.stop:
			if c != nil {
				c.End(linearize.Unknown)
			}
			return res, false
		case <-time.After(100 * time.Millisecond): // a client's back-off, not synchronisation
		}
	}
}

func (f *scaleFan) run() {
	key := dbtest.Name("charge-")
	res, ok := f.send(req{method: "POST", path: "/v1/points/charges", headers: append(f.auth(""), "Idempotency-Key", key),
		body: map[string]any{"amount": 3 * scaleSeatPrice}}, false)
	if !ok || (res.status != http.StatusCreated && res.status != http.StatusOK) {
		return
	}
	var ch struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
	if json.Unmarshal(res.body, &ch) != nil {
		return
	}
	f.l.mu.Lock()
	f.l.charges[ch.ID] = ch.Amount
	f.l.users[f.fan.id] = true
	f.l.mu.Unlock()

	var joinCall time.Time
	res, ok = f.send(req{method: "POST", path: "/v1/concerts/" + f.id + "/queue", headers: f.auth("")}, false, op{
		once: true,
		begin: func() *linearize.Call {
			c := f.rec.Join(f.id, f.fan.id)
			joinCall = c.Started()
			return c
		},
		end: func(c *linearize.Call, res response) {
			var tk ticket
			switch {
			case res.status >= 300 || json.Unmarshal(res.body, &tk) != nil:
				c.Drop() // refused (rate limited, sold out): nobody joined
			case tk.Status == "ACTIVE":
				c.End(linearize.Active)
				f.seenActive = c.Returned()
			case tk.Status == "WAITING":
				c.Waiting(tk.Position)
			default:
				c.Drop()
			}
		},
	})
	if !ok || (res.status != http.StatusOK && res.status != http.StatusCreated) {
		return
	}
	var tk ticket
	if json.Unmarshal(res.body, &tk) != nil {
		return
	}
	defer f.send(req{method: "DELETE", path: "/v1/queue", headers: f.auth(tk.Token)}, false, op{
		once:  true,
		begin: func() *linearize.Call { return f.rec.Leave(f.id, f.fan.id) },
		end:   func(c *linearize.Call, res response) { endIf(c, res.status == http.StatusNoContent, linearize.Ok) },
	})
	for tk.Status == "WAITING" {
		select {
		case <-f.stop:
			return
		case <-time.After(time.Duration(min(max(tk.PollAfterSeconds, 0)*1000, 200)+20) * time.Millisecond):
		}
		asked := time.Now() // the answer read the line after this
		res, ok = f.send(req{method: "GET", path: "/v1/queue", headers: f.auth(tk.Token)}, false)
		if !ok || res.status != http.StatusOK || json.Unmarshal(res.body, &tk) != nil {
			return
		}
		switch tk.Status {
		case "WAITING":
			f.rec.Waited(f.id, f.fan.id, tk.Position, asked)
		case "ACTIVE": // admitted between the join's call and this answer
			f.seenActive = f.rec.Admitted(f.id, f.fan.id, joinCall, asked)
		}
	}
	if tk.Status != "ACTIVE" {
		return
	}
	for tries := 0; tries < 8; tries++ {
		seat := linearize.Seat{Concert: f.id, Schedule: f.sched, ID: fmt.Sprintf("R-%d", 1+rand.IntN(seatsPerConcert))}
		var r reservation
		res, ok = f.send(req{method: "POST", path: "/v1/reservations", headers: f.auth(tk.Token),
			body: map[string]string{"scheduleId": f.sched, "seatId": seat.ID}}, true, op{
			begin: func() *linearize.Call { return f.rec.Hold(seat, f.fan.id) },
			end: func(c *linearize.Call, res response) {
				switch {
				case res.status == http.StatusCreated && json.Unmarshal(res.body, &r) == nil:
					c.Held(r.ID)
				case problemCode(res) == "SEAT_UNAVAILABLE":
					c.End(linearize.Refused)
				case problemCode(res) == "HOLD_LIMIT_REACHED":
					c.End(linearize.Limited)
				default: // RATE_LIMITED, a token refused: nothing about the seat
					c.Drop()
				}
			},
			unknown: func() { f.unsure = true },
		})
		if !ok {
			return
		}
		if code := problemCode(res); code == "QUEUE_NOT_ACTIVE" || code == "QUEUE_TOKEN_EXPIRED" {
			// The fan seen ACTIVE is not any more. During a failover this is how an admission the dead
			// master took with it shows (docs/durability.md: joins and admissions of the last moment
			// before the kill may be lost); the recorder counts the fan ACTIVE until the earliest event
			// that could have freed the slot unseen (the failover, the active time, a no-show drop).
			f.rec.Expired(f.id, f.fan.id, joinCall, f.seenActive)
			return
		}
		if res.status != http.StatusCreated {
			continue
		}
		f.l.mu.Lock()
		f.l.holds[r.ID] = f.fan.id
		f.l.mu.Unlock()
		if f.cancels {
			f.cancels = false
			res, ok = f.send(req{method: "DELETE", path: "/v1/reservations/" + r.ID, headers: f.auth("")}, true, op{
				begin: func() *linearize.Call { return f.rec.Cancel(seat, f.fan.id, r.ID) },
				end: func(c *linearize.Call, res response) {
					switch code := problemCode(res); {
					case res.status == http.StatusNoContent:
						c.End(linearize.Ok)
					case code == "RESERVATION_NOT_HELD" || code == "NOT_FOUND":
						c.End(linearize.Refused)
					default:
						c.Drop()
					}
				},
			})
			if !ok {
				return
			}
			continue
		}
		pay := dbtest.Name("pay-")
		var payCall time.Time
		res, ok = f.send(req{method: "POST", path: "/v1/payments", headers: append(f.auth(""), "Idempotency-Key", pay),
			body: map[string]string{"reservationId": r.ID}}, true, op{
			once: true,
			begin: func() *linearize.Call {
				c := f.rec.Pay(seat, f.fan.id, r.ID)
				payCall = c.Started()
				return c
			},
			end: func(c *linearize.Call, res response) {
				switch code := problemCode(res); {
				case res.status == http.StatusCreated || res.status == http.StatusOK:
					c.End(linearize.Ok)
				case code == "INSUFFICIENT_BALANCE":
					c.End(linearize.Kept)
				case code == "RESERVATION_NOT_HELD" || code == "RESERVATION_EXPIRED" || code == "NOT_FOUND":
					c.End(linearize.Refused)
				default:
					c.Drop()
				}
			},
		})
		paid := ok && (res.status == http.StatusCreated || res.status == http.StatusOK)
		if paid {
			var p payment
			if json.Unmarshal(res.body, &p) == nil {
				f.l.mu.Lock()
				f.l.payments[r.ID] = p.ID
				f.l.mu.Unlock()
				f.l.paid.Add(1)
			}
		}
		// The payment of the fan's last open hold makes the token DONE, which frees the slot: known when
		// it answered, and no hold of the fan's went unanswered (that one may be open too).
		done := linearize.Unknown
		if paid && !f.unsure {
			done = linearize.Ok
		}
		if paid || !ok {
			f.rec.Out(f.id, f.fan.id, "last hold paid", payCall).End(done)
		}
		return
	}
}

// endIf ends c with result when ok, and drops it otherwise.
func endIf(c *linearize.Call, ok bool, result linearize.Result) {
	if ok {
		c.End(result)
		return
	}
	c.Drop()
}

// problemCode is the code of a problem document ("" for anything else).
func problemCode(res response) string {
	var p struct {
		Code string `json:"code"`
	}
	if res.status < 400 || json.Unmarshal(res.body, &p) != nil {
		return ""
	}
	return p.Code
}

// scaleoutBinary builds the service and returns it with the environment of its processes: the
// cluster at redisURL, the database at dbURL, the keys under "tr", the test secrets, any free port.
func scaleoutBinary(t *testing.T, redisURL, dbURL string) (string, []string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ticketrush")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	env := append(os.Environ(), "HTTP_ADDR=127.0.0.1:0", "REDIS_URL="+redisURL, "DATABASE_URL="+dbURL,
		"REDIS_KEY_PREFIX=tr", "JWT_SECRET="+testJWTSecret, "QUEUE_TOKEN_SECRET="+testQueueSecret,
		"ADMIN_TOKEN="+testAdminToken)
	return bin, env
}

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

	// Three concerts whose seats live on three different masters. A concert's line is spread over the
	// cluster (lineShards: 8 per master) and so are its seats: its schedule's seats, holds and
	// reservations live in a seat slot of their own, placed off the concert's own master
	// (docs/scaleout.md, "Seat slots"). Where each lives is read as the service reads it: the layout in
	// the concert's settings (ReadLayout), the schedule's seat slot in it (Layout.Slot), that slot's
	// keys. The master killed below serves the seats of concerts[0] and the own slot (the line's
	// admissions, the holds' gate) of concerts[1]; the seats of concerts[1] and [2] live elsewhere.
	rc := dbtest.Client(t, pc.URL)
	keys := redis.NewKeys("tr")
	var created, concerts []concertRef
	for i := 0; concerts == nil; i++ {
		require.Less(t, i, 60, "no three concerts whose seats live on three masters, one with its own slot where another's seats are")
		res := apis[0].api.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
			"title": "Scale-out " + strconv.Itoa(i), "venue": "Cluster Hall",
			"schedules": []string{"2026-12-24T10:00:00Z"},
			"sections":  []map[string]any{{"name": "R", "price": scaleSeatPrice, "seats": seatsPerConcert}},
			"queue":     map[string]any{"activeCapacity": activeCapacity, "admitPerSecond": 50},
		}})
		require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
		var c struct {
			ID        string                `json:"id"`
			Schedules []struct{ ID string } `json:"schedules"`
		}
		require.NoError(t, json.Unmarshal(res.body, &c))
		created = append(created, placeConcert(t, pc, rc, keys, c.ID, c.Schedules[0].ID))
		concerts = pickConcerts(created)
	}
	for i, c := range concerts { // the master of each line shard, as the service names the shard's keys
		for n := range c.layout.Shards {
			concerts[i].shards = append(concerts[i].shards, pc.MasterOf(t, rc, keys.Concert(c.id).Shard(n).Places()))
		}
	}
	for _, c := range concerts { // every api instance knows the concerts (catalog refresh)
		for _, a := range apis {
			require.Eventually(t, func() bool {
				res, err := a.api.send(req{method: "GET", path: "/admin/v1/concerts/" + c.id + "/queue", headers: admin()})
				return err == nil && res.status == http.StatusOK
			}, 30*time.Second, 50*time.Millisecond)
		}
	}

	l := &ledger{charges: map[string]int64{}, holds: map[string]string{}, payments: map[string]string{}, users: map[string]bool{}}
	history := linearize.NewRecorder()
	history.StaleRefusals(staleRefusal)
	history.StalePolls(stalePoll)
	for _, c := range concerts {
		history.Line(c.id, scaleQueue())
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	defer halt()

	// Over-admission, sampled: no concert's admin view shows more ACTIVE tokens than its capacity.
	var samples, over atomic.Int64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			c := concerts[i%len(concerts)]
			res, err := apis[i%len(apis)].api.send(req{method: "GET", path: "/admin/v1/concerts/" + c.id + "/queue", headers: admin()})
			if err != nil || res.status != http.StatusOK {
				continue
			}
			var q queueState
			if json.Unmarshal(res.body, &q) == nil {
				samples.Add(1)
				if q.Active > activeCapacity {
					over.Add(1)
				}
			}
		}
	})

	var fans sync.WaitGroup
	saleStart := time.Now()
	for ci, c := range concerts {
		for i := range fansPerConcert {
			f := &scaleFan{fan: newFan(t, dbtest.Name("so-")), api: apis[(ci*fansPerConcert+i)%len(apis)].api,
				concert: ci, id: c.id, sched: c.sched, cancels: i%3 == 0, l: l, rec: history, stop: stop}
			fans.Go(f.run)
		}
	}

	// Mid-sale, the master of concerts[0]'s seats is SIGKILLed; its replica is elected and the sale goes
	// on. Just before, that master itself (not the cluster's routing) must serve the seat slot of
	// concerts[0] and hold seats of the sale in it: the kill lands on the seats it means to. The
	// checker's failover is for the seats of the seat slots that lived there, and only those.
	require.Eventually(t, func() bool { return l.paid.Load() >= killAfterPaid }, 2*time.Minute, 10*time.Millisecond,
		"%d payments acknowledged before the kill", l.paid.Load())
	killed := concerts[0].seats
	taken := seatsOnNode(t, killed, concerts[0].seatsKey)
	require.Positive(t, taken, "master %d holds no seat of concert %s (%s): the kill would miss the sale's seats",
		killed, concerts[0].id, concerts[0].seatsKey)
	killing := time.Now()
	pc.Kill(t, killed)
	killedAt := time.Now()
	failedOver := map[linearize.Seat]bool{} // a seat of each schedule whose seat slot lived on the killed master
	for _, c := range concerts {
		failedOver[linearize.Seat{Concert: c.id, Schedule: c.sched}] = c.seats == killed
	}
	history.Failover(killing, killedAt, func(s linearize.Seat) bool {
		return failedOver[linearize.Seat{Concert: s.Concert, Schedule: s.Schedule}]
	})
	t.Logf("SIGKILLed master %d at %s into the sale, after %d payments: the seat slot of concert %s (%d seats taken), "+
		"the own slot of concert %s, and %s of the concerts' line shards",
		killed, killedAt.Sub(saleStart).Round(time.Millisecond), l.paid.Load(), concerts[0].id, taken, concerts[1].id,
		shardsOn(concerts, killed))

	sold := make(chan struct{})
	go func() { fans.Wait(); close(sold) }()
	select {
	case <-sold:
	case <-time.After(3 * time.Minute):
		halt()
		<-sold
		t.Errorf("the fans were not done within 3 minutes")
	}
	halt()
	sampler.Wait()

	// The error window: from the kill to the end of the last request that failed (5xx, no answer) or
	// waited a second or more; the recovery: from the kill to the first hold or payment of concerts[0]
	// (whose seats were on the killed master) sent after the kill that succeeded.
	var lastFail, firstWrite time.Time
	failures, slow := 0, 0
	var slowest time.Duration
	for _, o := range l.outcomes {
		if o.at.Before(killedAt) {
			continue
		}
		slowest = max(slowest, o.took)
		if o.failed || o.took >= time.Second {
			if o.failed {
				failures++
			} else {
				slow++
			}
			if o.at.After(lastFail) {
				lastFail = o.at
			}
		}
		if o.concert == 0 && o.write && o.done && o.at.Add(-o.took).After(killedAt) && (firstWrite.IsZero() || o.at.Before(firstWrite)) {
			firstWrite = o.at
		}
	}
	window := time.Duration(0)
	if !lastFail.IsZero() {
		window = lastFail.Sub(killedAt)
	}
	t.Logf("scaleout: %d fans, %d charges, %d holds, %d payments acknowledged; after the kill %d requests failed and "+
		"%d took 1 s or more (slowest %s); error window %s; first write to the failed-over seats succeeded %s "+
		"after the kill; %d over-admission samples of %d",
		scaleoutConcerts*fansPerConcert, len(l.charges), len(l.holds), len(l.payments), failures, slow,
		slowest.Round(time.Millisecond), window.Round(time.Millisecond), firstWrite.Sub(killedAt).Round(time.Millisecond),
		over.Load(), samples.Load())
	assert.Zero(t, over.Load(), "samples with more ACTIVE tokens than the capacity")
	assert.Positive(t, samples.Load())

	// What the fans saw, checked by porcupine: each seat's history against the seat model (AVAILABLE,
	// HELD by one fan, SOLD), each line's against its capacity (internal/linearize). The failover's
	// documented losses are in the models: the seats on the dead master may lose what no replica had
	// confirmed (a cancel, a hold without an answer), and an admission the dead master took with it
	// shows as a fan told their token is not ACTIVE (an out). A refusal may read a seat view 1 s old.
	verdict, why := history.Check(linearize.Options{Timeout: time.Minute,
		VisualizeDir: filepath.Join(os.TempDir(), "ticketrush-scaleout-"+time.Now().Format("20060102-150405"))})
	t.Logf("scaleout: linearizability:\n%s", why)
	if verdict != porcupine.Ok {
		path := filepath.Join(os.TempDir(), "ticketrush-scaleout-history-"+time.Now().Format("20060102-150405")+".txt")
		if err := history.WriteHistory(path); err == nil {
			t.Logf("every operation recorded, in call order: %s", path)
		}
		t.Errorf("what the fans saw is not linearizable (%s):\n%s", verdict, why)
	}
	assert.False(t, firstWrite.IsZero(), "no hold or payment of the failed-over seats succeeded after the kill")

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

	// The seats the checker failed over are those that did: a seat slot is served by another master now
	// (the killed one's replica, elected) exactly when the checker was told its seats failed over.
	for _, c := range concerts {
		now := pc.MasterOf(t, rc, c.seatsKey)
		told := failedOver[linearize.Seat{Concert: c.id, Schedule: c.sched}]
		assert.NotEqual(t, killed, now, "the seats of concert %s are still on the killed master", c.id)
		assert.Equal(t, now != c.seats, told, "concert %s: seats on master %d before the kill and %d after, "+
			"failed over for the checker: %v", c.id, c.seats, now, told)
	}

	// The write-behind caught up, and reconcile (the command) finds Redis and Postgres in agreement.
	for _, n := range nodes[5:] {
		require.Eventually(t, func() bool { return n.api.gauge("ticketrush_writebehind_backlog_events") == 0 },
			2*time.Minute, 100*time.Millisecond, "writebehind backlog never reached 0")
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
	rec := exec.Command(bin, "reconcile", "--wait", "60s")
	rec.Env = env
	out, err := rec.CombinedOutput()
	require.NoError(t, err, "reconcile: %s", out)

	// Nothing acknowledged was lost, no seat was sold twice, and the money adds up.
	ctx := context.Background()
	db, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer db.Close(ctx)
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, db.QueryRow(ctx, q, args...).Scan(&n), q)
		return n
	}
	assert.Zero(t, count(`SELECT count(*) FROM (SELECT schedule_id, seat_id FROM payments GROUP BY 1, 2 HAVING count(*) > 1) x`),
		"seats sold twice")
	assert.Zero(t, count(`SELECT count(*) FROM payments p WHERE NOT EXISTS
		(SELECT 1 FROM ledger l WHERE l.type = 'PAYMENT' AND l.reservation_id = p.reservation_id)`), "seats sold without a debit")
	assert.Zero(t, count(`SELECT count(*) FROM ledger l WHERE l.type = 'PAYMENT'
		AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.reservation_id = l.reservation_id)
		AND NOT EXISTS (SELECT 1 FROM ledger r WHERE r.type = 'REFUND' AND r.reservation_id = l.reservation_id)`),
		"debits without a seat or a refund")
	lost := 0
	for id, amount := range l.charges {
		if count(`SELECT count(*) FROM ledger WHERE id = $1 AND type = 'CHARGE' AND amount = $2`, id, amount) != 1 {
			lost++
			t.Errorf("acknowledged charge %s of %d is not in the ledger", id, amount)
		}
	}
	for resID := range l.holds {
		if count(`SELECT count(*) FROM reservations WHERE id = $1`, resID) != 1 {
			lost++
			t.Errorf("acknowledged hold %s is not in Postgres", resID)
		}
	}
	for resID, payID := range l.payments {
		if count(`SELECT count(*) FROM payments WHERE id = $1 AND reservation_id = $2`, payID, resID) != 1 {
			lost++
			t.Errorf("acknowledged payment %s of %s is not in Postgres", payID, resID)
		}
	}
	// Redis, the hot truth, agrees: each acknowledged payment's reservation is PAID there, each
	// acknowledged hold is there, and each fan's balance is the ledger's.
	for resID, user := range l.holds {
		f := newFan(t, user)
		res := apis[0].api.do(t, req{method: "GET", path: "/v1/reservations/" + resID, headers: f.auth("")})
		if !assert.Equal(t, http.StatusOK, res.status, "acknowledged hold %s: %s", resID, res.body) {
			lost++
			continue
		}
		var r reservation
		require.NoError(t, json.Unmarshal(res.body, &r))
		if _, paid := l.payments[resID]; paid && !assert.Equal(t, "PAID", r.Status, "acknowledged payment of %s", resID) {
			lost++
		}
	}
	users := make([]string, 0, len(l.users))
	for u := range l.users {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		res := apis[1].api.do(t, req{method: "GET", path: "/v1/points", headers: newFan(t, u).auth("")})
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		var b struct {
			Balance int64 `json:"balance"`
		}
		require.NoError(t, json.Unmarshal(res.body, &b))
		assert.Equal(t, int64(count(`SELECT COALESCE(sum(delta), 0) FROM ledger WHERE user_id = $1`, u)), b.Balance,
			"balance of %s: Redis and the ledger", u)
	}
	assert.Zero(t, lost, "acknowledged writes lost")
	t.Logf("scaleout: Postgres holds %d payments, %d ledger entries",
		count(`SELECT count(*) FROM payments`), count(`SELECT count(*) FROM ledger`))
}

// concertRef is one concert of the sale and where its state lives: the masters of its own slot, of its
// schedule's seat slot and of each line shard.
type concertRef struct {
	id, sched string
	layout    redis.Layout
	seatsKey  string // the schedule's seats hash, in its seat slot
	own       int    // the master of the concert's own slot (line_arrive, line_admit, gate_hold)
	seats     int    // the master of the schedule's seat slot (seat_take, hold_cancel, payment_claim, seat_sell)
	shards    []int  // the master of each line shard
}

// placeConcert reads where concert id's state lives as the service does: its layout from its settings
// (Keys.ReadLayout, as Store.layout), the seat slot of schedule sched in it (Layout.Slot) and that slot's
// seats key (ConcertKeys.Schedule, as seat_take's call). The test is of the spread layout: a concert whose
// seats live in its own slot fails it.
func placeConcert(t *testing.T, pc *dbtest.PrivateCluster, rc rueidis.Client, keys redis.Keys, id, sched string) concertRef {
	t.Helper()
	l, found, err := keys.ReadLayout(context.Background(), rc, id)
	require.NoError(t, err)
	require.True(t, found, "concert %s is not in Redis", id)
	require.Greater(t, l.Shards, 1, "concert %s has a line of one slot", id)
	require.NotEmpty(t, l.Schedules, "concert %s keeps its seats in its own slot", id)
	k := keys.Concert(id)
	c := concertRef{id: id, sched: sched, layout: l, seatsKey: k.Schedule(l.Slot(sched)).Seats(), own: pc.MasterOf(t, rc, k.Cfg())}
	c.seats = pc.MasterOf(t, rc, c.seatsKey)
	return c
}

// pickConcerts returns three of created whose seats live on three different masters, the second with
// its own slot on the master of the first one's seats (nil when there are none yet): killing that master
// fails over the seats of the first and the admissions and hold gates of the second, and the seats of
// the second and third stay where they are.
func pickConcerts(created []concertRef) []concertRef {
	for _, a := range created {
		for _, b := range created {
			if b.own != a.seats || b.seats == a.seats {
				continue
			}
			for _, c := range created {
				if c.seats != a.seats && c.seats != b.seats {
					return []concertRef{a, b, c}
				}
			}
		}
	}
	return nil
}

// seatsOnNode counts the seats taken (held, being paid, sold) in the seats hash key on the node on port
// itself, not through the cluster's routing: a node that does not serve the key's slot answers MOVED.
func seatsOnNode(t *testing.T, port int, key string) int64 {
	t.Helper()
	node, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(port)},
		ForceSingleClient: true, DisableCache: true})
	require.NoError(t, err)
	defer node.Close()
	n, err := node.Do(context.Background(), node.B().Hlen().Key(key).Build()).AsInt64()
	require.NoError(t, err, "the seats of %s on master %d", key, port)
	return n
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

// sum adds the samples of a labelled counter of the process (-1 when it cannot read them).
func (s *service) sum(name string) float64 {
	res, err := s.send(req{method: "GET", path: "/metrics"})
	if err != nil {
		return -1
	}
	total := 0.0
	for _, line := range strings.Split(string(res.body), "\n") {
		if rest, ok := strings.CutPrefix(line, name+"{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				total += f
			}
		}
	}
	return total
}

// gauge reads an unlabelled metric of the process (-1 when it cannot).
func (s *service) gauge(name string) float64 {
	res, err := s.send(req{method: "GET", path: "/metrics"})
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(res.body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}
