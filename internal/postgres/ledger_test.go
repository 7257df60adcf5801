package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

const (
	wallet  = "tr:{w:7}:events"
	concert = "tr:{c:c1}:events"
)

var at = time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)

func ev(stream string, ms int64) ticketrush.EventID {
	return ticketrush.EventID{Stream: stream, Ms: ms, Seq: 0}
}

// withConcert migrates a fresh database and creates concert c1 with schedule s1 of seats.
func withConcert(t *testing.T) *DB {
	t.Helper()
	db := open(t)
	c := ticketrush.Concert{ID: "c1", Title: "T", Venue: "V", Queue: ticketrush.DefaultQueueSettings(),
		Sections:  []ticketrush.Section{{Name: "A", Price: 100, Seats: 2}},
		Schedules: []ticketrush.Schedule{{ID: "s1", StartsAt: at}}}
	require.NoError(t, db.CreateConcert(context.Background(), c))
	return db
}

func charge(id string, ms, amount, balance int64) ticketrush.LedgerEntry {
	return ticketrush.LedgerEntry{ID: id, UserID: "alice", Type: ticketrush.LedgerCharge, Amount: amount, BalanceAfter: balance,
		CreatedAt: at.Add(time.Duration(ms) * time.Millisecond), Event: ev(wallet, ms)}
}

func count(t *testing.T, db *DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

func TestWriteRecordsTwiceWritesOnce(t *testing.T) {
	db := withConcert(t)
	ctx := context.Background()
	b := ticketrush.RecordBatch{
		Ledger: []ticketrush.LedgerEntry{charge("ca", 1, 500, 500), charge("cb", 2, 200, 700)},
		Processed: []ticketrush.ProcessedEvent{{Event: ev(concert, 1), Type: "queue.join", At: at},
			{Event: ev(wallet, 3), Type: "idem.remember", At: at}},
		Idempotency: []ticketrush.IdempotencyRecord{{UserID: "alice", Key: "k", Kind: "charge", Fingerprint: "fp", Ref: "ca", Created: true, At: at},
			{UserID: "alice", Key: "refused", Kind: "payment", Fingerprint: "fp-pay", Refused: "INSUFFICIENT_BALANCE", At: at}},
		QueueMarks: []ticketrush.QueueMark{{ConcertID: "c1", MaxSeq: 4, MaxLeave: 1}, {ConcertID: "c1", MaxSeq: 9}},
	}
	require.NoError(t, db.WriteRecords(ctx, b))
	require.NoError(t, db.WriteRecords(ctx, b), "a redelivered batch")
	assert.Equal(t, 2, count(t, db, "ledger"))
	assert.Equal(t, 2, count(t, db, "processed_batches"), "a row for each stream of the batch")
	assert.Equal(t, 4, count(t, db, "written_events"))

	h, err := db.History(ctx, "alice", 50)
	require.NoError(t, err)
	require.Len(t, h, 2)
	assert.Equal(t, "cb", h[0].ID, "newest first")
	assert.Equal(t, int64(700), h[0].BalanceAfter)
	h, err = db.History(ctx, "alice", 1)
	require.NoError(t, err)
	assert.Len(t, h, 1)

	marks, err := db.QueueMarks(ctx)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.QueueMark{ConcertID: "c1", MaxSeq: 9, MaxLeave: 1}, marks["c1"])
	keys, err := db.IdempotencySince(ctx, at.Add(-time.Hour))
	require.NoError(t, err)
	require.Len(t, keys, 2)
	slices.SortFunc(keys, func(a, b ticketrush.IdempotencyRecord) int { return strings.Compare(a.Key, b.Key) })
	assert.Equal(t, int64(500), keys[0].Amount, "a charge's record carries its amount")
	assert.Equal(t, ticketrush.IdempotencyRecord{UserID: "alice", Key: "refused", Kind: "payment", Fingerprint: "fp-pay",
		Refused: "INSUFFICIENT_BALANCE", At: at.UTC()}, keys[1], "a refusal's record carries its code")
	has, err := db.HasRecords(ctx)
	require.NoError(t, err)
	assert.True(t, has)
}

