package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// MaxFlushDelay is how long the client's pipeline may wait to gather commands into one write (Open).
const MaxFlushDelay = 20 * time.Microsecond

// ReplicaConns is how many connections to each node the replicated steps' waits share (Open).
const ReplicaConns = 64

// Open connects to REDIS_URL: redis://host:port/db, or several addr= for a cluster (rueidis finds out
// which it is talking to).
func Open(ctx context.Context, url string) (rueidis.Client, error) {
	opt, err := rueidis.ParseURL(url)
	if err != nil { // the parser's error quotes the URL, password and all
		return nil, fmt.Errorf("parse redis url: %s", strings.ReplaceAll(err.Error(), url, "<REDIS_URL>"))
	}
	opt.DisableCache = true // the service does not use client-side caching; miniredis has none either
	// Bounded waits: a read is not retried on a network error (the request answers 503 and the client
	// retries it, instead of the request waiting on the retry loop); a hung Redis is noticed within
	// ConnWriteTimeout, which also bounds the handshake of a new connection that callers without a
	// deadline of their own (the background loops) start and requests then wait for.
	opt.DisableRetry = true
	opt.Dialer.Timeout = time.Second
	opt.ConnWriteTimeout = 3 * time.Second
	// On a cluster the client also reads the slot map every SlotMapRefresh. Otherwise rueidis reads it
	// only after a command fails, and a map read during a master's election still names the dead master:
	// the client went on sending that master's slots to the dead node until a command on them failed
	// after the election, and for up to a second after that (docs/faults.md).
	opt.ClusterOption.ShardsRefreshInterval = SlotMapRefresh
	// Under load, the pipeline waits up to MaxFlushDelay after a write to the socket before the next, so
	// that more callers' commands go in one write: fewer system calls for the service and for Redis,
	// which share the machine's cores with every request. 20 µs is what rueidis suggests; a round trip
	// takes hundreds.
	opt.MaxFlushDelay = MaxFlushDelay
	// A replicated step's pipeline ends in WAIT, a blocking command, which rueidis sends on a connection
	// of its own from a pool per node, not on the shared pipeline. Unbounded, a burst of joins (each waits
	// for a replica on a cluster) dialled a connection per join in flight: hundreds at once, and on a
	// loaded machine some dials timed out (a 503 for a join that TestConcurrentJoins sent at once with
	// 999 others). ReplicaConns of them per node, kept open, serve the waits in turn; a caller waits for
	// one within its own deadline.
	opt.BlockingPoolSize = ReplicaConns
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("connect redis: %w", err)
	}
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil && !anyNodeAnswers(ctx, c) {
		c.Close()
		return nil, fmt.Errorf("ping redis: %w", err)
	}
	return c, nil
}

// anyNodeAnswers reports whether a node of a cluster answers a PING: a keyless PING goes to a random
// connection, and rueidis keeps the address of a node that is gone (a failed-over master). Whether
// the service reaches its slots is Store.Ping's question.
func anyNodeAnswers(ctx context.Context, c rueidis.Client) bool {
	for _, node := range c.Nodes() {
		if node.Do(ctx, node.B().Ping().Build()).Error() == nil {
			return true
		}
	}
	return false
}

// NewStore returns a store over client with keys under prefix, registering its metrics with reg.
func NewStore(client rueidis.Client, prefix string, reg prometheus.Registerer, opts ...Option) *Store {
	c := &core{client: client, keys: NewKeys(prefix), metrics: newScriptMetrics(reg), liveChunk: seenChunk}
	c.line, c.seats, c.draws = &Line{c}, &Seats{c}, &Draws{c}
	s := &Store{core: c, Line: c.line, Seats: c.seats, Wallet: &Wallet{c}, Draws: c.draws}
	for _, o := range opts {
		o(s)
	}
	s.lines = lines{last: map[string]int{}}
	if reg != nil { // a second store on one registry (tests, tools) reads the first one's gauge
		_ = reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ticketrush_redis_unreplicated_slots",
			Help: "Slots whose master had no replica in sync in the last second: their replicated steps' writes are taken without waiting.",
		}, func() float64 { return float64(s.UnreplicatedSlots()) }))
	}
	s.lineArrive = s.newScript("line_arrive", false)
	s.arrivals = s.Line.newArrivals()
	s.enters = s.Line.newEnters()
	s.gates = s.newGates()
	s.lineEnter = s.newScript("line_enter", false)
	s.lineHeads = s.newScript("line_heads", false)
	s.lineMigrate = s.newScript("line_migrate", false)
	s.seenMigrate = s.newScript("seen_migrate", false)
	s.lineAdmit = s.newScript("line_admit", false)
	s.linePop = s.newScript("line_pop", false)
	s.lineLeave = s.newScript("line_leave", false)
	s.lineLeftSc = s.newScript("line_left", false)
	s.lineSeal = s.newScript("line_seal", false)
	s.linePlace = s.newScript("line_place", false)
	s.load = s.newScript("concert_load", false)
	s.join = s.newScript("queue_join", false)
	s.leave = s.newScript("queue_leave", false)
	s.status = s.newScript("queue_status", true)
	s.tick = s.newScript("queue_tick", false)
	s.seen = s.newScript("queue_seen", false)
	s.snapshot = s.newScript("queue_snapshot", true)
	s.configure = s.newScript("queue_configure", false)
	s.seatHold = s.newScript("seat_hold", false)
	s.holdCancel = s.newScript("hold_cancel", false)
	s.holdSweep = s.newScript("hold_sweep", false)
	s.scheduleCounts = s.newScript("schedule_counts", true)
	s.paymentClaim = s.newScript("payment_claim", false)
	s.paymentRelease = s.newScript("payment_release", false)
	s.pointsCharge = s.newScript("points_charge", false)
	s.walletDebit = s.newScript("wallet_debit", false)
	s.walletRefund = s.newScript("wallet_refund", false)
	s.paymentRemember = s.newScript("payment_remember", false)
	s.drawSeal = s.newScript("draw_seal", false)
	s.drawPlace = s.newScript("draw_place", false)
	s.drawStatus = s.newScript("draw_status", true)
	s.drawRead = s.newScript("draw_read", true)
	s.prequeueLeave = s.newScript("prequeue_leave", false)
	s.Seats.newSeatSlotScripts()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ticketrush_redis_up",
		Help: "1 when Redis served every hash slot the service needs at the last scrape (Store.Ping), else 0.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if s.Ping(ctx) != nil {
			return 0
		}
		return 1
	}))
	return s
}
