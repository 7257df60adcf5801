package queue_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
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

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// placeCounter is a drawer's DrawStore that counts the entrants each applied batch placed, and can
// kill its drawer (cancel its context) after a number of applied batches.
type placeCounter struct {
	queue.DrawStore
	placed    *atomic.Int64
	killAfter int
	kill      context.CancelFunc
	applied   int
	noLease   bool // the lease excludes nobody: as if each drawer's lease had lapsed while it was paused
}

func (p *placeCounter) LeaseDraw(ctx context.Context, concertID, owner string, ttl time.Duration) (bool, error) {
	if p.noLease {
		return true, nil
	}
	return p.DrawStore.LeaseDraw(ctx, concertID, owner, ttl)
}

func (p *placeCounter) PlaceDraw(ctx context.Context, concertID string, from int64, batch []draw.Entrant, digest string, now time.Time) (int64, bool, error) {
	next, applied, err := p.DrawStore.PlaceDraw(ctx, concertID, from, batch, digest, now)
	if applied {
		p.placed.Add(int64(len(batch)))
		p.applied++
		if p.kill != nil && p.applied == p.killAfter {
			p.kill() // the drawer dies between two batches
		}
	}
	return next, applied, err
}

// TestDrawExactlyOnceWithSeveralSchedulersAndACrash draws a pre-queue of 2,500 with one drawer killed
// after its first batch and then three drawers placing at once to finish it: every entrant is placed exactly once,
// in draw order, nobody is admitted before the draw is complete, and nobody twice after.
func TestDrawExactlyOnceWithSeveralSchedulersAndACrash(t *testing.T) {
	for _, shards := range []int{1, 5} { // a line of one slot, and one over five shards
		t.Run(fmt.Sprintf("lineShards=%d", shards), func(t *testing.T) { drawExactlyOnce(t, shards) })
	}
}

