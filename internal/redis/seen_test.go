package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// seenOf reads the liveness of arrival seq out of concertID's seen string: the time of its field (zero
// if it has none), counted from seenbase as the scripts count.
func seenOf(t *testing.T, c rueidis.Client, s *Store, concertID string, seq uint64) time.Time {
	t.Helper()
	ctx := context.Background()
	k := s.keys.Concert(concertID)
	base, err := c.Do(ctx, c.B().Hget().Key(k.Cfg()).Field("seenbase").Build()).AsUint64()
	if rueidis.IsRedisNil(err) {
		base, err = 0, nil
	}
	require.NoError(t, err)
	if seq <= base {
		return time.Time{}
	}
	at := int64(seq-base-1) * 6
	b, err := c.Do(ctx, c.B().Getrange().Key(k.Seen()).Start(at).End(at+5).Build()).ToString()
	require.NoError(t, err)
	if len(b) < 6 {
		return time.Time{}
	}
	var ms int64
	for _, x := range []byte(b) {
		ms = ms<<8 | int64(x)
	}
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func seenLen(t *testing.T, c rueidis.Client, s *Store, concertID string) int64 {
	t.Helper()
	n, err := c.Do(context.Background(), c.B().Strlen().Key(s.keys.Concert(concertID).Seen()).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// TestSeenIsSixBytesAnArrival: a line of one slot keeps its fans' liveness in 6 bytes an arrival (where
// a hash field cost 56), written by the join and by MarkAlive; it starts afresh once the line is empty,
// so it never holds more than the arrivals since the line last emptied.
func TestSeenIsSixBytesAnArrival(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		q := ticketrush.DefaultQueueSettings()
		q.Paused, q.AbandonAfter, q.ActiveCapacity = true, time.Minute, 1000
		mustLoad(t, s, oneSchedule(concert(cid, func(qs *ticketrush.QueueSettings) { *qs = q })))
		var fans []ticketrush.QueueClaims
		for i := 1; i <= 50; i++ {
			fans = append(fans, join(t, s, cid, "u"+strconv.Itoa(i), ticketrush.StatusWaiting))
		}
		assert.EqualValues(t, 50*6, seenLen(t, c, s, cid), "6 bytes for each of 50 arrivals")
		for _, f := range fans {
			assert.Equal(t, t0, seenOf(t, c, s, cid, f.Seq), "the join is a sign of life: %s", f.UserID)
		}

		// A flush with neighbours and gaps: those seen move, those between keep their join's time.
		later := t0.Add(1500 * time.Millisecond)
		seen := []ticketrush.Arrival{{UserID: "u1", Seq: fans[0].Seq}, {UserID: "u3", Seq: fans[2].Seq},
			{UserID: "u30", Seq: fans[29].Seq}, {UserID: "u50", Seq: fans[49].Seq}}
		require.NoError(t, s.Line.MarkAlive(ctx, cid, seen, later))
		for i, f := range fans {
			want := t0
			if i == 0 || i == 2 || i == 29 || i == 49 {
				want = later
			}
			assert.Equal(t, want, seenOf(t, c, s, cid, f.Seq), "after the flush: %s", f.UserID)
		}
		// A seq past the newest arrival (a forged or stale token) writes nothing and grows nothing.
		require.NoError(t, s.Line.MarkAlive(ctx, cid, []ticketrush.Arrival{{UserID: "x", Seq: 1_000_000}}, later))
		assert.EqualValues(t, 50*6, seenLen(t, c, s, cid), "no field for an arrival that was never issued")

		// Everyone admitted: the line is empty and seen starts afresh above the newest seq.
		q.Paused = false
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		r, err := s.Line.Tick(ctx, cid, later, 100)
		require.NoError(t, err)
		require.Equal(t, 50, r.Admitted)
		assert.Zero(t, seenLen(t, c, s, cid), "an empty line keeps no liveness")
		require.NoError(t, s.Line.MarkAlive(ctx, cid, seen, later))
		assert.Zero(t, seenLen(t, c, s, cid), "a late flush of arrivals that left writes nothing")

		q.Paused = true
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		next := join(t, s, cid, "u51", ticketrush.StatusWaiting)
		assert.EqualValues(t, 6, seenLen(t, c, s, cid), "the next arrival's field is the first")
		assert.Equal(t, t0, seenOf(t, c, s, cid, next.Seq))
	})
}

// TestMigrateLayoutMovesTheLivenessHash: a line whose liveness layout version 1 wrote as a hash
// (q:alive) has it moved into seen by the concert's layout migration, the later time of each arrival
// kept, so that a fan seen only there is not dropped; the hash is gone and the version recorded.
func TestMigrateLayoutMovesTheLivenessHash(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		q := ticketrush.DefaultQueueSettings()
		q.Paused, q.AbandonAfter = true, 2*time.Second
		con := oneSchedule(concert(cid, func(qs *ticketrush.QueueSettings) { *qs = q }))
		mustLoad(t, s, con)
		a := join(t, s, cid, "u1", ticketrush.StatusWaiting)
		b := join(t, s, cid, "u2", ticketrush.StatusWaiting)
		k := s.keys.Concert(cid)
		require.NoError(t, c.Do(ctx, c.B().Hset().Key(k.Alive()).FieldValue().
			FieldValue(strconv.FormatUint(a.Seq, 10), millis(t0.Add(2500*time.Millisecond))).
			FieldValue(strconv.FormatUint(b.Seq, 10), millis(t0.Add(-time.Second))).Build()).Error())
		require.NoError(t, c.Do(ctx, c.B().Hdel().Key(k.Cfg()).Field("lv").Build()).Error())

		m, err := s.MigrateLayout(ctx, con)
		require.NoError(t, err)
		assert.Equal(t, LayoutMigration{Seen: 2}, m)
		assert.Equal(t, t0.Add(2500*time.Millisecond), seenOf(t, c, s, cid, a.Seq), "the hash's later time")
		assert.Equal(t, t0, seenOf(t, c, s, cid, b.Seq), "the join's later time")
		n, err := c.Do(ctx, c.B().Exists().Key(k.Alive()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, n, "the old hash is gone")
		lv, err := c.Do(ctx, c.B().Hget().Key(k.Cfg()).Field("lv").Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(LayoutVersion), lv)
		again, err := s.MigrateLayout(ctx, con)
		require.NoError(t, err)
		assert.Zero(t, again, "a second migration moves nothing")

		q.Paused = false
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		r, err := s.Line.Tick(ctx, cid, t0.Add(3*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 1, r.Admitted, "u1, seen in the old hash half a second ago")
		assert.Equal(t, 1, r.Abandoned, "u2, seen only at its join 3 s ago")
		assertActive(t, s, cid, "u1", a.Seq)
		st, err := s.Line.TokenStatus(ctx, b, t0.Add(3*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusExpired, st.Status)
	})
}

// TestRestoreStartsSeenAboveTheLine: a restored line restarts above every arrival ever issued, and so
// does seen: the first join after a restore takes the string's first field, not one at its seq.
func TestRestoreStartsSeenAboveTheLine(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		con := oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) { q.Paused = true }))
		_, err := RestoreConcert(ctx, c, s.keys.Concert(cid), con, nil, ticketrush.QueueMark{ConcertID: cid, MaxSeq: 100_000})
		require.NoError(t, err)
		f := join(t, s, cid, "u1", ticketrush.StatusWaiting)
		require.EqualValues(t, 100_001, f.Seq)
		assert.EqualValues(t, 6, seenLen(t, c, s, cid), "one field, not 100,001")
		assert.Equal(t, t0, seenOf(t, c, s, cid, f.Seq))
	})
}

