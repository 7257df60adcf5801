package writebehind

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestProcessFollowsAChangedPlacement: a running process (its store, catalog and write-behind) follows
// a concert whose placement changed under it. The concert's seats are spread (3 line shards); a fan
// holds a seat and the write-behind records it; then the record names other seat slots (as an
// operator's re-place would, or the first recording of a concert whose Redis copy was lost), Redis is
// emptied and restore writes the concert into those slots. After the catalog's refresh (every 0.5 s in
// serve; called here) the process's seat map reads the restored hold, a new hold works, and the
// write-behind reads the new slot's stream: the new hold reaches Postgres.
func TestProcessFollowsAChangedPlacement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, prefix := dbtest.Redis(t)
	s := newSale(t, dbtest.RedisURL(), prefix, dbtest.Postgres(t), time.Minute,
		func(q *ticketrush.QueueSettings) { q.LineShards = 3 })
	run(t, s.worker(Config{}, prometheus.NewRegistry()))
	sched := s.concert.Schedules[1].ID
	join := func(user string) string {
		tk, _, err := s.queue.Join(ctx, user, s.concert.ID)
		require.NoError(t, err)
		return tk.Token
	}
	recorded := func(id string) bool {
		recs, err := s.db.Reservations(ctx, s.concert.ID)
		require.NoError(t, err)
		for _, r := range recs {
			if r.ID == id {
				return true
			}
		}
		return false
	}
	held, err := s.booking.Hold(ctx, "holder", join("holder"), sched, "VIP-7")
	require.NoError(t, err)
	eventually(t, 20*time.Second, "the write-behind records the hold", func() bool { return recorded(held.ID) })

	before := s.cat.Placement(s.concert.ID)
	require.True(t, before.Recorded, "the create recorded the placement")
	require.NotEmpty(t, before.Slots, "the seats are spread")
	concerts, err := s.db.Concerts(ctx)
	require.NoError(t, err)
	require.Len(t, concerts, 1)
	require.Equal(t, before, concerts[0].Placement, "the create wrote the placement with the concert")
	var moved []string
	seatPart, linePart, placedLine := strings.Cut(before.Slots, "|") // on a cluster the line's shards are placed too
	for i, slot := range strings.Split(seatPart, ",") {
		moved = append(moved, redis.SeatSlot(slot).ScheduleID()+"@"+strconv.Itoa(500+i))
	}
	record := strings.Join(moved, ",")
	if placedLine {
		record += "|" + linePart
	}
	conn, err := pgx.Connect(ctx, s.dbURL)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE concerts SET seat_slots = $2 WHERE id = $1`, s.concert.ID, record)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	dbtest.DeletePrefix(s.rdb, prefix)
	_, err = repair.Restore(ctx, s.rdb, s.db, prefix, false, time.Now())
	require.NoError(t, err)
	l, _, err := redis.NewKeys(prefix).ReadLayout(ctx, s.rdb, s.concert.ID)
	require.NoError(t, err)
	require.Len(t, l.Schedules, len(moved))
	require.Equal(t, moved[1], string(l.Schedules[1]), "restore wrote the recorded placement")
	require.NoError(t, s.cat.Refresh(ctx))

	seats, err := s.booking.Seats(ctx, "thief", s.concert.ID, sched, join("thief"))
	require.NoError(t, err)
	status := map[string]ticketrush.SeatStatus{}
	for _, seat := range seats {
		status[seat.ID] = seat.Status
	}
	assert.Equal(t, ticketrush.SeatHeld, status["VIP-7"], "the seat map reads the restored hold")
	_, err = s.booking.Hold(ctx, "thief", join("thief"), sched, "VIP-7")
	assert.ErrorIs(t, err, ticketrush.ErrSeatUnavailable, "the restored hold keeps its seat")
	late, err := s.booking.Hold(ctx, "late", join("late"), sched, "VIP-8")
	require.NoError(t, err, "a hold in the new slot")
	eventually(t, 20*time.Second, "the write-behind records the hold made in the new slot", func() bool { return recorded(late.ID) })
}
