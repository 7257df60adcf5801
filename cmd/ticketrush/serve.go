package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ticketrush/ticketrush/internal/app"
	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/catalog"
	"github.com/ticketrush/ticketrush/internal/config"
	httpapi "github.com/ticketrush/ticketrush/internal/http"
	"github.com/ticketrush/ticketrush/internal/pass"
	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/internal/writebehind"
)

// serve runs the service until ctx ends, then stops accepting requests, drains the loops and closes
// the pools in reverse order.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	reg := newRegistry()

	rc, err := redis.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rc.Close()
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	reg.MustRegister(db.Collector())
	if applied, err := db.Migrate(ctx); err != nil {
		return err
	} else if len(applied) > 0 {
		log.Info("migrated", "applied", applied)
	}

	if err := repair.RecordPlacements(ctx, rc, db, cfg.RedisKeyPrefix); err != nil {
		return fmt.Errorf("record placements: %w", err)
	}

	state := writebehind.NewState(rc, cfg.RedisKeyPrefix)
	if err := state.Startup(ctx, db, time.Now()); errors.Is(err, writebehind.ErrRedisNotWhole) {
		log.Error("redis is not whole: unready until `ticketrush restore`", "err", err)
	} else if err != nil {
		return err
	}

	store := redis.NewStore(rc, cfg.RedisKeyPrefix, reg)
	if redis.IsCluster(rc) {
		store.WaitForReplica(redis.ReplicaWait) // the money steps wait for a replica (docs/durability.md)
	}
	store.LimitUsers(redis.UserLimit{Rate: cfg.UserRateLimit, Burst: cfg.UserRateBurst})
	if n, err := repair.MigrateLayouts(ctx, store, db, nil); err != nil { // before any script reads the layout
		return fmt.Errorf("migrate layout: %w", err)
	} else if n > 0 {
		log.Info("migrated layout", "concerts", n, "version", redis.LayoutVersion)
	}
	saleFigures := prometheus.NewRegistry() // the waiting room's and purchase path's metrics, for the sale log
	sale := app.New(store, db, cfg.QueueTokenSecret, time.Now, log, alsoRegister{reg, saleFigures})
	cat, waitingRoom, purchases := sale.Catalog, sale.Queue, sale.Booking
	store.NeedConcerts(cat.IDs) // readiness checks the concerts' slots too
	if err := cat.Refresh(ctx); err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	r := newRounds(store, cat, waitingRoom, purchases, time.Now, reg)
	r.activity.Settle(cat.IDs()) // the write-behind drains what an earlier process left unread

	loops, stopLoops := context.WithCancel(context.Background())
	defer stopLoops()
	var wg sync.WaitGroup
	every := func(interval time.Duration, step func(context.Context) error, msg string) {
		wg.Go(func() { periodic.Run(loops, interval, step, log, msg) })
	}
	every(cfg.CatalogRefresh, cat.Refresh, "catalog refresh")
	saleLog := newSaleLog(saleFigures, log)
	wg.Go(func() {
		periodic.RunPaced(loops, saleLogEvery, saleLogQuiet, saleLog.hadNews, r.activity.Woken, saleLog.report, log, "sale log")
	})
	var passes httpapi.Passes // nil without the api role: nothing to sign, no key set to serve
	if cfg.Has(config.RoleAPI) {
		issuer := pass.NewIssuer(db, cfg.PassIssuer, pass.Schedule{TTL: cfg.PassTTL, Skew: config.PassClockSkew,
			KeySetMaxAge: config.PassKeySetAge}, time.Now, log)
		if err := issuer.Start(ctx); err != nil {
			return fmt.Errorf("load pass keys: %w", err)
		}
		passes = issuer
		every(config.PassKeyReload, issuer.Refresh, "pass key reload")
		every(cfg.SnapshotRefresh, waitingRoom.Refresh, "queue view refresh")
		every(cfg.LivenessFlush, waitingRoom.FlushLiveness, "queue liveness flush")
		wg.Go(func() { purchases.RunSeatView(loops, cfg.SnapshotRefresh) }) // as often as the queue view
	}
	// The loops over awake concerts keep their pace while a concert is awake (or a sale is about to
	// open, for the draw) and wake up once a second otherwise, or at once on a wake-up this process sees.
	paced := func(interval time.Duration, busy func() bool, step func(context.Context) error, msg string) {
		wg.Go(func() { periodic.RunPaced(loops, interval, idlePace, busy, r.activity.Woken, step, log, msg) })
	}
	if cfg.Has(config.RoleScheduler) || cfg.Has(config.RoleWriteBehind) {
		paced(cfg.AdmitTick, r.activity.AnyAwake, r.activity.Poll, "activity poll")
	}
	if cfg.Has(config.RoleScheduler) {
		paced(cfg.AdmitTick, r.activity.AnyAwake, r.tick, "admission tick")
		paced(cfg.SweepInterval, r.activity.AnyAwake, r.sweep, "sweep")
		paced(cfg.AdmitTick, func() bool { return r.activity.AnyAwake() || r.drawSoon(idlePace+cfg.AdmitTick) }, r.draw, "draw")
	}
	ready := map[string]httpapi.Check{"redis": store.Ping, "postgres": db.Ping, "redis_state": state.Check}
	if redis.IsCluster(rc) { // a check waits for the client to follow an election (docs/faults.md, "Readiness")
		ready["redis"], ready["redis_state"] = redis.Settled(store.Ping), redis.Settled(state.Check)
	}
	if cfg.Has(config.RoleWriteBehind) {
		worker := writebehind.New(rc, db, cfg.RedisKeyPrefix, r.streams, writeBehindConfig(cfg, redis.IsCluster(rc)), time.Now, log, reg)
		worker.FollowPlacements(cat.Placement)
		wg.Go(func() { worker.Run(loops) })
		ready["writebehind"] = worker.Check
	}

	api := httpapi.NewServer(httpapi.Deps{
		API:        cfg.Has(config.RoleAPI),
		Queue:      waitingRoom,
		Catalog:    cat,
		Booking:    purchases,
		Users:      auth.NewUsers(cfg.JWTSecret, auth.WithIssuer(cfg.JWTIssuer), auth.WithAudience(cfg.JWTAudience)),
		AdminToken: cfg.AdminToken,
		Ledger:     db,
		Ready:      ready,
		Degraded:   unreplicated(store),
		Registry:   reg,
		Log:        log,

		Limiter:        httpapi.NewLimiter(cfg.UserRateLimit, cfg.UserRateBurst, time.Now),
		Challenges:     auth.NewChallenges(cfg.QueueTokenSecret),
		TrustedProxies: cfg.TrustedProxyCIDRs,
		Draws:          store,
		Passes:         passes,
		PassSite:       cfg.PassSiteURL,
	})
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: serverTimeouts.readHeader,
		ReadTimeout:       serverTimeouts.read,
		WriteTimeout:      serverTimeouts.write,
		IdleTimeout:       serverTimeouts.idle,
		MaxHeaderBytes:    httpapi.MaxHeaderBytes,
	}
	srv.RegisterOnShutdown(api.StopStreams)
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "roles", cfg.Roles)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(httpapi.Listener(ln)) }()

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdown); serr != nil {
		err = errors.Join(err, serr)
	}
	stopLoops()
	wg.Wait()
	cat.Stop() // admin creates that outlived their request
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// writeBehindConfig is the worker's configuration: its batches and reads as cfg has them, the rest
// writebehind.DefaultConfig's. On a Redis Cluster an event reaches Postgres once a replica has it.
func writeBehindConfig(cfg config.Config, cluster bool) writebehind.Config {
	w := writebehind.Config{
		Writers:      cfg.WriteBehindWriters,
		BatchSize:    cfg.WriteBehindBatchSize,
		ReadCount:    cfg.WriteBehindReadCount,
		MaxReadCount: cfg.WriteBehindMaxReadCount,
		ClaimIdle:    cfg.WriteBehindClaimIdle,
	}
	if cluster {
		w.ReplicaWait = redis.ReplicaWait
	}
	return w
}

