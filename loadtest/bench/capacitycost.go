package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"
)

// What a phase of a storm cost Redis: INFO commandstats of every master, read around it, and the
// commands the store sent in it.

// phaseCost is what one phase of the storm cost Redis: the time of the commands the store sent in it,
// on each master, from INFO commandstats.
type phaseCost struct {
	ops     int       // joins, admitted fans, holds, cancels, floor calls
	scripts int64     // script calls the store sent (EVALSHA, EVAL and the like)
	usec    []float64 // on each master
}

func (p phaseCost) total() float64 {
	t := 0.0
	for _, u := range p.usec {
		t += u
	}
	return t
}

// usPerOp is Redis's time per operation, summed over the masters.
func (p phaseCost) usPerOp() float64 { return p.total() / float64(p.ops) }

// busiest is the share of the phase's Redis time that its busiest master carried.
func (p phaseCost) busiest() float64 { return slices.Max(p.usec) / p.total() }

// perSec is how many operations a second the busiest master's one thread can take:
// 1e6 / (µs per operation × the busiest master's share).
func (p phaseCost) perSec() float64 { return 1e6 / (p.usPerOp() * p.busiest()) }

// busiestUs is the busiest master's Redis µs per operation: what bounds the rate (perSec is 1e6 / it).
func (p phaseCost) busiestUs() float64 { return slices.Max(p.usec) / float64(p.ops) }

// cmdStat is one command's line of INFO commandstats.
type cmdStat struct{ calls, usec float64 }

// scriptCommands are the commands that run a script. A script cannot call them, so each call Redis
// counts was sent by a client.
var scriptCommands = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true}

// errShared is a phase whose commandstats another client changed: its figures would count that
// client's work. The measure is worth running again.
var errShared = errors.New("another client used these masters meanwhile")

// attribute prices a phase from INFO commandstats of every master read before and after it: the time
// of the commands the store sent in the phase (sent: calls by commandstats name), by master. Redis
// counts the commands a script runs under their own names as well as within the script call's time,
// so only the names the store sent count, and of a name that scripts run too, the share of its calls
// that the store sent. It fails where the figures cannot be trusted: a phase without operations, a
// name the masters show no call of, a counter that went back (CONFIG RESETSTAT meanwhile), script
// calls the store did not send (another client's, which would be counted), no time at all; the
// failures that another client caused are errShared.
func attribute(name string, ops int, sent map[string]int64, before, after []map[string]cmdStat) (phaseCost, error) {
	switch {
	case ops <= 0:
		return phaseCost{}, fmt.Errorf("%s: no operation to price", name)
	case len(sent) == 0:
		return phaseCost{}, fmt.Errorf("%s: the store sent no command", name)
	case len(before) == 0 || len(before) != len(after):
		return phaseCost{}, fmt.Errorf("%s: commandstats of %d masters before, %d after", name, len(before), len(after))
	}
	p := phaseCost{ops: ops, usec: make([]float64, len(before))}
	for _, cmd := range slices.Sorted(maps.Keys(sent)) {
		n := float64(sent[cmd])
		calls, delta := 0.0, make([]cmdStat, len(before))
		for m := range before {
			d := cmdStat{after[m][cmd].calls - before[m][cmd].calls, after[m][cmd].usec - before[m][cmd].usec}
			if d.calls < 0 || d.usec < 0 {
				return phaseCost{}, fmt.Errorf("%s: INFO commandstats of master %d went back for %s (CONFIG RESETSTAT): %w", name, m+1, cmd, errShared)
			}
			delta[m], calls = d, calls+d.calls
		}
		switch {
		case calls == 0:
			return phaseCost{}, fmt.Errorf("%s: INFO commandstats shows no %s call on any master; the store sent %.0f", name, cmd, n)
		case calls < n:
			return phaseCost{}, fmt.Errorf("%s: the masters ran %.0f %s calls, the store sent %.0f", name, calls, cmd, n)
		case scriptCommands[cmd] && calls > n:
			return phaseCost{}, fmt.Errorf("%s: the masters ran %.0f %s calls, the store sent %.0f: %w", name, calls, cmd, n, errShared)
		}
		if scriptCommands[cmd] {
			p.scripts += sent[cmd]
		}
		for m, d := range delta {
			p.usec[m] += d.usec * n / calls
		}
	}
	if f := p.perSec(); !(p.total() > 0) || math.IsInf(f, 0) || math.IsNaN(f) {
		return phaseCost{}, fmt.Errorf("%s: %.0f µs of Redis time for %d operations gives no figure", name, p.total(), ops)
	}
	return p, nil
}

// readCommandStats reads INFO commandstats of each master.
func readCommandStats(ctx context.Context, masters []rueidis.Client) ([]map[string]cmdStat, error) {
	out := make([]map[string]cmdStat, len(masters))
	for i, m := range masters {
		info, err := m.Do(ctx, m.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			return nil, fmt.Errorf("INFO commandstats: %w", err)
		}
		usec := commandStats(info, "usec")
		out[i] = map[string]cmdStat{}
		for cmd, v := range commandStats(info, "calls") {
			calls, err1 := strconv.ParseFloat(v, 64)
			us, err2 := strconv.ParseFloat(usec[cmd], 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("INFO commandstats, %s: %w", cmd, err)
			}
			out[i][cmd] = cmdStat{calls: calls, usec: us}
		}
	}
	return out, nil
}

// sentCommands counts the commands a client sent, by their INFO commandstats name.
type sentCommands struct {
	mu sync.Mutex
	n  map[string]int64
}

// containerCommands are the commands whose subcommands INFO commandstats counts apart ("config|get").
var containerCommands = map[string]bool{"acl": true, "client": true, "cluster": true, "command": true, "config": true,
	"function": true, "latency": true, "memory": true, "module": true, "object": true, "pubsub": true, "script": true,
	"slowlog": true, "xgroup": true, "xinfo": true}

func (s *sentCommands) add(cmds ...[]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	for _, c := range cmds {
		if len(c) == 0 {
			continue
		}
		name := strings.ToLower(c[0])
		if containerCommands[name] && len(c) > 1 {
			name += "|" + strings.ToLower(c[1])
		}
		s.n[name]++
	}
}

// take returns the counts so far and starts again from nothing.
func (s *sentCommands) take() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = nil
	return n
}