func drawExactlyOnce(t *testing.T, shards int) {
	const n = 2500
	rc, prefix := dbtest.Redis(t)
	store := redis.NewStore(rc, prefix, prometheus.NewRegistry())
	t0 := time.Now().Truncate(time.Millisecond)
	clk := dbtest.NewClock(t0.Add(time.Second))
	reg := prometheus.NewRegistry()
	svc := queue.NewService(store.Line, auth.NewQueueTokens([]byte(queueSecret)), clk.Now, quietLog(), reg)
	seed, err := draw.NewSeed()
	require.NoError(t, err)
	sale := &ticketrush.Sale{PrequeueOpensAt: t0, OpensAt: t0.Add(time.Minute), Seed: seed}
	c := ticketrush.Concert{ID: ticketrush.NewID(), Title: "T", Venue: "V", Sale: sale,
		Queue: settings(func(q *ticketrush.QueueSettings) {
			q.ActiveCapacity, q.AdmitPerSecond, q.LineShards = 100_000, 100_000, shards
		}),
		Sections:  []ticketrush.Section{{Name: "R", Price: 1000, Seats: 10}},
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID(), StartsAt: t0.Add(24 * time.Hour)}}}
	ctx := context.Background()
	_, err = store.LoadConcert(ctx, c, clk.Now())
	require.NoError(t, err)
	sales := func(id string) *ticketrush.Sale {
		if id == c.ID {
			return sale
		}
		return nil
	}
	svc.EnableOnSale(store.Draws, sales)
	concerts := func() []string { return []string{c.ID} }

	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%04d", i)
		tk, _, err := svc.Join(ctx, users[i], c.ID)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusPrequeue, tk.Status)
	}
	clk.Set(sale.OpensAt.Add(time.Second))
	sched := svc.NewScheduler(store.Line, concerts)

	// The first drawer dies after one batch.
	placed := &atomic.Int64{}
	dying, kill := context.WithCancel(ctx)
	first := &placeCounter{DrawStore: store.Draws, placed: placed, killAfter: 1, kill: kill}
	d1 := svc.NewDrawer(first, concerts, sales, "drawer-1", prometheus.NewRegistry()).WithLease(300 * time.Millisecond)
	require.ErrorIs(t, d1.Run(dying, c.ID, *sale), context.Canceled)
	st, err := store.Draws.DrawState(ctx, c.ID)
	require.NoError(t, err)
	require.True(t, st.Sealed)
	require.False(t, st.Drawn(), "the draw is not complete after one batch")
	require.EqualValues(t, 1000, st.Placed)
	require.NoError(t, sched.Tick(ctx))
	r, err := store.Line.Tick(ctx, c.ID, clk.Now(), 1000)
	require.NoError(t, err)
	require.Zero(t, r.Admitted, "nobody is admitted before the draw is complete")
	require.Zero(t, r.Active)

	// Three drawers race to finish it, placing at once: the lease, which only spares duplicate work,
	// excludes none of them here; the cursor alone keeps each batch to one placing.
	var wg sync.WaitGroup
	loops, stop := context.WithCancel(ctx)
	defer stop()
	for i := range 3 {
		ds := &placeCounter{DrawStore: store.Draws, placed: placed, noLease: true}
		d := svc.NewDrawer(ds, concerts, sales, fmt.Sprintf("drawer-%d", i+2), prometheus.NewRegistry()).WithLease(300 * time.Millisecond)
		wg.Go(func() { d.RunLoop(loops, 20*time.Millisecond) })
	}
	// Admission ticks run all along: they must admit nobody until the draw is complete.
	var early atomic.Int64
	wg.Go(func() {
		for loops.Err() == nil {
			r, err := store.Line.Tick(ctx, c.ID, clk.Now(), 1000)
			if err != nil || r.Admitted == 0 {
				continue
			}
			// Drawn only ever goes from false to true: not drawn after a tick that admitted means
			// the tick admitted before the draw was complete.
			if after, err := store.Draws.DrawState(ctx, c.ID); err == nil && !after.Drawn() {
				early.Add(1)
			}
			return
		}
	})
	// Drawn, and the last batch's reply counted: stopping the loops while that reply is on its way
	// would cancel the call after its script ran, and the count would miss a batch that was applied.
	require.Eventually(t, func() bool {
		st, err := store.Draws.DrawState(ctx, c.ID)
		return err == nil && st.Drawn() && placed.Load() >= n
	}, 60*time.Second, 20*time.Millisecond)
	stop()
	wg.Wait()
	assert.Zero(t, early.Load(), "admitted before the draw was complete")
	assert.EqualValues(t, n, placed.Load(), "every batch was applied exactly once")

	// The line: every entrant once, at their place in draw order (waiting, or admitted already by the
	// watcher above with the seq of their place).
	order := draw.Seed(seed).Draw(c.ID, users)
	k := store.Keys().Concert(c.ID)
	lines := [][2]string{{k.Places(), k.Drawn()}} // each line's places and its entrants' list
	if shards > 1 {
		lines = lines[:0]
		for i := range shards {
			lines = append(lines, [2]string{k.Shard(i).Places(), k.Shard(i).Drawn()})
		}
	}
	seqOf := map[string]int64{}
	for _, line := range lines {
		places, err := rc.Do(ctx, rc.B().Hgetall().Key(line[0]).Build()).AsStrMap()
		require.NoError(t, err)
		entries, err := rc.Do(ctx, rc.B().Lrange().Key(line[1]).Start(0).Stop(-1).Build()).AsStrSlice()
		require.NoError(t, err)
		listed, last := map[string]bool{}, int64(0)
		for _, e := range entries { // in seq order; every waiting fan there at their seq
			seq, user, _ := strings.Cut(e, "|")
			s, err := strconv.ParseInt(seq, 10, 64)
			require.NoError(t, err)
			require.Greater(t, s, last, "the entrants' list in seq order at %s", e)
			last, listed[user+"|"+seq] = s, true
		}
		for u, v := range places {
			_, dup := seqOf[u]
			require.False(t, dup, "%s waits in two places", u)
			require.True(t, listed[u+"|"+v], "%s waits at %s but the line's list has no such entry", u, v)
			seqOf[u], err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
		}
	}
	admittedSeqs, err := rc.Do(ctx, rc.B().Hgetall().Key(k.ActiveSeq()).Build()).AsStrMap()
	require.NoError(t, err)
	for u, v := range admittedSeqs {
		_, dup := seqOf[u]
		require.False(t, dup, "%s is both waiting and admitted", u)
		seqOf[u], err = strconv.ParseInt(v, 10, 64)
		require.NoError(t, err)
	}
	require.Len(t, seqOf, n)
	misplaced := 0
	for i, e := range order {
		if seqOf[e.User] != int64(i+1) {
			misplaced++
		}
	}
	assert.Zero(t, misplaced, "entrants not at their place in draw order")
	st, err = store.Draws.DrawState(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, draw.DigestOf(order), st.Digest)

	// A pre-queue token, polled after the draw: one Redis round trip learns the place, then the view
	// answers (an entrant still waiting: the last of the draw).
	last := order[n-1].User
	old := auth.NewQueueTokens([]byte(queueSecret)).Sign(auth.NewClaims(c.ID, last, 0))
	require.NoError(t, svc.Refresh(ctx))
	redisPolls := func() float64 {
		return counter(t, reg, "ticketrush_queue_polls_total", map[string]string{"source": "redis"})
	}
	before := redisPolls()
	for range 5 {
		tk, err := svc.Status(ctx, last, old)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusWaiting, tk.Status)
		assert.Equal(t, order[n-1].Key.Hex(), tk.DrawKey)
		assert.NotEqual(t, old, tk.Token, "the poll hands back the token of the place")
	}
	assert.Equal(t, before+1, redisPolls(), "polls of an old pre-queue token cost one Redis round trip, then none")

	// Admission now takes the head of the draw, each fan once (the watcher above may have begun).
	admitted, err := rc.Do(ctx, rc.B().Zcard().Key(store.Keys().Concert(c.ID).Active()).Build()).AsInt64()
	require.NoError(t, err)
	for admitted < n {
		r, err := store.Line.Tick(ctx, c.ID, clk.Now(), 1000)
		require.NoError(t, err)
		require.Positive(t, r.Admitted)
		admitted += int64(r.Admitted)
	}
	assert.EqualValues(t, n, admitted)
	active, err := rc.Do(ctx, rc.B().Zcard().Key(store.Keys().Concert(c.ID).Active()).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, n, active, "nobody admitted twice: the active set holds each entrant once")
	tk, err := svc.Status(ctx, order[0].User, auth.NewQueueTokens([]byte(queueSecret)).Sign(auth.NewClaims(c.ID, order[0].User, 0)))
	require.NoError(t, err)
	assert.Equal(t, ticketrush.StatusActive, tk.Status, "a pre-queue token follows its entrant into the active set")
}