// TestTickReadsSeenInChunks: the tick reads the liveness of the fans it pops in one read when their
// seqs are near each other, and one by one when many left between them; either way each fan is judged
// by their own field, wherever the round's first fan is.
func TestTickReadsSeenInChunks(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		q := ticketrush.DefaultQueueSettings()
		q.Paused, q.AbandonAfter, q.NoShow = true, 2*time.Second, 0
		mustLoad(t, s, oneSchedule(concert(cid, func(qs *ticketrush.QueueSettings) { *qs = q })))
		var fans []ticketrush.QueueClaims
		for i := 1; i <= 110; i++ {
			fans = append(fans, join(t, s, cid, "u"+strconv.Itoa(i), ticketrush.StatusWaiting))
		}
		// u5 and u1 stay quiet; u11..u109 leave the line; the others are seen at 1.5 s.
		var seen []ticketrush.Arrival
		for i, f := range fans {
			switch {
			case i >= 10 && i < 109:
				_, err := s.Line.Leave(ctx, cid, f.UserID, f.Seq, t0)
				require.NoError(t, err)
			case i != 0 && i != 4:
				seen = append(seen, ticketrush.Arrival{UserID: f.UserID, Seq: f.Seq})
			}
		}
		require.NoError(t, s.Line.MarkAlive(ctx, cid, seen, t0.Add(1500*time.Millisecond)))
		q.Paused = false
		require.NoError(t, s.Configure(ctx, cid, q, t0))
		now := t0.Add(3 * time.Second)
		r, err := s.Line.Tick(ctx, cid, now, 3) // u1 dropped, u2 and u3 admitted
		require.NoError(t, err)
		assert.Equal(t, 2, r.Admitted)
		assert.Equal(t, 1, r.Abandoned)
		r, err = s.Line.Tick(ctx, cid, now, 4) // u4..u7 in one read from u4: u5 dropped
		require.NoError(t, err)
		assert.Equal(t, 3, r.Admitted)
		assert.Equal(t, 1, r.Abandoned)
		r, err = s.Line.Tick(ctx, cid, now, 100) // u8..u10 and u110, past the leavers: one read each
		require.NoError(t, err)
		assert.Equal(t, 4, r.Admitted)
		assert.Zero(t, r.Abandoned)
		for i, f := range fans {
			if i >= 10 && i < 109 {
				continue
			}
			st, err := s.Line.TokenStatus(ctx, f, now)
			require.NoError(t, err)
			want := ticketrush.StatusActive
			if i == 0 || i == 4 {
				want = ticketrush.StatusExpired
			}
			assert.Equal(t, want, st.Status, f.UserID)
		}
	})
}

