package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	svcconfig "github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The capacity of one concert: what a join, a hold and a payment cost Redis, and how many of each one
// concert can take, on one Redis and on the masters of clusters of 3 and 6: one concert of one date (the
// opening of a one-date stadium show, the hardest to spread), its fans from 32 goroutines (the store's
// client pipelines their calls).
const (
	capacitySchedules = 1
	capacityWorkers   = 32
	// capacityOpeningWorkers send the opening's joins, after the joins phase: fans who arrive all at
	// once, so that each line_arrive carries the joins that came while the one before was in flight (one
	// or two with 32 workers, dozens with 512), as at an opening that the projection of joins is about
	capacityOpeningWorkers = 512
	capacityTickBatch      = 1000 // the scheduler's batch (internal/queue tickBatch)
	capacityPrice          = 1000
	floorScript            = "return 1"
)

// phaseCost is what one phase of the storm cost Redis: the time of the commands the store sent in it,
// on each master, from INFO commandstats.
type phaseCost struct {
	ops     int       // joins, admitted fans, holds, cancels, floor calls
	scripts int64     // script calls the store sent (EVALSHA, EVAL and the like)
	usec    []float64 // on each master
}

func (p phaseCost) total() float64 {
	t := 0.0
	for _, u := range p.usec {
		t += u
	}
	return t
}

// usPerOp is Redis's time per operation, summed over the masters.
func (p phaseCost) usPerOp() float64 { return p.total() / float64(p.ops) }

// busiest is the share of the phase's Redis time that its busiest master carried.
func (p phaseCost) busiest() float64 { return slices.Max(p.usec) / p.total() }

// perSec is how many operations a second the busiest master's one thread can take:
// 1e6 / (µs per operation × the busiest master's share).
func (p phaseCost) perSec() float64 { return 1e6 / (p.usPerOp() * p.busiest()) }

// busiestUs is the busiest master's Redis µs per operation: what bounds the rate (perSec is 1e6 / it).
func (p phaseCost) busiestUs() float64 { return slices.Max(p.usec) / float64(p.ops) }

// cmdStat is one command's line of INFO commandstats.
type cmdStat struct{ calls, usec float64 }

// scriptCommands are the commands that run a script. A script cannot call them, so each call Redis
// counts was sent by a client.
var scriptCommands = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true}

// errShared is a phase whose commandstats another client changed: its figures would count that
// client's work. The measure is worth running again.
var errShared = errors.New("another client used these masters meanwhile")

// attribute prices a phase from INFO commandstats of every master read before and after it: the time
// of the commands the store sent in the phase (sent: calls by commandstats name), by master. Redis
// counts the commands a script runs under their own names as well as within the script call's time,
// so only the names the store sent count, and of a name that scripts run too, the share of its calls
// that the store sent. It fails where the figures cannot be trusted: a phase without operations, a
// name the masters show no call of, a counter that went back (CONFIG RESETSTAT meanwhile), script
// calls the store did not send (another client's, which would be counted), no time at all; the
// failures that another client caused are errShared.
func attribute(name string, ops int, sent map[string]int64, before, after []map[string]cmdStat) (phaseCost, error) {
	switch {
	case ops <= 0:
		return phaseCost{}, fmt.Errorf("%s: no operation to price", name)
	case len(sent) == 0:
		return phaseCost{}, fmt.Errorf("%s: the store sent no command", name)
	case len(before) == 0 || len(before) != len(after):
		return phaseCost{}, fmt.Errorf("%s: commandstats of %d masters before, %d after", name, len(before), len(after))
	}
	p := phaseCost{ops: ops, usec: make([]float64, len(before))}
	for _, cmd := range slices.Sorted(maps.Keys(sent)) {
		n := float64(sent[cmd])
		calls, delta := 0.0, make([]cmdStat, len(before))
		for m := range before {
			d := cmdStat{after[m][cmd].calls - before[m][cmd].calls, after[m][cmd].usec - before[m][cmd].usec}
			if d.calls < 0 || d.usec < 0 {
				return phaseCost{}, fmt.Errorf("%s: INFO commandstats of master %d went back for %s (CONFIG RESETSTAT): %w", name, m+1, cmd, errShared)
			}
			delta[m], calls = d, calls+d.calls
		}
		switch {
		case calls == 0:
			return phaseCost{}, fmt.Errorf("%s: INFO commandstats shows no %s call on any master; the store sent %.0f", name, cmd, n)
		case calls < n:
			return phaseCost{}, fmt.Errorf("%s: the masters ran %.0f %s calls, the store sent %.0f", name, calls, cmd, n)
		case scriptCommands[cmd] && calls > n:
			return phaseCost{}, fmt.Errorf("%s: the masters ran %.0f %s calls, the store sent %.0f: %w", name, calls, cmd, n, errShared)
		}
		if scriptCommands[cmd] {
			p.scripts += sent[cmd]
		}
		for m, d := range delta {
			p.usec[m] += d.usec * n / calls
		}
	}
	if f := p.perSec(); !(p.total() > 0) || math.IsInf(f, 0) || math.IsNaN(f) {
		return phaseCost{}, fmt.Errorf("%s: %.0f µs of Redis time for %d operations gives no figure", name, p.total(), ops)
	}
	return p, nil
}

