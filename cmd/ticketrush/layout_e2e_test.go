package main

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestLayoutMigration: a concert whose record says layout version 1, with a fan in the line's sorted set
// of that layout, is moved by `ticketrush migrate-layout` (a line for it, then the count; a second run
// moves nothing), and by `ticketrush serve` at its start when the record says 1 again: each fan then waits
// in the line at their place.
func TestLayoutMigration(t *testing.T) {
	dbURL, prefix := dbtest.Postgres(t), dbtest.Name("layout")
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_KEY_PREFIX": prefix}
	s := startService(t, env)
	concert := s.createConcert(t, queueSettings{Paused: ptr(true)})

	rdb := dbtest.Client(t, dbtest.RedisURL())
	keys := redis.NewKeys(prefix)
	k := keys.Concert(concert)
	layout, found, err := keys.ReadLayout(context.Background(), rdb, concert) // one slot, or shards on a cluster
	require.NoError(t, err)
	require.True(t, found)
	wait := func(user string) string { // where layout version 1 keeps the user's place
		if layout.Shards > 1 {
			return k.Placed(layout.ShardAt).Shard(redis.LineShard(user, layout.Shards)).LegacyWait()
		}
		return k.LegacyWait()
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	olderBuild := func(user string, seq int) { // what a build of layout version 1 left: the record and the line
		ctx := context.Background()
		_, err := conn.Exec(ctx, `UPDATE concerts SET layout_version = 1 WHERE id = $1`, concert)
		require.NoError(t, err)
		require.NoError(t, rdb.Do(ctx, rdb.B().Zadd().Key(wait(user)).ScoreMember().ScoreMember(float64(seq), user).Build()).Error())
		require.NoError(t, rdb.Do(ctx, rdb.B().Set().Key(k.Seq()).Value(strconv.Itoa(seq)).Build()).Error())
	}
	vars := map[string]string{"REDIS_URL": dbtest.RedisURL(), "DATABASE_URL": dbURL, "REDIS_KEY_PREFIX": prefix}
	getenv := func(k string) string { return vars[k] }

	olderBuild("older-1", 1)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"migrate-layout"}, getenv, &out))
	assert.Contains(t, out.String(), "concert "+concert+" (1 of 1): layout 4, 1 waiting fans, 0 liveness fields, 0 reservations and 0 gate records moved\n")
	assert.Contains(t, out.String(), "1 concerts moved to layout 4\n")
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"migrate-layout"}, getenv, &out))
	assert.Equal(t, "0 concerts moved to layout 4\n", out.String(), "a second run moves nothing")

	olderBuild("older-2", 2)
	again := startService(t, env) // a process starting on a record of version 1
	assert.Eventually(t, func() bool { return bytes.Contains([]byte(again.logs.String()), []byte(`"msg":"migrated layout"`)) },
		waitFor, 50*time.Millisecond, "serve migrates at its start")
	store := redis.NewStore(rdb, prefix, prometheus.NewRegistry())
	for _, fan := range []struct {
		user string
		seq  uint64
	}{{"older-1", 1}, {"older-2", 2}} {
		st, err := store.Line.TokenStatus(context.Background(), auth.NewClaims(concert, fan.user, fan.seq), time.Now())
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: int64(fan.seq)}, st, fan.user)
	}
}
