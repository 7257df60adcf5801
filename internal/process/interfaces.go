package process

import (
	"github.com/ticketrush/ticketrush/internal/auth"
	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/catalog"
	httpapi "github.com/ticketrush/ticketrush/internal/http"
	"github.com/ticketrush/ticketrush/internal/postgres"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/repair"
	"github.com/ticketrush/ticketrush/internal/writebehind"
)

// Who implements which interface. Each interface is declared by the package that uses it; the
// assertions live here, where the process is wired, because beside the implementing types they would
// make import cycles (the consumers' tests import the adapters).
var (
	_ booking.SeatStore   = (*redis.Seats)(nil)
	_ booking.WalletStore = (*redis.Wallet)(nil)
	_ queue.Store         = (*redis.Line)(nil)
	_ queue.TickStore     = (*redis.Line)(nil)
	_ queue.OnSaleStore   = (*redis.Draws)(nil)
	_ queue.DrawStore     = (*redis.Draws)(nil)
	_ httpapi.Draws       = (*redis.Draws)(nil)

	_ catalog.Record       = (*postgres.DB)(nil)
	_ writebehind.Recorder = (*postgres.DB)(nil)
	_ writebehind.History  = (*postgres.DB)(nil)
	_ repair.Source        = (*postgres.DB)(nil)
	_ repair.Ledger        = (*postgres.DB)(nil)
	_ httpapi.Ledger       = (*postgres.DB)(nil)

	_ queue.Tokens  = (*auth.QueueTokens)(nil)
	_ httpapi.Users = (*auth.Users)(nil)

	_ booking.Gate    = (*queue.Service)(nil)
	_ httpapi.Queue   = (*queue.Service)(nil)
	_ booking.Catalog = (*catalog.Service)(nil)
	_ httpapi.Catalog = (*catalog.Service)(nil)
	_ httpapi.Booking = (*booking.Service)(nil)
)
