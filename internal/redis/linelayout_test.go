package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The line is a hash of places and lists in seq order whose entries go stale when a fan leaves
// (ConcertKeys.Places). A fan who leaves and joins again waits at their new place: their old entry,
// ahead in the list, is skipped, not taken as theirs. Positions count from the head and the leaves.
// Each case runs on a line of one slot and on a line of four shards.
func TestRejoinWaitsAtTheNewPlace(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
				ctx := context.Background()
				mustLoad(t, s, shardedConcert("rj", shards, func(q *ticketrush.QueueSettings) { q.Paused = true }))
				seqs := map[string]uint64{}
				for _, u := range []string{"u1", "u2", "u3"} {
					r, err := s.Line.Join(ctx, "rj", u, t0)
					require.NoError(t, err)
					seqs[u] = r.Seq
				}
				from, err := s.Line.Leave(ctx, "rj", "u1", seqs["u1"], t0)
				require.NoError(t, err)
				require.Equal(t, ticketrush.StatusWaiting, from)
				r, err := s.Line.Join(ctx, "rj", "u1", t0)
				require.NoError(t, err)
				require.Equal(t, ticketrush.StatusWaiting, r.Status)
				require.Greater(t, r.Seq, seqs["u3"], "a new arrival")
				seqs["u1"] = r.Seq
				for want, u := range []string{"u2", "u3", "u1"} {
					st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "rj", UserID: u, Seq: seqs[u]}, t0)
					require.NoError(t, err)
					assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: int64(want + 1)}, st, u)
				}
				require.NoError(t, s.Configure(ctx, "rj", ticketrush.DefaultQueueSettings(), t0))
				for i := range 3 { // one a round
					res, err := s.Line.Tick(ctx, "rj", t0.Add(time.Duration(i+1)*time.Second), 1)
					require.NoError(t, err)
					require.Equal(t, 1, res.Admitted, "round %d", i)
				}
				fans := admissions(t, events(t, c, s.keys.Concert("rj").Events()))
				assert.Equal(t, []EventFan{{User: "u2", Seq: seqs["u2"]}, {User: "u3", Seq: seqs["u3"]}, {User: "u1", Seq: seqs["u1"]}},
					fans, "admitted at their places; u1 at the new one")
			})
		})
	}
}

// A line whose front is thousands of leavers still admits the fan behind them within a few rounds, and
// the stale entries go from the lists: they do not stay in Redis once the head has passed them.
func TestLinePassesLeaversAtItsFront(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
				ctx := context.Background()
				mustLoad(t, s, shardedConcert("lv", shards, func(q *ticketrush.QueueSettings) { q.Paused = true }))
				const leavers = 2000
				for i := range leavers {
					u := fmt.Sprintf("gone-%04d", i)
					r, err := s.Line.Join(ctx, "lv", u, t0)
					require.NoError(t, err)
					_, err = s.Line.Leave(ctx, "lv", u, r.Seq, t0)
					require.NoError(t, err)
				}
				last, err := s.Line.Join(ctx, "lv", "stays", t0)
				require.NoError(t, err)
				require.Equal(t, ticketrush.StatusWaiting, last.Status)
				require.NoError(t, s.Configure(ctx, "lv", ticketrush.DefaultQueueSettings(), t0))
				rounds := 0
				for ; rounds < 100; rounds++ {
					res, err := s.Line.Tick(ctx, "lv", t0.Add(time.Second), 5)
					require.NoError(t, err)
					if res.Admitted == 1 {
						break
					}
				}
				require.Less(t, rounds, 100, "the fan behind %d leavers was never admitted", leavers)
				assertActive(t, s, "lv", "stays", last.Seq)
				_, err = s.Line.Tick(ctx, "lv", t0.Add(2*time.Second), 5) // a round of an empty line
				require.NoError(t, err)
				k := s.keys.Concert("lv")
				lists := []string{k.Order(), k.Drawn()}
				for n := range shards {
					if shards > 1 {
						lists = append(lists, k.Shard(n).Order(), k.Shard(n).Drawn())
					}
				}
				for _, l := range lists {
					n, err := c.Do(ctx, c.B().Llen().Key(l).Build()).AsInt64()
					require.NoError(t, err)
					assert.Zero(t, n, "%s still holds entries of fans who are gone", l)
				}
				t.Logf("%d rounds of 5 to pass %d leavers", rounds+1, leavers)
			})
		})
	}
}

