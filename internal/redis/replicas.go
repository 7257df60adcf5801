package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Replication is asynchronous: a master that acknowledged a write and dies before its replica copied it
// takes the write with it when the replica is elected. For the steps below the service waits for a
// replica before it answers (docs/durability.md): the script and WAIT 1 <ms> go in one pipeline on
// one connection to the slot's master, so WAIT covers that write.
//
//   - seat_hold, seat_take (a hold's seat): a fan told "held" keeps the seat (no
//     money moves, but it is what the fan was told).
//   - payment_claim: replicated before the debit, or a lost claim leaves a debit without a seat once
//     the hold lapses.
//   - wallet_debit: replicated before the sale completes, or a lost debit leaves a seat without a debit.
//   - seat_sell (a sale): the "paid" answer survives (a lost one
//     would also be redone by the sweeper).
//   - points_charge, wallet_refund, payment_release, payment_remember: points and their records.
//   - hold_cancel: a fan told "cancelled" does not find the seat held again.
//   - line_enter, queue_join (the fan's place in the line) and line_left, queue_leave (a leave's
//     decision): a fan told WAITING keeps their place, and a leave answered 204 stays final. A master
//     cut off from its cluster takes writes until it notices (cluster-node-timeout); its replica,
//     elected meanwhile, never had them. Without the wait, the partition suite's split brain lost
//     joins that fans had been answered (docs/faults.md, "Partitions").
//
// Ticks and reads do not wait: an admission the dead master took with it shows as a fan told ACTIVE and
// then not (docs/durability.md), and its slot is the next fan's.
var replicatedScripts = map[string]bool{
	"seat_hold": true, "seat_take": true, "payment_claim": true, "wallet_debit": true,
	"seat_sell": true, "points_charge": true, "wallet_refund": true, "payment_release": true, "payment_remember": true,
	"hold_cancel": true, "line_enter": true, "queue_join": true, "line_left": true, "queue_leave": true,
}

// ErrNotReplicated is a write the master took but no replica confirmed in time: the caller answers 503
// (the write may stand; every step is idempotent or recovered by the sweeper).
var ErrNotReplicated = errors.New("no replica confirmed the write in time")

// WaitForReplica makes the steps of replicatedScripts wait up to timeout for one replica. serve turns it
// on for a Redis Cluster; a single Redis has no replica to wait for.
func (s *Store) WaitForReplica(timeout time.Duration) { s.replicaWait = timeout }

// execReplicated runs sc and WAIT 1 in one round trip on the connection of sc's slot. A master with no
// replica in sync (its replica was elected away and none has come back, or the one it has is still in
// its full sync: a cluster just formed, a replica restarted) has nobody to wait for: the write is taken,
// counted as unreplicated, as docs/durability.md states the exposure. One whose replica is in sync but
// did not confirm in time fails with ErrNotReplicated.
func (s *core) execReplicated(ctx context.Context, sc *script, keys, args []string) (rueidis.RedisMessage, error) {
	wait := func() rueidis.Completed {
		return s.client.B().Wait().Numreplicas(1).Timeout(max(1, s.replicaWait.Milliseconds())).Build()
	}
	start := time.Now()
	first := s.evalsha(sc, keys, args)
	slot := first.Slot()
	if s.alone.known(slot, start) { // no replica a moment ago: nothing to wait for
		msg, err := s.execPlain(ctx, sc, keys, args)
		if err == nil {
			s.metrics.unreplicated.WithLabelValues(sc.name).Inc()
		}
		return msg, err
	}
	res := s.client.DoMulti(ctx, first, wait())
	if isNoScript(res[0].Error()) { // NOSCRIPT: nothing ran; send the source
		res = s.client.DoMulti(ctx, s.client.B().Eval().Script(sc.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), wait())
	}
	sc.observe(start)
	msg, err := res[0].ToMessage()
	if err != nil {
		return msg, s.scriptError(sc, err)
	}
	n, err := res[1].AsInt64()
	if err == nil && n >= 1 {
		return msg, nil
	}
	if err == nil {
		if alone, ierr := s.noReplicaInSync(ctx, keys[0]); ierr == nil && alone {
			s.alone.note(slot, time.Now())
			s.metrics.unreplicated.WithLabelValues(sc.name).Inc()
			return msg, nil
		}
		err = ErrNotReplicated
	}
	s.metrics.errors.WithLabelValues(sc.name, "NOT_REPLICATED").Inc()
	return msg, errors.Join(ticketrush.ErrUnavailable, fmt.Errorf("%s: %w", sc.name, err))
}

// aloneFor is how long a slot whose master had no replica is written without waiting: a master left
// alone by a failover would otherwise make every step of its slots wait in vain (WaitForReplica). A
// replica that attaches meanwhile is waited for once this has passed.
const aloneFor = time.Second

// aloneSlots remembers the slots whose master had no replica, and when that was seen.
type aloneSlots struct {
	mu    sync.Mutex
	since map[uint16]time.Time
}

func (a *aloneSlots) known(slot uint16, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.since[slot]
	if ok && now.Sub(at) >= aloneFor {
		delete(a.since, slot)
		return false
	}
	return ok
}

// count is how many slots had no replica in sync within aloneFor of now.
func (a *aloneSlots) count(now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, at := range a.since {
		if now.Sub(at) < aloneFor {
			n++
		}
	}
	return n
}

// UnreplicatedSlots is how many slots' masters had no replica in sync when a replicated step asked in
// the last aloneFor: their writes are taken without a replica's copy (readyz's degraded, and the gauge
// ticketrush_redis_unreplicated_slots).
func (s *Store) UnreplicatedSlots() int { return s.alone.count(time.Now()) }

func (a *aloneSlots) note(slot uint16, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.since == nil {
		a.since = map[uint16]time.Time{}
	}
	a.since[slot] = now
}

// noReplicaInSync reports whether the master of key's slot has no replica in sync (INFO replication,
// run in a script so that it goes to that master).
func (s *core) noReplicaInSync(ctx context.Context, key string) (bool, error) {
	info, err := s.client.Do(ctx, s.client.B().Eval().Script("return redis.call('INFO','replication')").Numkeys(1).Key(key).Build()).ToString()
	if err != nil {
		return false, err
	}
	n, err := replicasInSync(info)
	return n == 0, err
}

// replicasInSync counts the replicas of a master's INFO replication whose state is online: a replica
// connected and still in its full sync (wait_bgsave, send_bulk) has none of the master's data yet, and
// WAIT counts it only once it is online.
func replicasInSync(info string) (int, error) {
	connected, online := -1, 0
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "connected_slaves:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("INFO replication: connected_slaves %q", v)
			}
			connected = n
		} else if strings.HasPrefix(line, "slave") && strings.Contains(line, ",state=online,") {
			online++
		}
	}
	if connected < 0 {
		return 0, fmt.Errorf("INFO replication without connected_slaves")
	}
	return online, nil
}

// IsCluster reports whether c talks to a Redis Cluster.
func IsCluster(c rueidis.Client) bool { return c.Mode() == rueidis.ClientModeCluster }
