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
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/app"
	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/catalog"
	"github.com/ticketrush/ticketrush/internal/config"
	httpapi "github.com/ticketrush/ticketrush/internal/http"
	"github.com/ticketrush/ticketrush/internal/pass"
	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
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
	state, store, err := prepareStores(ctx, cfg, rc, db, reg, log)
	if err != nil {
		return err
	}
	saleFigures := prometheus.NewRegistry() // the waiting room's and purchase path's metrics, for the sale log
	sale := app.New(store, db, cfg.QueueTokenSecret, time.Now, log, alsoRegister{reg, saleFigures})
	cat := sale.Catalog
	store.NeedConcerts(cat.IDs) // readiness checks the concerts' slots too
	if err := cat.Refresh(ctx); err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	r := sale.Rounds(store, time.Now, reg)
	r.Activity.Settle(cat.IDs()) // the write-behind drains what an earlier process left unread

	loops, stopLoops := context.WithCancel(context.Background())
	defer stopLoops()
	bg := &background{loops: loops, log: log, woken: r.Activity.Woken}
	bg.every(cfg.CatalogRefresh, cat.Refresh, "catalog refresh")
	saleLog := newSaleLog(saleFigures, log)
	bg.wg.Go(func() {
		periodic.RunPaced(loops, saleLogEvery, saleLogQuiet, saleLog.hadNews, r.Activity.Woken, saleLog.report, log, "sale log")
	})
	passes, err := startPasses(ctx, cfg, db, sale, bg, log)
	if err != nil {
		return err
	}
	startRounds(cfg, r, bg)
	whole := func(ctx context.Context) error { return writebehind.CheckWhole(ctx, state) }
	ready := map[string]httpapi.Check{"redis": store.Ping, "postgres": db.Ping, "redis_state": whole}
	if redis.IsCluster(rc) { // a check waits for the client to follow an election (docs/faults.md, "Readiness")
		ready["redis"], ready["redis_state"] = redis.Settled(store.Ping), redis.Settled(whole)
	}
	if cfg.Has(config.RoleWriteBehind) {
		ready["writebehind"] = startWriteBehind(cfg, rc, db, r, cat, bg, reg, log)
	}

	api := newAPI(cfg, sale, db, store, ready, passes, reg, log)
	srv := newHTTPServer(api)
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "roles", cfg.Roles)
	err = serveUntil(ctx, srv, ln)
	log.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdown); serr != nil {
		err = errors.Join(err, serr)
	}
	stopLoops()
	bg.wg.Wait()
	cat.Stop() // admin creates that outlived their request
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// prepareStores brings the database and Redis up to what this build runs on: the database's
// migrations, the concerts' placements recorded, the write-behind's state checked at startup, and the
// store over rc with its concerts' layouts migrated. Redis not whole is logged, not returned: the
// service runs unready until `ticketrush restore`.
func prepareStores(ctx context.Context, cfg config.Config, rc rueidis.Client, db *postgres.DB, reg *prometheus.Registry,
	log *slog.Logger) (*redis.StateMarker, *redis.Store, error) {
	if applied, err := db.Migrate(ctx); err != nil {
		return nil, nil, err
	} else if len(applied) > 0 {
		log.Info("migrated", "applied", applied)
	}

	if err := repair.RecordPlacements(ctx, rc, db, cfg.RedisKeyPrefix); err != nil {
		return nil, nil, fmt.Errorf("record placements: %w", err)
	}

	state := redis.NewStateMarker(rc, cfg.RedisKeyPrefix)
	if err := writebehind.Startup(ctx, state, db, time.Now()); errors.Is(err, writebehind.ErrRedisNotWhole) {
		log.Error("redis is not whole: unready until `ticketrush restore`", "err", err)
	} else if err != nil {
		return nil, nil, err
	}

	store := redis.NewStore(rc, cfg.RedisKeyPrefix, reg)
	if redis.IsCluster(rc) {
		store.WaitForReplica(redis.ReplicaWait) // the money steps wait for a replica (docs/durability.md)
	}
	store.LimitUsers(redis.UserLimit{Rate: cfg.UserRateLimit, Burst: cfg.UserRateBurst})
	if n, err := repair.MigrateLayouts(ctx, store, db, nil); err != nil { // before any script reads the layout
		return nil, nil, fmt.Errorf("migrate layout: %w", err)
	} else if n > 0 {
		log.Info("migrated layout", "concerts", n, "version", redis.LayoutVersion)
	}
	return state, store, nil
}

// background is serve's loops: each runs in a goroutine of wg until loops ends.
type background struct {
	loops context.Context
	wg    sync.WaitGroup
	log   *slog.Logger
	woken func() <-chan struct{} // a wake-up this process sees
}