// readCommandStats reads INFO commandstats of each master.
func readCommandStats(ctx context.Context, masters []rueidis.Client) ([]map[string]cmdStat, error) {
	out := make([]map[string]cmdStat, len(masters))
	for i, m := range masters {
		info, err := m.Do(ctx, m.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			return nil, fmt.Errorf("INFO commandstats: %w", err)
		}
		usec := commandStats(info, "usec")
		out[i] = map[string]cmdStat{}
		for cmd, v := range commandStats(info, "calls") {
			calls, err1 := strconv.ParseFloat(v, 64)
			us, err2 := strconv.ParseFloat(usec[cmd], 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("INFO commandstats, %s: %w", cmd, err)
			}
			out[i][cmd] = cmdStat{calls: calls, usec: us}
		}
	}
	return out, nil
}

// sentCommands counts the commands a client sent, by their INFO commandstats name.
type sentCommands struct {
	mu sync.Mutex
	n  map[string]int64
}

// containerCommands are the commands whose subcommands INFO commandstats counts apart ("config|get").
var containerCommands = map[string]bool{"acl": true, "client": true, "cluster": true, "command": true, "config": true,
	"function": true, "latency": true, "memory": true, "module": true, "object": true, "pubsub": true, "script": true,
	"slowlog": true, "xgroup": true, "xinfo": true}

func (s *sentCommands) add(cmds ...[]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	for _, c := range cmds {
		if len(c) == 0 {
			continue
		}
		name := strings.ToLower(c[0])
		if containerCommands[name] && len(c) > 1 {
			name += "|" + strings.ToLower(c[1])
		}
		s.n[name]++
	}
}

// take returns the counts so far and starts again from nothing.
func (s *sentCommands) take() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = nil
	return n
}

// counted is a client that counts every command sent through it (a command's words are read before
// it is sent: rueidis recycles them after).
type counted struct {
	rueidis.Client
	sent *sentCommands
}

func completed(cmds []rueidis.Completed) [][]string {
	out := make([][]string, len(cmds))
	for i := range cmds {
		out[i] = cmds[i].Commands()
	}
	return out
}

func (c counted) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.sent.add(cmd.Commands())
	return c.Client.Do(ctx, cmd)
}

func (c counted) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.sent.add(completed(multi)...)
	return c.Client.DoMulti(ctx, multi...)
}

func (c counted) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.sent.add(cmd.Commands())
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c counted) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	for i := range multi {
		c.sent.add(multi[i].Cmd.Commands())
	}
	return c.Client.DoMultiCache(ctx, multi...)
}

func (c counted) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	c.sent.add(cmd.Commands())
	return c.Client.DoStream(ctx, cmd)
}

func (c counted) DoMultiStream(ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	c.sent.add(completed(multi)...)
	return c.Client.DoMultiStream(ctx, multi...)
}

func (c counted) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.sent.add(subscribe.Commands())
	return c.Client.Receive(ctx, subscribe, fn)
}

func (c counted) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error { return fn(countedDedicated{d, c.sent}) })
}

func (c counted) Dedicate() (rueidis.DedicatedClient, func()) {
	d, cancel := c.Client.Dedicate()
	return countedDedicated{d, c.sent}, cancel
}

func (c counted) Nodes() map[string]rueidis.Client {
	nodes := c.Client.Nodes()
	for addr, n := range nodes {
		nodes[addr] = counted{n, c.sent}
	}
	return nodes
}

// countedDedicated is counted's dedicated connection.
type countedDedicated struct {
	rueidis.DedicatedClient
	sent *sentCommands
}

func (c countedDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.sent.add(cmd.Commands())
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c countedDedicated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.sent.add(completed(multi)...)
	return c.DedicatedClient.DoMulti(ctx, multi...)
}

