package ticketrush

import (
	"strconv"
	"strings"
	"time"
)

// ReservationStatus is where a hold stands. PAYING is internal: a payment has claimed the hold; the API
// shows it as HELD.
type ReservationStatus string

// Reservation states.
const (
	ReservationHeld      ReservationStatus = "HELD"
	ReservationPaying    ReservationStatus = "PAYING"
	ReservationPaid      ReservationStatus = "PAID"
	ReservationExpired   ReservationStatus = "EXPIRED"
	ReservationCancelled ReservationStatus = "CANCELLED"
)

// Reservation is one seat held by one fan.
type Reservation struct {
	ID         string
	UserID     string
	ConcertID  string
	ScheduleID string
	SeatID     string
	Seq        uint64 // arrival seq of the queue token that held it
	Price      int64
	Status     ReservationStatus
	ExpiresAt  time.Time
	CreatedAt  time.Time
	PaymentID  string    // once PAID
	PaidAt     time.Time // once PAID
	Balance    int64     // balance after the debit, once PAID
}

// PublicStatus is the status the API shows at now: a hold being paid is still HELD, and a hold past its
// expiry is EXPIRED before any sweep.
func (r Reservation) PublicStatus(now time.Time) ReservationStatus {
	switch {
	case r.Status == ReservationPaying:
		return ReservationHeld
	case r.Status == ReservationHeld && !now.Before(r.ExpiresAt):
		return ReservationExpired
	}
	return r.Status
}

// Payment is the debit of one reservation's price.
type Payment struct {
	ID            string
	ReservationID string
	UserID        string
	Amount        int64
	Balance       int64 // after the debit
	PaidAt        time.Time
}

// PaymentOf returns the payment of a PAID reservation.
func PaymentOf(r Reservation) Payment {
	return Payment{ID: r.PaymentID, ReservationID: r.ID, UserID: r.UserID, Amount: r.Price, Balance: r.Balance, PaidAt: r.PaidAt}
}

// Charge is points added to a balance.
type Charge struct {
	ID        string
	Amount    int64
	Balance   int64 // after the charge
	CreatedAt time.Time
}

// Point rules of docs/api.md.
const (
	MaxChargeAmount = 10_000_000
	MaxBalance      = 1_000_000_000
	// IdempotencyTTL is how long an Idempotency-Key is remembered.
	IdempotencyTTL = 24 * time.Hour
)

// SeatStatus is a seat's state as the seat map shows it.
type SeatStatus string

// Seat states.
const (
	SeatAvailable SeatStatus = "AVAILABLE"
	SeatHeld      SeatStatus = "HELD"
	SeatSold      SeatStatus = "SOLD"
)

// Seat is one seat of one schedule.
type Seat struct {
	ID      string
	Section string
	Price   int64
	Status  SeatStatus
}

// ScheduleAvailability is a schedule with its seat counts.
type ScheduleAvailability struct {
	Schedule
	Available int64
	Total     int64
}

// ScheduleCount is how many seats of a schedule are taken (held, being paid or sold) and sold.
type ScheduleCount struct {
	ScheduleID string
	Taken      int64
	Sold       int64
}

// SeatID is the id of seat n (from 1) of section: "<section>-<n>", as Seat reads it.
func SeatID(section string, n int) string { return section + "-" + strconv.Itoa(n) }

// Seat returns the section and price of seatID ("<section>-<n>") in the concert, if it exists.
func (c Concert) Seat(seatID string) (Section, bool) {
	name, num, ok := strings.Cut(seatID, "-")
	if !ok {
		return Section{}, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || strconv.Itoa(n) != num {
		return Section{}, false
	}
	for _, s := range c.Sections {
		if s.Name == name && n >= 1 && n <= s.Seats {
			return s, true
		}
	}
	return Section{}, false
}

// Schedule returns the concert's schedule id.
func (c Concert) Schedule(id string) (Schedule, bool) {
	for _, s := range c.Schedules {
		if s.ID == id {
			return s, true
		}
	}
	return Schedule{}, false
}

// ScheduleIDs lists the concert's schedule ids.
func (c Concert) ScheduleIDs() []string {
	ids := make([]string, len(c.Schedules))
	for i, s := range c.Schedules {
		ids[i] = s.ID
	}
	return ids
}

// idLen is the length of NewID's ids.
const idLen = 12

// NewReservationID returns a fresh reservation id. It embeds the concert and schedule ids, so that the
// reservation's keys (in its concert's hash slot, and its schedule's seat map) follow from the id alone.
func NewReservationID(concertID, scheduleID string) string {
	return concertID + scheduleID + NewID()
}

// MaxSeatBlocks is the most blocks a schedule's seats may be kept in: a reservation id names its block
// by one character of its random part (NewReservationIDInBlock).
const MaxSeatBlocks = len(idAlphabet)

// NewReservationIDInBlock returns a fresh reservation id of a seat in block (below MaxSeatBlocks) of a
// schedule whose seats are kept in blocks: the first character of its random part names the block, so
// that a step on the reservation finds its seat's block from the id alone (ReservationBlock).
func NewReservationIDInBlock(concertID, scheduleID string, block int) string {
	id := NewReservationID(concertID, scheduleID)
	return id[:2*idLen] + idAlphabet[block:block+1] + id[2*idLen+1:]
}

// ReservationBlock is the block, of blocks, that reservation id names (NewReservationIDInBlock); 0 for
// a schedule of one block, whatever the id.
func ReservationBlock(id string, blocks int) int {
	if blocks <= 1 || len(id) != 3*idLen {
		return 0
	}
	return max(0, strings.IndexByte(idAlphabet, id[2*idLen])) % blocks
}

// ParseReservationID returns the concert and schedule of a reservation id.
func ParseReservationID(id string) (concertID, scheduleID string, ok bool) {
	if len(id) != 3*idLen || !ValidID(id[:idLen]) || !ValidID(id[idLen:2*idLen]) || !ValidID(id[2*idLen:]) {
		return "", "", false
	}
	return id[:idLen], id[idLen : 2*idLen], true
}

// PaymentID is the id of a reservation's payment: there is at most one.
func PaymentID(reservationID string) string { return "p" + reservationID }

// RefundID is the id of a reservation's refund: there is at most one.
func RefundID(reservationID string) string { return "r" + reservationID }

// ReservationOfPayment returns the reservation id of a payment id.
func ReservationOfPayment(paymentID string) (string, bool) {
	id, ok := strings.CutPrefix(paymentID, "p")
	if _, _, valid := ParseReservationID(id); !ok || !valid {
		return "", false
	}
	return id, true
}

// KeyAnswer is the answer an Idempotency-Key of a payment repeats: the payment (Ref, and Created when
// the first answer was a creation), or Refused, the error of the refusal that answered it.
type KeyAnswer struct {
	Ref     string
	Created bool
	Refused error
}
