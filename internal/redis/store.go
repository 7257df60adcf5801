package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

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
	// after the election, and for up to a second after that (issue 22).
	opt.ClusterOption.ShardsRefreshInterval = SlotMapRefresh
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

// Store runs the hot-path scripts.
type Store struct {
	client      rueidis.Client
	keys        Keys
	metrics     *scriptMetrics
	concerts    atomic.Pointer[func() []string] // the concerts whose slots Ping checks
	replicaWait time.Duration                   // > 0: replicatedScripts wait for a replica (replicas.go)
	alone       aloneSlots                      // slots whose master had no replica to wait for

	load, join, leave, status, tick, snapshot, configure *script

	seatHold, holdCancel, holdSweep, scheduleCounts *script
	paymentClaim, paymentComplete, paymentRelease   *script
	pointsCharge, walletDebit, walletRefund         *script
	paymentRemember                                 *script
	drawSeal, drawPlace, drawStatus                 *script
	prequeueLeave                                   *script

	limit UserLimit // the per-user rate of join, hold, cancel, pay and charge; zero: off
}

// LimitUsers sets the per-user rate the state-changing scripts enforce (0 turns it off). Call it before
// the store serves.
func (s *Store) LimitUsers(l UserLimit) { s.limit = l }

// NewStore returns a store over client with keys under prefix, registering its metrics with reg.
func NewStore(client rueidis.Client, prefix string, reg prometheus.Registerer) *Store {
	s := &Store{client: client, keys: NewKeys(prefix), metrics: newScriptMetrics(reg)}
	s.load = s.newScript("concert_load", false)
	s.join = s.newScript("queue_join", false)
	s.leave = s.newScript("queue_leave", false)
	s.status = s.newScript("queue_status", true)
	s.tick = s.newScript("queue_tick", false)
	s.snapshot = s.newScript("queue_snapshot", true)
	s.configure = s.newScript("queue_configure", false)
	s.seatHold = s.newScript("seat_hold", false)
	s.holdCancel = s.newScript("hold_cancel", false)
	s.holdSweep = s.newScript("hold_sweep", false)
	s.scheduleCounts = s.newScript("schedule_counts", true)
	s.paymentClaim = s.newScript("payment_claim", false)
	s.paymentComplete = s.newScript("payment_complete", false)
	s.paymentRelease = s.newScript("payment_release", false)
	s.pointsCharge = s.newScript("points_charge", false)
	s.walletDebit = s.newScript("wallet_debit", false)
	s.walletRefund = s.newScript("wallet_refund", false)
	s.paymentRemember = s.newScript("payment_remember", false)
	s.drawSeal = s.newScript("draw_seal", false)
	s.drawPlace = s.newScript("draw_place", false)
	s.drawStatus = s.newScript("draw_status", true)
	s.prequeueLeave = s.newScript("prequeue_leave", false)
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

// Keys returns the key builder, for tools and tests that read state directly.
func (s *Store) Keys() Keys { return s.keys }

// pingTimeout bounds a readiness probe: a probe that waits for a dead node answers late and wrong.
const pingTimeout = time.Second

// Ping reports whether Redis serves every hash slot the service needs: a keyed read (EXISTS) in each
// wallet shard's slot and, after NeedConcerts, each concert's, in one pipeline. rueidis sends a keyed
// command to its slot's current master, so on a cluster the probe follows a failover; a keyless PING
// would go to a random connection, and rueidis keeps every address of REDIS_URL, a dead node's too.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	cmds := make(rueidis.Commands, 0, WalletShards+8)
	for n := range WalletShards {
		cmds = append(cmds, s.client.B().Exists().Key(s.keys.WalletShard(n).Balances()).Build())
	}
	if ids := s.concerts.Load(); ids != nil {
		for _, id := range (*ids)() {
			cmds = append(cmds, s.client.B().Exists().Key(s.keys.Concert(id).Cfg()).Build())
		}
	}
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("redis slot check: %w", err)
		}
	}
	return nil
}

// SlotMapRefresh is how often a cluster client reads the slot map (CLUSTER SLOTS from one node) when
// nothing fails. rueidis reads it at a random moment within a second of being asked, whether by this
// period or by a failed command, so after an election the client follows the new master within about
// two seconds even when no command touches its slots.
const SlotMapRefresh = time.Second

// settleRetry is how long Settled waits between two runs of a check.
const settleRetry = 50 * time.Millisecond

