package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
)

func TestAttributePricesWhatTheStoreSent(t *testing.T) {
	stats := func(kv ...any) map[string]cmdStat {
		m := map[string]cmdStat{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(cmdStat)
		}
		return m
	}
	before := []map[string]cmdStat{
		stats("evalsha", cmdStat{10, 500}, "zadd", cmdStat{10, 50}, "incr", cmdStat{0, 0}, "info", cmdStat{3, 30}),
		stats("evalsha", cmdStat{5, 100}),
	}
	tests := []struct {
		name        string
		ops         int
		sent        map[string]int64
		after       []map[string]cmdStat
		wantUs      float64 // per operation, summed over the masters
		wantBusiest float64
		wantScripts int64
	}{
		{
			name: "a script's own commands are in its time, not again",
			ops:  100, sent: map[string]int64{"evalsha": 100},
			after: []map[string]cmdStat{
				stats("evalsha", cmdStat{110, 2500}, "zadd", cmdStat{110, 550}, "info", cmdStat{4, 40}),
				stats("evalsha", cmdStat{5, 100}),
			},
			wantUs: 20, wantBusiest: 1, wantScripts: 100,
		},
		{
			name: "spread over the masters",
			ops:  100, sent: map[string]int64{"evalsha": 100},
			after: []map[string]cmdStat{
				stats("evalsha", cmdStat{60, 1500}, "zadd", cmdStat{60, 300}),
				stats("evalsha", cmdStat{55, 3100}),
			},
			wantUs: 40, wantBusiest: 0.75, wantScripts: 100,
		},
		{
			name: "a command the store sent and scripts ran too: the store's share of it",
			ops:  100, sent: map[string]int64{"evalsha": 100, "incr": 100},
			after: []map[string]cmdStat{
				stats("evalsha", cmdStat{110, 1500}, "incr", cmdStat{200, 400}),
				stats("evalsha", cmdStat{5, 100}),
			},
			wantUs: 12, wantBusiest: 1, wantScripts: 100,
		},
		{
			name: "two script calls an operation",
			ops:  50, sent: map[string]int64{"evalsha": 100},
			after: []map[string]cmdStat{
				stats("evalsha", cmdStat{60, 1000}),
				stats("evalsha", cmdStat{55, 600}),
			},
			wantUs: 20, wantBusiest: 0.5, wantScripts: 100,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := attribute("join", tt.ops, tt.sent, before, tt.after)
			require.NoError(t, err)
			assert.InDelta(t, tt.wantUs, p.usPerOp(), 1e-9)
			assert.InDelta(t, tt.wantBusiest, p.busiest(), 1e-9)
			assert.InDelta(t, 1e6/(tt.wantUs*tt.wantBusiest), p.perSec(), 1e-6)
			assert.Equal(t, tt.wantScripts, p.scripts)
		})
	}
}

func TestAttributeRefusesWhatItCannotTrust(t *testing.T) {
	one := func(calls, usec float64) []map[string]cmdStat {
		return []map[string]cmdStat{{"evalsha": {calls, usec}, "wait": {calls, 0}}}
	}
	tests := []struct {
		name       string
		ops        int
		sent       map[string]int64
		after      []map[string]cmdStat
		want       string
		wantShared bool
	}{
		{"no operation", 0, map[string]int64{"evalsha": 100}, one(110, 1500), "no operation", false},
		{"nothing sent", 100, nil, one(110, 1500), "sent no command", false},
		{"no call in commandstats", 100, map[string]int64{"evalsha": 100}, one(10, 500), "no evalsha call on any master", false},
		{"another client's scripts", 100, map[string]int64{"evalsha": 100}, one(111, 1500), "ran 101 evalsha calls, the store sent 100", true},
		{"fewer scripts than sent", 100, map[string]int64{"evalsha": 100}, one(109, 1500), "ran 99 evalsha calls", false},
		{"a counter went back", 100, map[string]int64{"evalsha": 100}, one(5, 2000), "went back", true},
		{"no time at all", 100, map[string]int64{"evalsha": 100}, one(110, 500), "gives no figure", false},
		{"masters differ", 100, map[string]int64{"evalsha": 100}, append(one(110, 1500), one(0, 0)...), "1 masters before, 2 after", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := attribute("join", tt.ops, tt.sent, one(10, 500), tt.after)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, tt.wantShared, errors.Is(err, errShared))
		})
	}
	// Fewer calls of another command than the store sent (rejected ones).
	_, err := attribute("hold", 100, map[string]int64{"evalsha": 100, "wait": 101}, one(10, 500), one(110, 1500))
	require.ErrorContains(t, err, "ran 100 wait calls, the store sent 101")
}

