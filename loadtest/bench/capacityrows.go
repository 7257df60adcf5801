package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/redis"
)

// capacityRuns are the repetitions of the capacity measure on each Redis, and why those that failed
// did.
type capacityRuns struct {
	single, cluster, six          []concertCapacity
	singleErr, clusterErr, sixErr []error
	clusterAgain                  int // cluster repetitions run again because another client used the masters
	sixNA                         string
}

// capacityAttempts bounds the runs of one repetition on a cluster that others use too
// (-capacity-cluster URL): a run during their calls is thrown away (errShared) and run again.
const capacityAttempts = 5

// capacity measures the capacity of one concert b.cfg.reps times, on a Redis of its own (persistent
// as the service's: startRedis) and on a cluster (capacityCluster) in turn, and sets the capacity rows.
func (b *bench) capacity(ctx context.Context, baseDSN string) error {
	limit, err := serviceLimit(b.env)
	if err != nil {
		return err
	}
	r, err := startRedis(ctx, filepath.Join(b.cfg.logs, "redis-capacity"), true)
	if err != nil {
		return err
	}
	defer r.close()
	single := r.client
	cluster, stop, clusterNA := b.capacityCluster(ctx)
	defer stop()
	if cluster != nil {
		defer cluster.Close()
	}
	dsn, drop, err := benchDatabase(ctx, baseDSN, "capacity")
	if err != nil {
		return err
	}
	defer drop()
	var runs capacityRuns
	six, stopSix, sixNA := b.ownCluster(ctx, 6)
	defer stopSix()
	if six != nil {
		defer six.Close()
	}
	runs.sixNA = sixNA
	for rep := range b.cfg.reps {
		fmt.Fprintf(os.Stderr, "bench: capacity of one concert %d/%d: %d fans on one Redis", rep+1, b.cfg.reps, b.cfg.capacityFans)
		r, err := measureCapacity(ctx, single, limit, b.cfg.capacityFans, dsn)
		keep(&runs.single, &runs.singleErr, r, err)
		if cluster != nil {
			fmt.Fprint(os.Stderr, ", then on the cluster")
			r, err := onMasters(ctx, cluster, limit, b.cfg.capacityFans, 3, &runs.clusterAgain)
			keep(&runs.cluster, &runs.clusterErr, r, err)
		}
		if six != nil {
			fmt.Fprint(os.Stderr, ", then on 6 masters")
			r, err := onMasters(ctx, six, limit, b.cfg.capacityFans, 6, nil)
			keep(&runs.six, &runs.sixErr, r, err)
		}
		fmt.Fprintln(os.Stderr)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	b.capacityRows(runs, clusterNA, limit)
	b.pipelined = runs.single
	b.masters = runs
	return nil
}

// onMasters measures the capacity on c, a cluster of masters masters. A run another client disturbed
// (errShared) is run again, up to capacityAttempts runs, each counted in again; with again nil (a
// cluster of the bench's own, which nobody else uses) it is not.
func onMasters(ctx context.Context, c rueidis.Client, limit redis.UserLimit, fans, masters int, again *int) (concertCapacity, error) {
	r, err := measureCapacity(ctx, c, limit, fans, "")
	for try := 1; again != nil && errors.Is(err, errShared) && try < capacityAttempts; try++ {
		fmt.Fprint(os.Stderr, " (again: another client used it)")
		*again++
		r, err = measureCapacity(ctx, c, limit, fans, "")
	}
	if err == nil && r.masters != masters {
		err = fmt.Errorf("the cluster has %d masters, the rows are of %d", r.masters, masters)
	}
	return r, err
}

// keep adds a repetition to runs, or its error to errs.
func keep(runs *[]concertCapacity, errs *[]error, r concertCapacity, err error) {
	if err != nil {
		*errs = append(*errs, err)
	} else {
		*runs = append(*runs, r)
	}
}

// capacityRows sets the capacity rows from the medians of the repetitions that succeeded: per second
// is what one concert can take; the notes give Redis's µs per operation, the busiest master's share and
// the floor.
func (b *bench) capacityRows(runs capacityRuns, clusterNA string, limit redis.UserLimit) {
	b.notes[rowCapJoins1] = fmt.Sprintf("one concert of %s, %s fans from %d goroutines through the store (the per-user limit at %d/s; "+
		"on the cluster a hold waits for a replica, as the service's does) join its paused line, are admitted by the tick, hold a seat each "+
		"and cancel it; Redis's time per operation is that of the commands the store sent in the phase, summed over the masters "+
		"(INFO commandstats of every master before and after it); per second = 1e6 / (µs per operation × the busiest master's share)",
		dates(capacitySchedules), thousands(float64(b.cfg.capacityFans)), capacityWorkers, limit.Rate)
	join := func(c concertCapacity) phaseCost { return c.join }
	admit := func(c concertCapacity) phaseCost { return c.admit }
	hold := func(c concertCapacity) phaseCost { return c.hold }
	cancel := func(c concertCapacity) phaseCost { return c.cancel }
	for _, t := range []struct {
		runs         []concertCapacity
		errs         []error
		na           string
		joins, holds string
	}{
		{runs.single, runs.singleErr, "", rowCapJoins1, rowCapHolds1},
		{runs.cluster, runs.clusterErr, clusterNA, rowCapJoins3, rowCapHolds3},
	} {
		if len(t.runs) == 0 {
			if len(t.errs) > 0 {
				t.na = t.errs[len(t.errs)-1].Error()
			}
			b.na[t.joins], b.na[t.holds] = t.na, t.na
			continue
		}
		for _, r := range t.runs {
			b.results[t.joins] = append(b.results[t.joins], measure{rate: r.join.perSec()})
			b.results[t.holds] = append(b.results[t.holds], measure{rate: r.hold.perSec()})
		}
		failed := ""
		if len(t.errs) > 0 {
			failed = fmt.Sprintf(" (%d of %d repetitions; the last failure: %v)", len(t.runs), len(t.runs)+len(t.errs), t.errs[len(t.errs)-1])
		}
		if t.joins == rowCapJoins3 && runs.clusterAgain > 0 {
			failed += fmt.Sprintf(" (%d runs thrown away and run again: another client used the cluster meanwhile)", runs.clusterAgain)
		}
		b.results[t.joins][0].note = phaseNote(t.runs, "join", join, "the tick per admitted fan", admit) + failed
		b.results[t.holds][0].note = phaseNote(t.runs, "hold", hold, "a cancel", cancel) + failed
	}
	if len(runs.single) == 0 {
		b.na[rowFloor] = b.na[rowCapJoins1]
		return
	}
	floor := func(c concertCapacity) float64 { return c.floor.usPerOp() }
	for _, r := range runs.single {
		b.results[rowFloor] = append(b.results[rowFloor], measure{rate: 1e6 / r.floor.usPerOp()})
	}
	hset := func(c concertCapacity) float64 { return c.hset.usPerOp() }
	note := fmt.Sprintf("Redis %.2f µs per EVALSHA of '%s' and %.2f µs per plain HSET on the one Redis",
		medianOf(runs.single, floor), floorScript, medianOf(runs.single, hset))
	if len(runs.cluster) > 0 {
		note += fmt.Sprintf(", %.2f µs and %.2f µs on the cluster's masters", medianOf(runs.cluster, floor), medianOf(runs.cluster, hset))
	}
	b.results[rowFloor][0].note = note + ", from the same goroutines just before each storm: the cheapest script call and the cheapest write"
}

// dates names n schedules: "one date", "3 dates".
func dates(n int) string {
	if n == 1 {
		return "one date"
	}
	return fmt.Sprintf("%d dates", n)
}

// phaseNote gives the medians of a phase p (what: its operation) over runs, and of the phase then
// after it.
func phaseNote(runs []concertCapacity, what string, p func(concertCapacity) phaseCost, thenWhat string, then func(concertCapacity) phaseCost) string {
	med := func(f func(phaseCost) float64, p func(concertCapacity) phaseCost) float64 {
		return medianOf(runs, func(c concertCapacity) float64 { return f(p(c)) })
	}
	floor := func(c concertCapacity) phaseCost { return c.floor }
	calls := func(p phaseCost) float64 { return float64(p.scripts) / float64(p.ops) }
	us, fl := med(phaseCost.usPerOp, p), med(phaseCost.usPerOp, floor)
	s := fmt.Sprintf("Redis %.1f µs per %s (%.1f× the floor of %.2f µs; %.2f script calls each)", us, what, us/fl, fl, med(calls, p))
	if n := runs[0].masters; n > 1 {
		s += fmt.Sprintf(" summed over the %d masters, %.1f%% of it on the busiest", n, 100*med(phaseCost.busiest, p))
	}
	s += fmt.Sprintf("; %s %.1f µs", thenWhat, med(phaseCost.usPerOp, then))
	if runs[0].masters > 1 {
		s += fmt.Sprintf(" (%.1f%% on the busiest master)", 100*med(phaseCost.busiest, then))
	}
	return s
}

// medianOf is the median of f over runs.
func medianOf(runs []concertCapacity, f func(concertCapacity) float64) float64 {
	ms := make([]measure, len(runs))
	for i, r := range runs {
		ms[i] = measure{rate: f(r)}
	}
	return median(ms).rate
}