// Settled returns check run again, until ctx ends, while it fails the way a client with a stale slot
// map fails: the slots of a master that has just been replaced are still sent to the dead node (a
// connection error) until the client has read the map again, which the failure itself asks for and
// which takes up to a second; a node may answer CLUSTERDOWN, TRYAGAIN or LOADING meanwhile. A readiness
// probe then answers once the client has caught up, instead of reporting the client's lag behind a
// cluster that is whole. Any other error is returned at once; when ctx ends, the last stale one.
// It is for a cluster client: a single Redis that refuses connections is down, with no map to refresh.
func Settled(check func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var stale error
		for {
			err := check(ctx)
			switch {
			case err == nil:
				return nil
			case !Stale(err) && stale != nil && ctx.Err() != nil:
				return stale // the deadline cut the last run short: the error before it says why
			case !Stale(err):
				return err
			}
			stale = err
			select {
			case <-ctx.Done():
				return err
			case <-time.After(settleRetry):
			}
		}
	}
}

// Stale reports whether err is how a cluster client with an outdated slot map fails (see Settled): no
// connection to the node it routes to, no node for the slot, or a node's CLUSTERDOWN, TRYAGAIN,
// LOADING, MOVED or ASK. A context's end, an error reply of another kind or a missing key are not.
func Stale(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var rerr *rueidis.RedisError
	if errors.As(err, &rerr) {
		_, moved := rerr.IsMoved()
		_, ask := rerr.IsAsk()
		return rerr.IsClusterDown() || rerr.IsTryAgain() || rerr.IsLoading() || moved || ask
	}
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, rueidis.ErrNoSlot) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// NeedConcerts makes Ping check the slots of the concerts ids returns too.
func (s *Store) NeedConcerts(ids func() []string) { s.concerts.Store(&ids) }

// LoadConcert writes a concert's catalog and settings unless Redis has them already; it reports
// whether it wrote.
func (s *Store) LoadConcert(ctx context.Context, c ticketrush.Concert, now time.Time) (bool, error) {
	msg, err := s.exec(ctx, s.load, s.keys.Concert(c.ID).load(), loadArgs(c, now))
	if err != nil {
		return false, fmt.Errorf("load concert %s: %w", c.ID, err)
	}
	n, err := msg.AsInt64()
	return n == 1, err
}

// Join puts a fan in a concert's line, or returns their live token's arrival.
func (s *Store) Join(ctx context.Context, concertID, userID string, now time.Time) (ticketrush.JoinResult, error) {
	return s.JoinWith(ctx, concertID, userID, ticketrush.JoinPass{}, now)
}

// JoinWith is Join with what the join carries past the concert's proof-of-work and access-code gates;
// the script checks them (and the user's rate) before anything else.
func (s *Store) JoinWith(ctx context.Context, concertID, userID string, pass ticketrush.JoinPass, now time.Time) (ticketrush.JoinResult, error) {
	k := s.keys.Concert(concertID)
	keys := append(k.join(), k.UserRate(userID), k.PowUsed(pass.PowID), k.AccessCodes())
	args := append(append(joinArgs(userID, now), limitArgs(s.limit)...), passArgs(pass)...)
	msg, err := s.exec(ctx, s.join, keys, args)
	if err != nil {
		return ticketrush.JoinResult{}, fmt.Errorf("join %s: %w", concertID, err)
	}
	res, err := joinReply(msg)
	if err != nil {
		return res, fmt.Errorf("join %s: %w", concertID, err)
	}
	return res, nil
}

// joinReply reads queue_join's {status, seq, activeUntil, created}.
func joinReply(msg rueidis.RedisMessage) (ticketrush.JoinResult, error) {
	r, err := reply(msg, 4)
	if err != nil {
		return ticketrush.JoinResult{}, err
	}
	res := ticketrush.JoinResult{
		Status:      r.status(0, ticketrush.StatusPrequeue, ticketrush.StatusWaiting, ticketrush.StatusActive),
		Seq:         uint64(r.int(1)),
		ActiveUntil: fromMillis(r.int(2)),
		Created:     r.flag(3),
	}
	return res, r.err
}

// Leave takes the token of arrival seq out of the line or the active set. It returns where the token
// was: WAITING, ACTIVE, or "" when it was no longer live.
func (s *Store) Leave(ctx context.Context, concertID, userID string, seq uint64, now time.Time) (ticketrush.QueueStatus, error) {
	msg, err := s.exec(ctx, s.leave, s.keys.Concert(concertID).leave(), leaveArgs(userID, seq, now))
	if err != nil {
		return "", fmt.Errorf("leave %s: %w", concertID, err)
	}
	return leaveReply(msg)
}

