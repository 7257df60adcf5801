package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func TestJoin(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, concert("c1", func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }))

		first, err := s.Line.Join(ctx, "c1", "alice", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusActive, Seq: 1, ActiveUntil: t0.Add(1800 * time.Second), Created: true}, first,
			"nobody waits and there is room: admitted at once")

		second, err := s.Line.Join(ctx, "c1", "bob", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusWaiting, Seq: 2, Created: true}, second, "no room: waits")

		again, err := s.Line.Join(ctx, "c1", "bob", t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusWaiting, Seq: 2}, again, "a rejoin gets the same arrival")

		activeAgain, err := s.Line.Join(ctx, "c1", "alice", t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusActive, Seq: 1, ActiveUntil: t0.Add(1800 * time.Second)}, activeAgain)

		lapsed, err := s.Line.Join(ctx, "c1", "alice", t0.Add(1800*time.Second))
		require.NoError(t, err)
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusWaiting, Seq: 3, Created: true}, lapsed,
			"after the active token lapsed a join goes to the back")

		_, err = s.Line.Join(ctx, "nope", "alice", t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)

		types := eventTypes(t, c, s.keys.Concert("c1").Events())
		assert.Equal(t, []string{"concert.load", "queue.admit", "queue.join", "queue.lapse", "queue.join"}, types)
	})
}

func TestJoinRespectsPauseAndRate(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, concert("paused", func(q *ticketrush.QueueSettings) { q.Paused = true }))
		r, err := s.Line.Join(ctx, "paused", "alice", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, r.Status, "paused: nobody is admitted, joins still queue")

		mustLoad(t, s, concert("slow", func(q *ticketrush.QueueSettings) { q.AdmitPerSecond = 1 }))
		r, err = s.Line.Join(ctx, "slow", "a", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, r.Status)
		r, err = s.Line.Join(ctx, "slow", "b", t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, r.Status, "the rate budget of 1/s is spent")
	})
}

func TestLeave(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, concert("c1", func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }))
		a, _ := s.Line.Join(ctx, "c1", "alice", t0)
		b, _ := s.Line.Join(ctx, "c1", "bob", t0)

		tests := []struct {
			name string
			user string
			seq  uint64
			want ticketrush.QueueStatus
		}{
			{"wrong seq", "bob", b.Seq + 5, ""},
			{"waiting", "bob", b.Seq, ticketrush.StatusWaiting},
			{"again", "bob", b.Seq, ""},
			{"active", "alice", a.Seq, ticketrush.StatusActive},
			{"stranger", "carol", 1, ""},
		}
		for _, tt := range tests {
			got, err := s.Line.Leave(ctx, "c1", tt.user, tt.seq, t0)
			require.NoError(t, err, tt.name)
			assert.Equal(t, tt.want, got, tt.name)
		}
		snap, err := s.Line.Snapshot(ctx, "c1", 0, 100, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.Leave{{Seq: b.Seq, Ordinal: 1}}, snap.Leaves)
		assert.Equal(t, int64(0), snap.Waiting)
		assert.Equal(t, int64(0), snap.Active)
	})
}

func TestTokenStatus(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, concert("c1", func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }))
		a, _ := s.Line.Join(ctx, "c1", "alice", t0)
		s.Line.Join(ctx, "c1", "bob", t0)
		carol, _ := s.Line.Join(ctx, "c1", "carol", t0)
		require.NoError(t, c.Do(ctx, c.B().Sadd().Key(s.keys.Concert("c1").Done()).Member("9").Build()).Error())

		claims := func(user string, seq uint64) ticketrush.QueueClaims {
			return ticketrush.QueueClaims{UserID: user, ConcertID: "c1", Seq: seq}
		}
		tests := []struct {
			name string
			give ticketrush.QueueClaims
			at   time.Time
			want ticketrush.TokenState
		}{
			{"active", claims("alice", a.Seq), t0, ticketrush.TokenState{Status: ticketrush.StatusActive, ActiveUntil: a.ActiveUntil}},
			{"active lapsed before any sweep", claims("alice", a.Seq), a.ActiveUntil, ticketrush.TokenState{Status: ticketrush.StatusExpired}},
			{"waiting second in line", claims("carol", carol.Seq), t0, ticketrush.TokenState{Status: ticketrush.StatusWaiting, Position: 2}},
			{"old token of a fan now waiting", claims("carol", 1), t0, ticketrush.TokenState{Status: ticketrush.StatusExpired}},
			{"done", claims("dave", 9), t0, ticketrush.TokenState{Status: ticketrush.StatusDone}},
		}
		for _, tt := range tests {
			got, err := s.Line.TokenStatus(ctx, tt.give, tt.at)
			require.NoError(t, err, tt.name)
			assert.Equal(t, tt.want, got, tt.name)
		}
	})
}

