package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketrush/ticketrush/internal/app"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestIdleConcertsCostNothing: with 200 concerts and nobody there, one round of every loop serve runs
// (activity poll, tick, sweep, draw, view refresh, liveness flush, catalog refresh) costs the same few
// Redis commands as with none, and the write-behind reads no concert's stream; a fan joining one
// concert makes that concert's work appear, and no other; closing its sale makes the work disappear
// once its last hold has lapsed, and no join or poll brings it back. Commands are counted on a private
// Redis (INFO stats total_commands_processed), the loops called directly on a test clock.
func TestIdleConcertsCostNothing(t *testing.T) {
	const concerts = 200
	ctx := context.Background()
	rdb := dbtest.Client(t, dbtest.PrivateRedis(t))
	clk := dbtest.NewClock(time.Now().Truncate(time.Millisecond))
	t0 := clk.Now()
	log := dbtest.Log(t)
	reg := prometheus.NewRegistry()

	rec := &catalogRecord{}
	for i := range concerts {
		rec.concerts = append(rec.concerts, ticketrush.Concert{ID: fmt.Sprintf("idle%03d", i), Title: "Idle", Venue: "Hall",
			Queue:     ticketrush.DefaultQueueSettings(),
			Schedules: []ticketrush.Schedule{{ID: fmt.Sprintf("idle%03ds", i), StartsAt: t0.Add(30 * 24 * time.Hour)}},
			Sections:  []ticketrush.Section{{Name: "A", Price: 100, Seats: 5}}})
	}
	for i := 0; i < concerts; i += 10 { // sales opening tomorrow, nobody in their pre-queue
		rec.concerts[i].Sale = &ticketrush.Sale{OpensAt: t0.Add(24 * time.Hour), PrequeueOpensAt: t0.Add(23 * time.Hour)}
	}
	fanned := &rec.concerts[7] // the concert a fan comes to: a sale open since an hour, closing in ten minutes
	fanned.Sale = &ticketrush.Sale{OpensAt: t0.Add(-time.Hour), PrequeueOpensAt: t0.Add(-2 * time.Hour), ClosesAt: t0.Add(10 * time.Minute)}
	fanned.Queue.HoldTTL = 20 * time.Minute

	store := redis.NewStore(rdb, "tr", reg)
	sale := app.New(store, rec, []byte(strings.Repeat("k", 32)), clk.Now, log, reg)
	cat, waitingRoom, purchases := sale.Catalog, sale.Queue, sale.Booking
	require.NoError(t, cat.Refresh(ctx))
	r := sale.Rounds(store, clk.Now, reg)
	r.Activity.Settle(cat.IDs())
	// wb is what a write-behind in a process of its own knows (ROLES=writebehind): only what the live
	// zset tells it.
	wb := queue.NewActivity(store, clk.Now, cat.Closed)
	wb.Settle(cat.IDs())

	round := func() int64 {
		t.Helper()
		before := commandsProcessed(t, rdb)
		for _, step := range []func(context.Context) error{r.Activity.Poll, r.Tick, r.Sweep, r.Draw,
			waitingRoom.Refresh, waitingRoom.FlushLiveness, cat.Refresh} {
			require.NoError(t, step(ctx))
		}
		n := commandsProcessed(t, rdb) - before - 1 // the INFO that read before
		require.NoError(t, wb.Poll(ctx))
		return n
	}
	// runFor runs a round every 5 s of test time for d, as serve does (more often) on the real clock.
	runFor := func(d time.Duration) {
		t.Helper()
		for end := clk.Now().Add(d); clk.Now().Before(end); {
			clk.Advance(5 * time.Second)
			round()
		}
	}
	round()                       // the sale's draw (no entrants) runs at once: its opening is past
	runFor(2 * queue.StreamDrain) // the start's drain of every stream is over
	idle := round()
	t.Logf("one idle round over %d concerts: %d commands", concerts, idle)
	assert.LessOrEqual(t, idle, int64(2), "an idle round costs O(1) commands, not O(concerts)")
	assert.Empty(t, r.Activity.IDs(), "no concert is awake")
	assert.Empty(t, r.Streams(), "the write-behind reads no concert's stream")

	// A fan joins one concert: its tick, sweep and stream appear, no other concert's.
	ticket, _, err := waitingRoom.Join(ctx, "fan1", fanned.ID)
	require.NoError(t, err)
	busy := round()
	t.Logf("one round with one concert awake: %d commands", busy)
	assert.Equal(t, []string{fanned.ID}, r.Activity.IDs())
	assert.Equal(t, []string{fanned.ID}, r.Streams())
	assert.Greater(t, busy, idle+3, "the awake concert is ticked and swept")
	assert.Less(t, busy, idle+100, "only one concert's work appears")
	for range 5 {
		if st, err := waitingRoom.Status(ctx, "fan1", ticket.Token); err == nil && st.Status == ticketrush.StatusActive {
			break
		}
		round()
	}
	seats, err := purchases.Seats(ctx, "fan1", fanned.ID, fanned.Schedules[0].ID, ticket.Token)
	require.NoError(t, err)
	res, err := purchases.Hold(ctx, "fan1", ticket.Token, fanned.Schedules[0].ID, seats[0].ID)
	require.NoError(t, err)

	// The sale closes: joins are refused; the concert stays awake while its hold is open.
	runFor(t0.Add(10 * time.Minute).Sub(clk.Now()))
	_, _, err = waitingRoom.Join(ctx, "fan2", fanned.ID)
	assert.ErrorIs(t, err, ticketrush.ErrSaleClosed)
	runFor(time.Minute)
	assert.Equal(t, []string{fanned.ID}, r.Activity.IDs(), "a closed sale is swept while a hold is open")

	// The hold lapses; then the concert sleeps, and a poll of the fan still ACTIVE does not wake it.
	runFor(res.ExpiresAt.Sub(clk.Now()) + time.Minute)
	counts, err := store.Seats.ScheduleCounts(ctx, fanned.ID, fanned.ScheduleIDs(), clk.Now())
	require.NoError(t, err)
	assert.Equal(t, int64(0), counts[0].Taken, "the closed sale's last hold lapsed")
	_, err = waitingRoom.Status(ctx, "fan1", ticket.Token)
	require.NoError(t, err)
	runFor(2 * queue.StreamDrain)
	closed := round()
	t.Logf("one round after the sale closed: %d commands", closed)
	assert.Empty(t, r.Activity.IDs(), "a closed sale with nothing in flight is not awake")
	assert.Empty(t, r.Streams(), "nor is its stream read")
	assert.LessOrEqual(t, closed, int64(2), "a closed sale costs O(1) commands")
	assert.Empty(t, wb.Recent(queue.StreamDrain), "nor does a write-behind of its own read it")

	// The fan, still ACTIVE after the close, holds another seat: the closed sale wakes for the sweep
	// and for a write-behind of its own, and the hold lapses on time, its lapse read behind too.
	res, err = purchases.Hold(ctx, "fan1", ticket.Token, fanned.Schedules[0].ID, seats[1].ID)
	require.NoError(t, err)
	round()
	assert.Equal(t, []string{fanned.ID}, r.Activity.IDs(), "a hold after the close wakes the closed sale")
	assert.Equal(t, []string{fanned.ID}, wb.Recent(queue.StreamDrain), "a write-behind of its own reads its stream")
	runFor(res.ExpiresAt.Sub(clk.Now()) - 10*time.Second)
	assert.Equal(t, []string{fanned.ID}, r.Activity.IDs(), "the scheduler keeps sweeping while the hold is open")
	runFor(15 * time.Second)
	counts, err = store.Seats.ScheduleCounts(ctx, fanned.ID, fanned.ScheduleIDs(), clk.Now())
	require.NoError(t, err)
	assert.Equal(t, int64(0), counts[0].Taken, "the hold made after the close lapsed")
	assert.Equal(t, []string{fanned.ID}, wb.Recent(queue.StreamDrain), "the lapse's event is read behind")
	runFor(awakeForTest + 2*queue.StreamDrain)
	assert.Empty(t, wb.Recent(queue.StreamDrain), "then the closed sale costs nothing again")

	// An admin create wakes its concert, so that the write-behind records its load event.
	created, _, err := cat.Create(ctx, ticketrush.Concert{Title: "New", Venue: "Hall", Queue: ticketrush.DefaultQueueSettings(),
		Schedules: []ticketrush.Schedule{{StartsAt: t0.Add(30 * 24 * time.Hour)}},
		Sections:  []ticketrush.Section{{Name: "A", Price: 100, Seats: 5}}}, "")
	require.NoError(t, err)
	round()
	assert.Equal(t, []string{created.ID}, r.Streams(), "the new concert's stream is read")
}

