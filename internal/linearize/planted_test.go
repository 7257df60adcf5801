package linearize_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/app"
	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/linearize"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

var visualize = flag.String("visualize", "", "a directory to keep the visualizations of rejected histories in")

// seatCheck is the line of seat_hold that refuses a seat someone holds (until its expiry) or bought.
const seatCheck = "if kind ~= 'H' or tonumber(due) > t then"

// TestCheckerRejectsAPlantedBug: fans hold, cancel and pay a few seats at once on the real Redis,
// through the service graph that ships (internal/app), every operation recorded as the fan saw it.
// With seat_hold as it is, every seat's history is linearizable. With a seat_hold that skips its
// seat check (built here from the embedded script, run through redis.WithScript), a hold takes a seat
// someone else holds or bought, and the checker rejects the history.
//
//	go test -run TestCheckerRejectsAPlantedBug -v ./internal/linearize/
//
// prints the explanation of the rejection; porcupine's visualization of it (an HTML page) goes to the
// test's temporary directory, or to the directory named by -args -visualize DIR, where it is kept.
func TestCheckerRejectsAPlantedBug(t *testing.T) {
	src := lua.Source("seat_hold")
	require.Equal(t, 1, strings.Count(src, seatCheck), "seat_hold's seat check is not the line the planted bug replaces")
	buggy := strings.Replace(src, seatCheck, "if false then -- planted: the seat is never refused", 1)

	t.Run("seat_hold as it is", func(t *testing.T) {
		got, why := storm(t)
		t.Log(why)
		assert.Equal(t, porcupine.Ok, got, why)
	})
	t.Run("seat_hold without its seat check", func(t *testing.T) {
		got, why := storm(t, redis.WithScript("seat_hold", buggy))
		t.Log(why)
		require.Equal(t, porcupine.Illegal, got, "the checker accepted the history of a hold that skips the seat check:\n%s", why)
		assert.Contains(t, why, "seat model: Illegal")
		assert.Contains(t, why, "line model: Ok", "the planted bug is in the seats, not the line")
	})
}

const (
	stormFans   = 12
	stormSeats  = 4
	stormOps    = 30 // per fan
	stormPrice  = 100
	stormCharge = stormOps * stormPrice
)

