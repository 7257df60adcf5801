package redis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestJoinGates holds queue_join's gates: the proof's single use, difficulty and expiry, the access
// code's owner, and the exemption of a fan who holds a live token; a refused join writes nothing.
func TestJoinGates(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		cc := concert("c1", func(q *ticketrush.QueueSettings) { q.JoinPowBits = 10; q.AccessCodeRequired = true })
		mustLoad(t, s, cc)
		require.NoError(t, s.AddAccessCodes(ctx, "c1", []string{"hash-a", "hash-b"}))
		proof := func(id string, bits int) ticketrush.JoinPass {
			return ticketrush.JoinPass{PowID: id, PowBits: bits, PowExpires: t0.Add(time.Minute), CodeHash: "hash-a"}
		}
		join := func(user string, p ticketrush.JoinPass) error {
			_, err := s.Line.JoinWith(ctx, "c1", user, p, t0)
			return err
		}
		tests := []struct {
			name string
			user string
			give ticketrush.JoinPass
			want error
		}{
			{"no code", "fan-1", ticketrush.JoinPass{PowID: "p0", PowBits: 10, PowExpires: t0.Add(time.Minute)}, ticketrush.ErrAccessCodeRequired},
			{"unknown code", "fan-1", ticketrush.JoinPass{CodeHash: "-"}, ticketrush.ErrAccessCodeInvalid},
			{"no proof", "fan-1", ticketrush.JoinPass{CodeHash: "hash-a"}, ticketrush.ErrPowRequired},
			{"proof that failed the check", "fan-1", ticketrush.JoinPass{PowInvalid: true, CodeHash: "hash-a"}, ticketrush.ErrPowInvalid},
			{"easier proof than asked", "fan-1", proof("p1", 9), ticketrush.ErrPowInvalid},
			{"expired proof", "fan-1", ticketrush.JoinPass{PowID: "p2", PowBits: 10, PowExpires: t0, CodeHash: "hash-a"}, ticketrush.ErrPowInvalid},
			{"valid", "fan-1", proof("p3", 10), nil},
			{"live token rejoins bare", "fan-1", ticketrush.JoinPass{}, nil},
			{"another user's code", "fan-2", proof("p4", 12), ticketrush.ErrAccessCodeInvalid},
			{"a used proof", "fan-2", ticketrush.JoinPass{PowID: "p3", PowBits: 10, PowExpires: t0.Add(time.Minute), CodeHash: "hash-b"}, ticketrush.ErrPowInvalid},
			{"second code, fresh proof", "fan-2", ticketrush.JoinPass{PowID: "p5", PowBits: 10, PowExpires: t0.Add(time.Minute), CodeHash: "hash-b"}, nil},
		}
		for _, tt := range tests {
			err := join(tt.user, tt.give)
			if tt.want == nil {
				assert.NoError(t, err, tt.name)
			} else {
				assert.ErrorIs(t, err, tt.want, tt.name)
			}
		}
		owners, err := c.Do(ctx, c.B().Hgetall().Key(s.keys.Concert("c1").AccessCodes()).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"hash-a": "fan-1", "hash-b": "fan-2"}, owners)
		// The refused proofs p0, p1, p2 and p4 were not burnt: refused joins write nothing.
		for _, id := range []string{"p0", "p1", "p2", "p4"} {
			n, err := c.Do(ctx, c.B().Exists().Key(s.keys.Concert("c1").PowUsed(id)).Build()).AsInt64()
			require.NoError(t, err)
			assert.Zero(t, n, id)
		}
		claims := 0
		for _, typ := range eventTypes(t, c, s.keys.Concert("c1").Events()) {
			if typ == "code.claim" {
				claims++
			}
		}
		assert.Equal(t, 2, claims, "one code.claim event per code")
	})
}

// TestJoinCodesOnShards: a line over shards claims access codes on the concert's slot (line_arrive, in
// its batch), each code for one fan: a join without a code or with an unknown one is refused in the
// fan's shard, another fan's code is refused, a live token rejoins without one, and a rejoin of a
// waiting fan keeps their place.
func TestJoinCodesOnShards(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, shardedConcert("c2", 4, func(q *ticketrush.QueueSettings) { q.AccessCodeRequired = true; q.ActiveCapacity = 1 }))
		require.NoError(t, s.AddAccessCodes(ctx, "c2", []string{"hash-a", "hash-b", "hash-c"}))
		join := func(user, code string) (ticketrush.JoinResult, error) {
			return s.Line.JoinWith(ctx, "c2", user, ticketrush.JoinPass{CodeHash: code}, t0)
		}
		_, err := join("fan-1", "")
		assert.ErrorIs(t, err, ticketrush.ErrAccessCodeRequired, "no code")
		_, err = join("fan-1", "-")
		assert.ErrorIs(t, err, ticketrush.ErrAccessCodeInvalid, "an unknown code")
		first, err := join("fan-1", "hash-a")
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusActive, first.Status, "the first fan, admitted at once")
		again, err := join("fan-1", "")
		require.NoError(t, err, "a live token rejoins bare")
		assert.Equal(t, ticketrush.JoinResult{Status: ticketrush.StatusActive, Seq: first.Seq, ActiveUntil: first.ActiveUntil}, again)
		_, err = join("fan-2", "hash-a")
		assert.ErrorIs(t, err, ticketrush.ErrAccessCodeInvalid, "another fan's code")
		waiting, err := join("fan-2", "hash-b")
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusWaiting, waiting.Status)
		back, err := join("fan-2", "hash-b")
		require.NoError(t, err, "their own code again")
		assert.Equal(t, waiting.Seq, back.Seq, "a rejoin keeps the place")
		owners, err := c.Do(ctx, c.B().Hgetall().Key(s.keys.Concert("c2").AccessCodes()).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"hash-a": "fan-1", "hash-b": "fan-2", "hash-c": ""}, owners)
	})
}
