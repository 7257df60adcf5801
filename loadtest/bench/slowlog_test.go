package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/lua"
)

// TestSlowlogCountsClientScriptsAndTheSideClientsFloor runs, on a Redis of the test's own, a script
// that runs an HSET itself, a plain HSET from another client and the side client's floor calls, and
// holds the drained entries to what a storm counts: the script call once, the side client's HSET and
// EVALSHA as the floor, neither the script's inner HSET nor the other client's.
func TestSlowlogCountsClientScriptsAndTheSideClientsFloor(t *testing.T) {
	u := dbtest.PrivateRedis(t)
	c := dbtest.Client(t, u)
	opt, err := rueidis.ParseURL(u)
	require.NoError(t, err)
	opt.DisableCache, opt.ClientName = true, stormSide
	side, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(side.Close)
	ctx := context.Background()

	const src = "redis.call('HSET', KEYS[1], 'f', ARGV[1]) return redis.call('INCR', KEYS[2])"
	sha, err := c.Do(ctx, c.B().ScriptLoad().Script(src).Build()).ToString()
	require.NoError(t, err)
	floorSHA, err := side.Do(ctx, side.B().ScriptLoad().Script(floorScript).Build()).ToString()
	require.NoError(t, err)

	sl, err := startSlowlog(ctx, c, 1000)
	require.NoError(t, err)
	_, _, err = sl.drain(ctx, "n") // what the set-up left
	require.NoError(t, err)
	require.NoError(t, c.Do(ctx, c.B().Evalsha().Sha1(sha).Numkeys(2).Key("h", "n").Arg("v").Build()).Error())
	require.NoError(t, c.Do(ctx, c.B().Hset().Key("other").FieldValue().FieldValue("f", "v").Build()).Error())
	require.NoError(t, side.Do(ctx, side.B().Hset().Key("floor").FieldValue().FieldValue("f", "v").Build()).Error())
	require.NoError(t, side.Do(ctx, side.B().Evalsha().Sha1(floorSHA).Numkeys(0).Build()).Error())
	entries, n, err := sl.drain(ctx, "n")
	require.NoError(t, err)
	assert.Equal(t, "1", n, "the key read in the drain's transaction")

	var inner int
	var sides []string
	for _, e := range entries {
		if e.addr == "?:0" {
			inner++
		}
		if e.name == stormSide {
			sides = append(sides, strings.ToLower(e.args[0]))
		}
	}
	assert.Equal(t, 2, inner, "the script's HSET and INCR are in the slow log, from the Lua client")
	assert.Subset(t, sides, []string{"hset", "evalsha"}, "the side client's calls carry its name")

	tally := newCallTally(map[string]string{sha: "seat_hold"}, stormSide, "cfg")
	for _, e := range entries {
		tally.add(e)
	}
	assert.Equal(t, map[string]int{"seat_hold": 1, labelFloorHSET: 1, labelFloorEval: 1}, counts(tally))

	again, _, err := sl.drain(ctx, "n")
	require.NoError(t, err)
	for _, e := range again {
		assert.NotEqual(t, "evalsha", e.args[0], "a drained entry read twice")
	}
	sl.restore()
	cfg, err := c.Do(ctx, c.B().ConfigGet().Parameter("slowlog-log-slower-than").Build()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, "10000", cfg["slowlog-log-slower-than"], "the old threshold back")
}

func TestSlowlogDrainFailsWhenTheLogFilledUp(t *testing.T) {
	c := dbtest.Client(t, dbtest.PrivateRedis(t))
	ctx := context.Background()
	sl, err := startSlowlog(ctx, c, 5)
	require.NoError(t, err)
	t.Cleanup(sl.restore)
	for range 10 {
		require.NoError(t, c.Do(ctx, c.B().Ping().Build()).Error())
	}
	_, _, err = sl.drain(ctx, "n")
	assert.ErrorContains(t, err, "the slow log filled up")
}

func TestSlowEntriesRefusesAnotherReply(t *testing.T) {
	c := dbtest.Client(t, dbtest.PrivateRedis(t))
	ctx := context.Background()
	require.NoError(t, c.Do(ctx, c.B().Rpush().Key("l").Element("a", "b").Build()).Error())
	msgs, err := c.Do(ctx, c.B().Lrange().Key("l").Start(0).Stop(-1).Build()).ToArray()
	require.NoError(t, err)
	_, err = slowEntries(msgs)
	assert.ErrorContains(t, err, "want 6 fields")
}