// TestLeavePrequeue: a fan leaves the pre-queue with their PREQUEUE token before the seal (and may
// enter again); once sealed, the token leaves the place the draw gave them.
func TestLeavePrequeue(t *testing.T) {
	rc, prefix := dbtest.Redis(t)
	s := newSale(t, rc, prefix)
	store, svc, clk, c, sales, sale, ctx := s.store, s.svc, s.clk, s.c, s.sales, s.c.Sale, context.Background()

	size := func() int64 {
		n, err := store.Draws.PrequeueSize(ctx, c.ID)
		require.NoError(t, err)
		return n
	}
	ann, _, err := svc.Join(ctx, "ann", c.ID)
	require.NoError(t, err)
	bob, _, err := svc.Join(ctx, "bob", c.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, size())
	require.NoError(t, svc.Leave(ctx, "ann", ann.Token))
	assert.EqualValues(t, 1, size(), "ann left the pre-queue")
	st, err := svc.Status(ctx, "ann", ann.Token)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.StatusExpired, st.Status)
	again, created, err := svc.Join(ctx, "ann", c.ID)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, ticketrush.StatusPrequeue, again.Status)
	assert.EqualValues(t, 2, size())

	clk.Set(sale.OpensAt.Add(time.Second))
	d := svc.NewDrawer(store.Draws, func() []string { return []string{c.ID} }, sales, "d", prometheus.NewRegistry())
	require.NoError(t, d.Run(ctx, c.ID, *sale))
	require.NoError(t, svc.Leave(ctx, "bob", bob.Token))
	assert.EqualValues(t, 2, size(), "the sealed pre-queue keeps its entrants")
	wait, err := rc.Do(ctx, rc.B().Hlen().Key(store.Keys().Concert(c.ID).Places()).Build()).AsInt64()
	require.NoError(t, err)
	assert.EqualValues(t, 1, wait, "bob left the place the draw gave him")
}

