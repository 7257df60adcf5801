package booking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

var errCrash = errors.New("crashed")

// outcome is where a payment ended: paid once, or not paid with the seat released.
func outcome(t *testing.T, e *env, fan, resID string, charged int64) string {
	t.Helper()
	ctx := context.Background()
	r, err := e.store.Seats.Reservation(ctx, resID)
	require.NoError(t, err)
	debits, refunds := e.walletEntries(t, fan, "debits"), e.walletEntries(t, fan, "refunds")
	require.LessOrEqual(t, len(debits), 1, "never two debits")
	balance, err := e.store.Wallet.Balance(ctx, fan)
	require.NoError(t, err)
	seats, err := e.svc.Seats(ctx, "watcher", e.concert.ID, e.schedule(), "watcher")
	require.NoError(t, err)
	seat := seats[0].Status // every test here holds R-1
	switch {
	case r.Status == ticketrush.ReservationPaid:
		assert.Len(t, debits, 1, "a sale has its debit")
		assert.Empty(t, refunds, "and it was not refunded")
		assert.Equal(t, charged-r.Price, balance)
		assert.Equal(t, ticketrush.SeatSold, seat)
		return "paid once"
	default:
		assert.Len(t, refunds, len(debits), "no debit without a sale: every debit refunded")
		assert.Equal(t, charged, balance)
		assert.Contains(t, []ticketrush.ReservationStatus{ticketrush.ReservationHeld, ticketrush.ReservationExpired}, r.Status)
		if r.Status == ticketrush.ReservationExpired {
			assert.Equal(t, ticketrush.SeatAvailable, seat, "the seat is released")
		}
		return "not paid, released"
	}
}

// TestCrashAtEveryStep stops a payment after each step boundary (as a killed process would), then
// lets either a retry of the payment or the sweeper finish the job, and checks it ends in exactly one
// of {paid once, not paid and seat released}.
func TestCrashAtEveryStep(t *testing.T) {
	tests := []struct {
		give    Step
		recover string // "retry" or "sweeper"
		want    string
	}{
		{AfterClaim, "retry", "paid once"},
		{AfterClaim, "sweeper", "not paid, released"},
		{AfterDebit, "retry", "paid once"},
		{AfterDebit, "sweeper", "paid once"},
		{AfterComplete, "retry", "paid once"},
		{AfterComplete, "sweeper", "paid once"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s then %s", tt.give, tt.recover), func(t *testing.T) {
			e := newEnv(t, 5, time.Minute)
			ctx := context.Background()
			fan, _ := e.fan(t, "fan"), e.fan(t, "watcher")
			const charged = 5000
			_, _, err := e.svc.Charge(ctx, fan, charged, "")
			require.NoError(t, err)
			r, err := e.svc.Hold(ctx, fan, fan, e.schedule(), "R-1")
			require.NoError(t, err)

			e.svc.crash = func(s Step) error {
				if s == tt.give {
					return errCrash
				}
				return nil
			}
			_, _, err = e.svc.Pay(ctx, fan, r.ID)
			require.ErrorIs(t, err, errCrash)
			e.svc.crash = nil

			switch tt.recover {
			case "retry":
				p, _, err := e.svc.Pay(ctx, fan, r.ID)
				require.NoError(t, err)
				assert.Equal(t, ticketrush.PaymentID(r.ID), p.ID)
				assert.Equal(t, int64(charged-1000), p.Balance)
			case "sweeper":
				// Past the hold's expiry and the stuck-payment grace, as the sweeper would find it.
				e.clock.Advance(2 * time.Minute)
				require.NoError(t, e.svc.Sweep(ctx))
			}
			assert.Equal(t, tt.want, outcome(t, e, fan, r.ID, charged))

			// Whatever happened, doing it all again changes nothing.
			e.clock.Advance(time.Minute)
			require.NoError(t, e.svc.Recover(ctx, e.concert.ID, e.clock.Now()))
			require.NoError(t, e.svc.Sweep(ctx))
			assert.Equal(t, tt.want, outcome(t, e, fan, r.ID, charged))
		})
	}
}

