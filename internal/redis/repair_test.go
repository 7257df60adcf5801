package redis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// Fans admitted by AdmitSynthetic pass the hold script's queue check with the shared arrival, and
// ActiveSeq reads it back.
func TestAdmitSynthetic(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		sale(t, s, nil)
		require.NoError(t, AdmitSynthetic(ctx, c, s.Keys().Concert(cid), []string{"syn-1", "syn-2"}, 7, t0.Add(time.Hour)))
		seq, err := NewInspector(c, s.keys.prefix).ActiveSeq(ctx, cid, "syn-2")
		require.NoError(t, err)
		assert.EqualValues(t, 7, seq)
		_, _, err = s.Hold(ctx, ticketrush.QueueClaims{UserID: "syn-1", ConcertID: cid, Seq: 7}, sA, "VIP-1", 100, t0)
		assert.NoError(t, err)
		_, _, err = s.Hold(ctx, ticketrush.QueueClaims{UserID: "syn-2", ConcertID: cid, Seq: 7}, sA, "VIP-2", 100, t0.Add(2*time.Hour))
		assert.ErrorIs(t, err, ticketrush.ErrQueueTokenExpired, "active until until")
	})
}