func counts(t *callTally) map[string]int {
	out := map[string]int{}
	for l, v := range t.micros {
		out[l] = len(v)
	}
	return out
}

// TestScriptSHAsAreWhatRedisRuns holds the SHA → script map to the SHA Redis computes for each
// embedded script (what EVALSHA sends: internal/redis loads lua.Source unchanged).
func TestScriptSHAsAreWhatRedisRuns(t *testing.T) {
	c := dbtest.Client(t, dbtest.PrivateRedis(t))
	shas := scriptSHAs()
	require.Len(t, shas, len(lua.Names()), "a SHA for every script")
	for _, name := range lua.Names() {
		sha, err := c.Do(context.Background(), c.B().ScriptLoad().Script(lua.Source(name)).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, name, shas[sha], name)
	}
}

func TestCallTallyCountsEachCallOnce(t *testing.T) {
	shas := scriptSHAs()
	sha := func(name string) string { return sha1Hex(lua.Source(name)) }
	const cfg = "tr:{c1}:q:cfg"
	tests := []struct {
		name      string
		give      slowEntry
		want      map[string]int
		wantTicks int
		wantOther int
		wantEvals int
		wantUnkn  int
	}{
		{"a script by its SHA", slowEntry{args: []string{"EVALSHA", sha("queue_join"), "1", "k"}}, map[string]int{"queue_join": 1}, 0, 0, 0, 0},
		{"a read-only script", slowEntry{args: []string{"evalsha_ro", sha("queue_status"), "0"}}, map[string]int{"queue_status": 1}, 0, 0, 0, 0},
		{"payment_remember by its step", slowEntry{args: []string{"evalsha", sha("payment_remember"), "2", "i", "e", "u", "k", "fp", "p", "1", "60", "0", "reserve"}},
			map[string]int{"payment_remember reserve": 1}, 0, 0, 0, 0},
		{"a command a script ran", slowEntry{args: []string{"hset", "k", "f", "v"}, addr: "?:0"}, map[string]int{}, 0, 0, 0, 0},
		{"another client's HSET", slowEntry{args: []string{"HSET", "k", "f", "v"}, addr: "127.0.0.1:5000"}, map[string]int{}, 0, 0, 0, 0},
		{"the side client's HSET", slowEntry{args: []string{"HSET", "k", "f", "v"}, name: stormSide}, map[string]int{labelFloorHSET: 1}, 0, 0, 0, 0},
		{"the side client's floor", slowEntry{args: []string{"EVALSHA", sha1Hex(floorScript), "0"}, name: stormSide}, map[string]int{labelFloorEval: 1}, 0, 0, 0, 0},
		{"another client's return 1", slowEntry{args: []string{"EVALSHA", sha1Hex(floorScript), "0"}}, map[string]int{}, 0, 0, 0, 1},
		{"a tick of the storm's line", slowEntry{args: []string{"EVALSHA", sha("queue_tick"), "12", cfg, "w"}, micros: 40}, map[string]int{}, 1, 0, 0, 0},
		{"a tick of another concert", slowEntry{args: []string{"EVALSHA", sha("queue_tick"), "12", "tr:{c2}:q:cfg"}}, map[string]int{}, 0, 1, 0, 0},
		{"a script sent whole", slowEntry{args: []string{"EVAL", "return 1", "0"}}, map[string]int{}, 0, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tally := newCallTally(shas, stormSide, cfg)
			tally.add(tt.give)
			assert.Equal(t, tt.want, counts(tally))
			assert.Equal(t, tt.wantTicks, tally.ticks, "ticks")
			assert.Equal(t, tt.give.micros*int64(tt.wantTicks), tally.tickUs, "tick µs")
			assert.Equal(t, tt.wantOther, tally.otherTick, "other ticks")
			assert.Equal(t, tt.wantEvals, tally.evals, "evals")
			assert.Equal(t, tt.wantUnkn, tally.unknown, "unknown")
		})
	}
}

func TestMedianMicros(t *testing.T) {
	tests := []struct {
		give []int64
		want float64
	}{
		{nil, 0},
		{[]int64{7}, 7},
		{[]int64{30, 10, 20}, 20},
		{[]int64{40, 10, 30, 20}, 25},
		{[]int64{1, 1, 1, 100}, 1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, medianMicros(tt.give), "%v", tt.give)
	}
	v := []int64{3, 1, 2}
	medianMicros(v)
	assert.Equal(t, []int64{3, 1, 2}, v, "the median leaves its input alone")
}