// TestSweeperRacesPayer has the sweeper release a claim while its payer is between claim and debit:
// the payer's debit then finds no sale to complete and is refunded.
func TestSweeperRacesPayer(t *testing.T) {
	e := newEnv(t, 5, time.Minute)
	ctx := context.Background()
	fan, _ := e.fan(t, "fan"), e.fan(t, "watcher")
	_, _, err := e.svc.Charge(ctx, fan, 5000, "")
	require.NoError(t, err)
	r, err := e.svc.Hold(ctx, fan, fan, e.schedule(), "R-1")
	require.NoError(t, err)
	e.svc.crash = func(s Step) error {
		if s == AfterClaim {
			e.clock.Advance(2 * time.Minute) // the payer stalls past the hold's expiry ...
			require.NoError(t, e.svc.Sweep(ctx))
		}
		return nil
	}
	_, _, err = e.svc.Pay(ctx, fan, r.ID)
	assert.ErrorIs(t, err, ticketrush.ErrReservationExpired, "... so its sale cannot complete")
	assert.Equal(t, "not paid, released", outcome(t, e, fan, r.ID, 5000))
	assert.Len(t, e.walletEntries(t, fan, "refunds"), 1, "the debit was refunded: debit, then refund")
}

// TestPaymentTellsTheWaitingRoom: a completed payment tells the waiting room that the fan's token may
// have changed (DONE with their last hold paid), so that their event stream here checks it at once; a
// refused one tells nothing.
func TestPaymentTellsTheWaitingRoom(t *testing.T) {
	e := newEnv(t, 5, time.Minute)
	ctx := context.Background()
	fan := e.fan(t, "fan")
	r, err := e.svc.Hold(ctx, fan, fan, e.schedule(), "R-1")
	require.NoError(t, err)
	_, _, err = e.svc.Pay(ctx, fan, r.ID)
	require.ErrorIs(t, err, ticketrush.ErrInsufficientBalance)
	assert.Empty(t, e.changed, "a refused payment changes no token")
	_, _, err = e.svc.Charge(ctx, fan, 5000, "")
	require.NoError(t, err)
	_, _, err = e.svc.Pay(ctx, fan, r.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{e.concert.ID + "/" + fan}, e.changed)
}

func TestPayErrors(t *testing.T) {
	e := newEnv(t, 5, time.Minute)
	ctx := context.Background()
	alice, bob := e.fan(t, "alice"), e.fan(t, "bob")
	r, err := e.svc.Hold(ctx, alice, alice, e.schedule(), "R-1")
	require.NoError(t, err)

	_, _, err = e.svc.Pay(ctx, bob, r.ID)
	assert.ErrorIs(t, err, ticketrush.ErrNotFound, "not bob's")
	_, _, err = e.svc.Pay(ctx, alice, "nope")
	assert.ErrorIs(t, err, ticketrush.ErrNotFound)
	_, _, err = e.svc.Pay(ctx, alice, r.ID)
	assert.ErrorIs(t, err, ticketrush.ErrInsufficientBalance)
	got, err := e.svc.Reservation(ctx, alice, r.ID)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.ReservationHeld, got.Status, "a refused payment leaves the hold HELD")

	c, err := e.svc.Hold(ctx, alice, alice, e.schedule(), "R-2")
	require.NoError(t, err)
	require.NoError(t, e.svc.Cancel(ctx, alice, c.ID))
	_, _, err = e.svc.Pay(ctx, alice, c.ID)
	assert.ErrorIs(t, err, ticketrush.ErrReservationNotHeld, "cancelled")

	e.clock.Advance(2 * time.Minute)
	_, _, err = e.svc.Pay(ctx, alice, r.ID)
	assert.ErrorIs(t, err, ticketrush.ErrReservationExpired)

	_, _, err = e.svc.Charge(ctx, alice, 0, "")
	assert.ErrorIs(t, err, ticketrush.ErrInvalidAmount)
	_, _, err = e.svc.Charge(ctx, alice, ticketrush.MaxChargeAmount+1, "")
	assert.ErrorIs(t, err, ticketrush.ErrInvalidAmount)
}

func TestPayOnceWithIdempotencyKey(t *testing.T) {
	e := newEnv(t, 5, time.Minute)
	ctx := context.Background()
	alice := e.fan(t, "alice")
	_, _, err := e.svc.Charge(ctx, alice, 5000, "")
	require.NoError(t, err)
	r1, err := e.svc.Hold(ctx, alice, alice, e.schedule(), "R-1")
	require.NoError(t, err)
	r2, err := e.svc.Hold(ctx, alice, alice, e.schedule(), "R-2")
	require.NoError(t, err)

	p, created, err := e.svc.PayOnce(ctx, alice, r1.ID, "pay-1")
	require.NoError(t, err)
	assert.True(t, created)
	again, created, err := e.svc.PayOnce(ctx, alice, r1.ID, "pay-1")
	require.NoError(t, err)
	assert.True(t, created, "a retry with the key answers as the first request did")
	assert.Equal(t, p, again)
	_, _, err = e.svc.PayOnce(ctx, alice, r2.ID, "pay-1")
	assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict)
	_, created, err = e.svc.PayOnce(ctx, alice, r1.ID, "")
	require.NoError(t, err)
	assert.False(t, created, "without a key, paying a PAID reservation answers 200")
	balance, err := e.svc.Balance(ctx, alice)
	require.NoError(t, err)
	assert.Equal(t, int64(4000), balance, "debited once")
}

