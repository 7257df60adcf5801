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
	"github.com/ticketrush/ticketrush/internal/config"
	httpapi "github.com/ticketrush/ticketrush/internal/http"
	"github.com/ticketrush/ticketrush/internal/periodic"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/process"
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
	p, err := process.Build(ctx, cfg, process.Conns{Redis: rc, Store: store, State: state, DB: db},
		process.Metrics{Registry: reg, Sale: alsoRegister{reg, saleFigures}}, log)
	if err != nil {
		return err
	}

	loops, stopLoops := context.WithCancel(context.Background())
	defer stopLoops()
	bg := &background{loops: loops, log: log, woken: p.Rounds.Activity.Woken}
	bg.start(cfg, p, newSaleLog(saleFigures, log))

	srv := newHTTPServer(p.API)
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
	p.Catalog.Stop() // admin creates that outlived their request
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
		store.WaitForReplica(config.ReplicaWait) // the money steps wait for a replica (docs/durability.md)
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

// start runs p's loops for cfg's roles: the catalog's refresh and the sale log; with the api role the
// pass keys' reload, the queue view's refresh, the liveness flush and the seat view; the loops over awake
// concerts (startRounds); with the writebehind role the worker.
func (b *background) start(cfg config.Config, p process.Process, saleLog *saleLog) {
	b.every(cfg.CatalogRefresh, p.Catalog.Refresh, "catalog refresh")
	b.wg.Go(func() {
		periodic.RunPaced(b.loops, saleLogEvery, saleLogQuiet, saleLog.hadNews, p.Rounds.Activity.Woken, saleLog.report, b.log, "sale log")
	})
	if cfg.Has(config.RoleAPI) {
		b.every(config.PassKeyReload, p.Passes.Refresh, "pass key reload")
		b.every(cfg.SnapshotRefresh, p.Queue.Refresh, "queue view refresh")
		b.every(cfg.LivenessFlush, p.Queue.FlushLiveness, "queue liveness flush")
		b.wg.Go(func() { p.Booking.RunSeatView(b.loops, cfg.SnapshotRefresh) }) // as often as the queue view
	}
	b.startRounds(cfg, p.Rounds)
	if p.WriteBehind != nil {
		b.wg.Go(func() { p.WriteBehind.Run(b.loops) })
	}
}

// startRounds starts the loops over awake concerts of the process's roles: the activity poll, and with
// the scheduler role the admission tick, the sweep and the draw.
func (b *background) startRounds(cfg config.Config, r app.Rounds) {
	if cfg.Has(config.RoleScheduler) || cfg.Has(config.RoleWriteBehind) {
		b.paced(cfg.AdmitTick, r.Activity.AnyAwake, r.Activity.Poll, "activity poll")
	}
	if cfg.Has(config.RoleScheduler) {
		b.paced(cfg.AdmitTick, r.Activity.AnyAwake, r.Tick, "admission tick")
		b.paced(cfg.SweepInterval, r.Activity.AnyAwake, r.Sweep, "sweep")
		b.paced(cfg.AdmitTick, func() bool { return r.Activity.AnyAwake() || r.DrawSoon(config.IdlePace+cfg.AdmitTick) }, r.Draw, "draw")
	}
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
