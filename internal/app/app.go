// Package app wires the sale's services over their adapters, once: the catalog over the durable record
// and Redis, the waiting room with its on-sale, and the purchase path (New), and the background rounds
// over them: the concerts' activity, the admission tick, the sweep and the draw (Sale.Rounds). `ticketrush
// serve` runs the graph it builds, and the tests that need the whole graph build it here too, so that
// they test the graph that ships.
package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/catalog"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Sale is the service graph of the sale.
type Sale struct {
	Catalog *catalog.Service
	Queue   *queue.Service // the waiting room, the gate of the purchase path
	Booking *booking.Service
}

// New wires the graph over store and the durable catalog record, signing queue tokens with queueSecret;
// every service takes now, logs to log and registers its metrics with reg.
func New(store *redis.Store, record catalog.Record, queueSecret []byte, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) Sale {
	cat := catalog.NewService(record, CatalogLive(store), now, log)
	store.FollowPlacements(cat.Placement)
	waitingRoom := queue.NewService(store.Line, auth.NewQueueTokens(queueSecret), now, log, reg)
	waitingRoom.EnableOnSale(store.Draws, cat.Sale)
	return Sale{Catalog: cat, Queue: waitingRoom, Booking: booking.NewService(store.Seats, store.Wallet, cat, waitingRoom, now, log, reg)}
}

// CatalogLive is what the catalog keeps and reads of the sale in store: each concert's settings (the
// store's own), and for the console its line (Snapshot), its seat counts (ScheduleCounts) and its draw.
func CatalogLive(store *redis.Store) catalog.Live {
	return live{store, store.Line, store.Seats, store.Draws}
}

type live struct {
	*redis.Store
	*redis.Line
	*redis.Seats
	*redis.Draws
}

// Rounds are one round of each background loop over the concerts (serve runs them every interval):
// the admission tick, the sweep and the draw run only for awake concerts (queue.Activity: fans waiting,
// active, holding or paying), and the write-behind reads the streams of the concerts awake within
// queue.StreamDrain; a create, a queue change or an access-code issue wakes its concert too, and so do a
// hold, a cancel or a payment (even after its sale closed) and a round that found work, for every
// process: a write-behind of its own reads the events they wrote.
type Rounds struct {
	Activity          *queue.Activity
	Tick, Sweep, Draw func(context.Context) error
	DrawSoon          func(within time.Duration) bool // a sale not drawn yet opens within (or has opened)
	Streams           func() []string
}

// Rounds wires the sale's background rounds over store: the concerts' activity, followed by the
// waiting room, the purchase path and the catalog, and the scheduler, sweeper and drawer over it.
func (s Sale) Rounds(store *redis.Store, now func() time.Time, reg prometheus.Registerer) Rounds {
	activity := queue.NewActivity(store, now, s.Catalog.Closed)
	s.Queue.TrackActivity(activity)
	s.Booking.TrackActivity(activity.SeatsChanged)
	s.Catalog.OnChange(activity.Touch)
	sched := s.Queue.NewScheduler(store.Line, activity.IDs).ReportBusy(activity.LineBusy)
	sweeper := s.Booking.NewSweeper(activity.IDs, activity.Busy)
	drawer := s.Queue.NewDrawer(store.Draws, s.Catalog.SaleIDs, s.Catalog.Sale, ticketrush.NewID(), reg).Track(activity.IsAwake, activity.Busy)
	return Rounds{Activity: activity, Tick: sched.Tick, Sweep: sweeper.Sweep, Draw: drawer.Tick, DrawSoon: drawer.Soon,
		Streams: func() []string { return activity.Recent(queue.StreamDrain) }}
}