// TestRefusalUnderKeyRepeats: a payment refused under an Idempotency-Key answers every retry with the key
// with that refusal, and does not act, even once the payment could succeed (docs/api.md, "Credentials":
// the same key with the same request again returns the first answer); ten requests racing with the key all
// answer with it; another key acts.
func TestRefusalUnderKeyRepeats(t *testing.T) {
	e := newEnv(t, 5, time.Minute)
	ctx := context.Background()
	alice := e.fan(t, "alice")
	r, err := e.svc.Hold(ctx, alice, alice, e.schedule(), "R-1")
	require.NoError(t, err)
	_, _, err = e.svc.PayOnce(ctx, alice, r.ID, "pay-1")
	require.ErrorIs(t, err, ticketrush.ErrInsufficientBalance)
	_, _, err = e.svc.Charge(ctx, alice, 5000, "")
	require.NoError(t, err)

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() {
			<-start
			_, _, errs[i] = e.svc.PayOnce(ctx, alice, r.ID, "pay-1")
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		assert.ErrorIs(t, err, ticketrush.ErrInsufficientBalance, "retry %d with the key: the first answer again", i)
	}
	again, err := e.svc.Reservation(ctx, alice, r.ID)
	require.NoError(t, err)
	assert.Equal(t, ticketrush.ReservationHeld, again.Status, "the retries did not pay")
	balance, err := e.svc.Balance(ctx, alice)
	require.NoError(t, err)
	assert.Equal(t, int64(5000), balance, "nor debit")

	_, _, err = e.svc.PayOnce(ctx, alice, r.ID+"x", "pay-2")
	require.ErrorIs(t, err, ticketrush.ErrNotFound)
	_, _, err = e.svc.PayOnce(ctx, alice, r.ID, "pay-2")
	assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict, "a key that answered a refusal is still the key of that request")
	p, created, err := e.svc.PayOnce(ctx, alice, r.ID, "pay-3")
	require.NoError(t, err, "another key acts")
	assert.True(t, created)
	again2, _, err := e.svc.PayOnce(ctx, alice, r.ID, "pay-3")
	require.NoError(t, err)
	assert.Equal(t, p, again2)
}

