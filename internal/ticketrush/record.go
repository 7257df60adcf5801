package ticketrush

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrRecordRefused is the durable record refusing what a batch would write (a constraint it breaks, a
// value it cannot take): trying again cannot help, unlike a record that does not answer.
var ErrRecordRefused = errors.New("refused by the durable record")

// EventID names one outbox event: its stream and its entry id there (ms-seq). Within a stream, entry ids
// order events as they happened.
type EventID struct {
	Stream string
	Ms     int64
	Seq    int64
}

// ParseEventID reads a stream entry id, "<ms>-<seq>".
func ParseEventID(stream, id string) (EventID, error) {
	ms, seq, ok := strings.Cut(id, "-")
	m, err1 := strconv.ParseInt(ms, 10, 64)
	s, err2 := strconv.ParseInt(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil || m < 0 || s < 0 {
		return EventID{}, fmt.Errorf("bad entry id %q", id)
	}
	return EventID{Stream: stream, Ms: m, Seq: s}, nil
}

// Entry is the entry id, "<ms>-<seq>".
func (e EventID) Entry() string {
	return strconv.FormatInt(e.Ms, 10) + "-" + strconv.FormatInt(e.Seq, 10)
}

// Before reports whether e comes before o in their stream.
func (e EventID) Before(o EventID) bool { return e.Ms < o.Ms || (e.Ms == o.Ms && e.Seq < o.Seq) }

// LedgerType is the kind of a point movement.
type LedgerType string

// Point movements.
const (
	LedgerCharge  LedgerType = "CHARGE"
	LedgerPayment LedgerType = "PAYMENT"
	LedgerRefund  LedgerType = "REFUND"
)

// LedgerEntry is one point movement in the durable ledger. Amount is positive; Type says which way it went.
type LedgerEntry struct {
	ID            string // the charge, payment or refund id
	UserID        string
	Type          LedgerType
	Amount        int64
	BalanceAfter  int64
	ReservationID string // "" for a charge
	CreatedAt     time.Time
	Event         EventID
}

// ReservationChange is one event of a reservation's life as the durable record takes it. Fields an event
// does not carry are zero.
type ReservationChange struct {
	Event      EventID
	Type       string // the event type: hold.create, hold.cancel, hold.lapse, payment.claim, payment.release, sale
	Status     ReservationStatus
	At         time.Time
	ID         string
	UserID     string
	ConcertID  string
	ScheduleID string
	SeatID     string
	Seq        uint64
	Price      int64 // -1 when the event does not carry it
	ExpiresAt  time.Time
	PaymentID  string
}

// IdempotencyRecord is the durable copy of an Idempotency-Key record.
type IdempotencyRecord struct {
	UserID      string
	Key         string
	Kind        string // "charge" or "payment"
	Fingerprint string
	Ref         string // the charge id or the payment id
	Created     bool
	// Refused is the code of the refusal that answered the key's first request ("" when it acted): the
	// key answers every retry with it. Ref is empty then.
	Refused string
	At      time.Time
	// The charge's amount and balance after it (a charge's record replays them); read back only.
	Amount, Balance int64
}

// ReservationRecord is a reservation as the durable record holds it.
type ReservationRecord struct {
	Reservation
	ClaimedAt  time.Time // the last payment claim, while PAYING
	PaidAmount int64     // the amount of its payment, -1 when it has none; read back by reconcile only
}

// QueueMark is the highest arrival seq and leave ordinal a concert's queue has issued.
type QueueMark struct {
	ConcertID string
	MaxSeq    uint64
	MaxLeave  uint64
}

// ProcessedEvent is an event that leaves no row of its own (queue events, concert loads, idempotency
// records): its id is recorded, so that every event is in the record exactly once.
type ProcessedEvent struct {
	Event EventID
	Type  string
	At    time.Time
}

// RecordBatch is what a batch of outbox events adds to the durable record.
type RecordBatch struct {
	Ledger       []LedgerEntry
	Reservations []ReservationChange
	Idempotency  []IdempotencyRecord
	QueueMarks   []QueueMark
	Processed    []ProcessedEvent
	CodeClaims   []CodeClaim
	Prequeue     []PrequeueEntry // the on-sale's rows; their events are in Processed too
	DrawPlaces   []DrawPlace
	Draws        []DrawRecord
	// PrequeueLeaves are fans who left a pre-queue before its seal (event queue.unprequeue; At: when).
	PrequeueLeaves []PrequeueEntry
}

// CodeClaim is a presale access code's first user (a code.claim event; the event itself is in Processed).
type CodeClaim struct {
	ConcertID string
	CodeHash  string // hex SHA-256 of the code
	UserID    string
	At        time.Time
}

// PrequeueEntry is a fan entering a sale's pre-queue (event queue.prequeue).
type PrequeueEntry struct {
	ConcertID string
	UserID    string
	At        time.Time
	Event     EventID // the entry's (or the leave's) event: orders an entry and a leave of one fan
}

// DrawPlace is an entrant's place in a concert's draw (event draw.place): 1 is the smallest key.
type DrawPlace struct {
	ConcertID string
	Place     int64
	UserID    string
}

// DrawRecord is a concert's completed draw (event draw.done): the seed it was keyed with, the count of
// entrants and the digest of the keys file.
type DrawRecord struct {
	ConcertID string
	Seed      []byte
	Entrants  int64
	Digest    string
	DrawnAt   time.Time
}

// Len is the number of events in the batch.
func (b *RecordBatch) Len() int {
	return len(b.Ledger) + len(b.Reservations) + len(b.Processed)
}
