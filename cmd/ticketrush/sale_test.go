//go:build scaleout || partition

package main

// The sale the scale-out test (scaleout_test.go) and the partition suite (partition_test.go) run
// against the real binary: its processes, its fans, what the fans were told (the client ledger and the
// history for the linearizability checker), and the checks of all of it against Redis and Postgres.

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
	scaleSeatPrice = 100
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
func scaleQueue(capacity int) linearize.Queue {
	d := ticketrush.DefaultQueueSettings()
	return linearize.Queue{Capacity: capacity, ActiveTTL: d.ActiveTTL, NoShow: d.NoShow,
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
	return startNodeCmd(t, exec.Command(bin, "serve"), roles, env)
}

// startNodeCmd is startNode with the command that runs `ticketrush serve` (inside a cgroup, say).
func startNodeCmd(t *testing.T, cmd *exec.Cmd, roles string, env []string) *node {
	t.Helper()
	n := &node{roles: roles, cmd: cmd, done: make(chan struct{})}
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
	refused bool   // failed with an answer (5xx) rather than without one
	via     string // the api process's URL
	path    string
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
	cancels  map[string]string // reservation id -> user, of the holds cancelled (204)
	payments map[string]string // reservation id -> payment id
	users    map[string]bool
	outcomes []outcome
	paid     atomic.Int64
	joins    atomic.Int64 // joins answered WAITING or ACTIVE
	// joinsLost counts fans whose join was answered and whose token a later poll read EXPIRED before
	// they were ever ACTIVE: a join the service took and then forgot.
	joinsLost atomic.Int64
	lostJoins []string // what each lost join's fan was told, for the log
	lostFans  []string // their user ids
	// probe, when set, tells what Redis holds of a fan whose join was lost, at the moment it is seen.
	probe func(concertID, user string) string
}

func newLedger() *ledger {
	return &ledger{charges: map[string]int64{}, holds: map[string]string{}, cancels: map[string]string{},
		payments: map[string]string{}, users: map[string]bool{}}
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
	seats   int  // the schedule's seats, R-1 to R-<seats>
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
		f.l.record(outcome{at: time.Now(), failed: failed, refused: err == nil && res.status >= 500, via: f.api.url, path: r.method + " " + r.path, concert: f.concert, write: write,
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
	f.l.joins.Add(1)
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
		case "EXPIRED": // polled far more often than the concert's abandon time: the line lost the join
			f.l.joinsLost.Add(1)
			what := ""
			if f.l.probe != nil {
				what = f.l.probe(f.id, f.fan.id)
			}
			f.l.mu.Lock()
			f.l.lostJoins = append(f.l.lostJoins, fmt.Sprintf("fan %s (api %s): joined at %s, read EXPIRED at %s; %s",
				f.fan.id, f.api.url, joinCall.Format("15:04:05.000"), asked.Format("15:04:05.000"), what))
			f.l.lostFans = append(f.l.lostFans, f.fan.id)
			f.l.mu.Unlock()
		}
	}
	if tk.Status != "ACTIVE" {
		return
	}
	for tries := 0; tries < 8; tries++ {
		seat := linearize.Seat{Concert: f.id, Schedule: f.sched, ID: fmt.Sprintf("R-%d", 1+rand.IntN(f.seats))}
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
						f.l.mu.Lock()
						f.l.cancels[r.ID] = f.fan.id
						f.l.mu.Unlock()
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

// concertRef is one concert of the sale and where its state lives: the masters of its own slot, of each
// block of its schedule's seats and of each line shard.
type concertRef struct {
	id, sched string
	layout    redis.Layout
	seatsKey  string                 // the seats hash of the schedule's first block, in its seat slot
	own       int                    // the master of the concert's own slot (line_arrive, line_admit, gate_apply)
	seats     int                    // the master of the first block's seat slot (seat_take, hold_cancel, payment_claim, seat_sell)
	blocks    map[redis.SeatSlot]int // the master of each block's seat slot
	shards    []int                  // the master of each line shard
}

// seatsOn is the seats key of a block of the concert's seats on master port ("" none).
func (c concertRef) seatsOn(keys redis.Keys, port int) string {
	for _, slot := range c.layout.Blocks(c.sched) {
		if c.blocks[slot] == port {
			return keys.Concert(c.id).Schedule(slot).Seats()
		}
	}
	return ""
}

// placeConcert reads where concert id's state lives as the service does: its layout from its settings
// (Keys.ReadLayout, as Store.layout), the seat slots of schedule sched in it, a block each (Layout.Blocks),
// and their seats keys (ConcertKeys.Schedule, as seat_take's call). The test is of the spread layout: a concert whose
// seats live in its own slot fails it.
func placeConcert(t *testing.T, pc *dbtest.PrivateCluster, rc rueidis.Client, keys redis.Keys, id, sched string) concertRef {
	t.Helper()
	l, found, err := keys.ReadLayout(context.Background(), rc, id)
	require.NoError(t, err)
	require.True(t, found, "concert %s is not in Redis", id)
	require.Greater(t, l.Shards, 1, "concert %s has a line of one slot", id)
	require.NotEmpty(t, l.Schedules, "concert %s keeps its seats in its own slot", id)
	k := keys.Concert(id)
	c := concertRef{id: id, sched: sched, layout: l, seatsKey: k.Schedule(l.Blocks(sched)[0]).Seats(), own: pc.MasterOf(t, rc, k.Cfg()),
		blocks: map[redis.SeatSlot]int{}}
	c.seats = pc.MasterOf(t, rc, c.seatsKey)
	for _, slot := range l.Blocks(sched) {
		c.blocks[slot] = pc.MasterOf(t, rc, k.Schedule(slot).Seats())
	}
	return c
}

// seatsOnNode counts the seats taken (held, being paid, sold) in the seats hash key on the node on port
// itself, not through the cluster's routing: a node that does not serve the key's slot answers MOVED.
func seatsOnNode(t *testing.T, pc *dbtest.PrivateCluster, port int, key string) int64 {
	t.Helper()
	node, err := pc.Node(port)
	require.NoError(t, err)
	defer node.Close()
	n, err := node.Do(context.Background(), node.B().Hlen().Key(key).Build()).AsInt64()
	require.NoError(t, err, "the seats of %s on master %d", key, port)
	return n
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

// sale is a storm of fans over concerts: what they were told, and a sampler of over-admission.
type sale struct {
	l        *ledger
	history  *linearize.Recorder
	stop     chan struct{}
	halt     func()
	fans     sync.WaitGroup
	sampler  sync.WaitGroup
	samples  atomic.Int64
	over     atomic.Int64 // samples with more ACTIVE than the capacity
	capacity int
	started  time.Time
}

// startSale sends perConcert fans to each concert (a schedule of seats seats, a line of capacity
// ACTIVE), spread over the api processes; every third fan cancels their first hold. Meanwhile a sampler
// reads the concerts' admin views through the api processes: no view may show more ACTIVE tokens than
// the capacity.
func startSale(t *testing.T, apis []*node, concerts []concertRef, perConcert, seats, capacity int) *sale {
	t.Helper()
	s := &sale{l: newLedger(), history: linearize.NewRecorder(), stop: make(chan struct{}), capacity: capacity}
	var once sync.Once
	s.halt = func() { once.Do(func() { close(s.stop) }) }
	t.Cleanup(s.halt)
	s.history.StaleRefusals(staleRefusal)
	s.history.StalePolls(stalePoll)
	for _, c := range concerts {
		s.history.Line(c.id, scaleQueue(capacity))
	}
	s.sampler.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-s.stop:
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
				s.samples.Add(1)
				if q.Active > int64(capacity) {
					s.over.Add(1)
				}
			}
		}
	})
	s.started = time.Now()
	s.add(t, apis, concerts, perConcert, seats)
	return s
}