// TestLeaveBetweenSealAndPlace: a pre-queue fan who leaves after the opening sealed the pre-queue but
// before the draw placed them has no place to leave yet. The leave does not answer as if done while the
// fan is still to be placed (and then admitted): it waits for the place, and gives up with
// ErrUnavailable (503, retry) when its deadline comes first. Once placed, the same leave takes the fan
// out, and both their tokens read EXPIRED.
func TestLeaveBetweenSealAndPlace(t *testing.T) { onLines(t, leaveBetweenSealAndPlace) }

// onLines runs test on a sale whose line is one slot, and on one whose line has 4 shards.
func onLines(t *testing.T, test func(*testing.T, saleSetup)) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			rc, prefix := dbtest.Redis(t)
			test(t, newSaleOfShards(t, rc, prefix, shards))
		})
	}
}

func leaveBetweenSealAndPlace(t *testing.T, s saleSetup) {
	rc, store, svc, clk, c, sales, sale, ctx := s.rc, s.store, s.svc, s.clk, s.c, s.sales, s.c.Sale, context.Background()
	shards := c.Queue.LineShards

	ann, _, err := svc.Join(ctx, "ann", c.ID)
	require.NoError(t, err)
	_, _, err = svc.Join(ctx, "bob", c.ID)
	require.NoError(t, err)
	clk.Set(sale.OpensAt.Add(time.Second))
	_, err = store.Draws.SealDraw(ctx, c.ID, clk.Now())
	require.NoError(t, err)

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = svc.Leave(short, "ann", ann.Token)
	cancel()
	require.ErrorIs(t, err, ticketrush.ErrUnavailable, "a leave before ann's place is not answered as done")

	left := make(chan error, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		left <- svc.Leave(lctx, "ann", ann.Token)
	}()
	d := svc.NewDrawer(store.Draws, func() []string { return []string{c.ID} }, sales, "d", prometheus.NewRegistry())
	require.NoError(t, d.Run(ctx, c.ID, *sale))
	require.NoError(t, <-left, "the leave, once ann has a place")

	st, err := svc.Status(ctx, "ann", ann.Token)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.StatusExpired, st.Status, "ann's pre-queue token after the leave")
	if st.Token != ann.Token { // the fresh token of her place, if the poll handed one back
		fresh, err := svc.Status(ctx, "ann", st.Token)
		require.NoError(t, err)
		assert.Equal(t, ticketrush.StatusExpired, fresh.Status, "ann's token of her place after the leave")
	}
	var wait int64
	for sh := range shards {
		w := store.Keys().Concert(c.ID).Places()
		if shards > 1 {
			w = store.Keys().Concert(c.ID).Shard(sh).Places()
		}
		n, err := rc.Do(ctx, rc.B().Hlen().Key(w).Build()).AsInt64()
		require.NoError(t, err)
		wait += n
	}
	assert.EqualValues(t, 1, wait, "only bob waits: ann is not in line")
}