func (c countedDedicated) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.sent.add(subscribe.Commands())
	return c.DedicatedClient.Receive(ctx, subscribe, fn)
}

// concertCapacity is what one concert's storm cost one Redis (a single server or a cluster), beside the
// floor measured on the same masters just before.
type concertCapacity struct {
	masters                          int
	concertMaster                    int // the index of the master that serves the concert's own slot
	shards, shardsBeside             int // the line's shards, and those on the concert's master
	floor, join, admit, hold, cancel phaseCost
	opening                          phaseCost // as many joins again, from capacityOpeningWorkers
	hset                             phaseCost // a plain HSET: the floor of a command, beside the script's
	// A point charge and each step of a payment as the service runs one with an Idempotency-Key: the
	// key reserved, the hold claimed, the wallet debited, the sale completed, the key's answer recorded.
	charge, reserve, claim, debit, complete, finish phaseCost
	wb                                              *writeBehindCost // the joins recorded in Postgres (nil: not measured)
}

// payment is the steps of a payment (reserve, claim, debit, complete, finish) as one operation: their
// Redis time summed on each master.
func (c concertCapacity) payment() phaseCost {
	p := phaseCost{ops: c.claim.ops, usec: make([]float64, len(c.claim.usec))}
	for _, step := range []phaseCost{c.reserve, c.claim, c.debit, c.complete, c.finish} {
		p.scripts += step.scripts
		for i, u := range step.usec {
			p.usec[i] += u
		}
	}
	return p
}

// measureCapacity storms one concert of 3 schedules on the Redis of c (a single server or a cluster)
// through the store as the service runs it (with limit, the service's per-user limit, and on a
// cluster the replica wait of a hold), under a fresh key prefix that it deletes at the end: fans join
// its paused line (WAITING, as in an on-sale's rush), the line opens and the tick admits them all,
// each holds a seat, then cancels it. Before that, the floor: as many EVALSHA of `return 1`, spread
// over the masters. Each phase is priced by attribute, from INFO commandstats of every master read
// before and after it and the commands the store sent; nothing here knows the keys, or which scripts
// an operation runs on which slots, so the measure holds whatever the layout of a concert.
//
// With dsn, the joins are then recorded in that database by an in-process write-behind worker, before
// the admission (measureWriteBehind): the write-behind's CPU per join beside Redis's.
func measureCapacity(ctx context.Context, c rueidis.Client, limit redis.UserLimit, fans int, dsn string) (concertCapacity, error) {
	if fans < capacitySchedules {
		return concertCapacity{}, fmt.Errorf("capacity: %d fans, want at least %d", fans, capacitySchedules)
	}
	masters, err := mastersOf(ctx, c)
	if err != nil {
		return concertCapacity{}, err
	}
	prefix := "capacity" + strings.ToLower(ticketrush.NewID())
	defer deletePrefix(c, masters, prefix)
	r := &capacityRun{ctx: ctx, c: c, masters: masters, prefix: prefix, fans: fans, sent: &sentCommands{}}
	r.store = redis.NewStore(counted{c, r.sent}, prefix, prometheus.NewRegistry())
	r.store.LimitUsers(limit)
	if redis.IsCluster(c) {
		r.store.WaitForReplica(redis.ReplicaWait) // as serve does
	}
	res := concertCapacity{masters: len(masters)}
	if err := r.loadScripts(); err != nil {
		return res, err
	}
	if err := r.floors(&res); err != nil {
		return res, err
	}
	if err := r.createConcert(&res); err != nil {
		return res, err
	}
	if err := r.joinPhases(&res, dsn); err != nil {
		return res, err
	}
	if err := r.admitHoldCancel(&res); err != nil {
		return res, err
	}
	return res, measurePayments(ctx, r.store, r.phase, r.con, r.claims, &res)
}

// capacityRun is one storm of measureCapacity: the store under its fresh key prefix, the commands it
// sent, and the concert stormed with its fans' claims.
type capacityRun struct {
	ctx     context.Context
	c       rueidis.Client
	masters []rueidis.Client
	prefix  string
	fans    int
	sent    *sentCommands
	store   *redis.Store
	now     time.Time                // the concert's clock
	q       ticketrush.QueueSettings // the concert's queue
	con     ticketrush.Concert       // the concert stormed
	claims  []ticketrush.QueueClaims // each fan's claims, from the priced joins
}

