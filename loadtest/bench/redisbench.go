package main

import (
	"context"
	"crypto/sha1"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	svcconfig "github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

// holdScript is the hold script, by its name in package lua.
const holdScript = "seat_hold"

// loadScript loads the script name as the service loads it (lua.Source: its includes put in place) with
// SCRIPT LOAD, returning its SHA1.
func loadScript(ctx context.Context, c rueidis.Client, name string) (string, error) {
	src := lua.Source(name)
	sha, err := c.Do(ctx, c.B().ScriptLoad().Script(src).Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("SCRIPT LOAD %s: %w", name, err)
	}
	sum := sha1.Sum([]byte(src))
	if want := hex.EncodeToString(sum[:]); sha != want {
		return "", fmt.Errorf("SCRIPT LOAD %s: sha %s, want %s", name, sha, want)
	}
	return sha, nil
}

// captureCall runs do while the slow log records every command, and returns the arguments of the
// first EVALSHA of sha that do made: the exact KEYS and ARGV the service passes to the script.
func captureCall(ctx context.Context, c rueidis.Client, sha string, do func() error) ([]string, error) {
	old, err := c.Do(ctx, c.B().ConfigGet().Parameter("slowlog-log-slower-than").Build()).AsStrMap()
	if err != nil {
		return nil, err
	}
	restore := old["slowlog-log-slower-than"]
	if restore == "" {
		restore = "10000"
	}
	defer c.Do(context.Background(), c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", restore).Build())
	if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", "0").Build()).Error(); err != nil {
		return nil, err
	}
	if err := c.Do(ctx, c.B().SlowlogReset().Build()).Error(); err != nil {
		return nil, err
	}
	if err := do(); err != nil {
		return nil, err
	}
	entries, err := c.Do(ctx, c.B().SlowlogGet().Count(128).Build()).ToArray()
	if err != nil {
		return nil, err
	}
	seen := 0
	for _, e := range entries {
		fields, err := e.ToArray()
		if err != nil || len(fields) < 4 {
			continue
		}
		args, err := fields[3].AsStrSlice()
		if err != nil || len(args) < 3 || !strings.EqualFold(args[0], "EVALSHA") {
			continue
		}
		if seen++; args[1] != sha {
			continue
		}
		for _, a := range args {
			if strings.HasSuffix(a, "more arguments)") || strings.HasSuffix(a, "more bytes)") {
				return nil, errors.New("the slow log truncated the call (over 32 arguments or 128 bytes each)")
			}
		}
		return args, nil
	}
	return nil, fmt.Errorf("none of the %d EVALSHA calls recorded is of %s as this bench has it (sha %s): is the service built from the same tree?", seen, holdScript, sha)
}

// redisBenchmark runs redis-benchmark with one command line and returns its requests per second and
// latency percentiles from the CSV output.
func redisBenchmark(ctx context.Context, port, clients, requests, pipeline, keyspace int, command []string) (measure, error) {
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-c", strconv.Itoa(clients),
		"-n", strconv.Itoa(requests), "-P", strconv.Itoa(pipeline), "-r", strconv.Itoa(keyspace), "--csv"}
	cmd := exec.CommandContext(ctx, "redis-benchmark", append(args, command...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return measure{}, fmt.Errorf("redis-benchmark: %w: %s %s", err, strings.TrimSpace(stderr.String()), snippet(out))
	}
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) < 2 {
		return measure{}, fmt.Errorf("redis-benchmark: unexpected output %q", out)
	}
	head, row := recs[0], recs[len(recs)-1]
	m := measure{}
	for i, h := range head {
		if i >= len(row) {
			break
		}
		v, _ := strconv.ParseFloat(row[i], 64)
		switch h {
		case "rps":
			m.rate = v
		case "p50_latency_ms":
			m.p50 = time.Duration(v * float64(time.Millisecond))
		case "p99_latency_ms":
			m.p99 = time.Duration(v * float64(time.Millisecond))
		}
	}
	if m.rate == 0 {
		return m, fmt.Errorf("redis-benchmark: no rps in %q", out)
	}
	return m, nil
}

// replyOf runs a command once and describes its reply: "ok" or the error text.
func replyOf(ctx context.Context, c rueidis.Client, command []string) string {
	err := c.Do(ctx, c.B().Arbitrary(command[0]).Args(command[1:]...).Build()).Error()
	if err == nil {
		return "ok"
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		return re.Error()
	}
	return err.Error()
}

// memoryResult is Redis memory per waiting fan.
type memoryResult struct {
	fans                                         int
	idLen                                        int
	perFan, lineOnly                             float64 // bytes per fan with the event stream as the joins left it, and trimmed
	streamLen                                    int64
	placesBytes, orderBytes, aliveBytes, evBytes int64
}