// TestPrequeueTokenOnceSoldOut: once every seat is sold, a pre-queue token reads what the token of the
// fan's place reads ("both work"): SOLD_OUT while the fan waits (the line is closed), ACTIVE while the fan
// is ACTIVE, on the instance that knows the fan's place and on one that does not.
// drawnOneWaiting enters ann and bob into the sale's pre-queue, draws it, and admits the first of the
// draw (the other waits); it returns their pre-queue tokens.
func drawnOneWaiting(t *testing.T, s saleSetup) map[string]string {
	t.Helper()
	ctx := context.Background()
	old := map[string]string{}
	for _, u := range []string{"ann", "bob"} {
		tk, _, err := s.svc.Join(ctx, u, s.c.ID)
		require.NoError(t, err)
		old[u] = tk.Token
	}
	s.clk.Set(s.c.Sale.OpensAt.Add(time.Second))
	d := s.svc.NewDrawer(s.store.Draws, func() []string { return []string{s.c.ID} }, s.sales, "d", prometheus.NewRegistry())
	require.NoError(t, d.Run(ctx, s.c.ID, *s.c.Sale))
	r, err := s.store.Line.Tick(ctx, s.c.ID, s.clk.Now(), 1) // the first of the draw is admitted, the other waits
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Admitted)
	return old
}

func TestPrequeueTokenOnceSoldOut(t *testing.T) {
	rc, prefix := dbtest.Redis(t)
	s := newSale(t, rc, prefix)
	store, svc, clk, c, sales, ctx := s.store, s.svc, s.clk, s.c, s.sales, context.Background()
	old := drawnOneWaiting(t, s)
	fresh := map[string]ticketrush.Ticket{}
	for u, tok := range old {
		tk, err := svc.Status(ctx, u, tok) // this instance learns both places
		require.NoError(t, err)
		fresh[u] = tk
	}
	activeFan, waitingFan := "ann", "bob"
	if fresh["bob"].Status == ticketrush.StatusActive {
		activeFan, waitingFan = "bob", "ann"
	}
	require.Equal(t, ticketrush.StatusActive, fresh[activeFan].Status)
	require.Equal(t, ticketrush.StatusWaiting, fresh[waitingFan].Status)

	// Sold out, as the last sale marks it (the inventory's flag), seen by a refresh of the view.
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(store.Keys().Concert(c.ID).Inventory()).FieldValue().
		FieldValue("soldout", "1").Build()).Error())
	other := queue.NewService(store.Line, auth.NewQueueTokens([]byte(queueSecret)), clk.Now, quietLog(), prometheus.NewRegistry())
	other.EnableOnSale(store.Draws, sales)
	for name, instance := range map[string]*queue.Service{"the instance that knows the places": svc, "another instance": other} {
		require.NoError(t, instance.Refresh(ctx))
		for _, tok := range []string{old[activeFan], fresh[activeFan].Token} {
			tk, err := instance.Status(ctx, activeFan, tok)
			require.NoError(t, err)
			assert.Equal(t, ticketrush.StatusActive, tk.Status, "%s: the ACTIVE fan's token (pre-queue: %v)", name, tok == old[activeFan])
		}
		for _, tok := range []string{old[waitingFan], fresh[waitingFan].Token} {
			tk, err := instance.Status(ctx, waitingFan, tok)
			require.NoError(t, err)
			assert.Equal(t, ticketrush.StatusSoldOut, tk.Status, "%s: the waiting fan's token (pre-queue: %v)", name, tok == old[waitingFan])
		}
	}
}

// TestPrequeueTokenOfAFinishedFan: a pre-queue token reads what the token of the fan's place reads
// ("both work") after the fan has finished too, on an instance that never saw the fan's place: DONE
// for a fan who paid their last hold (it read EXPIRED), EXPIRED for a fan who left their place, and
// EXPIRED for a fan who left the pre-queue before its seal and was never drawn (whose gated calls are
// refused at once; the others' stand for their place's token, as before they finished).
func TestPrequeueTokenOfAFinishedFan(t *testing.T) { onLines(t, prequeueTokenOfAFinishedFan) }