// add sends perConcert more fans to each concert, spread over apis.
func (s *sale) add(t *testing.T, apis []*node, concerts []concertRef, perConcert, seats int) {
	t.Helper()
	for ci, c := range concerts {
		for i := range perConcert {
			f := &scaleFan{fan: newFan(t, dbtest.Name("so-")), api: apis[(ci*perConcert+i)%len(apis)].api,
				concert: ci, id: c.id, sched: c.sched, seats: seats, cancels: i%3 == 0, l: s.l, rec: s.history, stop: s.stop}
			s.fans.Go(f.run)
		}
	}
}

// finish waits up to limit for the fans to be done, then stops them and the sampler.
func (s *sale) finish(t *testing.T, limit time.Duration) {
	t.Helper()
	sold := make(chan struct{})
	go func() { s.fans.Wait(); close(sold) }()
	select {
	case <-sold:
	case <-time.After(limit):
		s.halt()
		<-sold
		t.Errorf("the fans were not done within %s", limit)
	}
	s.halt()
	s.sampler.Wait()
	assert.Zero(t, s.over.Load(), "samples with more ACTIVE tokens than the capacity")
	assert.Positive(t, s.samples.Load())
}

// errorWindow is what the fans saw after a fault began.
type errorWindow struct {
	failures, slow int           // requests that failed (5xx, no answer), and answered ones that took 1 s or more
	refused        int           // of the failures, those answered 5xx
	slowest        time.Duration // the longest request
	window         time.Duration // from the fault to the end of the last failed or slow request
	lastFail       time.Time
	firstWrite     time.Time // the end of the first hold or payment of concert 0 sent after the fault that succeeded
}