// The events of a reservation may be written in any order and any grouping: the newest decides.
func TestReservationEventsInAnyOrder(t *testing.T) {
	id := "c1" + "s1" + "r00000000001"
	events := []ticketrush.ReservationChange{
		{Event: ev(concert, 1), Type: "hold.create", Status: ticketrush.ReservationHeld, ID: id, UserID: "bob", ConcertID: "c1",
			ScheduleID: "s1", SeatID: "A-1", Price: 100, Seq: 3, ExpiresAt: at.Add(time.Minute), At: at},
		{Event: ev(concert, 2), Type: "payment.claim", Status: ticketrush.ReservationPaying, ID: id, UserID: "bob", ConcertID: "c1",
			ScheduleID: "s1", Price: -1, At: at.Add(time.Second)},
		{Event: ev(concert, 3), Type: "sale", Status: ticketrush.ReservationPaid, ID: id, UserID: "bob", ConcertID: "c1",
			ScheduleID: "s1", SeatID: "A-1", Price: 100, PaymentID: "p" + id, At: at.Add(2 * time.Second)},
	}
	tests := []struct {
		name  string
		order [][]int // batches of event indexes
	}{
		{"in order, one batch", [][]int{{0, 1, 2}}},
		{"in order, one by one", [][]int{{0}, {1}, {2}}},
		{"backwards", [][]int{{2}, {1}, {0}}},
		{"sale first, the rest together", [][]int{{2}, {0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := withConcert(t)
			ctx := context.Background()
			for _, batch := range tt.order {
				var b ticketrush.RecordBatch
				for _, i := range batch {
					b.Reservations = append(b.Reservations, events[i])
				}
				require.NoError(t, db.WriteRecords(ctx, b))
			}
			got, err := db.Reservations(ctx, "c1")
			require.NoError(t, err)
			require.Len(t, got, 1)
			r := got[0]
			assert.Equal(t, ticketrush.ReservationPaid, r.Status)
			assert.Equal(t, "A-1", r.SeatID)
			assert.Equal(t, int64(100), r.Price)
			assert.Equal(t, uint64(3), r.Seq)
			assert.Equal(t, at.Add(time.Minute), r.ExpiresAt)
			assert.Equal(t, at, r.CreatedAt)
			assert.Equal(t, at.Add(time.Second), r.ClaimedAt)
			assert.Equal(t, "p"+id, r.PaymentID)
			assert.Equal(t, 3, count(t, db, "reservation_events"))
			assert.Equal(t, 1, count(t, db, "payments"))

			asOf, err := db.ReservationsAt(ctx, ev(concert, 2))
			require.NoError(t, err)
			assert.Equal(t, ticketrush.ReservationPaying, asOf[id].Status, "as of the claim")
		})
	}
}

// The database refuses what cannot happen, whatever the worker sends it.
func TestWriteRecordsRefusesTheImpossible(t *testing.T) {
	sale := func(res string, ms int64, seat string) ticketrush.ReservationChange {
		return ticketrush.ReservationChange{Event: ev(concert, ms), Type: "sale", Status: ticketrush.ReservationPaid,
			ID: "c1s1" + res, UserID: "bob", ConcertID: "c1", ScheduleID: "s1", SeatID: seat, Price: 100,
			PaymentID: "pc1s1" + res, At: at}
	}
	tests := []struct {
		name string
		give ticketrush.RecordBatch
	}{
		{"a balance below zero", ticketrush.RecordBatch{Ledger: []ticketrush.LedgerEntry{charge("ca", 1, 100, -1)}}},
		{"a seat sold twice", ticketrush.RecordBatch{Reservations: []ticketrush.ReservationChange{sale("r1", 1, "A-1"), sale("r2", 2, "A-1")}}},
		{"a seat that does not exist", ticketrush.RecordBatch{Reservations: []ticketrush.ReservationChange{sale("r1", 1, "Z-9")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := withConcert(t)
			err := db.WriteRecords(context.Background(), tt.give)
			assert.ErrorIs(t, err, ticketrush.ErrRecordRefused)
			assert.Zero(t, count(t, db, "written_events"), "nothing of a refused batch")
		})
	}
}

// The same payment, charge or refund id under a new event id is the same movement written again
// (Redis lost the first after the worker had read it, and the client retried), not a second one.
func TestOneMovementPerID(t *testing.T) {
	db := withConcert(t)
	ctx := context.Background()
	require.NoError(t, db.WriteRecords(ctx, ticketrush.RecordBatch{Ledger: []ticketrush.LedgerEntry{charge("ca", 1, 100, 100)}}))
	require.NoError(t, db.WriteRecords(ctx, ticketrush.RecordBatch{Ledger: []ticketrush.LedgerEntry{charge("ca", 5, 100, 100)}}))
	assert.Equal(t, 1, count(t, db, "ledger"))
}

// TestPrequeueNewestEventStands: each fan's pre-queue row is their newest event, whatever order the
// events are written in and however often: an entry written again after its leave (a redelivery) does
// not bring the fan back, nor does an entry written after a newer leave; an entry newer than the leave
// does.
func TestPrequeueNewestEventStands(t *testing.T) {
	db := withConcert(t)
	ctx := context.Background()
	entry := func(user string, ms int64) ticketrush.PrequeueEntry {
		return ticketrush.PrequeueEntry{ConcertID: "c1", UserID: user, At: at.Add(time.Duration(ms) * time.Millisecond), Event: ev(concert, ms)}
	}
	users := func() []string {
		t.Helper()
		es, err := db.Prequeue(ctx, "c1")
		require.NoError(t, err)
		var out []string
		for _, e := range es {
			out = append(out, e.UserID)
		}
		return out
	}
	write := func(b ticketrush.RecordBatch) { t.Helper(); require.NoError(t, db.WriteRecords(ctx, b)) }

	write(ticketrush.RecordBatch{Prequeue: []ticketrush.PrequeueEntry{entry("ann", 1), entry("bob", 2), entry("cat", 3)}})
	write(ticketrush.RecordBatch{PrequeueLeaves: []ticketrush.PrequeueEntry{entry("ann", 4)}})
	assert.Equal(t, []string{"bob", "cat"}, users())

	write(ticketrush.RecordBatch{Prequeue: []ticketrush.PrequeueEntry{entry("ann", 1)}}) // redelivered
	assert.Equal(t, []string{"bob", "cat"}, users(), "an entry written again after its leave")

	write(ticketrush.RecordBatch{PrequeueLeaves: []ticketrush.PrequeueEntry{entry("dan", 6)}}) // the leave first
	write(ticketrush.RecordBatch{Prequeue: []ticketrush.PrequeueEntry{entry("dan", 5)}})
	assert.Equal(t, []string{"bob", "cat"}, users(), "an entry written after its newer leave")

	// In one batch: bob leaves and comes back, cat comes back (redelivered) and leaves.
	write(ticketrush.RecordBatch{Prequeue: []ticketrush.PrequeueEntry{entry("bob", 8), entry("cat", 3)},
		PrequeueLeaves: []ticketrush.PrequeueEntry{entry("bob", 7), entry("cat", 9)}})
	assert.Equal(t, []string{"bob"}, users())
	write(ticketrush.RecordBatch{Prequeue: []ticketrush.PrequeueEntry{entry("ann", 10)}})
	assert.Equal(t, []string{"bob", "ann"}, users(), "an entry newer than the leave, in entry order")
}

// TestProcessedEventsOnceWhateverTheBatches: the events that leave no row of their own are written a row
// per stream and batch; the same batch again adds nothing, and a redelivery composed otherwise (a worker
// that died after its commit, whose entries another claimed with newer ones) names some events again,
// which written_events counts once.
func TestProcessedEventsOnceWhateverTheBatches(t *testing.T) {
	db := withConcert(t)
	ctx := context.Background()
	joins := func(ids ...int64) ticketrush.RecordBatch {
		var b ticketrush.RecordBatch
		for _, id := range ids {
			b.Processed = append(b.Processed, ticketrush.ProcessedEvent{Event: ev(concert, id), Type: "queue.join", At: at})
		}
		return b
	}
	require.NoError(t, db.WriteRecords(ctx, joins(2, 1)))
	require.NoError(t, db.WriteRecords(ctx, joins(1, 2)), "the same batch, in another order")
	assert.Equal(t, 1, count(t, db, "processed_batches"))
	require.NoError(t, db.WriteRecords(ctx, joins(1, 2, 3)), "a redelivery with a newer event")
	require.NoError(t, db.WriteRecords(ctx, joins(12)))
	assert.Equal(t, 3, count(t, db, "processed_batches"))
	assert.Equal(t, 4, count(t, db, "written_events"), "events 1, 2, 3 and 12, each once")
}
