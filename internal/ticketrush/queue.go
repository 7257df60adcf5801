package ticketrush

import (
	"time"

	"github.com/google/uuid"
)

// QueueStatus is where a queue token stands.
type QueueStatus string

// The four states of docs/api.md.
const (
	StatusWaiting QueueStatus = "WAITING"
	StatusActive  QueueStatus = "ACTIVE"
	StatusExpired QueueStatus = "EXPIRED"
	StatusDone    QueueStatus = "DONE"
	// StatusSoldOut: the token's line closed because every seat of the concert is SOLD.
	StatusSoldOut QueueStatus = "SOLD_OUT"
)

// GateError is the refusal of a gated call whose token has status s: nil for ACTIVE.
func (s QueueStatus) GateError() error {
	switch s {
	case StatusActive:
		return nil
	case StatusWaiting, StatusPrequeue:
		return ErrQueueNotActive
	}
	return ErrQueueTokenExpired
}

// QueueClaims is what a signed queue token carries. Seq is the arrival sequence: the token's place in
// the concert's line, given by an INCR, so that FIFO order is the order of Seq.
type QueueClaims struct {
	ID        uuid.UUID
	UserID    string
	ConcertID string
	Seq       uint64
}

// Ticket is a queue token's state as the queue API shows it.
type Ticket struct {
	Token          string
	ConcertID      string
	Status         QueueStatus
	Position       int64
	EstimatedWait  time.Duration // while Paused, the wait once admission resumes
	PollAfter      time.Duration
	Paused         bool      // the concert's admission is paused: nobody is admitted until it resumes
	ActiveUntil    time.Time // zero unless ACTIVE
	OpensAt        time.Time // the sale's opening while the token is PREQUEUE, else zero
	DrawKey        string    // the fan's draw key (hex) once their pre-queue is drawn, else ""
	SeatsAvailable int64     // seats of the concert AVAILABLE at the instance's last view refresh
}

// QueueState is a concert's live waiting-room figures as the admin API shows them.
type QueueState struct {
	Waiting   int64
	Active    int64
	Admitted  uint64        // admissions so far
	Settings  QueueSettings // in force: capacity, rate, pause, activePerSeat and abandonment as Redis has them
	Seats     SeatCounts
	Prequeue  int64     // fans in the pre-queue of a sale not yet drawn
	OpensAt   time.Time // the sale's opening while it is ahead, else zero
	SoldOut   bool
	Abandoned int64
}

// SeatCounts counts a concert's seats by state over all its schedules.
type SeatCounts struct {
	Available int64
	Held      int64
	Sold      int64
}

// QueuePatch changes some of a concert's queue settings; nil fields stay as they are.
type QueuePatch struct {
	ActiveCapacity *int
	AdmitPerSecond *int
	Paused         *bool

	JoinPowBits        *int
	AccessCodeRequired *bool
	ActivePerSeat      *int
	AbandonAfter       *time.Duration
	NoShow             *time.Duration
}

// Apply returns s with the patch applied.
func (p QueuePatch) Apply(s QueueSettings) QueueSettings {
	if p.ActiveCapacity != nil {
		s.ActiveCapacity = *p.ActiveCapacity
	}
	if p.AdmitPerSecond != nil {
		s.AdmitPerSecond = *p.AdmitPerSecond
	}
	if p.Paused != nil {
		s.Paused = *p.Paused
	}
	if p.JoinPowBits != nil {
		s.JoinPowBits = *p.JoinPowBits
	}
	if p.AccessCodeRequired != nil {
		s.AccessCodeRequired = *p.AccessCodeRequired
	}
	if p.ActivePerSeat != nil {
		s.ActivePerSeat = *p.ActivePerSeat
	}
	if p.AbandonAfter != nil {
		s.AbandonAfter = *p.AbandonAfter
	}
	if p.NoShow != nil {
		s.NoShow = *p.NoShow
	}
	return s
}

// JoinPass is what a join carries past a concert's gates (docs/api.md Abuse): a proof of work the caller
// has checked (its challenge's id, difficulty and expiry), or PowInvalid for one that failed the check,
// and the hex SHA-256 of an access code. The zero pass carries nothing.
type JoinPass struct {
	PowID      string
	PowBits    int
	PowExpires time.Time
	PowInvalid bool
	CodeHash   string
}

// JoinResult is what a join did: the arrival it found or made.
type JoinResult struct {
	Status      QueueStatus // PREQUEUE, WAITING or ACTIVE
	Seq         uint64
	ActiveUntil time.Time
	Created     bool   // a new arrival, not the fan's existing live token
	Skipped     uint64 // a sharded line's rejoin: the arrival seq the join took and gave back (a gap), else 0
}

// TokenState is a queue token's exact state, as the store knows it.
type TokenState struct {
	Status      QueueStatus
	Position    int64 // 1-based while WAITING
	ActiveUntil time.Time
}

// QueueSnapshot is the shared state from which any instance answers polls of WAITING tokens on its own:
// the line is every seq in (Head, Tail] except the leaves.
type QueueSnapshot struct {
	Found          bool
	Head           uint64 // highest seq that left the line by admission
	Tail           uint64 // newest arrival
	Admitted       uint64 // admissions so far
	Waiting        int64
	Active         int64
	ActiveCapacity int
	AdmitPerSecond int
	Paused         bool
	Leaves         []Leave // leaves after the ordinal asked for, in ordinal order
	SoldOut        bool    // every seat of every schedule is SOLD
	SeatsAvailable int64   // seats AVAILABLE now (a lapsed, unswept hold counts as available)
	ActivePerSeat  int
	Abandoned      int64         // fans dropped so far for not polling or not showing up
	AbandonAfter   time.Duration // 0: off
}

// Leave is one fan leaving the line: their seq and the leave's ordinal in the concert's leave log.
type Leave struct {
	Seq     uint64
	Ordinal uint64
}

// TickResult is what one admission tick did.
type TickResult struct {
	Admitted  int
	Lapsed    int
	Waiting   int64
	Active    int64
	Abandoned int // WAITING fans dropped in this tick for not polling
	NoShows   int // ACTIVE fans expired in this tick for making no gated call
}