// measureMemory joins fans to one paused concert's line on a private Redis with the service's own
// queue_join script (through the store, whose rueidis client pipelines the concurrent calls), and
// reads INFO memory before and after.
func measureMemory(ctx context.Context, r *privateRedis, fans int) (memoryResult, error) {
	store := redis.NewStore(r.client, svcconfig.KeyPrefix(func(string) string { return "" }), prometheus.NewRegistry())
	q := ticketrush.DefaultQueueSettings()
	q.Paused = true
	c := ticketrush.Concert{ID: ticketrush.NewID(), Title: "memory", Venue: "bench", Queue: q,
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID(), StartsAt: time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)}},
		Sections:  []ticketrush.Section{{Name: "R", Price: 1000, Seats: 1}}}
	if _, err := store.LoadConcert(ctx, c, time.Now()); err != nil {
		return memoryResult{}, err
	}
	before, err := r.usedMemory(ctx)
	if err != nil {
		return memoryResult{}, err
	}
	const workers = 256
	user := func(i int) string { return fmt.Sprintf("fan-%08d", i) }
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < fans && ctx.Err() == nil; i += workers {
				if _, err := store.Line.Join(ctx, c.ID, user(i), time.Now()); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return memoryResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return memoryResult{}, err
	}
	k := store.Keys().Concert(c.ID)
	do := func(cmd rueidis.Completed) (int64, error) { return r.client.Do(ctx, cmd).AsInt64() }
	res := memoryResult{fans: fans, idLen: len(user(0))}
	if n, err := do(r.client.B().Hlen().Key(k.Places()).Build()); err != nil || int(n) != fans {
		return res, fmt.Errorf("the line holds %d fans after %d joins (err %v)", n, fans, err)
	}
	after, err := r.usedMemory(ctx)
	if err != nil {
		return res, err
	}
	res.streamLen, _ = do(r.client.B().Xlen().Key(k.Events()).Build())
	res.placesBytes, _ = do(r.client.B().MemoryUsage().Key(k.Places()).Samples(0).Build())
	res.orderBytes, _ = do(r.client.B().MemoryUsage().Key(k.Order()).Samples(0).Build())
	res.aliveBytes, _ = do(r.client.B().MemoryUsage().Key(k.Seen()).Samples(0).Build())
	res.evBytes, _ = do(r.client.B().MemoryUsage().Key(k.Events()).Samples(0).Build())
	if _, err := do(r.client.B().Xtrim().Key(k.Events()).Maxlen().Threshold("0").Build()); err != nil {
		return res, err
	}
	trimmed, err := r.usedMemory(ctx)
	if err != nil {
		return res, err
	}
	res.perFan = float64(after-before) / float64(fans)
	res.lineOnly = float64(trimmed-before) / float64(fans)
	return res, nil
}

// rbFans is how many synthetic ACTIVE fans the redis-benchmark replay spreads its holds over; it is
// redis-benchmark's -r, the range of __rand_int__.
const rbFans = 100_000

// redisBenchmark measures the hold script alone with redis-benchmark on the service's Redis. It needs
// a call that succeeds every time (redis-benchmark stops at the first error reply), so it:
//   - captures the exact EVALSHA the service makes for one real hold (slow log at 0 µs), on a concert
//     of its own whose fans may hold 100 seats each;
//   - turns the captured call into a template: the user becomes rbfan-__rand_int__, the seat and the
//     reservation id random strings of three __rand_int__ each (no two calls share them);
//   - makes rbFans synthetic fans ACTIVE in that concert with the captured fan's arrival sequence
//     (admitSynthetic: the scripts would give each its own), so that every replayed call passes
//     the queue check, finds its seat free and its fan under the limit: the script's winning path.
//
// Where that cannot be done (no purchase path to capture from, a script whose
// checks refuse the template) the row says why.
func (b *bench) captureHold(ctx context.Context) error {
	if !b.purchase {
		b.na[rowRedis] = "no hold served to capture its KEYS and ARGV (" + b.na[rowSpread] + ")"
		return nil
	}
	c := b.redis.client
	sha, err := loadScript(ctx, c, holdScript)
	if err != nil {
		b.na[rowRedis] = err.Error()
		return nil
	}
	q := purchaseQueue
	q.MaxHoldsPerUser = 100
	con, err := b.api.createConcert(ctx, "bench redis-benchmark", 1, []section{{Name: "R", Price: 1000, Seats: 1}}, q)
	if err != nil {
		return err
	}
	fans, err := b.admittedFans(ctx, con.ID, "rbcapture", 1)
	if err != nil {
		return err
	}
	f := fans[0]
	var resID string
	call, err := captureCall(ctx, c, sha, func() error {
		req, err := b.api.newRequest(http.MethodPost, "/v1/reservations", f.jwt, f.token,
			[]byte(`{"scheduleId":"`+con.Schedules[0].ID+`","seatId":"R-1"}`))
		if err != nil {
			return err
		}
		resp, err := b.api.client.Do(req.WithContext(ctx))
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("capture hold: %d %s", resp.StatusCode, snippet(body))
		}
		resID = jsonString(body, "id")
		return nil
	})
	if err != nil {
		b.na[rowRedis] = "capturing a hold: " + err.Error()
		return nil
	}
	const r3 = "__rand_int____rand_int____rand_int__"
	template, found := make([]string, len(call)), map[string]bool{}
	for i, a := range call {
		switch {
		case i < 2:
			template[i] = a
		case a == f.user:
			template[i], found["user"] = "rbfan-__rand_int__", true
		case a == "R-1":
			template[i], found["seat"] = "R-"+r3, true
		case a == resID:
			template[i], found["reservation id"] = "rb"+r3, true
		default:
			template[i] = strings.ReplaceAll(a, f.user, "rbfan-__rand_int__")
		}
	}
	for _, what := range []string{"user", "seat", "reservation id"} {
		if !found[what] {
			b.na[rowRedis] = "the captured hold call has no argument equal to its " + what
			return nil
		}
	}

	// The service's key prefix: REDIS_KEY_PREFIX, which it inherits from the bench, or its default.
	prefix := svcconfig.KeyPrefix(func(name string) string { return b.env(name, "") })
	seq, err := redis.NewInspector(c, prefix).ActiveSeq(ctx, con.ID, f.user)
	if err != nil {
		b.na[rowRedis] = "reading the captured fan's arrival sequence: " + err.Error()
		return nil
	}
	b.hold = &holdReplay{template: template, keys: redis.NewKeys(prefix).Concert(con.ID), seq: seq}
	return nil
}

