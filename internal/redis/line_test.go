package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// shardedConcert is a concert whose line is spread over shards slots.
func shardedConcert(id string, shards int, mod func(*ticketrush.QueueSettings)) ticketrush.Concert {
	return concert(id, func(q *ticketrush.QueueSettings) {
		q.LineShards = shards
		if mod != nil {
			mod(q)
		}
	})
}

// admittedSeqs reads the queue.admit events of a concert's stream: the seqs in the order admitted.
func admittedSeqs(t *testing.T, c rueidis.Client, stream string) []uint64 {
	t.Helper()
	entries, err := c.Do(context.Background(), c.B().Xrange().Key(stream).Start("-").End("+").Build()).AsXRange()
	require.NoError(t, err)
	var out []uint64
	for _, f := range admissions(t, entries) {
		out = append(out, f.Seq)
	}
	return out
}

// admissions are the fans the admission events of a concert's stream admitted, in the order admitted:
// a join's queue.admit and a round's queue.admits.
func admissions(t *testing.T, entries []rueidis.XRangeEntry) []EventFan {
	t.Helper()
	var out []EventFan
	for _, e := range entries {
		if typ := e.FieldValues["type"]; typ == "queue.admit" || typ == "queue.admits" {
			fans, err := EventFans(e.FieldValues)
			require.NoError(t, err)
			out = append(out, fans...)
		}
	}
	return out
}

// A line of several shards behaves as a line of one: admitted at once into an empty line with room, a
// rejoin keeps its seq, the tick admits in arrival order across shards up to the capacity and the
// rate, a leave closes the gap, and the waiting fans are in their own shards' slots, not the concert's.
func TestShardedLine(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("sh", 4, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 3; q.AdmitPerSecond = 1000 }))
		n, err := s.LineShards(ctx, "sh")
		require.NoError(t, err)
		require.Equal(t, 4, n)

		first, err := s.Line.Join(ctx, "sh", "fan-0", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, first.Status, "nobody waits and there is room: admitted at once")
		assert.Equal(t, uint64(1), first.Seq)

		var fans []ticketrush.QueueClaims
		for i := 1; i <= 12; i++ {
			now := t0.Add(time.Duration(i) * time.Millisecond)
			r, err := s.Line.Join(ctx, "sh", "fan-"+strconv.Itoa(i), now)
			require.NoError(t, err)
			fans = append(fans, ticketrush.QueueClaims{ConcertID: "sh", UserID: "fan-" + strconv.Itoa(i), Seq: r.Seq})
			if i <= 2 {
				require.Equal(t, ticketrush.StatusActive, r.Status, "room for three: %s", fans[i-1].UserID)
				continue
			}
			require.Equal(t, ticketrush.StatusWaiting, r.Status)
		}
		shardsUsed := map[int]bool{}
		for _, f := range fans {
			shardsUsed[LineShard(f.UserID, 4)] = true
		}
		require.Greater(t, len(shardsUsed), 1, "the fans spread over several shards")
		wait, err := c.Do(ctx, c.B().Hlen().Key(s.keys.Concert("sh").Places()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, wait, "nobody waits in the concert's slot")

		again, err := s.Line.Join(ctx, "sh", fans[5].UserID, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusWaiting, Seq: fans[5].Seq, Skipped: 14}, again, "a rejoin keeps its arrival; the seq it took is a gap")

		st, err := s.Line.TokenStatus(ctx, fans[5], t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: 4}, st, "seqs 4, 5 and 6 ahead")

		from, err := s.Line.Leave(ctx, "sh", fans[3].UserID, fans[3].Seq, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, from)
		st, err = s.Line.TokenStatus(ctx, fans[5], t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(3), st.Position, "a leave ahead closes the gap")

		// Room for two more: the two earliest arrivals still waiting, whatever their shards.
		_, err = s.Line.Leave(ctx, "sh", "fan-0", 1, t0.Add(time.Second))
		require.NoError(t, err)
		_, err = s.Line.Leave(ctx, "sh", fans[0].UserID, fans[0].Seq, t0.Add(time.Second))
		require.NoError(t, err)
		res, err := s.Line.Tick(ctx, "sh", t0.Add(2*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 2, res.Admitted)
		assert.Equal(t, int64(3), res.Active)
		assert.Equal(t, int64(7), res.Waiting, "13 joined, 3 admitted at once, 1 left, 2 admitted now")
		assertActive(t, s, "sh", fans[2].UserID, fans[2].Seq)
		assertActive(t, s, "sh", fans[4].UserID, fans[4].Seq)
		assert.Equal(t, []uint64{1, fans[0].Seq, fans[1].Seq, fans[2].Seq, fans[4].Seq},
			admittedSeqs(t, c, s.keys.Concert("sh").Events()), "admitted in arrival order; the leaver skipped")
		st, err = s.Line.TokenStatus(ctx, fans[5], t0.Add(2*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: 1}, st)
	})
}

