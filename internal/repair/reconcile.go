package repair

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/redis/rueidis"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// Ledger is the durable record as reconcile reads it: as of a point of a stream.
type Ledger interface {
	Concerts(ctx context.Context) ([]ticketrush.Concert, error)
	BalancesAt(ctx context.Context, upTo ticketrush.EventID) (map[string]int64, error)
	ReservationsAt(ctx context.Context, upTo ticketrush.EventID) (map[string]ticketrush.ReservationRecord, error)
	LedgerAmounts(ctx context.Context, ids []string) (map[string]int64, error)
}

// Reconcile compares Redis with the durable record and returns every difference, in words: every
// balance against its ledger, every reservation's state against its history, every SOLD seat against
// its payment (and that payment against its debit).
//
// It works while the sale goes on. Each hash slot (a concert, a wallet shard) is read in one MULTI
// together with the last id of its stream; reconcile then waits until the group has written every
// event up to that id (at most wait), and reads the record as of that id. So the two sides describe
// the same moment, and a difference is a real one, not write-behind lag. Concerts are read before
// wallets, so the debit of every sale seen is in the wallet read.
func Reconcile(ctx context.Context, rdb rueidis.Client, led Ledger, prefix, group string, wait time.Duration) ([]string, error) {
	if group == "" {
		group = redis.WriteBehindGroup
	}
	in := redis.NewInspector(rdb, prefix)
	concerts, err := led.Concerts(ctx)
	if err != nil {
		return nil, err
	}
	var diffs []string
	deadline := time.Now().Add(wait)
	var debits []string         // payment ids of the sold seats
	price := map[string]int64{} // payment id -> price
	for _, c := range concerts {
		// The concert's slot, or each schedule's seat slot of a concert whose seats are spread: each
		// read with its own stream's cut, against the record as of that cut (its reservations' events
		// are all in that stream). The seat count a tick carries onto a spread concert's slot may trail
		// the schedules' by a tick and is not compared; each schedule's own count is.
		slots, err := in.SeatSlots(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, snap := range slots {
			if err := waitWritten(ctx, rdb, group, snap.Cut, deadline); err != nil {
				diffs = append(diffs, err.Error())
				continue
			}
			rec, err := led.ReservationsAt(ctx, snap.Cut)
			if err != nil {
				return nil, err
			}
			diffs = append(diffs, compareConcert(c.ID, snap, rec)...)
			diffs = append(diffs, compareInventory(c, snap)...)
			for _, r := range snap.Reservations {
				if r.Status == ticketrush.ReservationPaid && r.PaymentID != "" {
					debits = append(debits, r.PaymentID)
					price[r.PaymentID] = r.Price
				}
			}
		}
	}
	for i := range redis.WalletShards {
		w, err := in.WalletSlot(ctx, i)
		if err != nil {
			return nil, err
		}
		if err := waitWritten(ctx, rdb, group, w.Cut, deadline); err != nil {
			diffs = append(diffs, err.Error())
			continue
		}
		rec, err := led.BalancesAt(ctx, w.Cut)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, compareBalances(w.Balances, rec)...)
	}
	if len(debits) > 0 {
		amounts, err := led.LedgerAmounts(ctx, debits)
		if err != nil {
			return nil, err
		}
		for _, id := range debits {
			if a, ok := amounts[id]; !ok {
				diffs = append(diffs, fmt.Sprintf("payment %s: sold in redis, no PAYMENT entry in the ledger", id))
			} else if a != price[id] {
				diffs = append(diffs, fmt.Sprintf("payment %s: the ledger debited %d for a seat of price %d", id, a, price[id]))
			}
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

// waitWritten waits until the group has written (acknowledged) every entry of the stream up to and
// including upTo: delivered that far, and nothing pending at or below it.
func waitWritten(ctx context.Context, rdb rueidis.Client, group string, upTo ticketrush.EventID, deadline time.Time) error {
	if upTo.Seq == 1<<62-1 {
		return nil // no entry since the stream was made: nothing to wait for
	}
	for {
		done, err := written(ctx, rdb, group, upTo)
		if err != nil {
			return fmt.Errorf("stream %s: %w", upTo.Stream, err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stream %s: the write-behind has not written its events up to %s yet", upTo.Stream, upTo.Entry())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func written(ctx context.Context, rdb rueidis.Client, group string, upTo ticketrush.EventID) (bool, error) {
	res := rdb.DoMulti(ctx, rdb.B().XinfoGroups().Key(upTo.Stream).Build(),
		rdb.B().Xpending().Key(upTo.Stream).Group(group).Start("-").End(upTo.Entry()).Count(1).Build())
	msg, err := res[0].ToMessage()
	if err != nil {
		return false, err
	}
	groups, err := redis.ParseStreamGroups(msg)
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		if g.Name != group {
			continue
		}
		last, err := ticketrush.ParseEventID(upTo.Stream, g.LastDelivered)
		if err != nil || last.Before(upTo) {
			return false, nil
		}
		pending, err := res[1].ToArray()
		if err != nil {
			return false, err
		}
		return len(pending) == 0, nil
	}
	return false, nil // no group yet: no worker has come by since the stream was made
}

// compareInventory checks the seat count the seat scripts keep (which the admission tick reads)
// against the seat maps it counts.
func compareInventory(c ticketrush.Concert, snap redis.ConcertSlot) []string {
	if !snap.InventoryOK {
		return []string{fmt.Sprintf("concert %s: no readable seat count (inv) in redis", c.ID)}
	}
	if got, want := snap.Inventory, snap.Counted; got != want {
		return []string{fmt.Sprintf("concert %s: seat count %+v in redis, the seat maps give %+v", c.ID, got, want)}
	}
	return nil
}

func compareConcert(concertID string, snap redis.ConcertSlot, rec map[string]ticketrush.ReservationRecord) []string {
	var diffs []string
	for id, r := range snap.Reservations {
		p, ok := rec[id]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("reservation %s (concert %s): %s in redis, not in postgres", id, concertID, r.Status))
			continue
		}
		if p.Status != r.Status {
			diffs = append(diffs, fmt.Sprintf("reservation %s: %s in redis, %s in postgres", id, r.Status, p.Status))
		}
		if p.UserID != r.UserID || p.SeatID != r.SeatID || p.Price != r.Price || p.ScheduleID != r.ScheduleID {
			diffs = append(diffs, fmt.Sprintf("reservation %s: redis has %s/%s/%s at %d, postgres %s/%s/%s at %d", id,
				r.UserID, r.ScheduleID, r.SeatID, r.Price, p.UserID, p.ScheduleID, p.SeatID, p.Price))
		}
	}
	for id, p := range rec {
		if _, ok := snap.Reservations[id]; !ok {
			diffs = append(diffs, fmt.Sprintf("reservation %s (concert %s): %s in postgres, not in redis", id, concertID, p.Status))
		}
	}
	// Every SOLD seat against its payment, both ways.
	soldPG := map[string]ticketrush.ReservationRecord{} // schedule/seat -> reservation
	for _, p := range rec {
		if p.Status == ticketrush.ReservationPaid {
			soldPG[p.ScheduleID+"/"+p.SeatID] = p
		}
	}
	for sched, seats := range snap.Seats {
		for seat, st := range seats {
			if st.Kind != redis.SeatSold {
				continue
			}
			id := st.Reservation
			p, found := soldPG[sched+"/"+seat]
			switch {
			case !found:
				diffs = append(diffs, fmt.Sprintf("seat %s/%s: SOLD in redis (reservation %s), no payment in postgres", sched, seat, id))
			case p.ID != id:
				diffs = append(diffs, fmt.Sprintf("seat %s/%s: sold to reservation %s in redis, %s in postgres", sched, seat, id, p.ID))
			case p.PaymentID == "" || p.PaidAmount != p.Price:
				diffs = append(diffs, fmt.Sprintf("seat %s/%s: reservation %s is PAID in postgres without a payment of its price", sched, seat, id))
			}
			delete(soldPG, sched+"/"+seat)
		}
	}
	for seat, p := range soldPG {
		diffs = append(diffs, fmt.Sprintf("seat %s: sold to reservation %s in postgres, not SOLD in redis", seat, p.ID))
	}
	return diffs
}

func compareBalances(redisBal, rec map[string]int64) []string {
	var diffs []string
	for user, b := range redisBal {
		if p := rec[user]; p != b {
			diffs = append(diffs, fmt.Sprintf("balance of %s: %d in redis, %d by the ledger", user, b, p))
		}
	}
	for user, p := range rec {
		if _, ok := redisBal[user]; !ok && p != 0 {
			diffs = append(diffs, fmt.Sprintf("balance of %s: none in redis, %d by the ledger", user, p))
		}
	}
	return diffs
}