// holdReplay is the captured hold call made into a redis-benchmark command.
type holdReplay struct {
	template []string
	keys     redis.ConcertKeys
	seq      uint64 // the arrival sequence every synthetic fan gets
}

// replayHold runs redis-benchmark on the captured call. The service is stopped by then, so that its
// write-behind does not chase the replayed holds and the CPUs are Redis's and redis-benchmark's.
func (b *bench) replayHold(ctx context.Context) error {
	if b.hold == nil {
		return nil
	}
	c := b.redis.client
	keys, seq, template := b.hold.keys, b.hold.seq, b.hold.template
	// The synthetic fans: ACTIVE with the captured fan's sequence, as queue_join leaves an admitted fan.
	users := make([]string, rbFans)
	for i := range users {
		users[i] = fmt.Sprintf("rbfan-%012d", i)
	}
	if err := admitSynthetic(ctx, c, keys, users, seq, time.Now().Add(24*time.Hour)); err != nil {
		return fmt.Errorf("synthetic fans: %w", err)
	}
	fmt.Fprintln(os.Stderr, "bench: redis-benchmark of the hold script")
	probe := strings.ReplaceAll(strings.Join(template, "\x00"), "__rand_int__", "000000000001")
	if reply := replyOf(ctx, c, strings.Split(probe, "\x00")); reply != "ok" {
		b.na[rowRedis] = "the replayed hold is refused (" + reply + "): the template needs updating in loadtest/bench/redisbench.go"
		return nil
	}
	for range b.cfg.reps {
		_ = c.Do(ctx, c.B().ConfigResetstat().Build()).Error()
		m, err := redisBenchmark(ctx, b.redis.port, b.cfg.rbClients, b.cfg.rbRequests, b.cfg.rbPipeline, rbFans, template)
		if err != nil {
			b.na[rowRedis] = err.Error()
			b.results[rowRedis] = nil
			return nil
		}
		m.note = fmt.Sprintf("-c %d -P %d -r %d: the service's own hold call replayed, each on a free seat by a fan under the limit (winning path)",
			b.cfg.rbClients, b.cfg.rbPipeline, rbFans)
		m.usPerCall = usecPerCall(ctx, c, "evalsha")
		b.results[rowRedis] = append(b.results[rowRedis], m)
	}
	return nil
}

// usecPerCall reads usec_per_call of a command from INFO commandstats.
func usecPerCall(ctx context.Context, c rueidis.Client, command string) float64 {
	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(commandStats(info, "usec_per_call")[command], 64)
	return f
}

// admitSynthetic makes users ACTIVE in a concert until until, each with the token of arrival seq,
// written as queue_join and queue_tick leave an admitted fan (the aseq hash and the active zset) but
// without a line, a pipeline per 1000 users: the benchmark's synthetic fans, which replay one captured
// hold call and so must share its arrival sequence (the scripts give every fan one of their own).
func admitSynthetic(ctx context.Context, rdb rueidis.Client, k redis.ConcertKeys, users []string, seq uint64, until time.Time) error {
	score, arrival := float64(until.UnixMilli()), strconv.FormatUint(seq, 10)
	for lo := 0; lo < len(users); lo += 1000 {
		batch := users[lo:min(lo+1000, len(users))]
		cmds := make(rueidis.Commands, 0, 2*len(batch))
		for _, user := range batch {
			cmds = append(cmds, rdb.B().Hset().Key(k.ActiveSeq()).FieldValue().FieldValue(user, arrival).Build(),
				rdb.B().Zadd().Key(k.Active()).ScoreMember().ScoreMember(score, user).Build())
		}
		for _, res := range rdb.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return err
			}
		}
	}
	return nil
}
