package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// lagSampler reads the service's write-behind lag and backlog from /metrics every second while the
// HTTP runs go on, keeping the highest of each (goal: lag < 1 s over the whole bench).
type lagSampler struct {
	done    chan struct{}
	stopped chan struct{}
	max     map[string]float64 // metric name -> highest value seen
	samples int
}

func startLagSampler(ctx context.Context, a *api) *lagSampler {
	l := &lagSampler{done: make(chan struct{}), stopped: make(chan struct{}), max: map[string]float64{}}
	go func() {
		defer close(l.stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if m, err := a.metrics(ctx); err == nil {
				l.add(m)
			}
		}
	}()
	return l
}

// add keeps the highest of each write-behind lag and backlog series of one sample.
func (l *lagSampler) add(m map[string]float64) {
	l.samples++
	for name, v := range m {
		if !strings.Contains(name, "lag") && !strings.Contains(name, "backlog") {
			continue
		}
		if old, seen := l.max[name]; !seen || v > old {
			l.max[name] = v
		}
	}
}

// stop ends the sampling; it may be called more than once.
func (l *lagSampler) stop() {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	<-l.stopped
}

// lines describes what the sampler saw, one line per metric, the lag's with its goal.
func (l *lagSampler) lines() []string {
	var out []string
	for name, v := range l.max {
		line := fmt.Sprintf("%s: highest %s over %d samples, one a second", name, strconv.FormatFloat(v, 'f', -1, 64), l.samples)
		if name == metricLag {
			line += "  " + verdict(v < 1, "< 1 s")
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}