func TestTick(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, concert("c1", func(q *ticketrush.QueueSettings) {
			q.ActiveCapacity = 3
			q.AdmitPerSecond = 2
			q.ActiveTTL = 10 * time.Second
			q.Paused = true
		}))
		for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
			_, err := s.Line.Join(ctx, "c1", u, t0)
			require.NoError(t, err)
		}
		r, err := s.Line.Tick(ctx, "c1", t0, 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Waiting: 5}, r, "paused: nobody admitted")

		q := ticketrush.DefaultQueueSettings()
		q.ActiveCapacity, q.AdmitPerSecond = 3, 2
		require.NoError(t, s.Configure(ctx, "c1", q, t0))
		r, err = s.Line.Tick(ctx, "c1", t0, 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 2, Waiting: 3, Active: 2}, r, "rate budget of 2")

		r, err = s.Line.Tick(ctx, "c1", t0.Add(500*time.Millisecond), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 1, Waiting: 2, Active: 3}, r, "half a second refills one")

		r, err = s.Line.Tick(ctx, "c1", t0.Add(5*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Waiting: 2, Active: 3}, r, "capacity 3 is full")

		st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{UserID: "u1", ConcertID: "c1", Seq: 1}, t0)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, st.Status, "u1 was first in line")
		assert.Equal(t, t0.Add(10*time.Second), st.ActiveUntil)

		r, err = s.Line.Tick(ctx, "c1", t0.Add(10*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.TickResult{Admitted: 2, Lapsed: 2, Waiting: 0, Active: 3}, r,
			"u1 and u2 lapse at their activeUntil; u4 and u5 take their slots")
		// The round wrote one event for its lapses and one for its admissions, each naming every fan.
		entries, err := c.Do(ctx, c.B().Xrange().Key(s.keys.Concert("c1").Events()).Start("-").End("+").Build()).AsXRange()
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(entries), 2)
		at := strconv.FormatInt(t0.Add(10*time.Second).UnixMilli(), 10)
		until := strconv.FormatInt(t0.Add(20*time.Second).UnixMilli(), 10)
		assert.Equal(t, []map[string]string{
			{"type": "queue.lapses", "users": "u1,u2", "seqs": "1,2", "at": at},
			{"type": "queue.admits", "users": "u4,u5", "seqs": "4,5", "until": until, "at": at},
		}, []map[string]string{entries[len(entries)-2].FieldValues, entries[len(entries)-1].FieldValues})
		for _, u := range []string{"u1", "u2"} {
			st, err := s.Line.TokenStatus(ctx, ticketrush.QueueClaims{UserID: u, ConcertID: "c1", Seq: uint64(u[1] - '0')}, t0.Add(10*time.Second))
			require.NoError(t, err)
			assert.Equal(t, ticketrush.StatusExpired, st.Status, "%s lapsed", u)
		}
		seqs, err := c.Do(ctx, c.B().Hgetall().Key(s.keys.Concert("c1").ActiveSeq()).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"u3": "3", "u4": "4", "u5": "5"}, seqs, "the lapsed fans' seqs are gone")

		snap, err := s.Line.Snapshot(ctx, "c1", 0, 10, t0.Add(10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, uint64(5), snap.Head)
		assert.Equal(t, uint64(5), snap.Admitted)

		_, err = s.Line.Tick(ctx, "nope", t0, 100)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)
	})
}

func TestTickTrimsLeaves(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, concert("c1", func(q *ticketrush.QueueSettings) { q.Paused = true }))
		for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
			s.Line.Join(ctx, "c1", u, t0)
		}
		s.Line.Leave(ctx, "c1", "u2", 2, t0)
		s.Line.Leave(ctx, "c1", "u4", 4, t0)
		snap, err := s.Line.Snapshot(ctx, "c1", 0, 10, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.Leave{{Seq: 2, Ordinal: 1}, {Seq: 4, Ordinal: 2}}, snap.Leaves)
		since, err := s.Line.Snapshot(ctx, "c1", 1, 10, t0)
		require.NoError(t, err)
		assert.Equal(t, []ticketrush.Leave{{Seq: 4, Ordinal: 2}}, since.Leaves, "only the leaves after the ordinal asked for")

		q := ticketrush.DefaultQueueSettings()
		require.NoError(t, s.Configure(ctx, "c1", q, t0))
		r, err := s.Line.Tick(ctx, "c1", t0, 2) // u1 and u3, passing u2's place
		require.NoError(t, err)
		assert.Equal(t, 2, r.Admitted)
		assert.EqualValues(t, 1, r.Waiting, "u5")
		snap, err = s.Line.Snapshot(ctx, "c1", 0, 10, t0)
		require.NoError(t, err)
		assert.Equal(t, uint64(3), snap.Head)
		assert.Equal(t, []ticketrush.Leave{{Seq: 4, Ordinal: 2}}, snap.Leaves, "seq 2 is behind the head and trimmed; 4 is not")
	})
}

func TestConfigureUnknown(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, _ rueidis.Client) {
		err := s.Configure(context.Background(), "nope", ticketrush.DefaultQueueSettings(), t0)
		assert.ErrorIs(t, err, ticketrush.ErrNotFound)
		snap, err := s.Line.Snapshot(context.Background(), "nope", 0, 10, t0)
		require.NoError(t, err)
		assert.False(t, snap.Found)
	})
}