// leaveReply reads queue_leave's 'WAITING', 'ACTIVE' or 'NONE' ("").
func leaveReply(msg rueidis.RedisMessage) (ticketrush.QueueStatus, error) {
	from, err := msg.ToString()
	switch {
	case err != nil:
		return "", fmt.Errorf("leave reply: %w", err)
	case from == "NONE":
		return "", nil
	case from == string(ticketrush.StatusWaiting), from == string(ticketrush.StatusActive):
		return ticketrush.QueueStatus(from), nil
	}
	return "", fmt.Errorf("leave reply: unexpected %q", from)
}

// TokenStatus returns the exact state of a token.
func (s *Store) TokenStatus(ctx context.Context, c ticketrush.QueueClaims, now time.Time) (ticketrush.TokenState, error) {
	msg, err := s.exec(ctx, s.status, s.keys.Concert(c.ConcertID).status(), statusArgs(c, now))
	if err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", err)
	}
	return tokenState(msg)
}

func tokenState(msg rueidis.RedisMessage) (ticketrush.TokenState, error) {
	r, err := reply(msg, 3)
	if err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", err)
	}
	st := ticketrush.TokenState{
		Status: r.status(0, ticketrush.StatusWaiting, ticketrush.StatusActive, ticketrush.StatusExpired, ticketrush.StatusDone,
			ticketrush.StatusSoldOut),
		Position:    r.int(1),
		ActiveUntil: fromMillis(r.int(2)),
	}
	if r.err != nil {
		return ticketrush.TokenState{}, fmt.Errorf("token status: %w", r.err)
	}
	return st, nil
}

// Tick runs one admission round for a concert.
func (s *Store) Tick(ctx context.Context, concertID string, now time.Time, batch int) (ticketrush.TickResult, error) {
	msg, err := s.exec(ctx, s.tick, s.keys.Concert(concertID).tick(), tickArgs(now, batch))
	if err != nil {
		return ticketrush.TickResult{}, fmt.Errorf("tick %s: %w", concertID, err)
	}
	res, err := tickReply(msg)
	if err != nil {
		return res, fmt.Errorf("tick %s: %w", concertID, err)
	}
	return res, nil
}

// tickReply reads queue_tick's {admitted, lapsed, waiting, active, abandoned, noshows}.
func tickReply(msg rueidis.RedisMessage) (ticketrush.TickResult, error) {
	r, err := reply(msg, 6)
	if err != nil {
		return ticketrush.TickResult{}, err
	}
	res := ticketrush.TickResult{Admitted: int(r.int(0)), Lapsed: int(r.int(1)), Waiting: r.int(2), Active: r.int(3),
		Abandoned: int(r.int(4)), NoShows: int(r.int(5))}
	return res, r.err
}

// Snapshot reads the shared queue state and up to limit leaves after ordinal afterLeave.
func (s *Store) Snapshot(ctx context.Context, concertID string, afterLeave uint64, limit int, now time.Time) (ticketrush.QueueSnapshot, error) {
	msg, err := s.exec(ctx, s.snapshot, s.keys.Concert(concertID).snapshot(), snapshotArgs(afterLeave, limit, now))
	if err != nil {
		return ticketrush.QueueSnapshot{}, fmt.Errorf("queue snapshot %s: %w", concertID, err)
	}
	snap, err := snapshotReply(msg)
	if err != nil {
		return snap, fmt.Errorf("queue snapshot %s: %w", concertID, err)
	}
	return snap, nil
}

// snapshotReply reads queue_snapshot's {found, head, tail, admitted, waiting, active, cap, rate, paused,
// {seq, ordinal, ...}, soldout, available, aps, abandoned, abandon (ms)}.
func snapshotReply(msg rueidis.RedisMessage) (ticketrush.QueueSnapshot, error) {
	r, err := reply(msg, 15)
	if err != nil {
		return ticketrush.QueueSnapshot{}, err
	}
	snap := ticketrush.QueueSnapshot{
		Found:          r.flag(0),
		Head:           uint64(r.int(1)),
		Tail:           uint64(r.int(2)),
		Admitted:       uint64(r.int(3)),
		Waiting:        r.int(4),
		Active:         r.int(5),
		ActiveCapacity: int(r.int(6)),
		AdmitPerSecond: int(r.int(7)),
		Paused:         r.flag(8),
		SoldOut:        r.flag(10),
		SeatsAvailable: r.int(11),
		ActivePerSeat:  int(r.int(12)),
		Abandoned:      r.int(13),
		AbandonAfter:   time.Duration(r.int(14)) * time.Millisecond,
	}
	if r.err != nil {
		return ticketrush.QueueSnapshot{}, r.err
	}
	leaves, err := r.items[9].AsStrSlice()
	if err != nil {
		return ticketrush.QueueSnapshot{}, fmt.Errorf("leaves: %w", err)
	}
	if len(leaves)%2 != 0 {
		return ticketrush.QueueSnapshot{}, fmt.Errorf("leaves: %d items, want pairs", len(leaves))
	}
	for i := 0; i < len(leaves); i += 2 {
		seq, err1 := strconv.ParseUint(leaves[i], 10, 64)
		ord, err2 := strconv.ParseFloat(leaves[i+1], 64)
		if err1 != nil || err2 != nil {
			return ticketrush.QueueSnapshot{}, fmt.Errorf("bad leave %q %q", leaves[i], leaves[i+1])
		}
		snap.Leaves = append(snap.Leaves, ticketrush.Leave{Seq: seq, Ordinal: uint64(ord)})
	}
	return snap, nil
}