// awakeForTest is queue's awakeFor: how long a wake-up keeps a concert awake.
const awakeForTest = 10 * time.Second

// commandsProcessed is the Redis server's total_commands_processed.
func commandsProcessed(t *testing.T, rdb rueidis.Client) int64 {
	t.Helper()
	info, err := rdb.Do(context.Background(), rdb.B().Info().Section("stats").Build()).ToString()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO stats has no total_commands_processed")
	return 0
}

// catalogRecord is the durable catalog the test says: its concerts, nothing else.
type catalogRecord struct {
	concerts []ticketrush.Concert
	reads    atomic.Int64
}

// CatalogVersion moves at every read: the catalog reads the concerts at every refresh, as it did
// before it had a version to look at.
func (r *catalogRecord) CatalogVersion(context.Context) (int64, error) { return r.reads.Add(1), nil }

func (r *catalogRecord) CreateConcert(context.Context, ticketrush.Concert) error { return nil }
func (r *catalogRecord) Ping(context.Context) error                              { return nil }
func (r *catalogRecord) Concerts(context.Context) ([]ticketrush.Concert, error) {
	return r.concerts, nil
}
func (r *catalogRecord) UpdateQueueSettings(context.Context, string, ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	return ticketrush.QueueSettings{}, nil
}
func (r *catalogRecord) AddAccessCodes(context.Context, string, []string) error { return nil }
