package postgres

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// BenchmarkWriteRecords measures Postgres' cost per event of each kind a sale writes behind, in the
// worker's batches (4,000 events, one transaction each, one connection): charges (a third with an
// Idempotency-Key), holds (hold.create), lapses of those holds, payments (claim, debit, sale, and
// the Idempotency-Key record of one in ten) and joins (queue.join). It reports µs per event and
// events/s; a sale's mix is about a third charges, a third hold events and a third joins and payments.
func BenchmarkWriteRecords(b *testing.B) {
	db := open(b)
	ctx := context.Background()
	const seats = 300_000
	c := ticketrush.Concert{ID: "bench0000001", Title: "T", Venue: "V", Queue: ticketrush.DefaultQueueSettings(),
		Sections:  []ticketrush.Section{{Name: "A", Price: 100, Seats: seats}},
		Schedules: []ticketrush.Schedule{{ID: "bench0000002", StartsAt: at}}}
	require.NoError(b, db.CreateConcert(ctx, c))
	const batch = 4000
	wallet := func(u int) string { return "tr:{w:" + strconv.Itoa(u%64) + "}:events" }
	concertStream := "tr:{c:" + c.ID + "}:events"
	var ms int64 = 1 // every event id is new: ms grows across the whole benchmark
	next := func() int64 { ms++; return ms }
	resID := func(i int) string { return c.ID + c.Schedules[0].ID + fmt.Sprintf("%012d", i) }
	user := func(i int) string { return "user-" + strconv.Itoa(i%5000) }
	held := 0 // reservations written by "holds", lapsed by "lapses"
	kinds := []struct {
		name string
		make func(round int) ticketrush.RecordBatch
	}{
		{"charges", func(round int) (rb ticketrush.RecordBatch) {
			for i := range batch {
				m, u := next(), user(i)
				id := fmt.Sprintf("c%dx%d", round, i)
				rb.Ledger = append(rb.Ledger, ticketrush.LedgerEntry{ID: id, UserID: u, Type: ticketrush.LedgerCharge, Amount: 1000,
					BalanceAfter: 1000, CreatedAt: at, Event: ticketrush.EventID{Stream: wallet(i), Ms: m}})
				if i%3 == 0 {
					rb.Idempotency = append(rb.Idempotency, ticketrush.IdempotencyRecord{UserID: u, Key: "k" + id, Kind: "charge",
						Fingerprint: "fp", Ref: id, Created: true, At: at})
				}
			}
			return rb
		}},
		{"holds", func(int) (rb ticketrush.RecordBatch) {
			for range batch {
				if held >= seats {
					b.Fatal("out of seats: fewer rounds")
				}
				rb.Reservations = append(rb.Reservations, ticketrush.ReservationChange{Event: ticketrush.EventID{Stream: concertStream, Ms: next()},
					Type: "hold.create", Status: ticketrush.ReservationHeld, At: at, ID: resID(held), UserID: user(held),
					ConcertID: c.ID, ScheduleID: c.Schedules[0].ID, SeatID: "A-" + strconv.Itoa(held+1), Seq: uint64(held + 1),
					Price: 100, ExpiresAt: at.Add(time.Minute)})
				held++
			}
			return rb
		}},
		{"lapses", func(round int) (rb ticketrush.RecordBatch) {
			for i := round * batch; i < (round+1)*batch && i < held; i++ {
				rb.Reservations = append(rb.Reservations, ticketrush.ReservationChange{Event: ticketrush.EventID{Stream: concertStream, Ms: next()},
					Type: "hold.lapse", Status: ticketrush.ReservationExpired, At: at, ID: resID(i), UserID: user(i),
					ConcertID: c.ID, ScheduleID: c.Schedules[0].ID, SeatID: "A-" + strconv.Itoa(i+1), Price: -1})
			}
			return rb
		}},
		{"payments", func(round int) (rb ticketrush.RecordBatch) {
			// Payments of fresh reservations, 4 events each (hold.create is counted under holds).
			var holds ticketrush.RecordBatch
			for range batch / 4 {
				i := held
				held++
				r := ticketrush.ReservationChange{Event: ticketrush.EventID{Stream: concertStream, Ms: next()},
					Type: "hold.create", Status: ticketrush.ReservationHeld, At: at, ID: resID(i), UserID: user(i),
					ConcertID: c.ID, ScheduleID: c.Schedules[0].ID, SeatID: "A-" + strconv.Itoa(i+1), Seq: uint64(i + 1),
					Price: 100, ExpiresAt: at.Add(time.Minute)}
				holds.Reservations = append(holds.Reservations, r)
				claim := r
				claim.Event.Ms, claim.Type, claim.Status, claim.Price, claim.ExpiresAt, claim.Seq = next(), "payment.claim", ticketrush.ReservationPaying, -1, time.Time{}, 0
				sale := claim
				sale.Event.Ms, sale.Type, sale.Status, sale.Price, sale.PaymentID = next(), "sale", ticketrush.ReservationPaid, 100, ticketrush.PaymentID(r.ID)
				rb.Reservations = append(rb.Reservations, claim, sale)
				rb.Ledger = append(rb.Ledger, ticketrush.LedgerEntry{ID: sale.PaymentID, UserID: r.UserID, Type: ticketrush.LedgerPayment,
					Amount: 100, BalanceAfter: 900, ReservationID: r.ID, CreatedAt: at, Event: ticketrush.EventID{Stream: wallet(i), Ms: next()}})
				ev := ticketrush.EventID{Stream: wallet(i), Ms: next()}
				rb.Processed = append(rb.Processed, ticketrush.ProcessedEvent{Event: ev, Type: "idem.remember", At: at})
				if i%10 == 0 {
					rb.Idempotency = append(rb.Idempotency, ticketrush.IdempotencyRecord{UserID: r.UserID, Key: "p" + r.ID, Kind: "payment",
						Fingerprint: "fp", Ref: sale.PaymentID, Created: true, At: at})
				}
			}
			b.StopTimer()
			require.NoError(b, db.WriteRecords(ctx, holds))
			b.StartTimer()
			return rb
		}},
		{"joins", func(int) (rb ticketrush.RecordBatch) {
			for i := range batch {
				rb.Processed = append(rb.Processed, ticketrush.ProcessedEvent{Event: ticketrush.EventID{Stream: concertStream, Ms: next()},
					Type: "queue.join", At: at})
				rb.QueueMarks = append(rb.QueueMarks, ticketrush.QueueMark{ConcertID: c.ID, MaxSeq: uint64(ms + int64(i))})
			}
			return rb
		}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			events := 0
			var spent, cpu time.Duration
			for round := range b.N {
				b.StopTimer()
				rb := k.make(round)
				n := len(rb.Ledger) + len(rb.Reservations) + len(rb.Processed)
				b.StartTimer()
				before := dbtest.PostgresCPU(b, db.pool)
				start := time.Now()
				require.NoError(b, db.WriteRecords(ctx, rb))
				spent += time.Since(start)
				cpu += dbtest.PostgresCPU(b, db.pool) - before
				events += n
			}
			b.ReportMetric(float64(spent.Microseconds())/float64(events), "µs/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(events), "pg-cpu-µs/event")
			b.ReportMetric(float64(events)/spent.Seconds(), "events/s")
		})
	}
}
