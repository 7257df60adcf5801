package ticketrush

import (
	"errors"
	"time"
)

// DefaultPrequeueWindow is how long before the opening the pre-queue opens when the admin does not say.
const DefaultPrequeueWindow = 30 * time.Minute

// Sale is a concert's scheduled opening (docs/api.md, "On-sale"): nobody is admitted before OpensAt; fans who
// join from PrequeueOpensAt on are entrants of the draw at OpensAt, placed by lot ahead of later arrivals.
// Seed is the draw's secret: never shown by an API, a metric or a log before the draw. From ClosesAt on
// (zero: never) the sale is over: joins are refused and, once its last holds and payments are done, the
// concert costs nothing but its storage (no tick, sweep or stream read).
type Sale struct {
	OpensAt         time.Time
	PrequeueOpensAt time.Time
	ClosesAt        time.Time
	Seed            [32]byte
}

// ClosedAt reports whether the sale has closed at now.
func (s Sale) ClosedAt(now time.Time) bool { return !s.ClosesAt.IsZero() && !now.Before(s.ClosesAt) }

// Validate checks a sale at its concert's creation, at now: the opening ahead, the pre-queue opening no
// later than it. The pre-queue opening, given or left to its default, may be past already: the pre-queue
// is open at once (docs/api.md sets no rule on it but its order with the opening).
func (s Sale) Validate(now time.Time) error {
	switch {
	case s.OpensAt.IsZero():
		return Invalidf("sale.opensAt is required when sale is given")
	case !s.OpensAt.After(now):
		return Invalidf("sale.opensAt must be in the future")
	case s.PrequeueOpensAt.After(s.OpensAt):
		return Invalidf("sale.prequeueOpensAt must not be after sale.opensAt")
	case !s.ClosesAt.IsZero() && !s.ClosesAt.After(s.OpensAt):
		return Invalidf("sale.closesAt must be after sale.opensAt")
	}
	return nil
}

// SaleNotOpenError is a join before the pre-queue opens; the problem document carries both times.
type SaleNotOpenError struct {
	OpensAt, PrequeueOpensAt time.Time
}

func (e *SaleNotOpenError) Error() string { return "sale not open" }
func (e *SaleNotOpenError) Unwrap() error { return ErrSaleNotOpen }
func (e *SaleNotOpenError) ErrorDetail() string {
	return "the pre-queue opens at " + e.PrequeueOpensAt.UTC().Format(time.RFC3339) + " and the sale at " +
		e.OpensAt.UTC().Format(time.RFC3339) + "; join again then"
}

// AsSaleNotOpen returns the sale times of a SALE_NOT_OPEN refusal.
func AsSaleNotOpen(err error) (*SaleNotOpenError, bool) {
	return errors.AsType[*SaleNotOpenError](err)
}

// DrawStatus is where a concert's draw stands.
type DrawStatus string

// The draw statuses of docs/api.md.
const (
	DrawPending DrawStatus = "PENDING" // the pre-queue has not opened
	DrawOpen    DrawStatus = "OPEN"    // the pre-queue is open, or closed and being drawn
	DrawDrawn   DrawStatus = "DRAWN"
)

// DrawState is a concert's draw as Redis keeps it.
type DrawState struct {
	Sealed   bool  // the pre-queue is closed: later joins are post-opening arrivals
	Base     int64 // the entrants hold the arrival seqs Base+1..Base+Entrants
	Entrants int64
	Placed   int64 // entrants placed in the line so far (the draw's resumable cursor)
	Digest   string
	DrawnAt  time.Time // zero until every entrant is placed
}

// Drawn reports whether every entrant is placed.
func (d DrawState) Drawn() bool { return !d.DrawnAt.IsZero() }

// Entrant reports whether arrival seq seq is a place the draw gave (a pre-queue entrant's), not a join
// after the opening.
func (d DrawState) Entrant(seq uint64) bool {
	return d.Sealed && seq > uint64(d.Base) && seq <= uint64(d.Base+d.Entrants)
}

// StatusPrequeue is a pre-queue entrant's token before the draw placed them.
const StatusPrequeue QueueStatus = "PREQUEUE"
