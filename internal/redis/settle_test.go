package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// refused is the error of a command sent to a dead node.
var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

func TestStale(t *testing.T) {
	tests := []struct {
		name string
		give error
		want bool
	}{
		{"dial refused by a dead master", fmt.Errorf("redis slot check: %w", refused), true},
		{"dial timeout to a dead host", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"connection reset", fmt.Errorf("read state marker: %w", syscall.ECONNRESET), true},
		{"connection closed mid-reply", io.EOF, true},
		{"no node for the slot", rueidis.ErrNoSlot, true},
		{"the deadline", fmt.Errorf("redis slot check: %w", context.DeadlineExceeded), false},
		{"canceled", context.Canceled, false},
		{"a missing key", rueidis.Nil, false},
		{"another error", errors.New("redis has lost the sale's state"), false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Stale(tt.give))
		})
	}
}

// TestStaleReplies: the error replies of a cluster that is changing are stale, others are not. Each is
// a script's error_reply, checked as soon as it arrives (the client may reuse the reply's memory).
func TestStaleReplies(t *testing.T) {
	_, m := dbtest.MiniRedis(t)
	// A client of one node: a cluster client would follow MOVED and ASK (miniredis answers CLUSTER SLOTS).
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr()}, ForceSingleClient: true,
		DisableCache: true, DisableRetry: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	tests := []struct {
		give string
		want bool
	}{
		{"CLUSTERDOWN The cluster is down", true},
		{"TRYAGAIN Multiple keys request during rehashing of slot", true},
		{"LOADING Redis is loading the dataset in memory", true},
		{"MOVED 3999 192.0.2.1:6379", true},
		{"ASK 3999 192.0.2.1:6379", true},
		{"ERR unknown command", false},
		{"SEAT_UNAVAILABLE", false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			err := c.Do(context.Background(), c.B().Eval().Script("return redis.error_reply(ARGV[1])").Numkeys(0).
				Arg(tt.give).Build()).Error()
			var rerr *rueidis.RedisError
			require.ErrorAs(t, err, &rerr)
			assert.Equal(t, tt.want, Stale(fmt.Errorf("read state marker: %w", err)))
		})
	}
}

func TestSettled(t *testing.T) {
	t.Run("runs the check again until the client has caught up", func(t *testing.T) {
		calls := 0
		check := Settled(func(context.Context) error {
			calls++
			if calls < 4 {
				return fmt.Errorf("redis slot check: %w", refused)
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, check(ctx))
		assert.Equal(t, 4, calls)
	})
	t.Run("returns another error at once", func(t *testing.T) {
		calls := 0
		lost := errors.New("redis has lost the sale's state")
		check := Settled(func(context.Context) error { calls++; return lost })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.ErrorIs(t, check(ctx), lost)
		assert.Equal(t, 1, calls)
	})
	t.Run("returns the stale error when the context ends", func(t *testing.T) {
		calls := 0
		check := Settled(func(context.Context) error { calls++; return refused })
		ctx, cancel := context.WithTimeout(context.Background(), 3*settleRetry)
		defer cancel()
		assert.ErrorIs(t, check(ctx), syscall.ECONNREFUSED)
		assert.GreaterOrEqual(t, calls, 1)
	})
	t.Run("says why when the deadline cuts a run short", func(t *testing.T) {
		calls := 0
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		check := Settled(func(ctx context.Context) error {
			calls++
			if calls == 1 {
				return fmt.Errorf("redis slot check: %w", refused)
			}
			cancel() // the deadline ends this run
			return fmt.Errorf("redis slot check: %w", ctx.Err())
		})
		assert.ErrorIs(t, check(ctx), syscall.ECONNREFUSED)
		assert.Equal(t, 2, calls)
	})
}