// storm runs stormFans fans for stormOps operations each on stormSeats seats of a fresh concert, on a
// store built with opts, and checks what they saw.
func storm(t *testing.T, opts ...redis.Option) (porcupine.CheckResult, string) {
	t.Helper()
	ctx := context.Background()
	client, prefix := dbtest.Redis(t)
	reg := prometheus.NewRegistry()
	store := redis.NewStore(client, prefix, reg, opts...)
	q := ticketrush.DefaultQueueSettings()
	q.HoldTTL = time.Hour // no hold lapses during the storm: the seat model has no lapse
	q.AdmitPerSecond = ticketrush.MaxAdmitPerSecond
	concert := ticketrush.Concert{ID: ticketrush.NewID(), Title: "Planted", Venue: "Hall", Queue: q,
		Schedules: []ticketrush.Schedule{{ID: ticketrush.NewID(), StartsAt: time.Now().Add(24 * time.Hour)}},
		Sections:  []ticketrush.Section{{Name: "R", Price: stormPrice, Seats: stormSeats}}}
	sale := app.New(store, catalogRecord{concert}, []byte(strings.Repeat("q", 32)), time.Now, dbtest.Log(t), reg)
	require.NoError(t, sale.Catalog.Refresh(ctx))

	rec := linearize.NewRecorder()
	rec.Line(concert.ID, linearize.Queue{Capacity: q.ActiveCapacity, ActiveTTL: q.ActiveTTL, NoShow: q.NoShow,
		MaxHolds: q.MaxHoldsPerUser, HoldTTL: q.HoldTTL})
	var fans sync.WaitGroup
	for i := range stormFans {
		f := &stormFan{t: t, sale: sale, rec: rec, concert: concert, id: fmt.Sprintf("fan-%02d", i),
			rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
		_, _, err := sale.Booking.Charge(ctx, f.id, stormCharge, "")
		require.NoError(t, err)
		fans.Go(f.run)
	}
	fans.Wait()
	opt := linearize.Options{Timeout: time.Minute, VisualizeDir: *visualize}
	if opt.VisualizeDir == "" {
		opt.VisualizeDir = t.TempDir()
	}
	return rec.Check(opt)
}

// stormFan is one fan: join, then hold a random seat, and cancel or pay what they hold; after a
// payment (their token is DONE) they join again.
type stormFan struct {
	t       *testing.T
	sale    app.Sale
	rec     *linearize.Recorder
	concert ticketrush.Concert
	id      string
	rng     *rand.Rand

	token string
	round int    // the fan's tokens so far: the line admits a token, and a fan joins again once DONE
	res   string // the reservation the fan holds, when they do
	seat  linearize.Seat
}

func (f *stormFan) run() {
	ctx := context.Background()
	schedule := f.concert.Schedules[0].ID
	for range stormOps {
		switch {
		case f.token == "":
			f.round++
			c := f.rec.Join(f.concert.ID, f.tokenName())
			tk, _, err := f.sale.Queue.Join(ctx, f.id, f.concert.ID)
			switch {
			case errors.Is(err, ticketrush.ErrSoldOut):
				c.Drop()
				return
			case err != nil:
				c.End(linearize.Unknown)
				f.t.Errorf("%s joins: %v", f.id, err)
				return
			case tk.Status != ticketrush.StatusActive:
				c.End(linearize.Waiting)
				f.t.Errorf("%s joins: %s with room in the line and no rate limit", f.id, tk.Status)
				return
			}
			c.End(linearize.Active)
			f.token = tk.Token
		case f.res == "":
			f.seat = linearize.Seat{Concert: f.concert.ID, Schedule: schedule, ID: fmt.Sprintf("R-%d", 1+f.rng.IntN(stormSeats))}
			c := f.rec.Hold(f.seat, f.id)
			r, err := f.sale.Booking.Hold(ctx, f.id, f.token, schedule, f.seat.ID)
			switch {
			case err == nil:
				c.Held(r.ID)
				f.res = r.ID
			case errors.Is(err, ticketrush.ErrSeatUnavailable):
				c.End(linearize.Refused)
			case errors.Is(err, ticketrush.ErrHoldLimitReached): // the hold limit model judges it
				c.End(linearize.Limited)
			default:
				c.Drop()
				f.t.Errorf("%s holds %s: %v", f.id, f.seat.ID, err)
				return
			}
		case f.rng.IntN(4) > 0:
			c := f.rec.Cancel(f.seat, f.id, f.res)
			err := f.sale.Booking.Cancel(ctx, f.id, f.res)
			if !f.ended(c, err, "cancels") {
				return
			}
		default:
			c := f.rec.Pay(f.seat, f.id, f.res)
			_, _, err := f.sale.Booking.Pay(ctx, f.id, f.res)
			if !f.ended(c, err, "pays") {
				return
			}
			if err == nil { // their only hold paid: the token is DONE
				f.rec.Out(f.concert.ID, f.tokenName(), "last hold paid", c.Started()).End(linearize.Ok)
				f.token = ""
			}
		}
	}
}

// tokenName names the fan's token of this round, for the line.
func (f *stormFan) tokenName() string { return fmt.Sprintf("%s#%d", f.id, f.round) }

// ended ends a cancel or a payment with what err says; false (and the test failed) for an error the
// storm does not expect.
func (f *stormFan) ended(c *linearize.Call, err error, what string) bool {
	res := f.res
	f.res = ""
	switch {
	case err == nil:
		c.End(linearize.Ok)
	case errors.Is(err, ticketrush.ErrReservationNotHeld), errors.Is(err, ticketrush.ErrReservationExpired):
		c.End(linearize.Refused) // the planted hold took the seat from under the fan
	default:
		c.Drop()
		f.t.Errorf("%s %s %s: %v", f.id, what, res, err)
		return false
	}
	return true
}

// catalogRecord is a durable catalog of one concert.
type catalogRecord struct{ concert ticketrush.Concert }

// CatalogVersion never moves: the catalog holds its one concert from the first refresh on.
func (r catalogRecord) CatalogVersion(context.Context) (int64, error) { return 1, nil }

func (r catalogRecord) CreateConcert(context.Context, ticketrush.Concert) error { return nil }
func (r catalogRecord) Ping(context.Context) error                              { return nil }
func (r catalogRecord) Concerts(context.Context) ([]ticketrush.Concert, error) {
	return []ticketrush.Concert{r.concert}, nil
}

func (r catalogRecord) UpdateQueueSettings(context.Context, string, ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	return ticketrush.QueueSettings{}, errors.ErrUnsupported
}
func (r catalogRecord) AddAccessCodes(context.Context, string, []string) error {
	return errors.ErrUnsupported
}
