package writebehind

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Two workers at once over a sale: every event lands in Postgres once, the record agrees with what
// the clients were told, and reconcile finds nothing.
func TestTwoWorkersWriteEveryEventOnce(t *testing.T) {
	t.Parallel()
	s := sharedSale(t)
	reg := prometheus.NewRegistry()
	run(t, s.worker(Config{Consumer: "a"}, reg))
	run(t, s.worker(Config{Consumer: "b"}, prometheus.NewRegistry()))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s.load(ctx, 8)
	s.drain(30 * time.Second)

	s.checkExactlyOnce(nil)
	s.checkClients()
	s.reconcile()
	assert.Positive(t, metric(t, reg, "ticketrush_writebehind_events_total"))
}

// metric returns the value of an unlabelled counter or gauge, or the sample count of a histogram.
func metric(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			m := f.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// Poison entries end in the dead-letter stream of their stream with the reason, and the others are
// written around them: one the database refuses (a balance below zero; a second sale of a sold seat)
// after MaxFailures tries, one that is not an event at once.
func TestPoisonEntriesAreDeadLettered(t *testing.T) {
	t.Parallel()
	s := sharedSale(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	run(t, s.worker(Config{}, reg))

	// A sold seat, for a second sale of it.
	_, _, err := s.booking.Charge(ctx, "buyer", 10_000, "")
	require.NoError(t, err)
	tk, _, err := s.queue.Join(ctx, "buyer", s.concert.ID)
	require.NoError(t, err)
	sched := s.concert.Schedules[0].ID
	r, err := s.booking.Hold(ctx, "buyer", tk.Token, sched, "VIP-1")
	require.NoError(t, err)
	_, _, err = s.booking.PayOnce(ctx, "buyer", r.ID, "")
	require.NoError(t, err)

	keys := redis.NewKeys(s.prefix)
	concertStream, concertDead := keys.Concert(s.concert.ID).Events(), keys.Concert(s.concert.ID).DeadLetters()
	// The second sale goes where the first one went, so that the first is committed first and the
	// second is the one refused: the concert's stream, or, when the seats are spread (the cluster pass),
	// the stream of the schedule's seat slot. On two streams their order would be a race.
	saleStream, saleDead := concertStream, concertDead
	layout, _, err := keys.ReadLayout(ctx, s.rdb, s.concert.ID)
	require.NoError(t, err)
	for _, slot := range layout.Schedules {
		if slot.ScheduleID() == sched {
			saleStream, saleDead = keys.Concert(s.concert.ID).Schedule(slot).Events(), keys.Concert(s.concert.ID).Schedule(slot).DeadLetters()
		}
	}
	walletStream, walletDead := keys.Wallet("mallory").Events(), keys.Wallet("mallory").DeadLetters()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	other := ticketrush.NewReservationID(s.concert.ID, sched)
	poison := []struct {
		stream string
		dead   string
		fields []string
		reason string
	}{
		{walletStream, walletDead, []string{"type", "point.charge", "id", "cpoison", "user", "mallory", "amount", "5", "balance", "-5", "at", now}, "refused 5 times"},
		{saleStream, saleDead, []string{"type", "sale", "res", other, "user", "mallory", "schedule", sched, "seat", "VIP-1", "price", "1500",
			"payment", ticketrush.PaymentID(other), "at", now}, "refused 5 times"},
		{concertStream, concertDead, []string{"type", "hold.teleport", "res", other, "at", now}, "unknown concert event type"},
	}
	load, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	go func() {
		for _, p := range poison {
			fv := s.rdb.B().Xadd().Key(p.stream).Id("*").FieldValue()
			for i := 0; i < len(p.fields); i += 2 {
				fv = fv.FieldValue(p.fields[i], p.fields[i+1])
			}
			assert.NoError(t, s.rdb.Do(ctx, fv.Build()).Error())
		}
	}()
	s.load(load, 6)
	s.drain(30 * time.Second)

	for _, p := range poison {
		dead, err := s.rdb.Do(ctx, s.rdb.B().Xrange().Key(p.dead).Start("-").End("+").Build()).AsXRange()
		require.NoError(t, err)
		found := false
		for _, d := range dead {
			if d.FieldValues["type"] == p.fields[1] {
				found = true
				assert.Equal(t, p.stream, d.FieldValues["stream"])
				assert.NotEmpty(t, d.FieldValues["id"])
				assert.Contains(t, d.FieldValues["reason"], p.reason)
			}
		}
		assert.True(t, found, "%s in the dead letters of %s", p.fields[1], p.stream)
	}
	assert.Equal(t, 3.0, metric(t, reg, "ticketrush_writebehind_dead_letters_total"))
	dead := map[string]int{walletStream: 1, concertStream: 1}
	dead[saleStream]++
	s.checkExactlyOnce(dead)
	s.checkClients()
	s.reconcile()
}
