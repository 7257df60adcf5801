package writebehind

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestOnSaleSurvivesFlushAllAndRestore empties Redis while a sale's pre-queue is open: after restore
// the seed (and so the commitment) is the one committed at creation, the entrants the record has are
// back, and the draw not yet run still runs at the opening, its places recorded in Postgres. Emptied
// again after the draw, restore brings back the same draw and keys file.
func TestOnSaleSurvivesFlushAllAndRestore(t *testing.T) {
	t.Parallel()
	s := newSale(t, dbtest.PrivateRedis(t), "tr", dbtest.Postgres(t), time.Minute)
	ctx := context.Background()
	run(t, s.worker(Config{}, prometheus.NewRegistry()))
	state := redis.NewStateMarker(s.rdb, s.prefix)

	// The opening is an hour away while the fans enter, however slow the machine; the services' clock
	// moves past it for the draw.
	opens := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	c, _, err := s.cat.Create(ctx, ticketrush.Concert{Title: "on-sale", Venue: "test", Queue: ticketrush.DefaultQueueSettings(),
		Schedules: []ticketrush.Schedule{{StartsAt: opens.Add(24 * time.Hour)}},
		Sections:  []ticketrush.Section{{Name: "R", Price: 700, Seats: 10}},
		Sale:      &ticketrush.Sale{PrequeueOpensAt: time.Now().Add(-time.Second).Truncate(time.Millisecond), OpensAt: opens}}, "")
	require.NoError(t, err)
	s.queue.EnableOnSale(s.store.Draws, s.cat.Sale)
	commitment := draw.Seed(c.Sale.Seed).Commitment()
	const n = 20
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("entrant-%02d", i)
		tk, _, err := s.queue.Join(ctx, users[i], c.ID)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusPrequeue, tk.Status)
	}
	// One more fan enters, leaves and enters again, another enters and leaves: the record keeps the first.
	again, _, err := s.queue.Join(ctx, "again", c.ID)
	require.NoError(t, err)
	require.NoError(t, s.queue.Leave(ctx, "again", again.Token))
	again, _, err = s.queue.Join(ctx, "again", c.ID)
	require.NoError(t, err)
	gone, _, err := s.queue.Join(ctx, "gone", c.ID)
	require.NoError(t, err)
	require.NoError(t, s.queue.Leave(ctx, "gone", gone.Token))
	users = append(users, "again")
	drainConcert(t, s, c.ID)

	require.NoError(t, s.rdb.Do(ctx, s.rdb.B().Flushall().Build()).Error())
	require.NoError(t, s.cat.Refresh(ctx)) // a running instance reloads its catalog meanwhile
	_, err = repair.Restore(ctx, s.rdb, s.db, s.prefix, false, time.Now())
	require.NoError(t, err)
	require.NoError(t, CheckWhole(ctx, state))

	k := s.store.Keys().Concert(c.ID)
	seedHex, err := s.rdb.Do(ctx, s.rdb.B().Hget().Key(k.Draw()).Field("seed").Build()).ToString()
	require.NoError(t, err)
	seed, err := draw.ParseSeed(seedHex)
	require.NoError(t, err)
	assert.Equal(t, commitment, seed.Commitment(), "the restored seed is the one committed at creation")
	concerts, err := s.db.Concerts(ctx)
	require.NoError(t, err)
	for _, rc := range concerts {
		if rc.ID == c.ID {
			require.NotNil(t, rc.Sale)
			assert.Equal(t, commitment, draw.Seed(rc.Sale.Seed).Commitment(), "the record keeps the seed")
		}
	}
	entrants, err := s.store.Draws.PrequeueSize(ctx, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, n+1, entrants, "the pre-queue's entrants are back, and only they")

	// The draw not yet run still runs at the opening.
	s.ahead.Store(int64(time.Until(opens) + time.Second))
	drawer := s.queue.NewDrawer(s.store.Draws, s.cat.IDs, s.cat.Sale, "drawer", prometheus.NewRegistry())
	eventually(t, 30*time.Second, "the draw is done", func() bool {
		_ = drawer.Tick(ctx)
		st, err := s.store.Draws.DrawState(ctx, c.ID)
		return err == nil && st.Drawn()
	})
	order := seed.Draw(c.ID, users)
	st, err := s.store.Draws.DrawState(ctx, c.ID)
	require.NoError(t, err)
	assert.EqualValues(t, n+1, st.Entrants)
	assert.Equal(t, draw.DigestOf(order), st.Digest, "the draw is that of the committed seed and every entrant")
	var before bytes.Buffer
	require.NoError(t, s.store.Draws.WriteDrawKeys(ctx, c.ID, st.Entrants, time.Second, &before))

	// The record has the draw and every place, and agrees with Redis.
	drainConcert(t, s, c.ID)
	s.reconcile()
	rec, ok, err := s.db.Draw(ctx, c.ID)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, st.Digest, rec.Digest)
	assert.Equal(t, seed[:], rec.Seed)
	places, err := s.db.DrawPlaces(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, places, n+1)
	for i, p := range places {
		assert.Equal(t, order[i].User, p.UserID, "place %d", p.Place)
		assert.EqualValues(t, i+1, p.Place)
	}

	// Emptied after the draw: restore brings the same draw and keys back.
	require.NoError(t, s.rdb.Do(ctx, s.rdb.B().Flushall().Build()).Error())
	_, err = repair.Restore(ctx, s.rdb, s.db, s.prefix, false, time.Now())
	require.NoError(t, err)
	restored, err := s.store.Draws.DrawState(ctx, c.ID)
	require.NoError(t, err)
	assert.True(t, restored.Drawn())
	assert.Equal(t, st.Digest, restored.Digest)
	var after bytes.Buffer
	require.NoError(t, s.store.Draws.WriteDrawKeys(ctx, c.ID, restored.Entrants, time.Second, &after))
	assert.Equal(t, before.String(), after.String())
}

// drainConcert waits until the worker has written every event of a concert's stream.
func drainConcert(t *testing.T, s *sale, concertID string) {
	t.Helper()
	eventually(t, 30*time.Second, "the write-behind drains", func() bool {
		n, _, err := Backlog(context.Background(), s.rdb, s.prefix, "", []string{concertID})
		return err == nil && n == 0
	})
}
