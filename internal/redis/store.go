package redis

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Store is the sale's Redis: the concerts' layouts and settings, readiness and the replicas' waits
// (its own methods), and one part for each side of the sale it serves, each running that side's
// scripts: Line (joins, leaves, ticks, tokens), Seats (holds, cancels, payments, seat maps), Wallet
// (points and idempotency keys) and Draws (the on-sale's prequeue and draw). The parts share core: the
// client, the keys, the scripts and the concerts' layouts.
type Store struct {
	*core
	Line   *Line
	Seats  *Seats
	Wallet *Wallet
	Draws  *Draws
}

// Line runs the waiting line's scripts: joins, leaves, the admission tick and the queue tokens' state.
type Line struct{ *core }

// Seats runs the seat side's scripts: holds, cancels, the sweep, payments and the seat maps.
type Seats struct{ *core }

// Wallet runs the points' scripts: charges, debits, refunds and the idempotency keys.
type Wallet struct{ *core }

// Draws runs the on-sale's scripts: the prequeue, the seal and the placement of the draw.
type Draws struct{ *core }

// core is what the parts of a Store share.
type core struct {
	client      rueidis.Client
	keys        Keys
	metrics     *scriptMetrics
	concerts    atomic.Pointer[func() []string] // the concerts whose slots Ping checks
	replicaWait time.Duration                   // > 0: replicatedScripts wait for a replica (replicas.go)
	alone       aloneSlots                      // slots whose master had no replica to wait for
	liveChunk   int                             // the most arrivals a liveness write carries: seenChunk (tests: fewer)

	load, join, leave, status, tick, seen, snapshot, configure *script

	seatHold, holdCancel, holdSweep, scheduleCounts *script
	paymentClaim, paymentRelease                    *script
	pointsCharge, walletDebit, walletRefund         *script
	paymentRemember                                 *script
	drawSeal, drawPlace, drawStatus, drawRead       *script
	prequeueLeave                                   *script

	lineArrive, lineEnter, lineHeads, lineAdmit, linePop, lineLeave, lineLeftSc *script
	lineMigrate, seenMigrate                                                    *script
	lineSeal, linePlace                                                         *script
	lines                                                                       lines
	arrivals                                                                    *batches[arrivalJoin, arrival]
	enters                                                                      *batches[enterJoin, entered]

	limit UserLimit // the per-user rate of join, hold, cancel, pay and charge; zero: off

	sources map[string]string // scripts run in place of the embedded ones (WithScript; tests only)

	// The seat slots of a concert whose seats are spread (seatslot.go).
	layouts                                  layouts
	gateApply, seatTake, seatSell, tokenDone *script
	gates                                    *batches[gateStep, int64]
	scheduleLoad, inventoryCarry             *script
	crash                                    func(step string) error // a chain's step boundary; tests only
	settling                                 sync.WaitGroup          // the joins' lost steps being settled (settleEnter)

	// The parts over this core that a concert's ways (ways.go) call into.
	line  *Line
	seats *Seats
	draws *Draws
}

// LimitUsers sets the per-user rate the state-changing scripts enforce (0 turns it off). Call it before
// the store serves.
func (s *Store) LimitUsers(l UserLimit) { s.limit = l }

// Keys returns the key builder, for tools and tests that read state directly.
func (s *Store) Keys() Keys { return s.keys }
