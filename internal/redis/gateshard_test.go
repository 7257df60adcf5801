package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// slotLog is a client that notes the hash slot of every key of the commands it sends while on.
type slotLog struct {
	rueidis.Client
	on    atomic.Bool
	mu    sync.Mutex
	slots map[int][]string // slot -> the commands that named a key in it
}

func (l *slotLog) note(cmd rueidis.Completed) {
	if !l.on.Load() {
		return
	}
	args := cmd.Commands()
	var keys []string
	switch strings.ToUpper(args[0]) {
	case "EVALSHA", "EVAL":
		n, _ := strconv.Atoi(args[2])
		keys = args[3 : 3+n]
	default:
		if len(args) > 1 {
			keys = args[1:2]
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		l.slots[slot(k)] = append(l.slots[slot(k)], args[0]+" "+k)
	}
}

func (l *slotLog) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	l.note(cmd)
	return l.Client.Do(ctx, cmd)
}

func (l *slotLog) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		l.note(cmd)
	}
	return l.Client.DoMulti(ctx, cmds...)
}

// TestHoldsTouchOnlyTheFansShard: once a round has admitted them, the holds and cancels of the fans of a
// line over shards send nothing to the concert's slot: the gate's steps run on each fan's shard, which
// keeps their token (written by the round's pop) and takes their show-up.
func TestHoldsTouchOnlyTheFansShard(t *testing.T) {
	c, prefix := dbtest.Redis(t)
	log := &slotLog{Client: c, slots: map[int][]string{}}
	s := NewStore(log, prefix, prometheus.NewRegistry())
	ctx := context.Background()
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.MaxHoldsPerUser = 2 }, users...)
	log.on.Store(true)
	for i, u := range users {
		r, _, err := s.Seats.Hold(ctx, fans[u], spreadSchedules[i%3], "VIP-"+itoa(1+i/3), 100, t0.Add(time.Second))
		require.NoError(t, err, u)
		_, err = s.Seats.Cancel(ctx, u, r.ID, t0.Add(2*time.Second))
		require.NoError(t, err, u)
		_, _, err = s.Seats.Hold(ctx, fans[u], spreadSchedules[i%3], "VIP-"+itoa(1+i/3), 100, t0.Add(3*time.Second))
		require.NoError(t, err, u)
	}
	log.on.Store(false)
	concert := slot(s.keys.Concert(cid).Cfg())
	assert.Empty(t, log.slots[concert], "no hold or cancel reaches the concert's slot")
	assert.NotEmpty(t, log.slots[slot(fanGate(t, s, "alice").key())], "alice's gate is her shard")
}

// TestGatedReadsTouchOnlyTheFansShard: the gated reads of ACTIVE fans of a line over shards (the token
// check alone, the seat map, the dates' counts) send nothing to the concert's slot: their shard checks
// the token and takes the show-up. A token the shard refuses is answered from the concert's slot, with its
// state: a fan who left reads EXPIRED, as does one who never joined.
func TestGatedReadsTouchOnlyTheFansShard(t *testing.T) {
	c, prefix := dbtest.Redis(t)
	log := &slotLog{Client: c, slots: map[int][]string{}}
	s := NewStore(log, prefix, prometheus.NewRegistry())
	ctx := context.Background()
	users := []string{"alice", "bob", "carol", "dave"}
	fans := spreadSale(t, s, nil, users...)
	_, _, err := s.Seats.Hold(ctx, fans["dave"], sB, "VIP-1", 100, t0.Add(time.Second))
	require.NoError(t, err)
	now := t0.Add(2 * time.Second)
	log.on.Store(true)
	for _, u := range users {
		st, err := s.Seats.Gate(ctx, fans[u], now)
		require.NoError(t, err, u)
		require.Equal(t, ticketrush.StatusActive, st.Status, u)
		want, err := s.Line.TokenStatus(ctx, fans[u], now)
		require.NoError(t, err)
		assert.Equal(t, want.ActiveUntil.UnixMilli(), st.ActiveUntil.UnixMilli(), "%s: the shard's activeUntil is the concert's", u)
		st, seats, err := s.Seats.GatedSeats(ctx, fans[u], sB, now)
		require.NoError(t, err, u)
		require.Equal(t, ticketrush.StatusActive, st.Status, u)
		assert.Equal(t, map[string]ticketrush.SeatStatus{"VIP-1": ticketrush.SeatHeld}, seats, u)
		st, counts, err := s.Seats.GatedScheduleCounts(ctx, fans[u], []string{sA, sB, sC}, now)
		require.NoError(t, err, u)
		require.Equal(t, ticketrush.StatusActive, st.Status, u)
		require.Len(t, counts, 3)
		assert.EqualValues(t, 1, counts[1].Taken, "%s: dave's hold of a seat of %s", u, sB)
	}
	log.on.Store(false)
	concert := slot(s.keys.Concert(cid).Cfg())
	assert.Empty(t, log.slots[concert], "no gated read of an ACTIVE fan reaches the concert's slot")
	assert.NotEmpty(t, log.slots[slot(fanGate(t, s, "alice").key())], "alice's reads are checked on her shard")

	_, err = s.Line.Leave(ctx, cid, "alice", fans["alice"].Seq, now)
	require.NoError(t, err)
	for who, c := range map[string]ticketrush.QueueClaims{"alice, who left": fans["alice"],
		"erin, who never joined": {UserID: "erin", ConcertID: cid, Seq: fans["carol"].Seq + 10}} {
		st, err := s.Seats.Gate(ctx, c, now)
		require.NoError(t, err, who)
		assert.Equal(t, ticketrush.StatusExpired, st.Status, who)
		st, _, err = s.Seats.GatedSeats(ctx, c, sB, now)
		require.NoError(t, err, who)
		assert.Equal(t, ticketrush.StatusExpired, st.Status, who)
	}
}

