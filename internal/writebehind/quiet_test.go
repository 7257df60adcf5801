package writebehind

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
)

// counting counts the commands a client sends (dbtest.Watched), by name, and the streams XREADGROUP
// read (the test reads them here, not from the worker, whose own state its goroutine changes).
type counting struct {
	mu   sync.Mutex
	n    map[string]int
	read map[string]bool
}

func (c *counting) see(words []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := strings.ToLower(words[0])
	if len(words) > 1 && (name == "xinfo" || name == "xgroup") {
		name += " " + strings.ToLower(words[1])
	}
	c.n[name]++
	if name == "xreadgroup" { // the streams it reads: one command may read many (read.go)
		for i, word := range words {
			if strings.EqualFold(word, "streams") {
				keys := words[i+1 : i+1+(len(words)-i-1)/2]
				c.n["xreadgroup streams"] += len(keys)
				for _, k := range keys {
					c.read[k] = true
				}
			}
		}
	}
}

// streams is how many streams XREADGROUP has read so far.
func (c *counting) streams() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.read)
}

func (c *counting) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// TestQuietWorkerMeasuresRarely: a worker with nothing to do goes quiet: over 30 of its read rounds (each
// a stats period long) it neither measures its streams (XINFO GROUPS) nor looks for pending entries
// (XAUTOCLAIM), where it did both every period while there was work; on a single Redis each round reads
// its idle streams in one XREADGROUP. The first event is written as any other and ends the quiet (the
// worker measures again).
func TestQuietWorkerMeasuresRarely(t *testing.T) {
	t.Parallel()
	s := sharedSale(t)
	c := &counting{n: map[string]int{}, read: map[string]bool{}}
	const period = 20 * time.Millisecond
	w := New(dbtest.Watched(s.rdb, c.see), s.db, s.prefix, s.cat.IDs, Config{StatsEvery: period, QuietEvery: time.Hour, ClaimEvery: period,
		Idle: period, IdleMax: period}, time.Now, s.log, prometheus.NewRegistry())
	run(t, w)
	eventually(t, 10*time.Second, "the worker measures and claims", func() bool {
		return c.get("xinfo groups") > 0 && c.get("xautoclaim") > 0
	})
	eventually(t, 10*time.Second, "the worker goes quiet", w.isQuiet)

	measured, claimed, reads, cmds := c.get("xinfo groups"), c.get("xautoclaim"), c.get("xreadgroup streams"), c.get("xreadgroup")
	streams := c.streams() // quiet, the worker reads each of its streams every round
	require.Positive(t, streams)
	eventually(t, 30*time.Second, "30 more read rounds", func() bool { return c.get("xreadgroup streams") >= reads+30*streams })
	if s.rdb.Mode() != rueidis.ClientModeCluster {
		rounds := (c.get("xreadgroup streams") - reads) / streams
		assert.LessOrEqual(t, c.get("xreadgroup")-cmds, rounds+1, "on a single Redis, one XREADGROUP a round for %d idle streams", streams)
	}
	assert.Equal(t, measured, c.get("xinfo groups"), "no measure while quiet")
	assert.Equal(t, claimed, c.get("xautoclaim"), "no claim while quiet")
	assert.True(t, w.isQuiet())

	_, _, err := s.booking.Charge(context.Background(), "alice", 100, "")
	require.NoError(t, err)
	s.drain(10 * time.Second)
	eventually(t, 10*time.Second, "the charge ends the quiet: the worker measures again", func() bool {
		return c.get("xinfo groups") > measured
	})
}
