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
//   - seat_hold: a fan told "held" keeps the seat (no money moves, but it is what the fan was told).
//   - payment_claim: replicated before the debit, or a lost claim leaves a debit without a seat once
//     the hold lapses.
//   - wallet_debit: replicated before the sale completes, or a lost debit leaves a seat without a debit.
//   - payment_complete: the "paid" answer survives (a lost one would also be redone by the sweeper).
//   - points_charge, wallet_refund, payment_release, payment_remember: points and their records.
//
// Joins, leaves, ticks and reads do not wait: a lost join or admission is redone by the fan, and costs
// no money.
var replicatedScripts = map[string]bool{
	"seat_hold": true, "payment_claim": true, "wallet_debit": true, "payment_complete": true,
	"points_charge": true, "wallet_refund": true, "payment_release": true, "payment_remember": true,
}

// ErrNotReplicated is a write the master took but no replica confirmed in time: the caller answers 503
// (the write may stand; every step is idempotent or recovered by the sweeper).
var ErrNotReplicated = errors.New("no replica confirmed the write in time")

// WaitForReplica makes the steps of replicatedScripts wait up to timeout for one replica. serve turns it
// on for a Redis Cluster; a single Redis has no replica to wait for.
func (s *Store) WaitForReplica(timeout time.Duration) { s.replicaWait = timeout }

// execReplicated runs sc and WAIT 1 in one round trip on the connection of sc's slot. A master that
// has no replica at all (its replica was elected away and none has come back) cannot lose the write
// to a failover: the write is taken, counted as unreplicated. One that has a replica which did not
// confirm in time fails with ErrNotReplicated.
func (s *Store) execReplicated(ctx context.Context, sc *script, keys, args []string) (rueidis.RedisMessage, error) {
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
		if alone, ierr := s.noReplica(ctx, keys[0]); ierr == nil && alone {
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
// alone by a failover would otherwise make every step of its slots wait ReplicaWait in vain. A replica
// that attaches meanwhile is waited for once this has passed.
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

func (a *aloneSlots) note(slot uint16, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.since == nil {
		a.since = map[uint16]time.Time{}
	}
	a.since[slot] = now
}

// noReplica reports whether the master of key's slot has no replica connected (INFO replication, run
// in a script so that it goes to that master).
func (s *Store) noReplica(ctx context.Context, key string) (bool, error) {
	info, err := s.client.Do(ctx, s.client.B().Eval().Script("return redis.call('INFO','replication')").Numkeys(1).Key(key).Build()).ToString()
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, err := strconv.Atoi(v)
			return n == 0, err
		}
	}
	return false, fmt.Errorf("INFO replication without connected_slaves")
}

// ReplicaWait is how long a replicated step waits for a replica on a cluster: a replica on the same
// network confirms within a millisecond; one that takes longer is treated as lagging.
const ReplicaWait = 250 * time.Millisecond

// IsCluster reports whether c talks to a Redis Cluster.
func IsCluster(c rueidis.Client) bool { return c.Mode() == rueidis.ClientModeCluster }