func prequeueTokenOfAFinishedFan(t *testing.T, s saleSetup) {
	rc, store, svc, clk, c, sales, sale, ctx := s.rc, s.store, s.svc, s.clk, s.c, s.sales, s.c.Sale, context.Background()
	old := map[string]string{}
	for _, u := range []string{"ann", "bob", "cat"} {
		tk, _, err := svc.Join(ctx, u, c.ID)
		require.NoError(t, err)
		old[u] = tk.Token
	}
	require.NoError(t, svc.Leave(ctx, "cat", old["cat"])) // before the seal: never drawn
	clk.Set(sale.OpensAt.Add(time.Second))
	d := svc.NewDrawer(store.Draws, func() []string { return []string{c.ID} }, sales, "d", prometheus.NewRegistry())
	require.NoError(t, d.Run(ctx, c.ID, *sale))
	for admitted := 0; admitted < 2; {
		r, err := store.Line.Tick(ctx, c.ID, clk.Now(), 2)
		require.NoError(t, err)
		require.Positive(t, r.Admitted)
		admitted += r.Admitted
	}
	seqs := map[string]uint64{}
	for _, u := range []string{"ann", "bob"} {
		tk, err := svc.Status(ctx, u, old[u])
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusActive, tk.Status, u)
		claims, err := auth.NewQueueTokens([]byte(queueSecret)).Verify(tk.Token)
		require.NoError(t, err)
		seqs[u] = claims.Seq
	}
	// ann finishes as a sale leaves a fan who paid their last hold; bob leaves his place.
	k := store.Keys().Concert(c.ID)
	for _, cmd := range []rueidis.Completed{
		rc.B().Zrem().Key(k.Active()).Member("ann").Build(),
		rc.B().Hdel().Key(k.ActiveSeq()).Field("ann").Build(),
		rc.B().Sadd().Key(k.Done()).Member(strconv.FormatUint(seqs["ann"], 10)).Build(),
	} {
		require.NoError(t, rc.Do(ctx, cmd).Error())
	}
	require.NoError(t, svc.Leave(ctx, "bob", old["bob"]))

	other := queue.NewService(store.Line, auth.NewQueueTokens([]byte(queueSecret)), clk.Now, quietLog(), prometheus.NewRegistry())
	other.EnableOnSale(store.Draws, sales)
	want := map[string]ticketrush.QueueStatus{"ann": ticketrush.StatusDone, "bob": ticketrush.StatusExpired, "cat": ticketrush.StatusExpired}
	for range 2 { // the second round is answered from what the first learnt
		for u, st := range want {
			tk, err := other.Status(ctx, u, old[u])
			require.NoError(t, err)
			assert.Equal(t, st, tk.Status, "%s's pre-queue token", u)
			claims, err := other.Verify(ctx, u, c.ID, old[u])
			if u == "cat" {
				assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "cat's gated call: no place")
			} else if assert.NoError(t, err) {
				assert.Equal(t, seqs[u], claims.Seq, "%s's gated call stands for the place's token, which the gate refuses", u)
			}
		}
	}
}

// TestPrequeueTokenPollIsASignOfLife: polling with either token of a drawn entrant ("both work") counts
// against abandonment (docs/api.md, "Inventory, abandonment and no-shows"): the first poll of a pre-queue
// token on an instance that has not seen the fan's place (it asks Redis for it) marks the fan seen, as
// every later poll does. Without it, a fan whose only poll came that way was dropped as silent when their
// turn came.
func TestPrequeueTokenPollIsASignOfLife(t *testing.T) {
	rc, prefix := dbtest.Redis(t)
	s := newSale(t, rc, prefix)
	store, clk, c, sales, ctx := s.store, s.clk, s.c, s.sales, context.Background()
	old := drawnOneWaiting(t, s)

	clk.Advance(10 * time.Second)
	other := queue.NewService(store.Line, auth.NewQueueTokens([]byte(queueSecret)), clk.Now, quietLog(), prometheus.NewRegistry())
	other.EnableOnSale(store.Draws, sales)
	require.NoError(t, other.Refresh(ctx))
	waiting := 0
	for u, tok := range old {
		tk, err := other.Status(ctx, u, tok) // the first poll of the old token on this instance
		require.NoError(t, err)
		if tk.Status != ticketrush.StatusWaiting {
			continue
		}
		waiting++
		claims, err := other.Verify(ctx, u, c.ID, tk.Token)
		require.NoError(t, err)
		require.NoError(t, other.FlushLiveness(ctx))
		seen, err := rc.Do(ctx, rc.B().Get().Key(store.Keys().Concert(c.ID).Seen()).Build()).ToString()
		if !rueidis.IsRedisNil(err) {
			require.NoError(t, err)
		}
		assert.Equal(t, clk.Now().UnixMilli(), lastSeen(seen, claims.Seq).UnixMilli(), "%s's poll with the pre-queue token marked them seen", u)
	}
	assert.Equal(t, 1, waiting)
}

