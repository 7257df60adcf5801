// Command bench measures ticketrush on this machine and sets the figures beside the machine's own
// ceilings: a bare net/http hello-world driven by the same load generator, and redis-benchmark of the
// hold script. It starts everything it measures in processes of their own (a private redis-server, a
// database of its own, bin/ticketrush serve, a hello-world server) and prints one table of medians.
// See loadtest/README.md.
//
//	bench [flags]          run the benchmark (make bench)
//	bench hello -addr A    serve hello-world (the bench starts this itself)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "hello" {
		err = hello(ctx, os.Args[2:], os.Stdout)
	} else {
		err = run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	bin               string
	reps              int
	duration          time.Duration
	workers           int
	spreadSeats       int
	contendedAttempts int
	contendedSeats    int
	idleConcerts      int
	idleWindow        time.Duration
	idleSettle        time.Duration
	idleSales         int  // every idleSales-th idle concert has a sale opening tomorrow (0: none)
	idleOnly          bool // measure the idle cost alone (make idlecost)
	memFans           int
	capacityFans      int
	capacityCluster   string
	capacityOnly      bool // measure only the capacity of one concert and print it (make capacity)
	stormFans         int  // fans of the storm under which Redis's time per call is taken (0 skips it)
	rbClients         int
	rbRequests        int
	rbPipeline        int
	logs              string
}

// bench is one run of the benchmark.
type bench struct {
	cfg       config
	api       *api
	helloURL  string
	redis     *privateRedis
	helloBase string // http://host:port of the hello server
	results   map[string][]measure
	na        map[string]string // row -> why it was not measured
	notes     map[string]string // row -> a note of the whole run
	purchase  bool
	hold      *holdReplay
	seatMap   *seatMap
	acked     acked
	commit    string
	env       func(name, def string) string
	storm     *stormResult      // Redis time per call under the HTTP storm
	stormNA   string            // why there is no storm
	pipelined []concertCapacity // the capacity runs on one Redis: Redis time per call pipelined
	masters   capacityRuns      // the capacity runs on 1, 3 and 6 masters: the busiest master per operation
	cpu       *cpuMeter         // the CPU per request of each timed run (nil: not read)
	// the servers of the timed runs: the service's and hello-world's processes
	servicePID, helloPID int
}

// report is everything the table shows besides the rows.
type report struct {
	mem     *memoryResult
	memNA   string
	lag     *lagSampler
	durable *durability
	idle    *idleResult
	idleNA  string
	took    time.Duration
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := parseConfig(args)
	if err != nil {
		return err
	}
	if err := prepare(cfg); err != nil {
		return err
	}
	env := envOr(getenv)
	b := &bench{cfg: cfg, results: map[string][]measure{}, na: map[string]string{}, notes: map[string]string{}, env: env}
	started := time.Now()
	baseDSN := env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/ticketrush?sslmode=disable")
	if cfg.capacityOnly || cfg.idleOnly {
		return b.runAlone(ctx, baseDSN, started, stdout)
	}

	// The service's Redis: private, persistent as in production, so nobody else's traffic shares it.
	b.redis, err = startRedis(ctx, filepath.Join(cfg.logs, "redis-service"), true)
	if err != nil {
		return err
	}
	defer b.redis.close()
	dsn, drop, err := benchDatabase(ctx, baseDSN, "")
	if err != nil {
		return err
	}
	defer drop()
	b.commit = commitOf(ctx, cfg.bin)

	svc, a, err := b.startService(ctx, "ticketrush.log", b.redis.url(), dsn)
	if err != nil {
		return err
	}
	defer svc.stop()
	hw, helloAddress, err := startHello(ctx, cfg.logs)
	if err != nil {
		return err
	}
	defer hw.stop()
	b.attach(svc, hw, helloAddress, a)
	if err := b.probe(ctx); err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "bench: %d repetitions of %s runs with %d clients; logs in %s\n", cfg.reps, cfg.duration, cfg.workers, cfg.logs)
	// The write-behind's lag is sampled over every HTTP run, until its backlog is empty again.
	var rpt report
	rpt.lag = startLagSampler(ctx, b.api)
	defer rpt.lag.stop()
	for rep := range cfg.reps {
		if err := b.rep(ctx, rep); err != nil {
			return fmt.Errorf("repetition %d: %w", rep+1, err)
		}
	}
	if err := b.afterReps(ctx, dsn, &rpt, svc, hw); err != nil {
		return err
	}
	if err := b.afterService(ctx, baseDSN, &rpt); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rpt.took = time.Since(started)
	b.print(stdout, rpt)
	return nil
}

