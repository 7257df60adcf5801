package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// measurePayments prices a point charge and each step of a payment, each a phase of its own: every fan
// charges the price (as POST /v1/points/charges does), holds its seat again (not priced: the hold is
// priced above), and pays it in the steps the booking service takes for POST /v1/payments with an
// Idempotency-Key (booking.Service.PayOnce): reserve the key, claim, debit, complete, record the answer.
func measurePayments(ctx context.Context, store *redis.Store, phase func(string, func() (int, error)) (phaseCost, error),
	con ticketrush.Concert, claims []ticketrush.QueueClaims, res *concertCapacity) error {
	fans, now := len(claims), time.Now()
	user := func(i int) string { return claims[i].UserID }
	var err error
	if res.charge, err = phase("charge", func() (int, error) {
		return fans, storm(ctx, capacityWorkers, fans, func(i int) error {
			_, replayed, err := store.Wallet.Charge(ctx, user(i), capacityPrice, "cap-charge-"+user(i),
				fmt.Sprintf("POST /v1/points/charges %d", capacityPrice), now)
			if err == nil && replayed {
				err = fmt.Errorf("%s: a first charge answered as replayed", user(i))
			}
			return err
		})
	}); err != nil {
		return err
	}
	ids := make([]string, fans)
	if err := storm(ctx, capacityWorkers, fans, func(i int) error {
		r, _, err := store.Seats.Hold(ctx, claims[i], con.Schedules[i%capacitySchedules].ID, "R-"+strconv.Itoa(1+i/capacitySchedules), capacityPrice, now)
		ids[i] = r.ID
		return err
	}); err != nil {
		return fmt.Errorf("holds to pay: %w", err)
	}
	debits := make([]ticketrush.Payment, fans)
	key := func(i int) string { return "cap-pay-" + ids[i] }
	fp := func(i int) string { return "POST /v1/payments " + ids[i] }
	steps := []struct {
		name string
		cost *phaseCost
		do   func(i int) error
	}{
		{"payment: reserve the key", &res.reserve, func(i int) error {
			reserved, _, _, _, err := store.Wallet.ReserveKey(ctx, user(i), key(i), fp(i), ticketrush.PaymentID(ids[i]), now)
			if err == nil && !reserved {
				err = fmt.Errorf("%s: the key of a first payment not reserved", user(i))
			}
			return err
		}},
		{"payment: claim", &res.claim, func(i int) error {
			r, err := store.Seats.Claim(ctx, user(i), ids[i], now)
			if err == nil && r.Status != ticketrush.ReservationPaying {
				err = fmt.Errorf("%s: claimed %s, want PAYING", ids[i], r.Status)
			}
			return err
		}},
		{"payment: debit", &res.debit, func(i int) error {
			var err error
			debits[i], err = store.Wallet.Debit(ctx, user(i), ids[i], capacityPrice, now)
			return err
		}},
		{"payment: complete", &res.complete, func(i int) error {
			r, err := store.Seats.Complete(ctx, ids[i], debits[i], now)
			if err == nil && r.Status != ticketrush.ReservationPaid {
				err = fmt.Errorf("%s: completed %s, want PAID", ids[i], r.Status)
			}
			return err
		}},
		{"payment: record the answer", &res.finish, func(i int) error {
			a, err := store.Wallet.Remember(ctx, user(i), key(i), fp(i), ticketrush.PaymentID(ids[i]), true, now)
			if err == nil && a.Ref != ticketrush.PaymentID(ids[i]) {
				err = fmt.Errorf("%s: the key recorded %s (%v)", user(i), a.Ref, a.Refused)
			}
			return err
		}},
	}
	for _, st := range steps {
		if *st.cost, err = phase(st.name, func() (int, error) { return fans, storm(ctx, capacityWorkers, fans, st.do) }); err != nil {
			return err
		}
	}
	return nil
}