// A join to a sharded line takes its seq on the concert's slot (line_arrive) and its place on its
// shard (line_enter), so two joins of one shard may enter in the other order than their seqs: the
// shard's list still holds them in seq order, and the tick admits the lower seq first.
func TestShardEntersInSeqOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const n = 4
		mustLoad(t, s, shardedConcert("eo", n, nil))
		var users []string // four users of shard 0
		for i := 0; len(users) < 4; i++ {
			if u := fmt.Sprintf("fan-%d", i); LineShard(u, n) == 0 {
				users = append(users, u)
			}
		}
		sh := s.keys.Concert("eo").Shard(0)
		for _, e := range []struct {
			user string
			seq  uint64
		}{{users[0], 10}, {users[1], 13}, {users[2], 11}, {users[3], 12}} { // 11 and 12 enter after 13
			keys, args := sh.lineEnter(e.user, arrival{status: "ARRIVE", seq: e.seq}, ticketrush.JoinPass{}, UserLimit{}, t0)
			_, err := s.exec(ctx, s.lineEnter, keys, args)
			require.NoError(t, err)
		}
		entries, err := c.Do(ctx, c.B().Lrange().Key(sh.Order()).Start(0).Stop(-1).Build()).AsStrSlice()
		require.NoError(t, err)
		assert.Equal(t, []string{"10|" + users[0], "11|" + users[2], "12|" + users[3], "13|" + users[1]}, entries)
		keys, args := sh.lineHeads(2)
		msg, err := s.exec(ctx, s.lineHeads, keys, args)
		require.NoError(t, err)
		heads, err := headsReply(msg, 0)
		require.NoError(t, err)
		require.Len(t, heads.fans, 2)
		assert.Equal(t, []string{users[0], users[2]}, []string{heads.fans[0].user, heads.fans[1].user}, "the two lowest seqs")
	})
}

// events reads a whole stream.
func events(t *testing.T, c rueidis.Client, stream string) []rueidis.XRangeEntry {
	t.Helper()
	entries, err := c.Do(context.Background(), c.B().Xrange().Key(stream).Start("-").End("+").Build()).AsXRange()
	require.NoError(t, err)
	return entries
}

// The tick of a sharded line takes the fans it admitted off the front of their shards' lists in the
// same round (line_pop), so the next round's read of the heads does not read them again.
func TestShardedTickTakesItsFansOffTheLists(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const n = 2
		mustLoad(t, s, shardedConcert("tf", n, func(q *ticketrush.QueueSettings) { q.Paused = true }))
		for i := range 10 {
			_, err := s.Line.Join(ctx, "tf", fmt.Sprintf("fan-%d", i), t0)
			require.NoError(t, err)
		}
		require.NoError(t, s.Configure(ctx, "tf", ticketrush.DefaultQueueSettings(), t0))
		res, err := s.Line.Tick(ctx, "tf", t0.Add(time.Second), 4)
		require.NoError(t, err)
		require.Equal(t, 4, res.Admitted)
		admitted := map[string]bool{}
		for _, f := range admissions(t, events(t, c, s.keys.Concert("tf").Events())) {
			admitted[fmt.Sprintf("%d|%s", f.Seq, f.User)] = true
		}
		left := 0
		for sh := range n {
			entries, err := c.Do(ctx, c.B().Lrange().Key(s.keys.Concert("tf").Shard(sh).Order()).Start(0).Stop(-1).Build()).AsStrSlice()
			require.NoError(t, err)
			for _, e := range entries {
				assert.False(t, admitted[e], "shard %d still lists %s, admitted", sh, e)
			}
			left += len(entries)
		}
		assert.Equal(t, 6, left, "the six still waiting")
	})
}

// A shard whose read of its head stops among stale entries (its budget counts them) says how far it
// read, and the tick admits nobody of another shard past that seq: the fan waiting behind a hundred
// leavers is admitted before the fans of the other shard who came after them.
func TestShardedTickWaitsForAShardReadAmongLeavers(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const n = 2
		mustLoad(t, s, shardedConcert("sr", n, func(q *ticketrush.QueueSettings) { q.Paused = true }))
		of := func(shard, count int, prefix string) []string {
			var users []string
			for i := 0; len(users) < count; i++ {
				if u := fmt.Sprintf("%s-%d", prefix, i); LineShard(u, n) == shard {
					users = append(users, u)
				}
			}
			return users
		}
		for _, u := range of(0, 100, "gone") {
			r, err := s.Line.Join(ctx, "sr", u, t0)
			require.NoError(t, err)
			_, err = s.Line.Leave(ctx, "sr", u, r.Seq, t0)
			require.NoError(t, err)
		}
		ann := of(0, 1, "ann")[0]
		first, err := s.Line.Join(ctx, "sr", ann, t0)
		require.NoError(t, err)
		for _, u := range of(1, 8, "later") {
			_, err := s.Line.Join(ctx, "sr", u, t0)
			require.NoError(t, err)
		}
		require.NoError(t, s.Configure(ctx, "sr", ticketrush.DefaultQueueSettings(), t0))
		for round := 0; round < 10; round++ {
			res, err := s.Line.Tick(ctx, "sr", t0.Add(time.Second), 100)
			require.NoError(t, err)
			if res.Admitted > 0 {
				break
			}
		}
		admitted := admittedSeqs(t, c, s.keys.Concert("sr").Events())
		require.NotEmpty(t, admitted)
		assert.Equal(t, first.Seq, admitted[0], "%s, behind the leavers of shard 0, first", ann)
	})
}

