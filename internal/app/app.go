// Package app wires the sale's services over their adapters, once: the catalog over the durable record
// and Redis, the waiting room with its on-sale, and the purchase path. `ticketrush serve` runs the graph
// it builds, and the tests that need the whole graph build it here too, so that they test the graph that
// ships.
package app

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/catalog"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
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
	cat := catalog.NewService(record, store, now, log)
	store.FollowPlacements(cat.Placement)
	waitingRoom := queue.NewService(store, auth.NewQueueTokens(queueSecret), now, log, reg)
	waitingRoom.EnableOnSale(store, cat.Sale)
	return Sale{Catalog: cat, Queue: waitingRoom, Booking: booking.NewService(store, cat, waitingRoom, now, log, reg)}
}