// liveWrites notes the size of each liveness write a client sends (dbtest.Watched): the arrivals of each
// queue_seen call (by its keys: cfg, seen; rueidis sends EVALSHA first, and EVAL only to retry one Redis
// did not know) and the fields of each HSET of a shard's alive hash.
type liveWrites struct {
	cfg, seen string
	alive     map[string]bool
	mu        sync.Mutex
	sizes     []int
}

func (c *liveWrites) see(w []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case w[0] == "EVALSHA" && len(w) > 4 && w[3] == c.cfg && w[4] == c.seen: // EVALSHA sha 3 cfg seen seq now seqs...
		c.sizes = append(c.sizes, len(w)-7)
	case w[0] == "HSET" && c.alive[w[1]]:
		c.sizes = append(c.sizes, (len(w)-2)/2)
	}
}

// TestMarkAliveWritesInChunks: an instance that saw many fans in its second writes their liveness in
// calls of at most seenChunk (1,000; 100 here, to join fewer fans) arrivals: queue_seen's Redis time
// grows with them, and the concert's slot waits for it (110 ms for 100,000 in one call). Every arrival
// is written once, and each is still written; on a line of one slot and on a sharded one.
func TestMarkAliveWritesInChunks(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
				ctx := context.Background()
				k := s.keys.Concert(cid)
				lw := &liveWrites{cfg: k.Cfg(), seen: k.Seen(), alive: map[string]bool{}}
				for sh := range shards {
					lw.alive[k.Shard(sh).Alive()] = true
				}
				counted := NewStore(dbtest.Watched(c, lw.see), s.keys.prefix, prometheus.NewRegistry())
				require.Equal(t, seenChunk, counted.liveChunk, "a store writes liveness in chunks of seenChunk")
				const chunk = 100 // the same code, with fewer fans to join
				counted.liveChunk = chunk
				mustLoad(t, s, oneSchedule(concert(cid, func(q *ticketrush.QueueSettings) {
					q.Paused, q.AbandonAfter, q.LineShards = true, time.Minute, shards
				})))
				const fans = 3*chunk + 50 // more than a chunk in each of 3 shards too
				seen := make([]ticketrush.Arrival, 0, fans+100)
				for i := range fans {
					f := join(t, s, cid, "u"+strconv.Itoa(i), ticketrush.StatusWaiting)
					seen = append(seen, ticketrush.Arrival{UserID: f.UserID, Seq: f.Seq})
				}
				seen = append(seen, seen[:100]...) // a fan polled twice in the second is written once
				rand.New(rand.NewPCG(1, 2)).Shuffle(len(seen), func(i, j int) { seen[i], seen[j] = seen[j], seen[i] })

				later := t0.Add(1500 * time.Millisecond)
				require.NoError(t, counted.Line.MarkAlive(ctx, cid, seen, later))
				total := 0
				for _, n := range lw.sizes {
					assert.LessOrEqual(t, n, chunk, "one write of %d arrivals", n)
					total += n
				}
				assert.Equal(t, fans, total, "every arrival written once: %v", lw.sizes)
				assert.GreaterOrEqual(t, len(lw.sizes), fans/chunk+1)

				// Every fan seen: none dropped by a tick at 1 minute after the join, all admitted.
				q := ticketrush.DefaultQueueSettings()
				q.AbandonAfter, q.LineShards, q.ActiveCapacity, q.AdmitPerSecond = time.Minute, shards, fans, fans
				require.NoError(t, s.Configure(ctx, cid, q, t0))
				admitted := 0
				for admitted < fans {
					r, err := s.Line.Tick(ctx, cid, t0.Add(time.Minute+time.Second), 1000)
					require.NoError(t, err)
					require.Zero(t, r.Abandoned, "a fan the flush wrote was dropped")
					require.Positive(t, r.Admitted)
					admitted += r.Admitted
				}
				assert.Equal(t, fans, admitted)
			})
		})
	}
}