// phase runs one phase and prices it by attribute, from INFO commandstats of every master read before
// and after it and the commands the store sent meanwhile.
func (r *capacityRun) phase(name string, run func() (ops int, err error)) (phaseCost, error) {
	before, err := readCommandStats(r.ctx, r.masters)
	if err != nil {
		return phaseCost{}, err
	}
	r.sent.take()
	ops, err := run()
	if err != nil {
		return phaseCost{}, fmt.Errorf("%s: %w", name, err)
	}
	did := r.sent.take()
	after, err := readCommandStats(r.ctx, r.masters)
	if err != nil {
		return phaseCost{}, err
	}
	return attribute(name, ops, did, before, after)
}

// loadScripts loads every script of the store on every master beforehand, as on a Redis that has
// served a while: no phase pays for the fallback of its first calls (NOSCRIPT, then EVAL).
func (r *capacityRun) loadScripts() error {
	for _, m := range r.masters {
		if err := loadScripts(r.ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// floors prices the floors, from the goroutines the storm's phases run on: the cheapest script call
// on every master, and a plain HSET of a small field, the floor of one command.
func (r *capacityRun) floors(res *concertCapacity) error {
	ctx, fans := r.ctx, r.fans
	nodes := make([]rueidis.Client, len(r.masters))
	var sha string
	var err error
	for i, m := range r.masters {
		if sha, err = m.Do(ctx, m.B().ScriptLoad().Script(floorScript).Build()).ToString(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
		nodes[i] = counted{m, r.sent}
	}
	if res.floor, err = r.phase("floor", func() (int, error) {
		return fans, storm(ctx, capacityWorkers, fans, func(i int) error {
			n := nodes[i%len(nodes)]
			return n.Do(ctx, n.B().Evalsha().Sha1(sha).Numkeys(0).Build()).Error()
		})
	}); err != nil {
		return err
	}
	plain := counted{r.c, r.sent}
	res.hset, err = r.phase("hset", func() (int, error) {
		return fans, storm(ctx, capacityWorkers, fans, func(i int) error {
			key := fmt.Sprintf("%s:hsetfloor:%d", r.prefix, i%64) // over the masters
			return plain.Do(ctx, plain.B().Hset().Key(key).FieldValue().FieldValue(strconv.Itoa(i), "1").Build()).Error()
		})
	})
	return err
}

// createConcert creates and loads the concert of capacitySchedules schedules, its line paused, with a
// seat for every fan, and notes the master of its own slot.
func (r *capacityRun) createConcert(res *concertCapacity) error {
	ctx, fans, store := r.ctx, r.fans, r.store
	var err error
	r.now = time.Now()
	r.q = ticketrush.DefaultQueueSettings()
	r.q.Paused, r.q.ActiveCapacity, r.q.AdmitPerSecond = true, fans, ticketrush.MaxAdmitPerSecond
	r.q.ActiveTTL, r.q.HoldTTL, r.q.MaxHoldsPerUser = time.Hour, time.Hour, 1
	// The line as the service spreads it: one slot on one Redis, 8 per master on a cluster.
	if r.q.LineShards, err = store.DefaultLineShards(ctx); err != nil {
		return err
	}
	r.con = ticketrush.Concert{ID: ticketrush.NewID(), Title: "capacity", Venue: "bench", Queue: r.q,
		Sections: []ticketrush.Section{{Name: "R", Price: capacityPrice, Seats: (fans + capacitySchedules - 1) / capacitySchedules}}}
	for i := range capacitySchedules {
		r.con.Schedules = append(r.con.Schedules, ticketrush.Schedule{ID: ticketrush.NewID(), StartsAt: r.now.Add(time.Duration(i+1) * 24 * time.Hour)})
	}
	slots, err := store.PlaceSeats(ctx, r.con) // as a create places it: on a cluster, the date's seats in a block per master
	if err != nil {
		return err
	}
	r.con.Placement = ticketrush.Placement{Recorded: true, Slots: slots}
	if _, err := store.LoadConcert(ctx, r.con, r.now); err != nil {
		return err
	}
	res.concertMaster, err = ownerOf(ctx, r.masters, store.Keys().Concert(r.con.ID).Cfg())
	return err
}

// joins has fans named name-<i> join the paused line from workers goroutines, keeping each one's claims.
func (r *capacityRun) joins(name string, workers int, claims []ticketrush.QueueClaims) func() (int, error) {
	return func() (int, error) {
		return r.fans, storm(r.ctx, workers, r.fans, func(i int) error {
			user := fmt.Sprintf("%s-%07d", name, i)
			j, err := r.store.Join(r.ctx, r.con.ID, user, r.now)
			if err == nil && j.Status != ticketrush.StatusWaiting {
				err = fmt.Errorf("%s joined %s, want WAITING in a paused line", user, j.Status)
			}
			claims[i] = ticketrush.QueueClaims{UserID: user, ConcertID: r.con.ID, Seq: j.Seq}
			return err
		})
	}
}

// joinPhases prices the joins of the fans, notes the line's shards, measures the write-behind of the
// joins into dsn (if any), then prices as many joins again from capacityOpeningWorkers.
func (r *capacityRun) joinPhases(res *concertCapacity, dsn string) error {
	var err error
	r.claims = make([]ticketrush.QueueClaims, r.fans)
	if res.join, err = r.phase("join", r.joins("capfan", capacityWorkers, r.claims)); err != nil {
		return err
	}
	if res.shards, res.shardsBeside, err = shardsBeside(r.ctx, r.store, r.c, r.masters, r.con.ID, res.concertMaster); err != nil {
		return err
	}
	if dsn != "" {
		wb, err := measureWriteBehind(r.ctx, r.c, r.prefix, dsn, r.con, r.fans)
		if err != nil {
			return err
		}
		res.wb = &wb
	}
	res.opening, err = r.phase("opening", r.joins("capopen", capacityOpeningWorkers, make([]ticketrush.QueueClaims, r.fans)))
	return err
}

// admitHoldCancel opens the line and prices the tick's admission of every fan, then each fan's hold of
// a seat, then its cancel.
func (r *capacityRun) admitHoldCancel(res *concertCapacity) error {
	ctx, fans, store, con, now := r.ctx, r.fans, r.store, r.con, r.now
	var err error
	r.q.Paused = false
	if err := store.Configure(ctx, con.ID, r.q, now); err != nil {
		return err
	}
	if res.admit, err = r.phase("admission", func() (int, error) {
		admitted := 0
		for admitted < fans {
			t, err := store.Tick(ctx, con.ID, now, capacityTickBatch)
			if err != nil {
				return admitted, err
			}
			if t.Admitted == 0 {
				return admitted, fmt.Errorf("a tick admitted nobody, %d of %d fans admitted", admitted, fans)
			}
			admitted += t.Admitted
		}
		return admitted, nil
	}); err != nil {
		return err
	}
	ids := make([]string, fans)
	if res.hold, err = r.phase("hold", func() (int, error) {
		return fans, storm(ctx, capacityWorkers, fans, func(i int) error {
			seat := "R-" + strconv.Itoa(1+i/capacitySchedules)
			h, _, err := store.Hold(ctx, r.claims[i], con.Schedules[i%capacitySchedules].ID, seat, capacityPrice, now)
			ids[i] = h.ID
			return err
		})
	}); err != nil {
		return err
	}
	res.cancel, err = r.phase("cancel", func() (int, error) {
		return fans, storm(ctx, capacityWorkers, fans, func(i int) error {
			_, err := store.Cancel(ctx, r.claims[i].UserID, ids[i], now)
			return err
		})
	})
	return err
}

// measurePayments prices a point charge and each step of a payment, each a phase of its own: every fan
// charges the price (as POST /v1/points/charges does), holds its seat again (not priced: the hold is
// priced above), and pays it in the steps the booking service takes for POST /v1/payments with an
// Idempotency-Key (booking.Service.PayOnce): reserve the key, claim, debit, complete, record the answer.
func measurePayments(ctx context.Context, store *redis.Store, phase func(string, func() (int, error)) (phaseCost, error),
	con ticketrush.Concert, claims []ticketrush.QueueClaims, res *concertCapacity) error {
	fans, now := len(claims), time.Now()
	user := func(i int) string { return claims[i].UserID }
	var err error
	if res.charge, err = phase("charge", func() (int, error) {
		return fans, storm(ctx, capacityWorkers, fans, func(i int) error {
			_, replayed, err := store.Charge(ctx, user(i), capacityPrice, "cap-charge-"+user(i),
				fmt.Sprintf("POST /v1/points/charges %d", capacityPrice), now)
			if err == nil && replayed {
				err = fmt.Errorf("%s: a first charge answered as replayed", user(i))
			}
			return err
		})
	}); err != nil {
		return err
	}
	ids := make([]string, fans)
	if err := storm(ctx, capacityWorkers, fans, func(i int) error {
		r, _, err := store.Hold(ctx, claims[i], con.Schedules[i%capacitySchedules].ID, "R-"+strconv.Itoa(1+i/capacitySchedules), capacityPrice, now)
		ids[i] = r.ID
		return err
	}); err != nil {
		return fmt.Errorf("holds to pay: %w", err)
	}
	debits := make([]ticketrush.Payment, fans)
	key := func(i int) string { return "cap-pay-" + ids[i] }
	fp := func(i int) string { return "POST /v1/payments " + ids[i] }
	steps := []struct {
		name string
		cost *phaseCost
		do   func(i int) error
	}{
		{"payment: reserve the key", &res.reserve, func(i int) error {
			reserved, _, _, _, err := store.ReserveKey(ctx, user(i), key(i), fp(i), ticketrush.PaymentID(ids[i]), now)
			if err == nil && !reserved {
				err = fmt.Errorf("%s: the key of a first payment not reserved", user(i))
			}
			return err
		}},
		{"payment: claim", &res.claim, func(i int) error {
			r, err := store.Claim(ctx, user(i), ids[i], now)
			if err == nil && r.Status != ticketrush.ReservationPaying {
				err = fmt.Errorf("%s: claimed %s, want PAYING", ids[i], r.Status)
			}
			return err
		}},
		{"payment: debit", &res.debit, func(i int) error {
			var err error
			debits[i], err = store.Debit(ctx, user(i), ids[i], capacityPrice, now)
			return err
		}},
		{"payment: complete", &res.complete, func(i int) error {
			r, err := store.Complete(ctx, ids[i], debits[i], now)
			if err == nil && r.Status != ticketrush.ReservationPaid {
				err = fmt.Errorf("%s: completed %s, want PAID", ids[i], r.Status)
			}
			return err
		}},
		{"payment: record the answer", &res.finish, func(i int) error {
			a, err := store.Remember(ctx, user(i), key(i), fp(i), ticketrush.PaymentID(ids[i]), true, now)
			if err == nil && a.Ref != ticketrush.PaymentID(ids[i]) {
				err = fmt.Errorf("%s: the key recorded %s (%v)", user(i), a.Ref, a.Refused)
			}
			return err
		}},
	}
	for _, st := range steps {
		if *st.cost, err = phase(st.name, func() (int, error) { return fans, storm(ctx, capacityWorkers, fans, st.do) }); err != nil {
			return err
		}
	}
	return nil
}

// storm runs do(0..n-1) from workers goroutines and fails when a call failed, with the first failure.
func storm(ctx context.Context, workers, n int, do func(i int) error) error {
	var next, failed atomic.Int64
	firsts := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					failed.Add(1)
					if firsts[w] == nil {
						firsts[w] = err
					}
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		i := slices.IndexFunc(firsts, func(err error) bool { return err != nil })
		return fmt.Errorf("%d of %d calls failed, one: %w", f, n, firsts[i])
	}
	return ctx.Err()
}

// mastersOf returns a client of each master of c: c itself on a single Redis, the nodes whose ROLE is
// master on a cluster, in the order of their addresses.
func mastersOf(ctx context.Context, c rueidis.Client) ([]rueidis.Client, error) {
	if !redis.IsCluster(c) {
		return []rueidis.Client{c}, nil
	}
	nodes := c.Nodes()
	var out []rueidis.Client
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[addr]
		role, err := n.Do(ctx, n.B().Role().Build()).ToArray()
		if err != nil || len(role) == 0 {
			return nil, fmt.Errorf("ROLE of %s: %v", addr, err)
		}
		if r, _ := role[0].ToString(); r == "master" {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the cluster shows no master")
	}
	return out, nil
}

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

// deletePrefix deletes the keys under prefix from every master (SCAN covers one node; UNLINK goes
// through c, which routes each key to its slot's master).
func deletePrefix(c rueidis.Client, masters []rueidis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range masters {
		var cursor uint64
		for {
			r, err := m.Do(ctx, m.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				break
			}
			for _, k := range r.Elements {
				c.Do(ctx, c.B().Unlink().Key(k).Build())
			}
			if cursor = r.Cursor; cursor == 0 {
				break
			}
		}
	}
}

// serviceLimit is the per-user limit a service started with this environment enforces
// (USER_RATE_LIMIT and USER_RATE_BURST, or the service's defaults); the bench's own service runs
// without one.
func serviceLimit(env func(name, def string) string) (redis.UserLimit, error) {
	dev := map[string]string{"JWT_SECRET": devJWTSecret, "QUEUE_TOKEN_SECRET": devQueueSecret, "ADMIN_TOKEN": devAdminToken}
	cfg, err := svcconfig.Load(func(name string) string { return env(name, dev[name]) })
	if err != nil {
		return redis.UserLimit{}, err
	}
	return redis.UserLimit{Rate: cfg.UserRateLimit, Burst: cfg.UserRateBurst}, nil
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

// capacityRuns are the repetitions of the capacity measure on each Redis, and why those that failed
// did.
type capacityRuns struct {
	single, cluster, six          []concertCapacity
	singleErr, clusterErr, sixErr []error
	clusterAgain                  int // cluster repetitions run again because another client used the masters
	sixNA                         string
}

// capacityAttempts bounds the runs of one repetition on a cluster that others use too
// (-capacity-cluster URL): a run during their calls is thrown away (errShared) and run again.
const capacityAttempts = 5

// capacity measures the capacity of one concert b.cfg.reps times, on a Redis of its own (persistent
// as the service's: startRedis) and on a cluster (capacityCluster) in turn, and sets the capacity rows.
func (b *bench) capacity(ctx context.Context, baseDSN string) error {
	limit, err := serviceLimit(b.env)
	if err != nil {
		return err
	}
	r, err := startRedis(ctx, filepath.Join(b.cfg.logs, "redis-capacity"), true)
	if err != nil {
		return err
	}
	defer r.close()
	single := r.client
	cluster, stop, clusterNA := b.capacityCluster(ctx)
	defer stop()
	if cluster != nil {
		defer cluster.Close()
	}
	dsn, drop, err := benchDatabase(ctx, baseDSN, "capacity")
	if err != nil {
		return err
	}
	defer drop()
	var runs capacityRuns
	six, stopSix, sixNA := b.ownCluster(ctx, 6)
	defer stopSix()
	if six != nil {
		defer six.Close()
	}
	runs.sixNA = sixNA
	for rep := range b.cfg.reps {
		fmt.Fprintf(os.Stderr, "bench: capacity of one concert %d/%d: %d fans on one Redis", rep+1, b.cfg.reps, b.cfg.capacityFans)
		r, err := measureCapacity(ctx, single, limit, b.cfg.capacityFans, dsn)
		if err != nil {
			runs.singleErr = append(runs.singleErr, err)
		} else {
			runs.single = append(runs.single, r)
		}
		if cluster != nil {
			fmt.Fprint(os.Stderr, ", then on the cluster")
			r, err := measureCapacity(ctx, cluster, limit, b.cfg.capacityFans, "")
			for try := 1; errors.Is(err, errShared) && try < capacityAttempts; try++ {
				fmt.Fprint(os.Stderr, " (again: another client used it)")
				runs.clusterAgain++
				r, err = measureCapacity(ctx, cluster, limit, b.cfg.capacityFans, "")
			}
			if err == nil && r.masters != 3 {
				err = fmt.Errorf("the cluster has %d masters, the rows are of 3", r.masters)
			}
			if err != nil {
				runs.clusterErr = append(runs.clusterErr, err)
			} else {
				runs.cluster = append(runs.cluster, r)
			}
		}
		if six != nil {
			fmt.Fprint(os.Stderr, ", then on 6 masters")
			r, err := measureCapacity(ctx, six, limit, b.cfg.capacityFans, "")
			if err == nil && r.masters != 6 {
				err = fmt.Errorf("the cluster has %d masters, want 6", r.masters)
			}
			if err != nil {
				runs.sixErr = append(runs.sixErr, err)
			} else {
				runs.six = append(runs.six, r)
			}
		}
		fmt.Fprintln(os.Stderr)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	b.capacityRows(runs, clusterNA, limit)
	b.pipelined = runs.single
	b.masters = runs
	return nil
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

// capacityRows sets the capacity rows from the medians of the repetitions that succeeded: per second
// is what one concert can take; the notes give Redis's µs per operation, the busiest master's share and
// the floor.
func (b *bench) capacityRows(runs capacityRuns, clusterNA string, limit redis.UserLimit) {
	b.notes[rowCapJoins1] = fmt.Sprintf("one concert of %s, %s fans from %d goroutines through the store (the per-user limit at %d/s; "+
		"on the cluster a hold waits for a replica, as the service's does) join its paused line, are admitted by the tick, hold a seat each "+
		"and cancel it; Redis's time per operation is that of the commands the store sent in the phase, summed over the masters "+
		"(INFO commandstats of every master before and after it); per second = 1e6 / (µs per operation × the busiest master's share)",
		dates(capacitySchedules), thousands(float64(b.cfg.capacityFans)), capacityWorkers, limit.Rate)
	join := func(c concertCapacity) phaseCost { return c.join }
	admit := func(c concertCapacity) phaseCost { return c.admit }
	hold := func(c concertCapacity) phaseCost { return c.hold }
	cancel := func(c concertCapacity) phaseCost { return c.cancel }
	for _, t := range []struct {
		runs         []concertCapacity
		errs         []error
		na           string
		joins, holds string
	}{
		{runs.single, runs.singleErr, "", rowCapJoins1, rowCapHolds1},
		{runs.cluster, runs.clusterErr, clusterNA, rowCapJoins3, rowCapHolds3},
	} {
		if len(t.runs) == 0 {
			if len(t.errs) > 0 {
				t.na = t.errs[len(t.errs)-1].Error()
			}
			b.na[t.joins], b.na[t.holds] = t.na, t.na
			continue
		}
		for _, r := range t.runs {
			b.results[t.joins] = append(b.results[t.joins], measure{rate: r.join.perSec()})
			b.results[t.holds] = append(b.results[t.holds], measure{rate: r.hold.perSec()})
		}
		failed := ""
		if len(t.errs) > 0 {
			failed = fmt.Sprintf(" (%d of %d repetitions; the last failure: %v)", len(t.runs), len(t.runs)+len(t.errs), t.errs[len(t.errs)-1])
		}
		if t.joins == rowCapJoins3 && runs.clusterAgain > 0 {
			failed += fmt.Sprintf(" (%d runs thrown away and run again: another client used the cluster meanwhile)", runs.clusterAgain)
		}
		b.results[t.joins][0].note = phaseNote(t.runs, "join", join, "the tick per admitted fan", admit) + failed
		b.results[t.holds][0].note = phaseNote(t.runs, "hold", hold, "a cancel", cancel) + failed
	}
	if len(runs.single) == 0 {
		b.na[rowFloor] = b.na[rowCapJoins1]
		return
	}
	floor := func(c concertCapacity) float64 { return c.floor.usPerOp() }
	for _, r := range runs.single {
		b.results[rowFloor] = append(b.results[rowFloor], measure{rate: 1e6 / r.floor.usPerOp()})
	}
	hset := func(c concertCapacity) float64 { return c.hset.usPerOp() }
	note := fmt.Sprintf("Redis %.2f µs per EVALSHA of '%s' and %.2f µs per plain HSET on the one Redis",
		medianOf(runs.single, floor), floorScript, medianOf(runs.single, hset))
	if len(runs.cluster) > 0 {
		note += fmt.Sprintf(", %.2f µs and %.2f µs on the cluster's masters", medianOf(runs.cluster, floor), medianOf(runs.cluster, hset))
	}
	b.results[rowFloor][0].note = note + ", from the same goroutines just before each storm: the cheapest script call and the cheapest write"
}

// dates names n schedules: "one date", "3 dates".
func dates(n int) string {
	if n == 1 {
		return "one date"
	}
	return fmt.Sprintf("%d dates", n)
}

// phaseNote gives the medians of a phase p (what: its operation) over runs, and of the phase then
// after it.
func phaseNote(runs []concertCapacity, what string, p func(concertCapacity) phaseCost, thenWhat string, then func(concertCapacity) phaseCost) string {
	med := func(f func(phaseCost) float64, p func(concertCapacity) phaseCost) float64 {
		return medianOf(runs, func(c concertCapacity) float64 { return f(p(c)) })
	}
	floor := func(c concertCapacity) phaseCost { return c.floor }
	calls := func(p phaseCost) float64 { return float64(p.scripts) / float64(p.ops) }
	us, fl := med(phaseCost.usPerOp, p), med(phaseCost.usPerOp, floor)
	s := fmt.Sprintf("Redis %.1f µs per %s (%.1f× the floor of %.2f µs; %.2f script calls each)", us, what, us/fl, fl, med(calls, p))
	if n := runs[0].masters; n > 1 {
		s += fmt.Sprintf(" summed over the %d masters, %.1f%% of it on the busiest", n, 100*med(phaseCost.busiest, p))
	}
	s += fmt.Sprintf("; %s %.1f µs", thenWhat, med(phaseCost.usPerOp, then))
	if runs[0].masters > 1 {
		s += fmt.Sprintf(" (%.1f%% on the busiest master)", 100*med(phaseCost.busiest, then))
	}
	return s
}

// medianOf is the median of f over runs.
func medianOf(runs []concertCapacity, f func(concertCapacity) float64) float64 {
	ms := make([]measure, len(runs))
	for i, r := range runs {
		ms[i] = measure{rate: f(r)}
	}
	return median(ms).rate
}