// serverTimeouts are the HTTP server's deadlines. An event stream and the draw's keys file outlive all
// of them: their requests have no deadline, and they extend the connection's write deadline at every
// write (internal/http events.go; TestEventStreamOutlivesEveryDeadline holds a stream past the longest,
// TestDrawKeysOutliveTheRequestTimeout a keys file past the request's).
var serverTimeouts = struct{ readHeader, read, write, idle time.Duration }{
	readHeader: 5 * time.Second, read: 10 * time.Second, write: 15 * time.Second, idle: 60 * time.Second,
}

// rounds are one round of each background loop over the concerts (serve runs them every interval):
// the admission tick, the sweep and the draw run only for awake concerts (queue.Activity: fans waiting,
// active, holding or paying), and the write-behind reads the streams of the concerts awake within
// queue.StreamDrain; a create, a queue change or an access-code issue wakes its concert too, and so do a
// hold, a cancel or a payment (even after its sale closed) and a round that found work, for every
// process: a write-behind of its own reads the events they wrote.
type rounds struct {
	activity          *queue.Activity
	tick, sweep, draw func(context.Context) error
	drawSoon          func(within time.Duration) bool // a sale not drawn yet opens within (or has opened)
	streams           func() []string
}

// idlePace is how often the loops over awake concerts run while none is awake (see rounds): a concert
// another instance wakes is found within it; one this instance wakes, at once.
const idlePace = time.Second

func newRounds(store *redis.Store, cat *catalog.Service, waitingRoom *queue.Service, purchases *booking.Service,
	now func() time.Time, reg prometheus.Registerer) rounds {
	activity := queue.NewActivity(store, now, cat.Closed)
	waitingRoom.TrackActivity(activity)
	purchases.TrackActivity(activity.SeatsChanged)
	cat.OnChange(activity.Touch)
	sched := waitingRoom.NewScheduler(store, activity.IDs).ReportBusy(activity.LineBusy)
	sweeper := purchases.NewSweeper(activity.IDs, activity.Busy)
	drawer := waitingRoom.NewDrawer(store, cat.SaleIDs, cat.Sale, ticketrush.NewID(), reg).Track(activity.IsAwake, activity.Busy)
	return rounds{activity: activity, tick: sched.Tick, sweep: sweeper.Sweep, draw: drawer.Tick, drawSoon: drawer.Soon,
		streams: func() []string { return activity.Recent(queue.StreamDrain) }}
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ticketrush_build_info",
		Help:        "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	build.Set(1)
	reg.MustRegister(build)
	return reg
}

// unreplicated is readyz's "degraded" line while some master takes the replicated steps without a
// replica in sync (docs/durability.md, "A master without a replica").
func unreplicated(store *redis.Store) func() []string {
	return func() []string {
		if n := store.UnreplicatedSlots(); n > 0 {
			return []string{fmt.Sprintf("redis: %d slot(s) whose master has no replica in sync: their money and hold writes are taken without a replica's copy", n)}
		}
		return nil
	}
}