// TestOneKeyPaysOnce sends ten payments with one Idempotency-Key at once, on ten reservations of one fan:
// exactly one pays and the nine others are IDEMPOTENCY_CONFLICT, round after round.
func TestOneKeyPaysOnce(t *testing.T) {
	const rounds, racers = 20, 10
	e := newEnvHolds(t, rounds*racers, time.Minute, racers)
	ctx := context.Background()
	for round := range rounds {
		fan := e.fan(t, fmt.Sprintf("fan-%d", round))
		_, _, err := e.svc.Charge(ctx, fan, 1000*racers, "")
		require.NoError(t, err)
		res := make([]string, racers)
		for i := range res {
			r, err := e.svc.Hold(ctx, fan, fan, e.schedule(), fmt.Sprintf("R-%d", round*racers+i+1))
			require.NoError(t, err)
			res[i] = r.ID
		}
		var paid, conflicts atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, id := range res {
			wg.Go(func() {
				<-start
				_, _, err := e.svc.PayOnce(ctx, fan, id, "one-key")
				switch {
				case err == nil:
					paid.Add(1)
				case errors.Is(err, ticketrush.ErrIdempotencyConflict):
					conflicts.Add(1)
				default:
					t.Errorf("pay: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, []int64{1, racers - 1}, []int64{paid.Load(), conflicts.Load()}, "round %d: one key pays once", round)
		balance, err := e.svc.Balance(ctx, fan)
		require.NoError(t, err)
		require.Equal(t, int64(1000*(racers-1)), balance, "round %d: one debit", round)
	}
}

// TestOneKeyOneAnswer sends ten payments with one Idempotency-Key on one reservation at once: every
// answer is the first one (the same payment and the same creation flag), and a replay repeats it.
func TestOneKeyOneAnswer(t *testing.T) {
	const rounds, racers = 20, 10
	e := newEnvHolds(t, rounds, time.Minute, 1)
	ctx := context.Background()
	for round := range rounds {
		fan := e.fan(t, fmt.Sprintf("fan-%d", round))
		_, _, err := e.svc.Charge(ctx, fan, 5000, "")
		require.NoError(t, err)
		r, err := e.svc.Hold(ctx, fan, fan, e.schedule(), fmt.Sprintf("R-%d", round+1))
		require.NoError(t, err)
		type answer struct {
			p       ticketrush.Payment
			created bool
		}
		answers := make([]answer, racers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range answers {
			wg.Go(func() {
				<-start
				p, created, err := e.svc.PayOnce(ctx, fan, r.ID, "same-key")
				if !assert.NoError(t, err) {
					return
				}
				answers[i] = answer{p, created}
			})
		}
		close(start)
		wg.Wait()
		p, created, err := e.svc.PayOnce(ctx, fan, r.ID, "same-key")
		require.NoError(t, err)
		answers = append(answers, answer{p, created})
		for i, a := range answers {
			require.Equal(t, answers[0], a, "round %d: answer %d differs from the first", round, i)
		}
		assert.True(t, answers[0].created, "round %d: the payment was made by this key", round)
		balance, err := e.svc.Balance(ctx, fan)
		require.NoError(t, err)
		require.Equal(t, int64(4000), balance, "round %d: one debit", round)
	}
}

// TestOneKeyChargesOnce sends ten charges with one Idempotency-Key at once: one charge, every answer the
// first one; ten with one key and ten amounts: one charge, nine IDEMPOTENCY_CONFLICT.
func TestOneKeyChargesOnce(t *testing.T) {
	const rounds, racers = 20, 10
	e := newEnv(t, 1, time.Minute)
	ctx := context.Background()
	for round := range rounds {
		fan := fmt.Sprintf("fan-%d", round)
		charges := make([]ticketrush.Charge, racers)
		var conflicts atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range charges {
			wg.Go(func() {
				<-start
				c, _, err := e.svc.Charge(ctx, fan, 100, "same")
				if assert.NoError(t, err) {
					charges[i] = c
				}
				_, _, err = e.svc.Charge(ctx, fan, int64(1+i), "differ")
				if errors.Is(err, ticketrush.ErrIdempotencyConflict) {
					conflicts.Add(1)
				} else {
					assert.NoError(t, err)
				}
			})
		}
		close(start)
		wg.Wait()
		for i, c := range charges {
			require.Equal(t, charges[0], c, "round %d: charge %d differs from the first", round, i)
		}
		require.Equal(t, int64(racers-1), conflicts.Load(), "round %d", round)
		balance, err := e.svc.Balance(ctx, fan)
		require.NoError(t, err)
		require.Less(t, balance-100, int64(racers+1), "round %d: one charge per key", round)
		require.Greater(t, balance-100, int64(0), "round %d: one charge per key", round)
	}
}

// TestPaymentWithKeyReadsNothingTwice: a payment under an Idempotency-Key is five script calls (the
// key's reserve, the claim, the debit, the completion, the key's answer) and answers with the payment
// the completion returned, without reading the reservation again.
func TestPaymentWithKeyReadsNothingTwice(t *testing.T) {
	e := newEnv(t, 5, time.Minute)
	ctx := context.Background()
	alice := e.fan(t, "alice")
	_, _, err := e.svc.Charge(ctx, alice, 5000, "")
	require.NoError(t, err)
	var mu sync.Mutex
	var sent []string
	e.watch(func(w []string) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, w[0])
	})
	var held []string
	for _, seat := range []string{"R-1", "R-2"} {
		r, err := e.svc.Hold(ctx, alice, alice, e.schedule(), seat)
		require.NoError(t, err)
		held = append(held, r.ID)
	}
	var paid []ticketrush.Payment
	for i, id := range held { // the first warms the store's caches and Redis's scripts
		mu.Lock()
		sent = nil
		mu.Unlock()
		p, created, err := e.svc.PayOnce(ctx, alice, id, fmt.Sprintf("pay-%d", i))
		require.NoError(t, err)
		assert.True(t, created)
		paid = append(paid, p)
	}
	mu.Lock()
	assert.Equal(t, []string{"EVALSHA", "EVALSHA", "EVALSHA", "EVALSHA", "EVALSHA"}, sent)
	mu.Unlock()

	again, created, err := e.svc.PayOnce(ctx, alice, paid[1].ReservationID, "pay-1")
	require.NoError(t, err)
	assert.True(t, created, "a retry with the key: the first answer again")
	assert.Equal(t, paid[1], again, "the same payment, read back from Redis")
}
