package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestPlacedLineShards: a concert whose placement gives its line's shards tag suffixes (as a creation on
// a cluster does, placeLineShards) keeps every shard's keys under the suffixed tag, and every path finds
// them there: joins, positions, a leave, a tick's admission, liveness, the event streams the
// write-behind reads, and restore's emptying of the line. The plain tags stay empty.
func TestPlacedLineShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		const shards = 4
		con := shardedConcert("pl", shards, func(q *ticketrush.QueueSettings) { q.Paused = true })
		at := []int{3, 1, 5, 9}
		con.Placement = ticketrush.Placement{Slots: formatPlacement(splitSchedules(strings.Join(con.ScheduleIDs(), ",")), at), Recorded: true}
		mustLoad(t, s, con)
		k := s.keys.Concert("pl")
		placed := k.Placed(at)

		users := make([]string, 12)
		seqs := map[string]uint64{}
		for i := range users {
			users[i] = fmt.Sprintf("fan-%02d", i)
			r, err := s.Line.Join(ctx, "pl", users[i], t0)
			require.NoError(t, err)
			require.Equal(t, ticketrush.StatusWaiting, r.Status)
			seqs[users[i]] = r.Seq
		}
		_, err := s.Line.Leave(ctx, "pl", users[0], seqs[users[0]], t0)
		require.NoError(t, err)
		st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "pl", UserID: users[3], Seq: seqs[users[3]]}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: 3}, st, "behind one who left and one waiting")
		require.NoError(t, s.Line.MarkAlive(ctx, "pl", []ticketrush.Arrival{{UserID: users[5], Seq: seqs[users[5]]}}, t0))

		waiting := 0
		for n := range shards {
			plain, err := c.Do(ctx, c.B().Exists().Key(k.Shard(n).All()...).Build()).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, plain, "shard %d's plain tag holds nothing", n)
			w, err := c.Do(ctx, c.B().Hlen().Key(placed.Shard(n).Places()).Build()).AsInt64()
			require.NoError(t, err)
			waiting += int(w)
		}
		assert.Equal(t, len(users)-1, waiting, "every fan but the one who left waits under the placed tags")
		l, _, err := s.keys.ReadLayout(ctx, c, "pl")
		require.NoError(t, err)
		joins := 0
		for _, src := range s.keys.ConcertSources("pl", l)[1 : 1+shards] {
			assert.Contains(t, src.Stream, "@", "a shard's stream under its placed tag: %s", src.Stream)
			joins += len(eventTypes(t, c, src.Stream))
		}
		assert.GreaterOrEqual(t, joins, len(users), "the joins in the shards' streams")

		q := con.Queue
		q.Paused = false
		require.NoError(t, s.Configure(ctx, "pl", q, t0))
		r, err := s.Line.Tick(ctx, "pl", t0, 100)
		require.NoError(t, err)
		assert.Equal(t, len(users)-1, r.Admitted, "the tick reads every placed shard's head")
		st, err = s.Line.TokenStatus(ctx, ticketrush.QueueClaims{ConcertID: "pl", UserID: users[3], Seq: seqs[users[3]]}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status)

		_, err = RestoreConcert(ctx, c, k, con, nil, ticketrush.QueueMark{ConcertID: "pl", MaxSeq: 12})
		require.NoError(t, err)
		for n := range shards {
			left, err := c.Do(ctx, c.B().Exists().Key(placed.Shard(n).All()...).Build()).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, left, "restore empties shard %d under its placed tag", n)
		}
	})
}
