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
	"strings"
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
  demo [--addr URL]           walk one fan from join to receipt against a running service
  token --user U [--ttl 1h]   print a user JWT signed with JWT_SECRET, for development
  migrate                     apply the Postgres migrations to DATABASE_URL
  reconcile [--wait 1m]       compare Redis with Postgres; print every difference, exit 1 on any
  restore [--force]           rebuild Redis from Postgres after Redis lost its state
  migrate-layout              move every concert's Redis state to this build's layout version
  verify-draw --concert ID    check a concert's on-sale draw from its public endpoints ([--user U])
  pass rotate                 add a new admission-pass signing key (docs/pass.md)
  gate -upstream URL ...      a reverse proxy that lets through only fans with an admission pass
  pass verify PASS            print an admission pass's claims and check it against a key set
  version                     print the version, commit and Go version

Configuration comes from the environment (README.md, "Configuration").
"ticketrush <command> -h" describes a command and its flags.
`

// usageError is a command line the program cannot run (an unknown command or flag, a stray argument,
// a missing required flag): main prints it and exits 2, and nothing has been touched.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run is the whole program: main only calls it and exits once. Tests call it too (HTTP_ADDR with
// port 0; the bound address is logged as "listening"). Every command parses its flags before it
// opens anything, so -h and a bad command line touch nothing.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command given\n" + usage}
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	name, rest := args[0], args[1:]
	switch name {
	case "serve":
		if ok, err := parse(flag.NewFlagSet(name, flag.ContinueOnError), rest, stdout, serveHelp); !ok {
			return err
		}
		cfg, err := config.Load(getenv)
		if err != nil {
			return err
		}
		for _, w := range cfg.Warnings {
			log.Warn("configuration", "warning", w)
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serve(ctx, cfg, log)
	case "demo":
		return demo(ctx, rest, getenv, stdout)
	case "token":
		return token(rest, getenv, stdout)
	case "migrate":
		if ok, err := parse(flag.NewFlagSet(name, flag.ContinueOnError), rest, stdout, migrateHelp); !ok {
			return err
		}
		return migrate(ctx, getenv, log)
	case "reconcile":
		return reconcile(ctx, rest, getenv, stdout)
	case "restore":
		return restore(ctx, rest, getenv, stdout)
	case "migrate-layout":
		return migrateLayout(ctx, rest, getenv, stdout)
	case "verify-draw":
		return verifyDraw(ctx, rest, getenv, stdout)
	case "gate":
		return runGate(ctx, rest, getenv, stdout)
	case "pass":
		if len(rest) > 0 {
			switch rest[0] {
			case "rotate":
				return passRotate(ctx, rest[1:], getenv, stdout)
			case "verify":
				return passVerify(ctx, rest[1:], getenv, stdout)
			}
		}
		return usageError{"pass: want a subcommand: rotate or verify\n" + usage}
	case "version", "--version", "-version":
		if ok, err := parse(flag.NewFlagSet("version", flag.ContinueOnError), rest, stdout, versionHelp); !ok {
			return err
		}
		_, err := io.WriteString(stdout, readVersion().String())
		return err
	case "help", "-h", "--help", "-help":
		_, err := io.WriteString(stdout, usage)
		return err
	}
	return usageError{fmt.Sprintf("unknown command %q\n%s", name, usage)}
}

// help describes one command: its synopsis and what it does, above the flags.
type help struct{ synopsis, text string }

var (
	serveHelp = help{"ticketrush serve", `Runs the service until SIGINT or SIGTERM: the HTTP API on HTTP_ADDR and the loops of ROLES, against
REDIS_URL and DATABASE_URL (migrations are applied at start). Every setting comes from the environment;
README.md "Configuration" lists them. No flags.`}
	migrateHelp = help{"ticketrush migrate", `Applies the Postgres migrations (sql/) to DATABASE_URL and prints which it applied. No flags.`}
	versionHelp = help{"ticketrush version", `Prints the version, commit and Go version of this binary (from its build info). No flags.`}
	tokenHelp   = help{"ticketrush token --user U [--ttl 1h]", `Prints a user JWT (HS256) signed with JWT_SECRET, for development: the API takes it as
"Authorization: Bearer <JWT>". Tokens are refused once expired (5 s leeway for clock skew).`}
)

// parse parses a command's flags. It reports whether the command should go on: not after -h/--help
// (the usage went to stdout; err is nil) nor on an unknown flag, a bad value or a stray argument (err is
// a usageError).
func parse(fs *flag.FlagSet, args []string, stdout io.Writer, h help) (bool, error) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return false, writeHelp(stdout, fs, h)
	}
	if err != nil {
		return false, usageError{fmt.Sprintf("%s: %v\nusage: %s (%s -h for more)", fs.Name(), err, h.synopsis, "ticketrush "+fs.Name())}
	}
	if fs.NArg() > 0 {
		return false, usageError{fmt.Sprintf("%s: unexpected argument %q\nusage: %s (%s -h for more)",
			fs.Name(), fs.Arg(0), h.synopsis, "ticketrush "+fs.Name())}
	}
	return true, nil
}

func writeHelp(w io.Writer, fs *flag.FlagSet, h help) error {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", h.synopsis, h.text)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nflags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// required is a usageError for a flag the command cannot do without.
func required(fs *flag.FlagSet, name string, h help) error {
	return usageError{fmt.Sprintf("%s: --%s is required\nusage: %s (ticketrush %s -h for more)", fs.Name(), name, h.synopsis, fs.Name())}
}

func token(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	user := fs.String("user", "", "user id (1-64 chars of [A-Za-z0-9_-]); required")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	if ok, err := parse(fs, args, stdout, tokenHelp); !ok {
		return err
	}
	if *user == "" {
		return required(fs, "user", tokenHelp)
	}
	if *ttl <= 0 {
		return usageError{"token: --ttl must be positive"}
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

// withMigrated is withStores with the Postgres migrations applied first, for the commands that write.
func withMigrated(ctx context.Context, getenv func(string) string, use func(rueidis.Client, *postgres.DB) error) error {
	return withStores(ctx, getenv, func(rc rueidis.Client, db *postgres.DB) error {
		if _, err := db.Migrate(ctx); err != nil {
			return err
		}
		return use(rc, db)
	})
}

// withStores runs use on connections to REDIS_URL and DATABASE_URL (openStores), closed when it
// returns, for the commands that work on both.
func withStores(ctx context.Context, getenv func(string) string, use func(rueidis.Client, *postgres.DB) error) error {
	rc, db, err := openStores(ctx, getenv)
	if err != nil {
		return err
	}
	defer rc.Close()
	defer db.Close()
	return use(rc, db)
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