// Any number of schedulers ticking a sharded line at once never admit past the capacity, and admit
// in arrival order; joins land in their shards' event streams, which the write-behind reads.
func TestShardedLineConcurrentTicks(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const capacity, fans = 25, 200
		mustLoad(t, s, shardedConcert("ct", 8, func(q *ticketrush.QueueSettings) {
			q.ActiveCapacity = capacity
			q.AdmitPerSecond = 100_000
			q.Paused = true // everyone waits: the ticks admit
		}))
		for i := range fans {
			_, err := s.Line.Join(ctx, "ct", fmt.Sprintf("u%03d", i), t0)
			require.NoError(t, err)
		}
		require.NoError(t, s.Configure(ctx, "ct", func() ticketrush.QueueSettings {
			q := ticketrush.DefaultQueueSettings()
			q.ActiveCapacity, q.AdmitPerSecond = capacity, 100_000
			return q
		}(), t0))
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					_, err := s.Line.Tick(ctx, "ct", t0.Add(time.Second), 7)
					assert.NoError(t, err)
				}
			}()
		}
		wg.Wait()
		active, err := c.Do(ctx, c.B().Zcard().Key(s.keys.Concert("ct").Active()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(capacity), active, "the capacity, never more")
		seqs := admittedSeqs(t, c, s.keys.Concert("ct").Events())
		require.Len(t, seqs, capacity)
		assert.True(t, slices.IsSorted(seqs), "admitted in arrival order: %v", seqs)
		assert.Equal(t, uint64(capacity), seqs[capacity-1], "the first arrivals, none skipped")

		joins := 0
		for _, src := range s.keys.ConcertSources("ct", Layout{Shards: 8})[1:] {
			for _, typ := range eventTypes(t, c, src.Stream) {
				if typ == "queue.join" {
					joins++
				}
			}
		}
		assert.Equal(t, fans, joins, "every join is an event of its shard's stream")
	})
}

// answer is one join as its client saw it: when the call was made and when its answer came back.
type answer struct {
	user       string
	start, end time.Time
}

// The fairness of a sharded line (docs/scaleout.md, "Arrival order across shards"): in a storm of joins
// from clients joining at once over every shard, while two schedulers admit, a fan is admitted ahead of
// a fan whose join was answered before theirs only if that join was answered while their own was in
// flight. The tick admits in arrival seq order across shards, and a join takes its seq at its start, so
// a fan f admitted before an earlier-answered g has the lower seq: g's join began after f's and ended
// before f's answer. The bound per fan: the joins answered during its own join (a handful of round
// trips; zero for a client that waits for its answer before the next fan joins).
func TestShardedLineFairness(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const clients, perClient = 16, 40
		const fans = clients * perClient
		mustLoad(t, s, shardedConcert("fair", 6, func(q *ticketrush.QueueSettings) {
			q.ActiveCapacity = fans
			q.AdmitPerSecond = 200 // a few each tick: the line builds up and drains while fans still join
		}))
		var mu sync.Mutex
		var answers []answer
		done := make(chan struct{})
		var wg sync.WaitGroup
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perClient {
					a := answer{user: fmt.Sprintf("w%02d-%03d", w, i), start: time.Now()}
					_, err := s.Line.Join(ctx, "fair", a.user, a.start)
					a.end = time.Now()
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					answers = append(answers, a)
					mu.Unlock()
				}
			}()
		}
		ticked := make(chan error, 2)
		for range 2 { // two schedulers at once
			go func() {
				for {
					select {
					case <-done:
						ticked <- nil
						return
					default:
					}
					if _, err := s.Line.Tick(ctx, "fair", time.Now(), 50); err != nil {
						ticked <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		for { // drain: ticks until every fan is admitted
			active, err := c.Do(ctx, c.B().Zcard().Key(s.keys.Concert("fair").Active()).Build()).AsInt64()
			require.NoError(t, err)
			if active == fans {
				break
			}
			_, err = s.Line.Tick(ctx, "fair", time.Now().Add(time.Second), 50)
			require.NoError(t, err)
		}
		close(done)
		require.NoError(t, <-ticked)
		require.NoError(t, <-ticked)

		entries, err := c.Do(ctx, c.B().Xrange().Key(s.keys.Concert("fair").Events()).Start("-").End("+").Build()).AsXRange()
		require.NoError(t, err)
		admitted := map[string]int{}
		for _, f := range admissions(t, entries) {
			admitted[f.User] = len(admitted)
		}
		require.Len(t, admitted, fans, "every fan admitted once")
		slices.SortFunc(answers, func(a, b answer) int { return a.end.Compare(b.end) })
		worst, widest := 0, 0
		var ahead, longest time.Duration // the most one fan's answer came after one they passed; the longest join
		for i, f := range answers {
			over, during := 0, 0
			for _, g := range answers[:i] {
				if admitted[g.user] > admitted[f.user] {
					over++
					// in time: g's join was answered while f's was in flight, so at most f's own join
					// time before f's answer
					assert.True(t, g.end.After(f.start), "%s was admitted ahead of %s, whose join was answered %s before %s's began",
						f.user, g.user, f.start.Sub(g.end), f.user)
					ahead = max(ahead, f.end.Sub(g.end))
				}
				if g.end.After(f.start) {
					during++
				}
			}
			worst, widest = max(worst, over), max(widest, during)
			longest = max(longest, f.end.Sub(f.start))
			assert.LessOrEqual(t, over, during, "%s was admitted ahead of %d earlier-answered fans; only %d were answered while its join was in flight",
				f.user, over, during)
		}
		t.Logf("%d fans over 6 shards from %d clients: most earlier-answered fans one fan was admitted ahead of: %d; most joins answered during one join: %d; "+
			"most time by which a passed fan's answer came first: %s (the longest join: %s)",
			fans, clients, worst, widest, ahead.Round(time.Microsecond), longest.Round(time.Microsecond))
	})
}

// Restore of a concert whose line is spread: every shard's line goes (the line restarts empty, above
// every arrival issued), the setting stays, and the next join is an arrival in its shard again.
func TestRestoreShardedLine(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		con := shardedConcert("rs", 4, func(q *ticketrush.QueueSettings) { q.Paused = true })
		mustLoad(t, s, con)
		for i := range 12 {
			_, err := s.Line.Join(ctx, "rs", fmt.Sprintf("r%02d", i), t0)
			require.NoError(t, err)
		}
		_, err := RestoreConcert(ctx, c, s.keys.Concert("rs"), con, nil, ticketrush.QueueMark{ConcertID: "rs", MaxSeq: 12})
		require.NoError(t, err)
		for n := range 4 {
			waiting, err := c.Do(ctx, c.B().Hlen().Key(s.keys.Concert("rs").Shard(n).Places()).Build()).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, waiting, "shard %d's line restarts empty", n)
		}
		r, err := s.Line.Join(ctx, "rs", "r00", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusWaiting, Seq: 13, Created: true}, r,
			"an arrival above every seq issued before")
		st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "rs", UserID: "r00", Seq: 13}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: 1}, st)
	})
}