// TestShownInTheShardIsNotANoShow: a fan whose first hold their shard took before the no-show deadline is
// not expired by the rounds after it (the shard's mark reaches the concert's slot with the next round),
// nor is one who showed by a gated read (checked on their shard too) and holds past the deadline; one
// who never showed is expired once the deadline and its
// grace have passed, and their shard refuses their hold then.
func TestShownInTheShardIsNotANoShow(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, func(q *ticketrush.QueueSettings) {
			q.NoShow, q.MaxHoldsPerUser = 10*time.Second, 4
		}, "alice", "bob", "carol", "dave")
		_, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0.Add(5*time.Second))
		require.NoError(t, err, "alice shows up in her shard")
		for _, u := range []string{"carol", "dave"} {
			st, err := s.Seats.Gate(ctx, fans[u], t0.Add(5*time.Second))
			require.NoError(t, err)
			require.Equal(t, ticketrush.StatusActive, st.Status, "%s shows up by a gated read", u)
		}
		_, err = s.Line.Tick(ctx, cid, t0.Add(6*time.Second), 100)
		require.NoError(t, err, "a round reads alice's mark")
		_, _, err = s.Seats.Hold(ctx, fans["carol"], sB, "VIP-1", 100, t0.Add(11*time.Second))
		require.NoError(t, err, "carol holds past the deadline: her shard asks the concert's slot")

		r, err := s.Line.Tick(ctx, cid, t0.Add(20*time.Second), 100)
		require.NoError(t, err)
		assert.Equal(t, 1, r.NoShows, "bob alone")
		for user, want := range map[string]ticketrush.QueueStatus{"alice": ticketrush.StatusActive, "bob": ticketrush.StatusExpired,
			"carol": ticketrush.StatusActive, "dave": ticketrush.StatusActive} { // dave read, and did nothing else
			st, err := s.Line.TokenStatus(ctx, fans[user], t0.Add(20*time.Second))
			require.NoError(t, err)
			assert.Equal(t, want, st.Status, user)
		}
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sC, "VIP-1", 100, t0.Add(20*time.Second))
		assert.NoError(t, err, "alice holds on")
		_, _, err = s.Seats.Hold(ctx, fans["bob"], sC, "VIP-2", 100, t0.Add(20*time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "bob was a no-show")
	})
}

// TestALeaveEndsTheShardsToken: an ACTIVE fan of a line over shards who left cannot hold with that token,
// though their shard had it: the leave ends it there too, and a token the concert's slot answered before
// the leave is not kept after it.
func TestALeaveEndsTheShardsToken(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		fans := spreadSale(t, s, nil, "alice")
		_, _, err := s.Seats.Hold(ctx, fans["alice"], sA, "VIP-1", 100, t0)
		require.NoError(t, err)
		from, err := s.Line.Leave(ctx, cid, "alice", fans["alice"].Seq, t0.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, from)
		_, _, err = s.Seats.Hold(ctx, fans["alice"], sB, "VIP-1", 100, t0.Add(time.Second))
		assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "the leave is final on the shard too")

		g := fanGate(t, s, "alice")
		keys, args := g.gateApply([]gateStep{{at: g, kind: gateHoldStep, user: "alice", id: "r9", seq: fans["alice"].Seq,
			now: t0.Add(time.Second), given: t0.Add(time.Hour)}}, s.limit)
		msg, err := s.exec(ctx, s.gateApply, keys, args)
		require.NoError(t, err)
		items, err := msg.ToArray()
		require.NoError(t, err)
		code, _ := items[0].ToString()
		assert.Equal(t, "QUEUE_TOKEN_EXPIRED", code, "an answer the concert's slot gave before the leave keeps nothing")
	})
}

// TestAHoldBeforeItsPop: a fan whom a round admitted but whose shard's pop has not run yet holds: the
// shard, which has no token of theirs yet, asks the concert's slot and keeps what it answered.
func TestAHoldBeforeItsPop(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		spreadSale(t, s, func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 1 }, "alice")
		r, err := s.Line.Join(ctx, cid, "bob", t0)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusWaiting, r.Status)
		bob := ticketrush.QueueClaims{UserID: "bob", ConcertID: cid, Seq: r.Seq}
		_, err = s.Line.Leave(ctx, cid, "alice", 1, t0)
		require.NoError(t, err)
		admitOnly(t, s, cid, t0.Add(time.Second), readHeads(t, s, cid, 3))
		st, err := s.Line.TokenStatus(ctx, bob, t0.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, st.Status, "admitted, not popped")
		_, _, err = s.Seats.Hold(ctx, bob, sA, "VIP-1", 100, t0.Add(time.Second))
		require.NoError(t, err, "his shard asks the concert's slot")
		tok, err := c.Do(ctx, c.B().Hget().Key(fanGate(t, s, "bob").shard.Token()).Field("bob").Build()).ToString()
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(tok, utoa(r.Seq)+":"), "his shard keeps his token now: %s", tok)
	})
}
