package ticketrush

import (
	"sync"
	"time"
)

// TakenSeat is a seat of a schedule that is not plainly free, as an instance's seat view keeps it: sold,
// being paid, or held until HeldUntil.
type TakenSeat struct {
	Sold      bool
	Paying    bool  // claimed by a payment: reads HELD, and may come back (a short balance releases it)
	HeldUntil int64 // a hold's expiry, Unix ms as the scripts compare it (0 when sold or paying)
}

// StatusAt is what the seat map shows of the seat at nowMs: a hold past its expiry reads AVAILABLE.
func (t TakenSeat) StatusAt(nowMs int64) SeatStatus {
	switch {
	case t.Sold:
		return SeatSold
	case t.Paying || t.HeldUntil > nowMs:
		return SeatHeld
	}
	return SeatAvailable
}

// RefusesAt reports whether a hold of the seat at nowMs is refused (SEAT_UNAVAILABLE) whatever else
// happens, unless the seat is freed first: a SOLD seat never comes back, and a hold until T cannot be
// taken before T. A seat being paid is not refused here (its claim may be released).
func (t TakenSeat) RefusesAt(nowMs int64) bool {
	return t.Sold || (!t.Paying && t.HeldUntil > nowMs)
}

// SeatMap is one schedule's seat map as an instance built it, at AsOf. A seat view shares one with
// every reader of the schedule until the next change it sees: nobody may modify it. Encoded keeps one
// encoding of it (the HTTP adapter's bytes), made by the first reader that asks.
type SeatMap struct {
	ScheduleID string
	Seats      []Seat
	AsOf       time.Time

	once    sync.Once
	encoded any
}

// Encoded returns encode(m), calling encode only once per map; encode must always be the same
// function.
func (m *SeatMap) Encoded(encode func(*SeatMap) any) any {
	m.once.Do(func() { m.encoded = encode(m) })
	return m.encoded
}
