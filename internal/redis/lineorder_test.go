package redis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The steps of a sharded line's round and join, run one at a time so that a test can put a leave or a
// join between them: the round's read of every shard's head, and its admission without the pop.

// readHeads is what a round reads: the first fans of every shard of concertID's line, in seq order.
func readHeads(t *testing.T, s *Store, concertID string, n int) []lineFan {
	t.Helper()
	c := s.keys.Concert(concertID)
	calls := make([]call, n)
	for i := range n {
		calls[i] = built(c.Shard(i).lineHeads(64))
	}
	msgs, err := s.execMulti(context.Background(), s.lineHeads, calls)
	require.NoError(t, err)
	var fans []lineFan
	for i, msg := range msgs {
		h, err := headsReply(msg, i)
		require.NoError(t, err)
		fans = append(fans, h.fans...)
	}
	slices.SortFunc(fans, func(a, b lineFan) int { return int(a.seq) - int(b.seq) })
	return fans
}

// admitOnly runs line_admit over fans as a round would, without the pop that follows it.
func admitOnly(t *testing.T, s *Store, concertID string, now time.Time, fans []lineFan) {
	t.Helper()
	keys, args := s.keys.Concert(concertID).lineAdmit(now, 100, int64(len(fans)), "tick", nil, fans)
	_, err := s.exec(context.Background(), s.lineAdmit, keys, args)
	require.NoError(t, err)
}

// usersOfShards returns one user id per shard asked for, in that order, of a line of n shards.
func usersOfShards(prefix string, n int, shards ...int) []string {
	out := make([]string, len(shards))
	for i, sh := range shards {
		for j := 0; ; j++ {
			if u := fmt.Sprintf("%s-%d", prefix, j); LineShard(u, n) == sh {
				out[i] = u
				break
			}
		}
	}
	return out
}

// A leave answered is final on a line of 8 shards, wherever it lands in a round: between the round's
// read of the heads and its admission, and between its admission and its pop (the fan still at their
// shard's head, so that a later round that read the heads before the leave finds them there).
func TestShardedLeaveIsFinalWhateverTheRoundIsDoing(t *testing.T) {
	const n = 8
	setup := func(t *testing.T, s *Store, id string) ticketrush.QueueClaims {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert(id, n, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1; q.AdmitPerSecond = 1000 }))
		users := usersOfShards("fan", n, 0, 5)
		first, err := s.Line.Join(ctx, id, users[0], t0)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, first.Status)
		f, err := s.Line.Join(ctx, id, users[1], t0.Add(time.Millisecond))
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusWaiting, f.Status, "the one slot is taken")
		_, err = s.Line.Leave(ctx, id, users[0], first.Seq, t0.Add(2*time.Millisecond)) // the slot frees
		require.NoError(t, err)
		return ticketrush.QueueClaims{ConcertID: id, UserID: users[1], Seq: f.Seq}
	}
	notActive := func(t *testing.T, s *Store, c rueidis.Client, f ticketrush.QueueClaims, now time.Time) {
		t.Helper()
		st, err := s.Line.TokenStatus(context.Background(), f, now)
		require.NoError(t, err)
		assert.NotEqual(t, ticketrush.StatusActive, st.Status, "%s left (answered) and is ACTIVE", f.UserID)
		active, err := c.Do(context.Background(), c.B().Zcard().Key(s.keys.Concert(f.ConcertID).Active()).Build()).AsInt64()
		require.NoError(t, err)
		assert.Zero(t, active, "a fan who left holds a slot of the capacity")
	}
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		t.Run("between the heads and the admission", func(t *testing.T) {
			f := setup(t, s, "lh")
			now := t0.Add(time.Second)
			heads := readHeads(t, s, "lh", n)
			require.Len(t, heads, 1)
			from, err := s.Line.Leave(ctx, "lh", f.UserID, f.Seq, now)
			require.NoError(t, err)
			assert.Equal(t, ticketrush.StatusWaiting, from)
			r, err := s.Line.admitLine(ctx, lineOf(t, s, "lh"), now, 100, 1, "tick", nil, heads)
			require.NoError(t, err)
			assert.Zero(t, r.res.Admitted)
			notActive(t, s, c, f, now)
			_, err = s.Line.Tick(ctx, "lh", now.Add(time.Second), 100)
			require.NoError(t, err)
			notActive(t, s, c, f, now.Add(time.Second))
		})
		t.Run("its shard's step lost, the quit mark lapsed", func(t *testing.T) {
			f := setup(t, s, "lq")
			k := s.keys.Concert("lq")
			decided, err := s.Line.lineLeft(ctx, k, f.UserID, f.Seq, "LEAVE", t0.Add(time.Second)) // line_leave never ran
			require.NoError(t, err)
			require.Equal(t, "LOGGED", decided)
			later := t0.Add(time.Minute) // long past the quit mark's 10 s
			res, err := s.Line.Tick(ctx, "lq", later, 100)
			require.NoError(t, err)
			assert.Zero(t, res.Admitted)
			notActive(t, s, c, f, later)
		})
		t.Run("between the admission and the pop", func(t *testing.T) {
			f := setup(t, s, "lp")
			now := t0.Add(time.Second)
			heads := readHeads(t, s, "lp", n)
			admitOnly(t, s, "lp", now, heads)
			stale := readHeads(t, s, "lp", n) // a second round's read: the fan is still at their shard's head
			require.Len(t, stale, 1)
			from, err := s.Line.Leave(ctx, "lp", f.UserID, f.Seq, now)
			require.NoError(t, err)
			assert.Equal(t, ticketrush.StatusActive, from, "admitted: the leave gives the slot back")
			notActive(t, s, c, f, now)
			_, err = s.Line.admitLine(ctx, lineOf(t, s, "lp"), now.Add(time.Second), 100, 1, "tick", nil, stale)
			require.NoError(t, err)
			notActive(t, s, c, f, now.Add(time.Second))
		})
	})
}

