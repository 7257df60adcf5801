package writebehind

import (
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/ticketrush/ticketrush/internal/redis"
)

// Config tunes the worker; zero fields take the defaults of DefaultConfig.
type Config struct {
	Group     string // consumer group, shared by every worker process
	Consumer  string // this process's name in the group; unique per process
	BatchSize int    // most events per Postgres transaction
	Writers   int    // batches written at once
	ReadCount int    // entries read from one stream per round, at first
	// MaxReadCount: a stream that filled its read doubles its count for the next round, up to this: a
	// backlog in one stream (a popular concert's line) drains in a few rounds, not in rounds of ReadCount.
	MaxReadCount int
	Idle         time.Duration // pause after a round that found nothing
	// IdleMax: each further round that finds nothing doubles the pause, up to this, so that a quiet
	// service does not poll its streams (64 wallet shards at least) 20 times a second; the first event
	// after a quiet spell waits IdleMax at most.
	IdleMax   time.Duration
	ClaimIdle time.Duration // an entry pending this long with another consumer is claimed (XAUTOCLAIM)
	// ReplicaWait, on a Redis Cluster, is how long the entries of a read wait for a replica of their
	// master before they are written (0: a single Redis, nothing to wait for): an event Postgres holds
	// must not be one a failover takes back.
	ReplicaWait time.Duration
	ClaimEvery  time.Duration // how often pending entries are looked for
	MaxFailures int           // an entry the database refuses this many times goes to the dead-letter stream
	// MaxDeliveries: an entry claimed after this many deliveries goes to the dead-letter stream without
	// another try (it keeps killing the workers that take it).
	MaxDeliveries int
	TrimEvery     time.Duration // how often acknowledged entries are trimmed
	StatsEvery    time.Duration // how often backlog and lag are measured
	// QuietEvery: while the worker is quiet (its last measure found nothing waiting and no round has
	// read anything since), backlog and lag are measured this often instead (10 StatsEvery unless set),
	// and pending entries are not looked for (a measure that finds any ends the quiet): an idle service
	// does not ask every stream for its groups every second. Another worker's entries left pending by a
	// crash while this one is quiet are found within QuietEvery; they are claimed after ClaimIdle anyway.
	QuietEvery time.Duration
	StuckAfter time.Duration // readiness fails when nothing was acknowledged for this long with a backlog
	RetryMax   time.Duration // longest pause between two tries of a batch Postgres did not take
}

// growthBudget is how many streams' worth of MaxReadCount one round may read beyond ReadCount a stream.
const growthBudget = 4

// DefaultConfig is the worker's configuration unless told otherwise.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		Group:         redis.WriteBehindGroup,
		Consumer:      host + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rand.Uint64()%1e6, 36),
		BatchSize:     4000,
		Writers:       2,
		ReadCount:     1000,
		MaxReadCount:  16000,
		Idle:          50 * time.Millisecond,
		IdleMax:       400 * time.Millisecond,
		ClaimIdle:     10 * time.Second,
		ClaimEvery:    2 * time.Second,
		MaxFailures:   5,
		MaxDeliveries: 20,
		TrimEvery:     5 * time.Second,
		StatsEvery:    time.Second,
		QuietEvery:    10 * time.Second, // 10 StatsEvery
		StuckAfter:    30 * time.Second,
		RetryMax:      2 * time.Second,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Group == "" {
		c.Group = d.Group
	}
	if c.Consumer == "" {
		c.Consumer = d.Consumer
	}
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&c.BatchSize, d.BatchSize)
	set(&c.Writers, d.Writers)
	set(&c.ReadCount, d.ReadCount)
	set(&c.MaxReadCount, d.MaxReadCount)
	c.MaxReadCount = max(c.MaxReadCount, c.ReadCount)
	set(&c.MaxFailures, d.MaxFailures)
	set(&c.MaxDeliveries, d.MaxDeliveries)
	setD(&c.Idle, d.Idle)
	setD(&c.IdleMax, d.IdleMax)
	c.IdleMax = max(c.IdleMax, c.Idle)
	setD(&c.ClaimIdle, d.ClaimIdle)
	setD(&c.ClaimEvery, d.ClaimEvery)
	setD(&c.TrimEvery, d.TrimEvery)
	setD(&c.StatsEvery, d.StatsEvery)
	setD(&c.QuietEvery, 10*c.StatsEvery)
	c.QuietEvery = max(c.QuietEvery, c.StatsEvery)
	setD(&c.StuckAfter, d.StuckAfter)
	setD(&c.RetryMax, d.RetryMax)
	return c
}
