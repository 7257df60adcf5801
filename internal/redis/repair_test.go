package redis

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// inventoryOf counts as the seat scripts do: every seat in a map is taken (held, being paid or
// sold), only a SOLD one is sold, and the concert is sold out once every seat of every schedule is.
func TestInventoryOf(t *testing.T) {
	c := ticketrush.Concert{Schedules: []ticketrush.Schedule{{ID: "s1"}, {ID: "s2"}},
		Sections: []ticketrush.Section{{Name: "A", Seats: 2}}}
	sold := func(res string) string { return SeatState{Kind: SeatSold, Reservation: res}.String() }
	tests := []struct {
		name  string
		seats map[string]map[string]string
		want  Inventory
	}{
		{"none taken", nil, Inventory{Seats: 4, Available: 4}},
		{"held, paying and sold", map[string]map[string]string{
			"s1": {"A-1": SeatState{Kind: SeatHeld, Reservation: "r1", Expires: 5}.String(), "A-2": sold("r2")},
			"s2": {"A-1": SeatState{Kind: SeatPaying, Reservation: "r3"}.String()},
		}, Inventory{Seats: 4, Available: 1, Sold: 1}},
		{"sold out", map[string]map[string]string{"s1": {"A-1": sold("r1"), "A-2": sold("r2")}, "s2": {"A-1": sold("r3"), "A-2": sold("r4")}},
			Inventory{Seats: 4, Sold: 4, SoldOut: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, inventoryOf(int64(c.TotalSeats()*len(c.Schedules)), tt.seats))
		})
	}
}