func (l *ledger) errorsSince(since time.Time) errorWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	var w errorWindow
	for _, o := range l.outcomes {
		if o.at.Before(since) {
			continue
		}
		w.slowest = max(w.slowest, o.took)
		if o.failed || o.took >= time.Second {
			if o.failed {
				w.failures++
				if o.refused {
					w.refused++
				}
			} else {
				w.slow++
			}
			if o.at.After(w.lastFail) {
				w.lastFail = o.at
			}
		}
		if o.concert == 0 && o.write && o.done && o.at.Add(-o.took).After(since) && (w.firstWrite.IsZero() || o.at.Before(w.firstWrite)) {
			w.firstWrite = o.at
		}
	}
	if !w.lastFail.IsZero() {
		w.window = w.lastFail.Sub(since)
	}
	return w
}

// lastFailure is the end of the last request in the ledger that failed (5xx, no answer).
func (l *ledger) lastFailure() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for _, o := range l.outcomes {
		if o.failed && o.at.After(last) {
			last = o.at
		}
	}
	return last
}

// checkHistory checks what the fans saw with porcupine: each seat's history against the seat model
// (AVAILABLE, HELD by one fan, SOLD, the per-fan hold limit), each line's against the line model
// (internal/linearize). It logs the verdict and fails the test on anything but Ok; name labels the files.
func (s *sale) checkHistory(t *testing.T, name string) porcupine.CheckResult {
	t.Helper()
	stamp := time.Now().Format("20060102-150405")
	verdict, why := s.history.Check(linearize.Options{Timeout: time.Minute,
		VisualizeDir: filepath.Join(os.TempDir(), "ticketrush-"+name+"-"+stamp)})
	t.Logf("%s: linearizability:\n%s", name, why)
	if verdict != porcupine.Ok {
		path := filepath.Join(os.TempDir(), "ticketrush-"+name+"-history-"+stamp+".txt")
		if err := s.history.WriteHistory(path); err == nil {
			t.Logf("every operation recorded, in call order: %s", path)
		}
		t.Errorf("what the fans saw is not linearizable (%s):\n%s", verdict, why)
	}
	return verdict
}