// parseConfig reads the bench's flags and checks their ranges.
func parseConfig(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.bin, "ticketrush", "bin/ticketrush", "the service binary to measure")
	fs.IntVar(&cfg.reps, "reps", 3, "repetitions; the table shows the median of each figure")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "length of each timed run (hello, polls, joins, contended holds)")
	fs.IntVar(&cfg.workers, "workers", 64, "concurrent clients (keep-alive connections)")
	fs.IntVar(&cfg.spreadSeats, "spread-seats", 20000, "seats of the schedule the spread holds run over")
	fs.IntVar(&cfg.contendedAttempts, "contended-attempts", 20_000, "hold attempts of each contended round")
	fs.IntVar(&cfg.contendedSeats, "contended-seats", 1000, "seats of each contended round (a fresh schedule)")
	fs.IntVar(&cfg.idleConcerts, "idle-concerts", 500, "concerts of the idle-cost figure (0 skips it)")
	fs.DurationVar(&cfg.idleWindow, "idle-window", 10*time.Second, "how long the idle cost is measured")
	fs.DurationVar(&cfg.idleSettle, "idle-settle", 35*time.Second, "from the creations to the idle figure's window (at least -idle-window): a created concert is awake 10 s and its stream read 20 s more")
	fs.IntVar(&cfg.idleSales, "idle-sales", 0, "every Nth idle concert has a sale opening tomorrow (0: none)")
	fs.BoolVar(&cfg.idleOnly, "idle-only", false, "measure only the idle cost and print it (make idlecost)")
	fs.IntVar(&cfg.capacityFans, "capacity-fans", 3000, "fans of the capacity of one concert (0 skips it)")
	fs.StringVar(&cfg.capacityCluster, "capacity-cluster", "", "Redis Cluster URL the capacity of one concert is measured on too (empty: a cluster of the bench's own, started by scripts/cluster.sh on free ports from 7400; off: none)")
	fs.BoolVar(&cfg.capacityOnly, "capacity-only", false, "measure only the capacity of one concert and print it (make capacity)")
	fs.IntVar(&cfg.stormFans, "storm-fans", 3000, "fans of the storm under which Redis's time per call is taken from SLOWLOG (0 skips it)")
	fs.IntVar(&cfg.memFans, "mem-fans", 1_000_000, "waiting fans of the memory measurement (0 skips it)")
	fs.IntVar(&cfg.rbClients, "rb-clients", 64, "redis-benchmark -c")
	fs.IntVar(&cfg.rbRequests, "rb-requests", 200_000, "redis-benchmark -n")
	fs.IntVar(&cfg.rbPipeline, "rb-pipeline", 16, "redis-benchmark -P")
	fs.StringVar(&cfg.logs, "logs", "loadtest/out/bench", "where the processes' logs go")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.reps < 1 || cfg.workers < 1 || cfg.duration <= 0 {
		return cfg, errors.New("-reps, -workers and -duration must be positive")
	}
	if cfg.contendedSeats < 1 || cfg.contendedAttempts < cfg.contendedSeats || cfg.contendedSeats > maxConcertSeats {
		return cfg, errors.New("-contended-seats must be from 1 to 1,000,000 and -contended-attempts at least as many")
	}
	return cfg, nil
}

// prepare makes the logs' directory and checks that the Redis tools the bench runs are installed.
func prepare(cfg config) error {
	if err := os.MkdirAll(cfg.logs, 0o755); err != nil {
		return err
	}
	for _, tool := range []string{"redis-server", "redis-benchmark"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install redis-server; make services installs it)", tool)
		}
	}
	return nil
}

// runAlone measures and prints only the capacity of one concert (-capacity-only) or only the idle
// cost (-idle-only).
func (b *bench) runAlone(ctx context.Context, baseDSN string, started time.Time, stdout io.Writer) error {
	if b.cfg.capacityOnly {
		if b.cfg.capacityFans < 1 {
			return errors.New("-capacity-only needs -capacity-fans of at least 1")
		}
		b.commit = treeCommit(ctx)
		if err := b.capacity(ctx, baseDSN); err != nil {
			return err
		}
		b.printCapacity(stdout, time.Since(started))
		return nil
	}
	idle, err := b.idle(ctx, baseDSN)
	if err != nil {
		return err
	}
	printIdle(stdout, idle)
	return nil
}

