package writebehind

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/ticketrush/ticketrush/internal/redis"
)

// TestKeepSources: an unlisted concert's stream is dropped only once its last read found nothing new and
// no read has found anything for keepYielding; a listed one, a wallet shard, one still yielding and one
// whose last read found entries (its writers wait, as in a Postgres outage) are kept, as is one whose
// last read found nothing but long ago (the reader waited for its writers through an outage meanwhile).
func TestKeepSources(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	w := &Worker{now: func() time.Time { return now }, sources: map[string]*source{}, grouped: map[string]bool{},
		cfg: DefaultConfig()}
	readAgo := 100 * time.Millisecond // the previous round's read
	add := func(concert string, shard int, drained bool, yieldedAgo time.Duration) {
		s := &source{EventSource: redis.EventSource{Stream: "s:" + concert, ConcertID: concert, Shard: shard}, drained: drained, yielded: now.Add(-yieldedAgo),
			readAt: now.Add(-readAgo)}
		if concert == "" {
			s.Stream = "shard"
		}
		w.sources[s.Stream], w.grouped[s.Stream] = s, true
		w.order = append(w.order, s)
	}
	add("", 3, true, time.Hour)                             // a wallet shard: always read
	add("listed", 0, true, time.Hour)                       // its concert is awake
	add("asleep", 0, true, keepYielding)                    // drained, quiet for keepYielding: dropped
	add("unread", 0, false, time.Hour)                      // its last read found entries: kept
	add("yielding", 0, true, keepYielding-time.Millisecond) // found entries a moment ago: kept
	readAgo = 30 * time.Second
	add("stale", 0, true, time.Minute) // found nothing, but 30 s ago: kept until a fresh read
	w.keepSources(map[string]bool{"listed": true})

	var kept []string
	for _, s := range w.order {
		kept = append(kept, s.Stream)
	}
	assert.Equal(t, []string{"shard", "s:listed", "s:unread", "s:yielding", "s:stale"}, kept)
	assert.NotContains(t, w.sources, "s:asleep", "listed again, its stream is added again")
	assert.NotContains(t, w.grouped, "s:asleep")
	assert.Len(t, w.sources, 5)

	// A fresh read of the stale stream that finds nothing lets it go.
	w.sources["s:stale"].readAt = now
	w.keepSources(map[string]bool{"listed": true})
	assert.NotContains(t, w.sources, "s:stale")
	assert.Len(t, w.sources, 4)
}

// TestStreamKeepsItsWriter: a stream dropped and read again goes to the writer it had, which may still
// hold its earlier batches (behind a slow Postgres): its events still commit in the order read.
func TestStreamKeepsItsWriter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	w := New(nil, nil, "tr", func() []string { return nil }, Config{Writers: 2}, func() time.Time { return now },
		nil, prometheus.NewRegistry())
	for _, id := range []string{"a", "b", "c"} {
		w.addSource(&source{EventSource: redis.EventSource{Stream: "s:" + id, ConcertID: id}, drained: true, readAt: now, yielded: now.Add(-time.Hour)})
	}
	before := w.sources["s:b"].writer
	w.keepSources(map[string]bool{"a": true, "c": true})
	assert.NotContains(t, w.sources, "s:b")
	w.addSource(&source{EventSource: redis.EventSource{Stream: "s:b", ConcertID: "b"}})
	w.addSource(&source{EventSource: redis.EventSource{Stream: "s:d", ConcertID: "d"}})
	assert.Equal(t, before%2, w.sources["s:b"].writer%2, "b writes with its earlier writer")
	assert.NotEqual(t, w.sources["s:c"].writer%2, w.sources["s:d"].writer%2, "new streams still take the writers in turn")
}