// A join that finds the line empty is admitted at once only if nobody is ahead of it: not a fan a round
// passed while their join was between its two steps, answered WAITING before this join was sent.
func TestShardedEmptyLineJoinWaitsBehindAPassedFan(t *testing.T) {
	const n = 8
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("ov", n, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 10; q.AdmitPerSecond = 1000 }))
		users := usersOfShards("ov", n, 1, 2, 3)
		slow, fast, later := users[0], users[1], users[2]
		k := s.keys.Concert("ov")

		// slow takes its seq, and its shard step comes only after a round
		a, err := s.Line.arrive(ctx, "ov", slow, "", t0)
		require.NoError(t, err)
		require.Equal(t, "ARRIVE", string(a.status))

		f, err := s.Line.Join(ctx, "ov", fast, t0.Add(time.Millisecond))
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusWaiting, f.Status, "slow's seq is ahead")
		res, err := s.Line.Tick(ctx, "ov", t0.Add(100*time.Millisecond), 100)
		require.NoError(t, err)
		require.Equal(t, 1, res.Admitted, "the round passes slow's seq, in flight, and admits fast")

		keys, args := k.Shard(LineShard(slow, n)).lineEnter(slow, a, ticketrush.JoinPass{}, s.limit, t0.Add(150*time.Millisecond))
		msg, err := s.exec(ctx, s.lineEnter, keys, args)
		require.NoError(t, err)
		sr, _, err := enterReply(msg)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusWaiting, sr.Status, "slow is answered WAITING")

		l, err := s.Line.Join(ctx, "ov", later, t0.Add(200*time.Millisecond))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, l.Status, "later, sent after slow was answered, is not admitted ahead of slow")
		_, err = s.Line.Tick(ctx, "ov", t0.Add(300*time.Millisecond), 100)
		require.NoError(t, err)
		assert.Equal(t, []uint64{f.Seq, a.seq, l.Seq}, admittedSeqs(t, c, k.Events()), "slow before later")
	})
}

// A poll's exact status of a sharded line reads the concert's slot, then the fan's shard. A round that
// admits the fan between the two reads (ACTIVE on the concert's slot, then out of the shard) must not
// make them read EXPIRED: the partition suite's slow link to a shard's master widened that moment to
// 100 ms and more, and fans answered WAITING read EXPIRED a second later.
func TestShardedStatusSeesAnAdmissionBetweenItsReads(t *testing.T) {
	const n = 8
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("sa", n, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1; q.AdmitPerSecond = 1000 }))
		users := usersOfShards("fan", n, 0, 5)
		first, err := s.Line.Join(ctx, "sa", users[0], t0)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, first.Status)
		w, err := s.Line.Join(ctx, "sa", users[1], t0.Add(time.Millisecond))
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusWaiting, w.Status)
		_, err = s.Line.Leave(ctx, "sa", users[0], first.Seq, t0.Add(2*time.Millisecond)) // the slot frees
		require.NoError(t, err)
		f := ticketrush.QueueClaims{ConcertID: "sa", UserID: users[1], Seq: w.Seq}

		now := t0.Add(time.Second)
		st, err := s.Line.concertStatus(ctx, f, now) // the poll's first read: not ACTIVE on the concert's slot
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusExpired, st.Status)
		res, err := s.Line.Tick(ctx, "sa", now, 100) // the round admits the fan and takes them out of the shard
		require.NoError(t, err)
		require.Equal(t, 1, res.Admitted)
		st, err = s.Line.shardStatus(ctx, lineOf(t, s, f.ConcertID), f, now) // the poll's second read
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status, "a fan admitted between the poll's reads")
	})
}