func TestCountedCountsEveryCommandByItsStatsName(t *testing.T) {
	c, _ := dbtest.MiniRedis(t)
	var sent sentCommands
	cc := counted{c, &sent}
	ctx := context.Background()
	cc.Do(ctx, cc.B().Set().Key("k").Value("v").Build())
	cc.DoMulti(ctx, cc.B().Get().Key("k").Build(), cc.B().Get().Key("k").Build(), cc.B().ConfigGet().Parameter("maxmemory").Build())
	require.NoError(t, cc.Dedicated(func(d rueidis.DedicatedClient) error {
		d.Do(ctx, d.B().Incr().Key("n").Build())
		return nil
	}))
	for _, n := range cc.Nodes() {
		n.Do(ctx, n.B().XinfoHelp().Build())
	}
	assert.Equal(t, map[string]int64{"set": 1, "get": 2, "config|get": 1, "incr": 1, "xinfo|help": 1}, sent.take())
	assert.Empty(t, sent.take(), "take starts again from nothing")
}

// checkCapacity holds the figures of one measure to what any layout of a concert gives.
func checkCapacity(t *testing.T, r concertCapacity, fans, masters int) {
	t.Helper()
	assert.Equal(t, masters, r.masters)
	for name, p := range map[string]phaseCost{"floor": r.floor, "join": r.join, "admission": r.admit, "hold": r.hold, "cancel": r.cancel,
		"charge": r.charge, "reserve": r.reserve, "claim": r.claim, "debit": r.debit, "complete": r.complete, "finish": r.finish} {
		assert.Equal(t, fans, p.ops, name)
		assert.Len(t, p.usec, masters, name)
		assert.Positive(t, p.scripts, "%s: every state change is a script call", name)
		f := p.perSec()
		assert.False(t, math.IsInf(f, 0) || math.IsNaN(f) || f <= 0, "%s: %v per second", name, f)
		assert.True(t, p.busiest() >= 1/float64(masters)-1e-9 && p.busiest() <= 1+1e-9, "%s: busiest share %v", name, p.busiest())
	}
	assert.Equal(t, int64(fans), r.floor.scripts, "the floor is one EVALSHA a call")
	// A join's steps go in batches (line_arrive, line_enter): fewer script calls than joins.
	for name, p := range map[string]phaseCost{"hold": r.hold, "cancel": r.cancel, "charge": r.charge,
		"reserve": r.reserve, "claim": r.claim, "debit": r.debit, "complete": r.complete, "finish": r.finish} {
		assert.GreaterOrEqual(t, p.scripts, int64(fans), "%s: at least a script call each", name)
	}
	assert.Greater(t, r.join.usPerOp(), r.floor.usPerOp(), "a join does more than return 1")
	assert.Greater(t, r.hold.usPerOp(), r.floor.usPerOp(), "a hold does more than return 1")
	assert.Equal(t, fans, r.hset.ops)
	assert.Zero(t, r.hset.scripts, "the plain HSET floor runs no script")
	assert.Positive(t, r.hset.total(), "the plain HSET floor is priced")
	assert.Greater(t, r.join.usPerOp(), r.hset.usPerOp(), "a join does more than one HSET")
}

func TestCapacityOfOneConcert(t *testing.T) {
	c := dbtest.Client(t, dbtest.PrivateRedis(t)) // a server of its own: nobody else's commands in its commandstats
	const fans = 300
	r, err := measureCapacity(context.Background(), c, redis.UserLimit{Rate: 20, Burst: 40}, fans, dbtest.Postgres(t))
	require.NoError(t, err)
	checkCapacity(t, r, fans, 1)
	assert.Equal(t, []float64{r.join.total()}, r.join.usec)
	require.NotNil(t, r.wb, "the joins recorded by the write-behind")
	assert.Equal(t, fans, r.wb.joins)
	worker, pg := r.wb.usPerJoin()
	assert.Positive(t, worker, "the worker's CPU")
	assert.Positive(t, pg, "Postgres's CPU")
	assert.InDelta(t, 1e6/r.join.usPerOp(), r.join.perSec(), 1e-6, "on one Redis the capacity is 1e6 / µs per join")
}