// AddAccessCodes adds unclaimed access codes (by hash) to a concert; a hash it has already keeps its owner.
func (s *Store) AddAccessCodes(ctx context.Context, concertID string, hashes []string) error {
	key := s.keys.Concert(concertID).AccessCodes()
	var cmds rueidis.Commands
	for _, h := range hashes {
		cmds = append(cmds, s.client.B().Hsetnx().Key(key).Field(h).Value("").Build())
	}
	for _, r := range s.client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("add access codes %s: %w", concertID, unavailable(err))
		}
	}
	return nil
}

// MarkAlive records that the fans of the given WAITING arrivals were seen at now: one command, which
// an instance sends at most once a second per concert for every token it served in that second.
func (s *Store) MarkAlive(ctx context.Context, concertID string, seqs []uint64, now time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	at := millis(now)
	cmd := s.client.B().Hset().Key(s.keys.Concert(concertID).Alive()).FieldValue()
	for _, seq := range seqs {
		cmd = cmd.FieldValue(utoa(seq), at)
	}
	if err := s.client.Do(ctx, cmd.Build()).Error(); err != nil {
		return fmt.Errorf("mark alive %s: %w", concertID, unavailable(err))
	}
	return nil
}

// Configure changes a concert's admission settings in Redis, where the tick reads them.
func (s *Store) Configure(ctx context.Context, concertID string, q ticketrush.QueueSettings, now time.Time) error {
	_, err := s.exec(ctx, s.configure, s.keys.Concert(concertID).configure(), configureArgs(q, now))
	if err != nil {
		return fmt.Errorf("configure %s: %w", concertID, err)
	}
	return nil
}

// replyArray reads a script's array reply; the first conversion error sticks in err.
type replyArray struct {
	items []rueidis.RedisMessage
	err   error
}

// reply checks that msg is an array of exactly n items: a reply of another shape is a script and Go
// that disagree, an error rather than a guess.
func reply(msg rueidis.RedisMessage, n int) (*replyArray, error) {
	items, err := msg.ToArray()
	if err != nil {
		return nil, fmt.Errorf("script reply: %w", err)
	}
	if len(items) != n {
		return nil, fmt.Errorf("script reply has %d items, want %d", len(items), n)
	}
	return &replyArray{items: items}, nil
}

func (r *replyArray) fail(i int, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("reply item %d: %w", i, err)
	}
}

// int reads item i, which must be an integer (Lua numbers reach Redis as integers).
func (r *replyArray) int(i int) int64 {
	v, err := r.items[i].ToInt64()
	if err != nil {
		r.fail(i, err)
	}
	return v
}

// str reads item i, which must be a string.
func (r *replyArray) str(i int) string {
	v, err := r.items[i].ToString()
	if err != nil {
		r.fail(i, err)
	}
	return v
}

// flag reads item i, which must be 0 or 1.
func (r *replyArray) flag(i int) bool {
	v := r.int(i)
	if v != 0 && v != 1 {
		r.fail(i, fmt.Errorf("%d is not 0 or 1", v))
	}
	return v == 1
}

// status reads item i, which must be one of want.
func (r *replyArray) status(i int, want ...ticketrush.QueueStatus) ticketrush.QueueStatus {
	v := ticketrush.QueueStatus(r.str(i))
	if r.err == nil && !slices.Contains(want, v) {
		r.fail(i, fmt.Errorf("unexpected status %q", v))
	}
	return v
}

func itoa(n int) string         { return strconv.Itoa(n) }
func utoa(n uint64) string      { return strconv.FormatUint(n, 10) }
func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func fromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
