package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/redis"
)

const usage = `usage: ticketrush <command> [flags]

commands:
  serve                       run the service (roles from ROLES)
  token --user U [--ttl 1h]   print a user JWT signed with JWT_SECRET, for development
  migrate                     apply the Postgres migrations to DATABASE_URL
  reconcile [--wait 1m]       compare Redis with Postgres; print every difference, exit 1 on any
  restore [--force]           rebuild Redis from Postgres after Redis lost its state
`

// run is the whole program: main only calls it and exits once. Tests call it too (HTTP_ADDR with
// port 0; the bound address is logged as "listening").
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("no command given\n" + usage)
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	switch args[0] {
	case "serve":
		cfg, err := config.Load(getenv)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serve(ctx, cfg, log)
	case "token":
		return token(args[1:], getenv, stdout)
	case "migrate":
		return migrate(ctx, getenv, log)
	case "reconcile":
		return reconcile(ctx, args[1:], getenv, stdout)
	case "restore":
		return restore(ctx, args[1:], getenv, stdout)
	case "help", "-h", "--help":
		_, err := io.WriteString(stdout, usage)
		return err
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func token(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	user := fs.String("user", "", "user id (1-64 chars of [A-Za-z0-9_-])")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("token: %w (usage: ticketrush token --user U [--ttl 1h])", err)
	}
	if *user == "" {
		return errors.New("token: --user is required (usage: ticketrush token --user U [--ttl 1h])")
	}
	if *ttl <= 0 {
		return errors.New("token: --ttl must be positive")
	}
	secret, err := config.JWTSecret(getenv)
	if err != nil {
		return err
	}
	tok, err := auth.Mint(secret, *user, *ttl, time.Now())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

func migrate(ctx context.Context, getenv func(string) string, log *slog.Logger) error {
	db, err := postgres.Open(ctx, config.DatabaseURL(getenv))
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	log.Info("migrated", "applied", applied)
	return nil
}

// openStores connects to REDIS_URL and DATABASE_URL, for the commands that work on both.
func openStores(ctx context.Context, getenv func(string) string) (rueidis.Client, *postgres.DB, error) {
	rc, err := redis.Open(ctx, config.RedisURL(getenv))
	if err != nil {
		return nil, nil, err
	}
	db, err := postgres.Open(ctx, config.DatabaseURL(getenv))
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return rc, db, nil
}
