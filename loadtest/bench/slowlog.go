package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/lua"
)

// Redis time per call under load: Redis's SLOWLOG at a threshold of 0 µs records every command with
// its own execution time, the client's address and name. A script's entry is the whole call; the
// commands the script ran are recorded too, under their own names and the Lua client's address (?:0),
// so only the top-level script calls count, and the floor's plain HSET counts only from the side
// client, which has a name of its own.

// slowEntry is one SLOWLOG entry.
type slowEntry struct {
	id     int64
	micros int64    // the command's execution time
	args   []string // the command and its first arguments (SLOWLOG keeps 32, each cut at 128 bytes)
	addr   string   // the client's address; ?:0 for a command a script ran
	name   string   // the client's name (CLIENT SETNAME)
}

// slowEntries reads the reply of SLOWLOG GET: entries of {id, timestamp, µs, args, addr, name}.
func slowEntries(msgs []rueidis.RedisMessage) ([]slowEntry, error) {
	out := make([]slowEntry, 0, len(msgs))
	for i, m := range msgs {
		f, err := m.ToArray()
		if err != nil || len(f) != 6 {
			return nil, fmt.Errorf("SLOWLOG entry %d: want 6 fields, got %d (%v)", i, len(f), err)
		}
		var e slowEntry
		var errs [5]error
		e.id, errs[0] = f[0].AsInt64()
		e.micros, errs[1] = f[2].AsInt64()
		e.args, errs[2] = f[3].AsStrSlice()
		e.addr, errs[3] = f[4].ToString()
		e.name, errs[4] = f[5].ToString()
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("SLOWLOG entry %d: %w", i, err)
		}
		if len(e.args) == 0 {
			return nil, fmt.Errorf("SLOWLOG entry %d has no command", i)
		}
		out = append(out, e)
	}
	return out, nil
}

// Labels of the calls that are not scripts of lua/.
const (
	labelFloorEval = "EVALSHA 'return 1'"
	labelFloorHSET = "HSET"
)

// tickScripts are the scripts of an admission tick: queue_tick on a line of one slot, the line_* steps
// on a sharded line.
var tickScripts = map[string]bool{"queue_tick": true, "line_heads": true, "line_admit": true, "line_pop": true}

// scriptSHAs maps the SHA1 of every embedded script to its name: what EVALSHA sends, as internal/redis
// loads each script from lua.Source unchanged.
func scriptSHAs() map[string]string {
	out := map[string]string{}
	for _, name := range lua.Names() {
		out[sha1Hex(lua.Source(name))] = name
	}
	return out
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// callTally gathers the SLOWLOG entries of a storm: each script's calls by label, the ticks of one
// concert, and the side client's floor calls.
type callTally struct {
	shas      map[string]string // SHA1 -> script name
	floorSHA  string            // of floorScript
	side      string            // the side client's name
	tickKey   string            // a key every tick of the storm's line passes (its cfg)
	micros    map[string][]int64
	tickUs    int64 // the line's ticks, summed
	ticks     int
	otherTick int // ticks of other concerts, left out
	evals     int // EVAL calls: a script Redis did not have loaded, sent whole
	unknown   int // EVALSHA of a SHA no embedded script has
}

func newCallTally(shas map[string]string, side, tickKey string) *callTally {
	return &callTally{shas: shas, floorSHA: sha1Hex(floorScript), side: side, tickKey: tickKey, micros: map[string][]int64{}}
}

// add counts one entry. The side client's floor calls are the floor; of everyone else's, only script
// calls count (a script cannot call EVAL or EVALSHA, so each was sent by a client), by script name;
// payment_remember by its step too (reserve and finish are two steps of a payment).
func (t *callTally) add(e slowEntry) {
	cmd := strings.ToLower(e.args[0])
	if e.name == t.side {
		switch {
		case cmd == "hset":
			t.micros[labelFloorHSET] = append(t.micros[labelFloorHSET], e.micros)
		case cmd == "evalsha" && len(e.args) > 1 && e.args[1] == t.floorSHA:
			t.micros[labelFloorEval] = append(t.micros[labelFloorEval], e.micros)
		}
		return
	}
	switch cmd {
	case "eval", "eval_ro":
		t.evals++
		return
	case "evalsha", "evalsha_ro":
	default:
		return
	}
	if len(e.args) < 2 {
		return
	}
	name, ok := t.shas[strings.ToLower(e.args[1])]
	if !ok {
		t.unknown++
		return
	}
	if tickScripts[name] {
		if slices.Contains(e.args[2:], t.tickKey) {
			t.tickUs += e.micros
			t.ticks++
		} else {
			t.otherTick++
		}
		return
	}
	label := name
	if name == "payment_remember" && len(e.args) > 2 {
		label += " " + e.args[len(e.args)-1] // ARGV[8], the step
	}
	t.micros[label] = append(t.micros[label], e.micros)
}

// medianMicros is the median of v (the mean of the two middle values of an even count).
func medianMicros(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return float64(s[len(s)/2])
	}
	return float64(s[len(s)/2-1]+s[len(s)/2]) / 2
}

