package repair

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The comparisons of reconcile, on slots as the Inspector reads them: each difference is found, both
// ways, and agreeing sides give none. (Reconcile against a running write-behind is tested with the
// worker's harness, in internal/writebehind.)

func TestCompareBalances(t *testing.T) {
	assert.Empty(t, compareBalances(map[string]int64{"a": 5, "b": 0}, map[string]int64{"a": 5}), "a zero balance needs no ledger")
	assert.ElementsMatch(t, []string{
		"balance of a: 5 in redis, 4 by the ledger",
		"balance of c: none in redis, 7 by the ledger",
	}, compareBalances(map[string]int64{"a": 5}, map[string]int64{"a": 4, "c": 7}))
}

func TestCompareConcert(t *testing.T) {
	res := func(id, status, payment string) ticketrush.Reservation {
		return ticketrush.Reservation{ID: id, UserID: "u", ScheduleID: "s1", SeatID: "A-" + id, Price: 10,
			Status: ticketrush.ReservationStatus(status), PaymentID: payment}
	}
	rec := func(r ticketrush.Reservation, paid int64) ticketrush.ReservationRecord {
		return ticketrush.ReservationRecord{Reservation: r, PaidAmount: paid}
	}
	sold := res("1", string(ticketrush.ReservationPaid), "p1")
	held := res("2", string(ticketrush.ReservationHeld), "")
	slot := redis.ConcertSlot{
		Reservations: map[string]ticketrush.Reservation{"1": sold, "2": held},
		Seats: map[string]map[string]redis.SeatState{"s1": {
			"A-1": {Kind: redis.SeatSold, Reservation: "1"},
			"A-2": {Kind: redis.SeatHeld, Reservation: "2"},
		}},
	}
	agree := map[string]ticketrush.ReservationRecord{"1": rec(sold, 10), "2": rec(held, -1)}
	assert.Empty(t, compareConcert("c", slot, agree))

	unpaid := map[string]ticketrush.ReservationRecord{"1": rec(sold, 9), "3": rec(res("3", string(ticketrush.ReservationPaid), "p3"), 10)}
	assert.ElementsMatch(t, []string{
		"reservation 2 (concert c): HELD in redis, not in postgres",
		"reservation 3 (concert c): PAID in postgres, not in redis",
		"seat s1/A-1: reservation 1 is PAID in postgres without a payment of its price",
		"seat s1/A-3: sold to reservation 3 in postgres, not SOLD in redis",
	}, compareConcert("c", slot, unpaid))
}

func TestCompareInventory(t *testing.T) {
	c := ticketrush.Concert{ID: "c"}
	inv := redis.Inventory{Seats: 4, Available: 3, Sold: 1}
	assert.Empty(t, compareInventory(c, redis.ConcertSlot{Inventory: inv, InventoryOK: true, Counted: inv}))
	assert.Equal(t, []string{"concert c: no readable seat count (inv) in redis"},
		compareInventory(c, redis.ConcertSlot{Counted: inv}))
	off := inv
	off.Sold = 2
	assert.Len(t, compareInventory(c, redis.ConcertSlot{Inventory: off, InventoryOK: true, Counted: inv}), 1)
}
