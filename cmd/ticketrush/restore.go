package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
)

var restoreHelp = help{"ticketrush restore [--force]", `Rebuilds Redis (REDIS_URL, REDIS_KEY_PREFIX) from Postgres (DATABASE_URL) after Redis lost its state:
catalog, queue settings, reservations, balances and Idempotency-Keys; queue lines are not kept. Refuses
when Redis looks whole unless --force. Applies the migrations first.`}

// restore rebuilds Redis from Postgres after Redis lost its state.
func restore(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	force := fs.Bool("force", false, "restore even though Redis looks whole (replaces its state with Postgres')")
	if ok, err := parse(fs, args, stdout, restoreHelp); !ok {
		return err
	}
	return withMigrated(ctx, getenv, func(rc rueidis.Client, db *postgres.DB) error {
		rep, err := repair.Restore(ctx, rc, db, config.KeyPrefix(getenv), *force, time.Now())
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		rep.Print(stdout)
		return nil
	})
}

var migrateLayoutHelp = help{"ticketrush migrate-layout", `Moves the Redis state (REDIS_URL, REDIS_KEY_PREFIX) of every concert that Postgres (DATABASE_URL) lists
below this build's layout version to it, and records the version; one line per concert. Every process
does the same at its start (docs/operations.md, "Layout versions"). Applies the migrations first. No
flags.`}

// migrateLayout moves every concert below this build's layout version to it.
func migrateLayout(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if ok, err := parse(flag.NewFlagSet("migrate-layout", flag.ContinueOnError), args, stdout, migrateLayoutHelp); !ok {
		return err
	}
	return withMigrated(ctx, getenv, func(rc rueidis.Client, db *postgres.DB) error {
		store := redis.NewStore(rc, config.KeyPrefix(getenv), prometheus.NewRegistry())
		n, err := repair.MigrateLayouts(ctx, store, db, stdout)
		if err != nil {
			return fmt.Errorf("migrate layout: %w", err)
		}
		fmt.Fprintf(stdout, "%d concerts moved to layout %d\n", n, redis.LayoutVersion)
		return nil
	})
}
