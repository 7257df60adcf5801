package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/repair"
)

// errDifferences is reconcile finding Redis and Postgres apart; main exits non-zero on it.
type errDifferences int

func (e errDifferences) Error() string {
	return fmt.Sprintf("reconcile: %d difference(s) between redis and postgres", int(e))
}

var reconcileHelp = help{"ticketrush reconcile [--wait 1m]", `Compares Redis (REDIS_URL, REDIS_KEY_PREFIX) with Postgres (DATABASE_URL) as of one stream position,
waiting until the write-behind has written that far, and prints every difference, one a line. Exits 1
on any difference. Safe during a sale: it only reads.`}

// reconcile compares Redis with Postgres and prints every difference, one a line.
func reconcile(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	wait := fs.Duration("wait", time.Minute, "how long to wait for the write-behind to write what Redis holds")
	if ok, err := parse(fs, args, stdout, reconcileHelp); !ok {
		return err
	}
	return withStores(ctx, getenv, func(rc rueidis.Client, db *postgres.DB) error {
		diffs, err := repair.Reconcile(ctx, rc, db, config.KeyPrefix(getenv), "", *wait)
		if err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		for _, d := range diffs {
			fmt.Fprintln(stdout, d)
		}
		if len(diffs) > 0 {
			return errDifferences(len(diffs))
		}
		_, err = fmt.Fprintln(stdout, "redis and postgres agree")
		return err
	})
}
