package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	svcconfig "github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/dbtest"
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
	masters, err := dbtest.MastersOf(ctx, c)
	if err != nil {
		return concertCapacity{}, err
	}
	prefix := "capacity" + strings.ToLower(ticketrush.NewID())
	defer dbtest.DeletePrefix(c, prefix)
	r := &capacityRun{ctx: ctx, c: c, masters: masters, prefix: prefix, fans: fans, sent: &sentCommands{}}
	r.store = redis.NewStore(counted{c, r.sent}, prefix, prometheus.NewRegistry())
	r.store.LimitUsers(limit)
	if redis.IsCluster(c) {
		r.store.WaitForReplica(svcconfig.ReplicaWait) // as serve does
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
			j, err := r.store.Line.Join(r.ctx, r.con.ID, user, r.now)
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
			t, err := store.Line.Tick(ctx, con.ID, now, capacityTickBatch)
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
			h, _, err := store.Seats.Hold(ctx, r.claims[i], con.Schedules[i%capacitySchedules].ID, seat, capacityPrice, now)
			ids[i] = h.ID
			return err
		})
	}); err != nil {
		return err
	}
	res.cancel, err = r.phase("cancel", func() (int, error) {
		return fans, storm(ctx, capacityWorkers, fans, func(i int) error {
			_, err := store.Seats.Cancel(ctx, r.claims[i].UserID, ids[i], now)
			return err
		})
	})
	return err
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