// clusterPorts are the first port of this package's private cluster (7300-7305, bus 17300-17305).
const clusterPorts = 7300

func TestCapacityOfOneConcertOnCluster(t *testing.T) {
	// A cluster of the test's own: other tests run on the shared one, and their calls would be counted.
	c := dbtest.Client(t, dbtest.StartPrivateCluster(t, clusterPorts).URL)
	const fans = 300
	r, err := measureCapacity(context.Background(), c, redis.UserLimit{Rate: 20, Burst: 40}, fans, "")
	require.NoError(t, err)
	checkCapacity(t, r, fans, 3)
	assert.Nil(t, r.wb, "the write-behind measured on one Redis only")
}

func TestCapacityRows(t *testing.T) {
	cost := func(ops int, usec ...float64) phaseCost { return phaseCost{ops: ops, scripts: int64(ops), usec: usec} }
	one := concertCapacity{masters: 1, floor: cost(100, 100), join: cost(100, 2000), admit: cost(100, 1000),
		hold: cost(100, 2500), cancel: cost(100, 2000), hset: cost(100, 50)}
	three := concertCapacity{masters: 3, floor: cost(100, 50, 50, 100), join: cost(100, 10, 2490, 0), admit: cost(100, 0, 1000, 0),
		hold: cost(100, 0, 3000, 1000), cancel: cost(100, 0, 2000, 0), hset: cost(100, 30, 30, 30)}
	b := &bench{cfg: config{reps: 3, capacityFans: 3000}, commit: "abc1234",
		results: map[string][]measure{}, na: map[string]string{}, notes: map[string]string{}}
	b.capacityRows(capacityRuns{single: []concertCapacity{one, one}, singleErr: []error{errors.New("boom")},
		cluster: []concertCapacity{three}, clusterAgain: 2}, "", redis.UserLimit{Rate: 20, Burst: 40})
	var buf bytes.Buffer
	b.printCapacity(&buf, 0)
	out := buf.String()
	assert.Contains(t, out, "at commit abc1234")
	for _, tt := range []struct{ row, want string }{
		{rowCapJoins1, "50,000"}, // 1e6 / 20 µs
		{rowCapHolds1, "40,000"}, // 1e6 / 25 µs
		{rowCapJoins3, "40,161"}, // 1e6 / (25 µs × 99.6%)
		{rowCapHolds3, "33,333"}, // 1e6 / (40 µs × 75%)
		{rowFloor, "1,000,000"},
	} {
		line := rowLine(t, out, tt.row)
		assert.Contains(t, line, " "+tt.want+" ", tt.row)
		assert.NotContains(t, line, "%", tt.row)
	}
	assert.Contains(t, out, "capacity joins of one concert, 1 master: one concert of one date, 3,000 fans")
	assert.Contains(t, out, "Redis 20.0 µs per join (20.0× the floor of 1.00 µs; 1.00 script calls each); the tick per admitted fan 10.0 µs (2 of 3 repetitions; the last failure: boom)")
	assert.Contains(t, out, "Redis 40.0 µs per hold (20.0× the floor of 2.00 µs; 1.00 script calls each) summed over the 3 masters, 75.0% of it on the busiest; a cancel 20.0 µs (100.0% on the busiest master)")
	assert.Contains(t, out, "(2 runs thrown away and run again: another client used the cluster meanwhile)")
	assert.Contains(t, out, "Redis 1.00 µs per EVALSHA of 'return 1' and 0.50 µs per plain HSET on the one Redis, 2.00 µs and 0.90 µs on the cluster's masters")

	b = &bench{cfg: config{reps: 3, capacityFans: 3000}, results: map[string][]measure{}, na: map[string]string{}, notes: map[string]string{}}
	b.capacityRows(capacityRuns{single: []concertCapacity{one}}, "scripts/cluster.sh: exit status 1: redis-cli missing", redis.UserLimit{})
	buf.Reset()
	b.printCapacity(&buf, 0)
	assert.Contains(t, rowLine(t, buf.String(), rowCapJoins3), "n/a")
	assert.Contains(t, buf.String(), "capacity holds of one concert, 3 masters: n/a, scripts/cluster.sh: exit status 1: redis-cli missing")
}
