package writebehind

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
)

// TestBacklogAcrossRedisRestart measures the backlog of a consumer group on a private Redis that is
// killed and restarted from its append-only file, and whose group then reports a lag with nothing left
// to deliver (what XINFO GROUPS showed in the field after a restart: lag 55 on an empty stream whose
// last-delivered id is the last one generated). The backlog is what is really unacknowledged: pending
// entries plus entries after the last-delivered id, whatever lag says.
func TestBacklogAcrossRedisRestart(t *testing.T) {
	rs := dbtest.StartRedisServer(t, "always")
	c := dbtest.Client(t, rs.URL)
	ctx := context.Background()
	const stream, group = "tr:{w:1}:events", "writebehind"
	do := func(args ...string) rueidis.RedisResult {
		return c.Do(ctx, c.B().Arbitrary(args[0]).Args(args[1:]...).Build())
	}
	add := func(n int) (ids []string) {
		for range n {
			id, err := do("XADD", stream, "*", "type", "x").ToString()
			require.NoError(t, err)
			ids = append(ids, id)
		}
		return ids
	}
	deliver := func(n int) {
		require.NoError(t, do("XREADGROUP", "GROUP", group, "w1", "COUNT", itoa(n), "STREAMS", stream, ">").Error())
	}
	backlog := func() int64 {
		t.Helper()
		n, _, err := measure(ctx, c, group, []string{stream, "tr:{w:2}:events"})
		require.NoError(t, err)
		return n
	}
	lag := func() int64 {
		t.Helper()
		groups, err := redis.ParseStreamGroups(mustMessage(t, do("XINFO", "GROUPS", stream)))
		require.NoError(t, err)
		require.Len(t, groups, 1)
		return groups[0].Lag
	}

	// restart kills the server and starts it again from its append-only file, then waits until the client
	// has dropped its dead connection: the first command on it fails (EOF) and is not retried.
	restart := func() {
		rs.Kill()
		rs.Restart()
		require.Eventually(t, func() bool { return c.Do(ctx, c.B().Ping().Build()).Error() == nil },
			10*time.Second, 10*time.Millisecond, "the client reconnects")
	}

	require.NoError(t, do("XGROUP", "CREATE", stream, group, "$", "MKSTREAM").Error())
	ids := add(5)
	deliver(5)
	require.NoError(t, do(append([]string{"XACK", stream, group}, ids...)...).Error())
	require.NoError(t, do("XTRIM", stream, "MINID", after(ids[4])).Error())
	assert.Zero(t, backlog(), "everything acknowledged and trimmed")

	restart()
	assert.Zero(t, backlog(), "after the restart")

	// The group comes back with a read count behind its last-delivered id, so Redis computes a lag.
	require.NoError(t, do("XGROUP", "SETID", stream, group, ids[4], "ENTRIESREAD", "0").Error())
	require.Equal(t, int64(5), lag(), "precondition: Redis reports a phantom lag on an empty stream")
	assert.Zero(t, backlog(), "a phantom lag is no backlog")

	add(3)
	assert.Equal(t, int64(3), backlog(), "three new entries, though lag says %d", lag())
	deliver(2)
	assert.Equal(t, int64(3), backlog(), "two pending and one undelivered")
	add(2)
	restart()
	assert.Equal(t, int64(5), backlog(), "two pending and three undelivered, after another restart")

	require.NoError(t, do("XADD", "tr:{w:2}:events", "*", "type", "x").Error())
	assert.Equal(t, int64(6), backlog(), "a stream without the group yet: every entry waits")
}

func mustMessage(t *testing.T, r rueidis.RedisResult) rueidis.RedisMessage {
	t.Helper()
	msg, err := r.ToMessage()
	require.NoError(t, err)
	return msg
}

func itoa(n int) string { return strconv.Itoa(n) }
