package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

// script is one Lua script with its metrics.
type script struct {
	name     string
	src      string
	lua      *rueidis.Lua
	sha      string // for pipelining EVALSHA with other commands
	readOnly bool
	// calls and duration are the script's own series, looked up once (WithLabelValues hashes the label
	// on every call).
	calls    prometheus.Counter
	duration prometheus.Observer
}

// observe counts one call of sc that took since start.
func (sc *script) observe(start time.Time) {
	sc.duration.Observe(time.Since(start).Seconds())
	sc.calls.Inc()
}

// scriptMetrics counts every script call, its latency and its error replies by code.
type scriptMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	// unreplicated counts writes taken by a master that had no replica to wait for (replicas.go).
	unreplicated *prometheus.CounterVec
}

func newScriptMetrics(reg prometheus.Registerer) *scriptMetrics {
	m := &scriptMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_redis_script_calls_total",
			Help: "Lua script calls by script.",
		}, []string{"script"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketrush_redis_script_duration_seconds",
			Help:    "Lua script call latency, round trip included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"script"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_redis_script_errors_total",
			Help: "Lua script error replies by script and code; code is IO for a failed round trip.",
		}, []string{"script", "code"}),
	}
	m.unreplicated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketrush_redis_unreplicated_writes_total",
		Help: "Writes of the replicated steps taken by a master with no replica connected, by script.",
	}, []string{"script"})
	reg.MustRegister(m.calls, m.duration, m.errors, m.unreplicated)
	return m
}

func (s *core) newScript(name string, readOnly bool) *script {
	src, planted := s.sources[name]
	if !planted {
		src = lua.Source(name)
	}
	sum := sha1.Sum([]byte(src))
	sc := &script{name: name, src: src, lua: rueidis.NewLuaScript(src), sha: hex.EncodeToString(sum[:]), readOnly: readOnly}
	if readOnly {
		sc.lua = rueidis.NewLuaScriptReadOnly(src)
	}
	// Touching the label sets also shows every script in /metrics from the start.
	sc.calls = s.metrics.calls.WithLabelValues(name)
	sc.duration = s.metrics.duration.WithLabelValues(name)
	if replicatedScripts[name] { // at 0 on a single Redis too: the Redis scripts dashboard plots it
		s.metrics.unreplicated.WithLabelValues(name)
	}
	return sc
}

// exec runs sc by EVALSHA (falling back to EVAL) and maps error replies to domain errors.
func (s *core) exec(ctx context.Context, sc *script, keys, args []string) (rueidis.RedisMessage, error) {
	if s.replicaWait > 0 && replicatedScripts[sc.name] {
		return s.execReplicated(ctx, sc, keys, args)
	}
	return s.execPlain(ctx, sc, keys, args)
}

func (s *core) execPlain(ctx context.Context, sc *script, keys, args []string) (rueidis.RedisMessage, error) {
	start := time.Now()
	res := sc.lua.Exec(ctx, s.client, keys, args)
	sc.observe(start)
	msg, err := res.ToMessage()
	if err != nil {
		return msg, s.scriptError(sc, err)
	}
	return msg, nil
}

// scriptError maps the error of one of sc's calls (mapError) and counts it by code.
func (s *core) scriptError(sc *script, err error) error {
	code, mapped := mapError(err)
	s.metrics.errors.WithLabelValues(sc.name, code).Inc()
	return mapped
}

// evalsha builds sc's EVALSHA command, for a pipeline.
func (s *core) evalsha(sc *script, keys, args []string) rueidis.Completed {
	if sc.readOnly {
		return s.client.B().EvalshaRo().Sha1(sc.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return s.client.B().Evalsha().Sha1(sc.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// execWith runs sc and then cmds in one round trip (one pipeline, over the slots the commands name),
// and returns sc's reply and the replies of cmds. When Redis does not know the script yet (after a
// restart), it falls back to separate round trips, which also load it. cmds build the commands: rueidis
// commands are single-use, and the fallback sends them again.
func (s *core) execWith(ctx context.Context, sc *script, keys, args []string, cmds ...func() rueidis.Completed) (rueidis.RedisMessage, []rueidis.RedisResult, error) {
	start := time.Now()
	all := rueidis.Commands{s.evalsha(sc, keys, args)}
	for _, c := range cmds {
		all = append(all, c())
	}
	res := s.client.DoMulti(ctx, all...)
	if isNoScript(res[0].Error()) {
		msg, err := s.exec(ctx, sc, keys, args)
		again := make([]rueidis.Completed, len(cmds))
		for i, c := range cmds {
			again[i] = c()
		}
		return msg, s.client.DoMulti(ctx, again...), err
	}
	sc.observe(start)
	msg, err := res[0].ToMessage()
	if err != nil {
		return msg, res[1:], s.scriptError(sc, err)
	}
	return msg, res[1:], nil
}

// unavailable maps the error of a plain command (not a script's reply) as mapError does: a failed
// round trip is ErrUnavailable, so that a request answers 503.
func unavailable(err error) error {
	_, mapped := mapError(err)
	return mapped
}

// mapError turns a script's error reply, a code of the error table (ticketrush.Codes), into that
// code's domain error, and anything else (a dead connection, a timeout) into ErrUnavailable. It returns
// the code for the error metric.
func mapError(err error) (string, error) {
	if rerr, ok := errors.AsType[*rueidis.RedisError](err); ok {
		msg := rerr.Error()
		code, _, _ := strings.Cut(msg, " ")
		if e, ok := ticketrush.ErrorOf(ticketrush.Code(code)); ok {
			return code, e
		}
		return "REDIS", errors.Join(ticketrush.ErrUnavailable, err)
	}
	if errors.Is(err, context.Canceled) {
		return "CANCELED", err
	}
	return "IO", errors.Join(ticketrush.ErrUnavailable, err)
}

func isNil(err error) bool { return rueidis.IsRedisNil(err) }

func isNoScript(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && rerr.IsNoScript()
}
