// Package process wires one ticketrush process over its connections: the sale's graph (internal/app)
// with its background rounds, and by the process's roles the admission pass's issuer, the write-behind
// worker and the HTTP API with its readiness checks. `ticketrush serve` builds it here and runs what it
// holds. app is the part of it that tests build on their own: internal/http's and internal/writebehind's
// tests build the sale through app, which therefore imports neither, and this package does.
package process

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/app"
	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/config"
	httpapi "github.com/ticketrush/ticketrush/internal/http"
	"github.com/ticketrush/ticketrush/internal/pass"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/writebehind"
)

// Conns are what a process is built over: Redis and its store, the state marker, and Postgres.
type Conns struct {
	Redis rueidis.Client
	Store *redis.Store
	State *redis.StateMarker
	DB    *postgres.DB
}

// Metrics are where a process's parts register: Registry is served at /metrics; Sale also has the
// waiting room's and the purchase path's figures (the sale log reads them).
type Metrics struct {
	Registry *prometheus.Registry
	Sale     prometheus.Registerer
}

// Process is the whole wired graph of one process. Nothing in it runs yet: the caller runs its loops
// (Rounds, the catalog's refresh, and when there, the issuer's key reload and the worker) and serves API.
type Process struct {
	app.Sale
	Rounds      app.Rounds
	Passes      *pass.Issuer        // with the api role: the admission pass's issuer, its keys loaded; else nil
	WriteBehind *writebehind.Worker // with the writebehind role; else nil
	API         *httpapi.Server
}

// Build wires the process of cfg's roles over c: the sale's graph with its catalog loaded and its
// concerts' activity settled (the write-behind drains what an earlier process left unread), the pass
// issuer with its keys, the write-behind worker, and the API over all of them.
func Build(ctx context.Context, cfg config.Config, c Conns, m Metrics, log *slog.Logger) (Process, error) {
	sale := app.New(c.Store, c.DB, cfg.QueueTokenSecret, time.Now, log, m.Sale)
	c.Store.NeedConcerts(sale.Catalog.IDs) // readiness checks the concerts' slots too
	if err := sale.Catalog.Refresh(ctx); err != nil {
		return Process{}, fmt.Errorf("load catalog: %w", err)
	}
	p := Process{Sale: sale, Rounds: sale.Rounds(c.Store, time.Now, m.Registry)}
	p.Rounds.Activity.Settle(sale.Catalog.IDs())

	ready := readiness(c)
	var passes httpapi.Passes // nil, not a nil *pass.Issuer, without the api role: no passes, no key set
	if cfg.Has(config.RoleAPI) {
		p.Passes = pass.NewIssuer(c.DB, cfg.PassIssuer, pass.Schedule{TTL: cfg.PassTTL, Skew: config.PassClockSkew,
			KeySetMaxAge: config.PassKeySetAge}, time.Now, log)
		if err := p.Passes.Start(ctx); err != nil {
			return Process{}, fmt.Errorf("load pass keys: %w", err)
		}
		passes = p.Passes
	}
	if cfg.Has(config.RoleWriteBehind) {
		p.WriteBehind = writebehind.New(c.Redis, c.DB, cfg.RedisKeyPrefix, p.Rounds.Streams,
			WriteBehindConfig(cfg, redis.IsCluster(c.Redis)), time.Now, log, m.Registry)
		p.WriteBehind.FollowPlacements(sale.Catalog.Placement)
		ready["writebehind"] = p.WriteBehind.Check
	}
	p.API = httpapi.NewServer(httpapi.Deps{
		API:        cfg.Has(config.RoleAPI),
		Queue:      sale.Queue,
		Catalog:    sale.Catalog,
		Booking:    sale.Booking,
		Users:      auth.NewUsers(cfg.JWTSecret, auth.WithIssuer(cfg.JWTIssuer), auth.WithAudience(cfg.JWTAudience)),
		AdminToken: cfg.AdminToken,
		Ledger:     c.DB,
		Ready:      ready,
		Degraded:   unreplicated(c.Store),
		Registry:   m.Registry,
		Log:        log,

		Timeout:       config.RequestTimeout,
		CreateTimeout: config.CreateTimeout,

		Limiter:        httpapi.NewLimiter(cfg.UserRateLimit, cfg.UserRateBurst, time.Now),
		Challenges:     auth.NewChallenges(cfg.QueueTokenSecret),
		TrustedProxies: cfg.TrustedProxyCIDRs,
		Draws:          c.Store.Draws,
		Passes:         passes,
		PassSite:       cfg.PassSiteURL,
	})
	return p, nil
}

// readiness are /readyz's checks of the stores: Redis serves every slot the process needs, holds the
// whole of the sale's state, and Postgres answers. On a cluster each waits for the client to follow an
// election (docs/faults.md, "Readiness").
func readiness(c Conns) map[string]httpapi.Check {
	whole := func(ctx context.Context) error { return writebehind.CheckWhole(ctx, c.State) }
	ready := map[string]httpapi.Check{"redis": c.Store.Ping, "postgres": c.DB.Ping, "redis_state": whole}
	if redis.IsCluster(c.Redis) {
		ready["redis"], ready["redis_state"] = redis.Settled(c.Store.Ping), redis.Settled(whole)
	}
	return ready
}

// WriteBehindConfig is the worker's configuration: its batches and reads as cfg has them, the rest
// writebehind.DefaultConfig's. On a Redis Cluster an event reaches Postgres once a replica has it.
func WriteBehindConfig(cfg config.Config, cluster bool) writebehind.Config {
	w := writebehind.Config{
		Writers:      cfg.WriteBehindWriters,
		BatchSize:    cfg.WriteBehindBatchSize,
		ReadCount:    cfg.WriteBehindReadCount,
		MaxReadCount: cfg.WriteBehindMaxReadCount,
		ClaimIdle:    cfg.WriteBehindClaimIdle,
	}
	if cluster {
		w.ReplicaWait = config.ReplicaWait
	}
	return w
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
