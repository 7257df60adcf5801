package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/internal/writebehind"
)

// writeBehindCost is what the write-behind spent recording one capacity run's joins in Postgres: the
// CPU of its process (this one: nothing else runs in it meanwhile) and of the database's backends, and
// the time the backlog took to drain.
type writeBehindCost struct {
	joins            int
	worker, postgres time.Duration
	took             time.Duration
}

// usPerJoin is the write-behind's CPU per join: its process's and Postgres's.
func (w writeBehindCost) usPerJoin() (worker, pg float64) {
	n := float64(w.joins)
	return float64(w.worker.Microseconds()) / n, float64(w.postgres.Microseconds()) / n
}

// measureWriteBehind records the events of concert con (the joins of a capacity run, under prefix on
// rdb) in the database at dsn with an in-process write-behind worker, as serve runs one, until its
// backlog is empty.
func measureWriteBehind(ctx context.Context, rdb rueidis.Client, prefix, dsn string, con ticketrush.Concert, joins int) (writeBehindCost, error) {
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		return writeBehindCost{}, err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return writeBehindCost{}, err
	}
	if err := db.CreateConcert(ctx, con); err != nil {
		return writeBehindCost{}, fmt.Errorf("write-behind: the concert's record: %w", err)
	}
	if err := writebehind.Startup(ctx, redis.NewStateMarker(rdb, prefix), db, time.Now()); err != nil {
		return writeBehindCost{}, err
	}
	// read takes the events in Postgres and the CPU the worker's process and the backends used so far.
	read := func() (written int, worker, pg time.Duration, err error) {
		if err = db.Pool().QueryRow(ctx, `SELECT count(*) FROM written_events`).Scan(&written); err != nil {
			return
		}
		if worker, err = dbtest.SelfCPU(); err != nil {
			return
		}
		pg, err = dbtest.BackendsCPU(ctx, db.Pool())
		return
	}
	ids := func() []string { return []string{con.ID} }
	w := writebehind.New(rdb, db, prefix, ids, writebehind.Config{}, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)),
		prometheus.NewRegistry())
	before, cpu0, pg0, err := read()
	if err != nil {
		return writeBehindCost{}, err
	}
	start := time.Now()
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(run) }()
	defer func() { stop(); <-done }()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for deadline := start.Add(2 * time.Minute); ; {
		n, _, err := writebehind.Backlog(ctx, rdb, prefix, "", ids())
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return writeBehindCost{}, fmt.Errorf("write-behind: %d events still to record after 2 minutes (%v)", n, err)
		}
		select {
		case <-ctx.Done():
			return writeBehindCost{}, ctx.Err()
		case <-poll.C:
		}
	}
	took := time.Since(start)
	after, cpu1, pg1, err := read()
	if err != nil {
		return writeBehindCost{}, err
	}
	if after-before < joins {
		return writeBehindCost{}, fmt.Errorf("write-behind: %d events recorded for %d joins", after-before, joins)
	}
	return writeBehindCost{joins: joins, worker: cpu1 - cpu0, postgres: pg1 - pg0, took: took}, nil
}

// writeBehindNote gives the medians of the write-behind's CPU per join over the runs that measured it,
// and the joins a second one core of each could record, beside what the busiest master's Redis thread
// takes on one Redis (redisPerSec); "" when no run measured it.
func writeBehindNote(runs []concertCapacity, redisPerSec float64) string {
	var measured []concertCapacity
	for _, r := range runs {
		if r.wb != nil {
			measured = append(measured, r)
		}
	}
	if len(measured) == 0 {
		return ""
	}
	worker := medianOf(measured, func(c concertCapacity) float64 { w, _ := c.wb.usPerJoin(); return w })
	pg := medianOf(measured, func(c concertCapacity) float64 { _, p := c.wb.usPerJoin(); return p })
	drain := medianOf(measured, func(c concertCapacity) float64 { return float64(c.wb.joins) / c.wb.took.Seconds() })
	return fmt.Sprintf("the write-behind recording the joins in Postgres: %.2f µs of its process's CPU and %.2f µs of Postgres's a join "+
		"(%s joins/s drained on this machine); one core of each records %s and %s joins/s, beside %s joins/s of one Redis's thread",
		worker, pg, thousands(drain), thousands(1e6/worker), thousands(1e6/pg), thousands(redisPerSec))
}