// TestLinePlaceOncePerEntrant: a batch of the draw places each entrant of a line of shards in their
// shard at base+place, and marks their pre-queue entry placed (-seq). The same batch sent again (a
// drawer whose lease lapsed, a retry) leaves every placed entrant alone, even one the tick has taken
// out of the line since, and a user who never entered is not placed.
func TestLinePlaceOncePerEntrant(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const n = 3
		k := s.keys.Concert("pl")
		users := []string{"ann", "bob", "cy", "dee", "eve", "fay"}
		for i, u := range users[:5] { // fay never entered the pre-queue
			require.NoError(t, c.Do(ctx, c.B().Zadd().Key(k.Shard(LineShard(u, n)).Prequeue()).ScoreMember().
				ScoreMember(float64(1000+i), u).Build()).Error())
		}
		batch := make([]draw.Entrant, len(users))
		for i, u := range users {
			batch[i] = draw.Entrant{User: u}
		}
		where := func() map[string]float64 { // each user's seq in their shard's line
			out := map[string]float64{}
			for _, u := range users {
				seq, err := c.Do(ctx, c.B().Hget().Key(k.Shard(LineShard(u, n)).Places()).Field(u).Build()).AsFloat64()
				if err == nil {
					out[u] = seq
				}
			}
			return out
		}
		require.NoError(t, s.Line.placeLine(ctx, shardedLine{s: s.Line, k: k, id: "pl", n: n}, 100, 0, batch))
		assert.Equal(t, map[string]float64{"ann": 101, "bob": 102, "cy": 103, "dee": 104, "eve": 105}, where())
		for _, u := range users[:5] {
			pre, err := c.Do(ctx, c.B().Zscore().Key(k.Shard(LineShard(u, n)).Prequeue()).Member(u).Build()).AsFloat64()
			require.NoError(t, err)
			assert.Equal(t, -where()[u], pre, "%s marked placed", u)
		}
		// ann is admitted (out of the line); the batch comes again, shifted as a wrong retry would be
		require.NoError(t, c.Do(ctx, c.B().Hdel().Key(k.Shard(LineShard("ann", n)).Places()).Field("ann").Build()).Error())
		require.NoError(t, s.Line.placeLine(ctx, shardedLine{s: s.Line, k: k, id: "pl", n: n}, 200, 0, batch))
		assert.Equal(t, map[string]float64{"bob": 102, "cy": 103, "dee": 104, "eve": 105}, where(), "nobody placed twice")
	})
}