// TestDrawReadWhileAnotherPlaces: two drawers at once on a pre-queue read in pages. The first draws,
// places a batch and pauses; its lease lapses; the second takes the lease and pages through the
// entrants, and between two of its pages the first wakes up and places its next batch (which, on a line
// over shards, rewrites its entrants' scores in their shards' pre-queues), then pauses for good. The
// second finishes the draw. Whoever placed what, the published keys are exactly the entrants' keys, each
// once, in draw order, the digest is theirs, and every entrant waits at the place of their key.
func TestDrawReadWhileAnotherPlaces(t *testing.T) { onLines(t, drawReadWhileAnotherPlaces) }

// pausingDrawer is the first drawer's DrawStore: its first batch goes through; before its second it
// says so on paused and waits for resume, then says placed once that batch is in; before its third it
// waits for its context to end.
type pausingDrawer struct {
	queue.DrawStore
	calls                   int
	paused, resume, placed2 chan struct{}
}

func (p *pausingDrawer) PlaceDraw(ctx context.Context, concertID string, from int64, batch []draw.Entrant, digest string, now time.Time) (int64, bool, error) {
	p.calls++
	switch p.calls {
	case 1:
		return p.DrawStore.PlaceDraw(ctx, concertID, from, batch, digest, now)
	case 2:
		close(p.paused)
		<-p.resume
		defer close(p.placed2)
		return p.DrawStore.PlaceDraw(ctx, concertID, from, batch, digest, now)
	}
	<-ctx.Done()
	return 0, false, ctx.Err()
}

// interruptedReader is the second drawer's DrawStore: after its first page of entrants it lets the
// first drawer place its batch, and reads on once that batch is in.
type interruptedReader struct {
	queue.DrawStore
	pages           int
	resume, placed2 chan struct{}
}

func (r *interruptedReader) Entrants(ctx context.Context, concertID, cursor string, count int64) ([]string, string, error) {
	users, next, err := r.DrawStore.Entrants(ctx, concertID, cursor, count)
	if r.pages++; r.pages == 1 {
		close(r.resume)
		<-r.placed2
	}
	return users, next, err
}