// checkRecords waits for the write-behind processes to catch up, runs reconcile (the command), and
// checks the ledger against Postgres and Redis: nothing acknowledged lost, no seat sold twice, every
// sale with its debit and every debit with its sale or refund, each fan's balance the ledger's. It
// returns how many acknowledged writes were lost.
func checkRecords(t *testing.T, bin string, env []string, dbURL string, writebehinds, apis []*node, l *ledger) int {
	t.Helper()
	for _, n := range writebehinds {
		require.Eventually(t, func() bool { return n.api.gauge("ticketrush_writebehind_backlog_events") == 0 },
			2*time.Minute, 100*time.Millisecond, "writebehind backlog never reached 0")
	}
	rec := exec.Command(bin, "reconcile", "--wait", "60s")
	rec.Env = env
	out, err := rec.CombinedOutput()
	require.NoError(t, err, "reconcile: %s", out)

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
	assert.Zero(t, count(`SELECT count(*) FROM (SELECT reservation_id FROM ledger WHERE type = 'PAYMENT'
		GROUP BY 1 HAVING count(*) > 1) x`), "reservations debited twice")
	l.mu.Lock()
	defer l.mu.Unlock()
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
	for resID := range l.cancels {
		if count(`SELECT count(*) FROM reservations WHERE id = $1 AND status = 'CANCELLED'`, resID) != 1 {
			lost++
			t.Errorf("acknowledged cancel of %s is not in Postgres", resID)
		}
	}
	for resID, payID := range l.payments {
		if count(`SELECT count(*) FROM payments WHERE id = $1 AND reservation_id = $2`, payID, resID) != 1 {
			lost++
			t.Errorf("acknowledged payment %s of %s is not in Postgres", payID, resID)
		}
	}
	// Redis, the hot truth, agrees: each acknowledged payment's reservation is PAID there, each
	// acknowledged hold is there (CANCELLED where it was cancelled), and each fan's balance is the
	// ledger's.
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
		if _, cancelled := l.cancels[resID]; cancelled && !assert.Equal(t, "CANCELLED", r.Status, "acknowledged cancel of %s", resID) {
			lost++
		}
	}
	users := make([]string, 0, len(l.users))
	for u := range l.users {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		res := apis[len(apis)-1].api.do(t, req{method: "GET", path: "/v1/points", headers: newFan(t, u).auth("")})
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		var b struct {
			Balance int64 `json:"balance"`
		}
		require.NoError(t, json.Unmarshal(res.body, &b))
		if !assert.Equal(t, int64(count(`SELECT COALESCE(sum(delta), 0) FROM ledger WHERE user_id = $1`, u)), b.Balance,
			"balance of %s: Redis and the ledger", u) {
			lost++
		}
	}
	assert.Zero(t, lost, "acknowledged writes lost")
	return lost
}

// createSaleConcert creates a concert of one date and one section of seats through api, with capacity
// ACTIVE fans admitted 50 a second, and returns its id and its schedule's.
func createSaleConcert(t *testing.T, api *service, title string, seats, capacity int) (string, string) {
	t.Helper()
	res := api.do(t, req{method: "POST", path: "/admin/v1/concerts", headers: admin(), body: map[string]any{
		"title": title, "venue": "Cluster Hall",
		"schedules": []string{"2026-12-24T10:00:00Z"},
		"sections":  []map[string]any{{"name": "R", "price": scaleSeatPrice, "seats": seats}},
		"queue":     map[string]any{"activeCapacity": capacity, "admitPerSecond": 50},
	}})
	require.Equal(t, http.StatusCreated, res.status, "create concert: %s", res.body)
	var c struct {
		ID        string                `json:"id"`
		Schedules []struct{ ID string } `json:"schedules"`
	}
	require.NoError(t, json.Unmarshal(res.body, &c))
	return c.ID, c.Schedules[0].ID
}

// waitKnown waits until every api process knows the concert (its catalog refresh).
func waitKnown(t *testing.T, apis []*node, concertID string) {
	t.Helper()
	for _, a := range apis {
		require.Eventually(t, func() bool {
			res, err := a.api.send(req{method: "GET", path: "/admin/v1/concerts/" + concertID + "/queue", headers: admin()})
			return err == nil && res.status == http.StatusOK
		}, 30*time.Second, 50*time.Millisecond)
	}
}