// startHello starts this binary's hello-world server, logging into logs/hello.log, and returns it
// with its address.
func startHello(ctx context.Context, logs string) (*proc, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	return start(ctx, "hello", filepath.Join(logs, "hello.log"), os.Environ(), helloAddr, self, "hello")
}

// attach points the bench at the started service and hello-world server: their processes, their
// addresses and the CPU meter over them and the service's Redis.
func (b *bench) attach(svc, hw *proc, helloAddress string, a *api) {
	b.servicePID, b.helloPID = svc.cmd.Process.Pid, hw.cmd.Process.Pid
	b.cpu = &cpuMeter{proc: "/proc", hz: clockTicks(), self: os.Getpid(), redis: b.redis.cmd.Process.Pid}
	b.helloBase = "http://" + helloAddress
	b.helloURL = b.helloBase + "/"
	b.api = a
}

// afterReps follows the repetitions on the running service: the storm, the durability check, the
// hold's capture, then stops the service and hello-world and replays the captured hold.
func (b *bench) afterReps(ctx context.Context, dsn string, rpt *report, svc, hw *proc) error {
	// The storm before the durability check: what it acknowledged is counted there too.
	if err := b.stormPhase(ctx); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: waiting for the write-behind, then Postgres against what was acknowledged, and ticketrush reconcile")
	rpt.durable = b.checkDurability(ctx, dsn)
	rpt.lag.stop()
	if err := b.captureHold(ctx); err != nil {
		return err
	}
	svc.stop()
	hw.stop()
	return b.replayHold(ctx)
}

// stormPhase takes Redis's time per call under the storm, or notes why there is none.
func (b *bench) stormPhase(ctx context.Context) error {
	var err error
	switch {
	case b.cfg.stormFans <= 0:
		b.stormNA = "skipped (-storm-fans 0)"
	case !b.purchase:
		b.stormNA = "no purchase path to storm (" + b.na[rowSpread] + ")"
	default:
		if b.storm, err = b.redisStorm(ctx, b.cfg.stormFans); err != nil {
			return fmt.Errorf("the storm of Redis time per call: %w", err)
		}
	}
	return nil
}

// afterService measures what needs the service stopped: the capacity of one concert on a Redis and a
// cluster of its own, the idle cost and the memory of waiting fans.
func (b *bench) afterService(ctx context.Context, baseDSN string, rpt *report) error {
	if b.cfg.capacityFans > 0 {
		if err := b.capacity(ctx, baseDSN); err != nil {
			return err
		}
	} else {
		for _, row := range capacityRows {
			b.na[row] = "skipped (-capacity-fans 0)"
		}
	}
	if b.cfg.idleConcerts > 0 {
		fmt.Fprintf(os.Stderr, "bench: idle cost: %d concerts on a fresh service, Redis and database, nobody buying\n", b.cfg.idleConcerts)
		idle, err := b.idle(ctx, baseDSN)
		if err != nil {
			rpt.idleNA = err.Error()
		}
		rpt.idle = idle
	} else {
		rpt.idleNA = "skipped (-idle-concerts 0)"
	}
	if b.cfg.memFans > 0 {
		fmt.Fprintf(os.Stderr, "bench: joining %d fans on a private Redis for the memory figure\n", b.cfg.memFans)
		m, err := b.memory(ctx)
		if err != nil {
			rpt.memNA = err.Error()
		} else {
			rpt.mem = &m
		}
	} else {
		rpt.memNA = "skipped (-mem-fans 0)"
	}
	return nil
}

const (
	devJWTSecret   = "dev-jwt-secret-change-me-0123456789abcdef"
	devQueueSecret = "dev-queue-secret-change-me-0123456789abc"
	devAdminToken  = "dev-admin-token-change-me-0123456789ab"
)

func (b *bench) memory(ctx context.Context) (memoryResult, error) {
	r, err := startRedis(ctx, filepath.Join(b.cfg.logs, "redis-memory"), false)
	if err != nil {
		return memoryResult{}, err
	}
	defer r.close()
	return measureMemory(ctx, r, b.cfg.memFans)
}