// every runs step every interval.
func (b *background) every(interval time.Duration, step func(context.Context) error, msg string) {
	b.wg.Go(func() { periodic.Run(b.loops, interval, step, b.log, msg) })
}

// paced runs a loop over awake concerts: it keeps its pace while busy (a concert is awake, or a sale is
// about to open, for the draw) and wakes up once a second otherwise, or at once on a wake-up this
// process sees.
func (b *background) paced(interval time.Duration, busy func() bool, step func(context.Context) error, msg string) {
	b.wg.Go(func() { periodic.RunPaced(b.loops, interval, config.IdlePace, busy, b.woken, step, b.log, msg) })
}

// startPasses starts, with the api role, the pass issuer and the loops that serve fans: the pass keys'
// reload, the queue view's refresh, the liveness flush and the seat view. Without it there are no
// passes: nothing to sign, no key set to serve.
func startPasses(ctx context.Context, cfg config.Config, db *postgres.DB, sale app.Sale, bg *background,
	log *slog.Logger) (httpapi.Passes, error) {
	if !cfg.Has(config.RoleAPI) {
		return nil, nil
	}
	issuer := pass.NewIssuer(db, cfg.PassIssuer, pass.Schedule{TTL: cfg.PassTTL, Skew: config.PassClockSkew,
		KeySetMaxAge: config.PassKeySetAge}, time.Now, log)
	if err := issuer.Start(ctx); err != nil {
		return nil, fmt.Errorf("load pass keys: %w", err)
	}
	bg.every(config.PassKeyReload, issuer.Refresh, "pass key reload")
	bg.every(cfg.SnapshotRefresh, sale.Queue.Refresh, "queue view refresh")
	bg.every(cfg.LivenessFlush, sale.Queue.FlushLiveness, "queue liveness flush")
	bg.wg.Go(func() { sale.Booking.RunSeatView(bg.loops, cfg.SnapshotRefresh) }) // as often as the queue view
	return issuer, nil
}

// startRounds starts the loops over awake concerts of the process's roles: the activity poll, and with
// the scheduler role the admission tick, the sweep and the draw.
func startRounds(cfg config.Config, r app.Rounds, bg *background) {
	if cfg.Has(config.RoleScheduler) || cfg.Has(config.RoleWriteBehind) {
		bg.paced(cfg.AdmitTick, r.Activity.AnyAwake, r.Activity.Poll, "activity poll")
	}
	if cfg.Has(config.RoleScheduler) {
		bg.paced(cfg.AdmitTick, r.Activity.AnyAwake, r.Tick, "admission tick")
		bg.paced(cfg.SweepInterval, r.Activity.AnyAwake, r.Sweep, "sweep")
		bg.paced(cfg.AdmitTick, func() bool { return r.Activity.AnyAwake() || r.DrawSoon(config.IdlePace+cfg.AdmitTick) }, r.Draw, "draw")
	}
}

// startWriteBehind starts the write-behind worker over the streams of the rounds' recent concerts and
// returns its readiness check.
func startWriteBehind(cfg config.Config, rc rueidis.Client, db *postgres.DB, r app.Rounds, cat *catalog.Service,
	bg *background, reg prometheus.Registerer, log *slog.Logger) httpapi.Check {
	worker := writebehind.New(rc, db, cfg.RedisKeyPrefix, r.Streams, writeBehindConfig(cfg, redis.IsCluster(rc)), time.Now, log, reg)
	worker.FollowPlacements(cat.Placement)
	bg.wg.Go(func() { worker.Run(bg.loops) })
	return worker.Check
}

// newAPI is the service's HTTP API over the sale's services, with the readiness checks ready.
func newAPI(cfg config.Config, sale app.Sale, db *postgres.DB, store *redis.Store, ready map[string]httpapi.Check,
	passes httpapi.Passes, reg *prometheus.Registry, log *slog.Logger) *httpapi.Server {
	return httpapi.NewServer(httpapi.Deps{
		API:        cfg.Has(config.RoleAPI),
		Queue:      sale.Queue,
		Catalog:    sale.Catalog,
		Booking:    sale.Booking,
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
		Draws:          store.Draws,
		Passes:         passes,
		PassSite:       cfg.PassSiteURL,
	})
}

// newHTTPServer is the HTTP server of api, with config.Server; its shutdown ends api's event streams.
func newHTTPServer(api *httpapi.Server) *http.Server {
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: config.Server.ReadHeader,
		ReadTimeout:       config.Server.Read,
		WriteTimeout:      config.Server.Write,
		IdleTimeout:       config.Server.Idle,
		MaxHeaderBytes:    httpapi.MaxHeaderBytes,
	}
	srv.RegisterOnShutdown(api.StopStreams)
	return srv
}

// serveUntil serves srv on ln until it fails or ctx ends, and returns its error (nil when ctx ended).
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(httpapi.Listener(ln)) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		return nil
	}
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