// A round trims at most its batch of the leaves its head passed; the position of a token of a sharded
// line read from Redis counts only the leaves between the head and its seq, not those left behind it.
func TestShardedPositionSkipsLeavesBehindTheHead(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("ph", 2, func(q *ticketrush.QueueSettings) { q.Paused = true }))
		var claims []ticketrush.QueueClaims
		for i := range 10 {
			u := fmt.Sprintf("u%d", i)
			r, err := s.Line.Join(ctx, "ph", u, t0)
			require.NoError(t, err)
			claims = append(claims, ticketrush.QueueClaims{ConcertID: "ph", UserID: u, Seq: r.Seq})
		}
		for _, f := range claims[:6] {
			_, err := s.Line.Leave(ctx, "ph", f.UserID, f.Seq, t0)
			require.NoError(t, err)
		}
		require.NoError(t, s.Configure(ctx, "ph", ticketrush.DefaultQueueSettings(), t0))
		res, err := s.Line.Tick(ctx, "ph", t0.Add(time.Second), 2) // u6 and u7; two of the six leaves trimmed
		require.NoError(t, err)
		require.Equal(t, 2, res.Admitted)
		for want, f := range claims[8:] {
			st, err := s.Line.TokenStatus(ctx, f, t0.Add(time.Second))
			require.NoError(t, err)
			assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: int64(want + 1)}, st, f.UserID)
		}
	})
}

// A line layout version 1 left in Redis as a sorted set (an upgrade with fans waiting) is moved by the
// concert's layout migration: every fan waits at their seq, ahead of those who joined since, and is
// admitted in that order.
func TestMigrateLayoutMovesALineOfTheOldLayout(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
				ctx := context.Background()
				con := shardedConcert("mg", shards, func(q *ticketrush.QueueSettings) { q.Paused = true })
				mustLoad(t, s, con)
				k := s.keys.Concert("mg")
				old := []string{"a", "b", "c"}
				for i, u := range old { // what layout version 1 holds: the line and the arrival counter
					key := k.LegacyWait()
					if shards > 1 {
						key = k.Shard(LineShard(u, shards)).LegacyWait()
					}
					require.NoError(t, c.Do(ctx, c.B().Zadd().Key(key).ScoreMember().ScoreMember(float64(i+1), u).Build()).Error())
				}
				require.NoError(t, c.Do(ctx, c.B().Set().Key(k.Seq()).Value("3").Build()).Error())
				d, err := s.Line.Join(ctx, "mg", "d", t0) // joined in the current layout, before the migration ran
				require.NoError(t, err)
				require.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusWaiting, Seq: 4, Created: true}, d)

				m, err := s.MigrateLayout(ctx, con)
				require.NoError(t, err)
				assert.Equal(t, LayoutMigration{Waiting: 3}, m)
				again, err := s.MigrateLayout(ctx, con)
				require.NoError(t, err)
				assert.Zero(t, again, "a second migration moves nothing")
				for i, u := range append(old, "d") {
					st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "mg", UserID: u, Seq: uint64(i + 1)}, t0)
					require.NoError(t, err)
					assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: int64(i + 1)}, st, u)
				}
				q := ticketrush.DefaultQueueSettings()
				q.AbandonAfter = 0 // the version-1 line's fans were never seen by this test
				require.NoError(t, s.Configure(ctx, "mg", q, t0))
				for round := 1; round <= 10 && len(admittedSeqs(t, c, k.Events())) < 4; round++ {
					_, err := s.Line.Tick(ctx, "mg", t0.Add(time.Duration(round)*time.Second), 10)
					require.NoError(t, err)
				}
				assert.Equal(t, []uint64{1, 2, 3, 4}, admittedSeqs(t, c, k.Events()), "the version-1 line first, in its order")
			})
		})
	}
}