func drawReadWhileAnotherPlaces(t *testing.T, s saleSetup) {
	const n, page = 2500, 300 // three batches of 1,000 (the last short); pages smaller than a shard's pre-queue
	rc, store, svc, clk, c, sales, sale, ctx := s.rc, s.store, s.svc, s.clk, s.c, s.sales, s.c.Sale, context.Background()
	users := make([]string, n)
	for i := range users {
		if i%3 == 0 {
			clk.Advance(time.Millisecond) // entry times in runs of three (a shard's runs shorter)
		}
		users[i] = fmt.Sprintf("u%04d", i)
		tk, _, err := svc.Join(ctx, users[i], c.ID)
		require.NoError(t, err)
		require.Equal(t, ticketrush.StatusPrequeue, tk.Status)
	}
	clk.Set(sale.OpensAt.Add(time.Second))
	concerts := func() []string { return []string{c.ID} }

	first := &pausingDrawer{DrawStore: store.Draws, paused: make(chan struct{}), resume: make(chan struct{}), placed2: make(chan struct{})}
	d1 := svc.NewDrawer(first, concerts, sales, "drawer-1", prometheus.NewRegistry()).WithReadBatch(page)
	running, stop := context.WithCancel(ctx)
	defer stop()
	done1 := make(chan error, 1)
	go func() { done1 <- d1.Run(running, c.ID, *sale) }()
	select {
	case <-first.paused:
	case err := <-done1:
		t.Fatalf("the first drawer ended before its second batch: %v", err)
	}
	// The first drawer's lease lapses while it is paused.
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(store.Keys().Concert(c.ID).DrawLock()).Build()).Error())

	second := &interruptedReader{DrawStore: store.Draws, resume: first.resume, placed2: first.placed2}
	d2 := svc.NewDrawer(second, concerts, sales, "drawer-2", prometheus.NewRegistry()).WithReadBatch(page)
	require.NoError(t, d2.Run(ctx, c.ID, *sale))
	require.Greater(t, second.pages, 2, "the second drawer read the entrants in several pages")
	stop()
	require.ErrorIs(t, <-done1, context.Canceled)

	order := draw.Seed(sale.Seed).Draw(c.ID, users)
	st, err := store.Draws.DrawState(ctx, c.ID)
	require.NoError(t, err)
	require.True(t, st.Drawn())
	require.EqualValues(t, n, st.Entrants)
	var keys strings.Builder
	require.NoError(t, store.Draws.WriteDrawKeys(ctx, c.ID, st.Entrants, time.Second, &keys))
	lines := strings.Split(strings.TrimSuffix(keys.String(), "\n"), "\n")
	require.Equal(t, n, len(lines), "the keys file's lines")
	wrong, firstWrong := 0, 0
	for i, e := range order {
		if lines[i] != e.Key.Hex() {
			if wrong++; wrong == 1 {
				firstWrong = i + 1
			}
		}
	}
	assert.Zero(t, wrong, "keys in the file that are not the entrant's of their place (the first on line %d)", firstWrong)
	assert.Equal(t, draw.DigestOf(order), st.Digest, "the published digest is the entrants'")

	k := store.Keys().Concert(c.ID)
	waits := []string{k.Places()}
	if c.Queue.LineShards > 1 {
		waits = waits[:0]
		for i := range c.Queue.LineShards {
			waits = append(waits, k.Shard(i).Places())
		}
	}
	seqOf := map[string]string{}
	for _, places := range waits {
		places, err := rc.Do(ctx, rc.B().Hgetall().Key(places).Build()).AsStrMap()
		require.NoError(t, err)
		maps.Copy(seqOf, places)
	}
	require.Equal(t, n, len(seqOf), "every entrant waits, once")
	misplaced := 0
	for i, e := range order {
		if seqOf[e.User] != strconv.FormatInt(st.Base+int64(i)+1, 10) {
			misplaced++
		}
	}
	assert.Zero(t, misplaced, "entrants not at the place of their key")
}

// TestDrawPlacesNoWrongRead: a drawer whose read of the entrants comes back with the right count but
// one entrant twice and another missing places nothing (the next run reads again): it would publish
// keys that are not the entrants'.
func TestDrawPlacesNoWrongRead(t *testing.T) {
	rc, prefix := dbtest.Redis(t)
	s := newSale(t, rc, prefix)
	store, svc, clk, c, sales, sale, ctx := s.store, s.svc, s.clk, s.c, s.sales, s.c.Sale, context.Background()
	for _, u := range []string{"ann", "bob", "cat", "dan", "eve"} {
		_, _, err := svc.Join(ctx, u, c.ID)
		require.NoError(t, err)
	}
	clk.Set(sale.OpensAt.Add(time.Second))
	d := svc.NewDrawer(repeatingReader{store.Draws}, func() []string { return []string{c.ID} }, sales, "d", prometheus.NewRegistry())
	err := d.Run(ctx, c.ID, *sale)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read 4 entrants, sealed with 5")
	st, err := store.Draws.DrawState(ctx, c.ID)
	require.NoError(t, err)
	assert.Zero(t, st.Placed, "nobody placed")
	assert.False(t, st.Drawn())
}

// repeatingReader reads each page of entrants with its last one replaced by its first.
type repeatingReader struct{ queue.DrawStore }

func (r repeatingReader) Entrants(ctx context.Context, concertID, cursor string, count int64) ([]string, string, error) {
	users, next, err := r.DrawStore.Entrants(ctx, concertID, cursor, count)
	if len(users) > 1 {
		users[len(users)-1] = users[0]
	}
	return users, next, err
}