// slowlog records every command of one Redis while it runs: the threshold at 0 µs and a list long
// enough for the entries between two drains, the old settings restored by restore.
type slowlog struct {
	c       rueidis.Client
	maxLen  int
	restore func()
}

// startSlowlog sets the slow log to record every command, keeping up to maxLen entries.
func startSlowlog(ctx context.Context, c rueidis.Client, maxLen int) (*slowlog, error) {
	old := map[string]string{}
	for _, p := range []string{"slowlog-log-slower-than", "slowlog-max-len"} {
		m, err := c.Do(ctx, c.B().ConfigGet().Parameter(p).Build()).AsStrMap()
		if err != nil || m[p] == "" {
			return nil, fmt.Errorf("CONFIG GET %s: %v", p, err)
		}
		old[p] = m[p]
	}
	s := &slowlog{c: c, maxLen: maxLen, restore: func() {
		for p, v := range old {
			c.Do(context.Background(), c.B().ConfigSet().ParameterValue().ParameterValue(p, v).Build())
		}
		c.Do(context.Background(), c.B().SlowlogReset().Build()) // the entries' memory back
	}}
	err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-max-len", strconv.Itoa(maxLen)).
		ParameterValue("slowlog-log-slower-than", "0").Build()).Error()
	if err != nil {
		s.restore()
		return nil, fmt.Errorf("CONFIG SET slowlog: %w", err)
	}
	return s, nil
}

// drain takes every entry recorded so far and empties the log, in one transaction so that no entry
// falls between the read and the reset; key's value is read in the same transaction (what the
// entries up to that moment did to it). A log found full may have dropped its oldest entries: an error.
func (s *slowlog) drain(ctx context.Context, key string) (entries []slowEntry, value string, err error) {
	err = s.c.Dedicated(func(d rueidis.DedicatedClient) error {
		res := d.DoMulti(ctx, d.B().Multi().Build(), d.B().Get().Key(key).Build(), d.B().SlowlogGet().Count(-1).Build(),
			d.B().SlowlogReset().Build(), d.B().Exec().Build())
		replies, err := res[len(res)-1].ToArray()
		if err != nil || len(replies) != 3 {
			return fmt.Errorf("MULTI GET, SLOWLOG GET, SLOWLOG RESET: %d replies (%v)", len(replies), err)
		}
		if value, err = replies[0].ToString(); err != nil && !rueidis.IsRedisNil(err) {
			return fmt.Errorf("GET %s: %w", key, err)
		}
		msgs, err := replies[1].ToArray()
		if err != nil {
			return fmt.Errorf("SLOWLOG GET: %w", err)
		}
		if len(msgs) >= s.maxLen {
			return fmt.Errorf("the slow log filled up (%d entries between two reads): raise its length or drain it more often", len(msgs))
		}
		entries, err = slowEntries(msgs)
		return err
	})
	return entries, value, err
}
