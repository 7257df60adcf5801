package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

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
