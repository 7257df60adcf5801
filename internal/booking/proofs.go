package booking

import (
	"errors"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// What this instance has proven of fans' tokens: a hold of a seat its view shows taken is refused
// from memory only for a fan proven ACTIVE within the last second.

// proofKey is a fan of a concert; one live token each.
type proofKey struct{ concert, user string }

// proof is what this instance learnt last of a fan's token: ACTIVE (seq) at least until until.
type proof struct {
	seq         uint64
	until       time.Time
	activeUntil time.Time // the token's activeUntil, when a gate check told it (zero: not known)
}

// proven records that a script or the gate found the fan's token ACTIVE at now (until activeUntil, when
// known).
func (sv *seatView) proven(c ticketrush.QueueClaims, now, activeUntil time.Time) {
	if sv == nil || !sv.enabled.Load() {
		return
	}
	key := proofKey{c.ConcertID, c.UserID}
	sv.pmu.Lock()
	defer sv.pmu.Unlock()
	if p, ok := sv.proofs[key]; ok && p.seq == c.Seq && activeUntil.IsZero() {
		activeUntil = p.activeUntil // a hold's answer does not tell it; an earlier gate check did
	}
	until := now.Add(sv.proofFor)
	if !activeUntil.IsZero() && activeUntil.Before(until) {
		until = activeUntil
	}
	sv.proofs[key] = proof{seq: c.Seq, until: until, activeUntil: activeUntil}
}

// ended forgets what this instance knew of a fan's token: it is not (or may no longer be) ACTIVE.
func (sv *seatView) ended(concertID, userID string) {
	if sv == nil {
		return
	}
	sv.pmu.Lock()
	delete(sv.proofs, proofKey{concertID, userID})
	sv.pmu.Unlock()
}

// refuted forgets a proof of c's token when a script found it not ACTIVE (an older token's answer
// leaves a newer token's proof alone).
func (sv *seatView) refuted(c ticketrush.QueueClaims) {
	sv.pmu.Lock()
	if p, ok := sv.proofs[proofKey{c.ConcertID, c.UserID}]; ok && p.seq == c.Seq {
		delete(sv.proofs, proofKey{c.ConcertID, c.UserID})
	}
	sv.pmu.Unlock()
}

// active reports whether the token of c was proven ACTIVE recently enough to answer for the script.
func (sv *seatView) active(c ticketrush.QueueClaims, now time.Time) bool {
	sv.pmu.Lock()
	p, ok := sv.proofs[proofKey{c.ConcertID, c.UserID}]
	sv.pmu.Unlock()
	return ok && p.seq == c.Seq && now.Before(p.until)
}

// learn reads what a hold's answer says of the token: a seat answer (taken, held, over the limit) is
// given only to an ACTIVE token; a token answer means it is not ACTIVE.
func (sv *seatView) learn(c ticketrush.QueueClaims, now time.Time, err error) {
	switch {
	case err == nil, errors.Is(err, ticketrush.ErrSeatUnavailable), errors.Is(err, ticketrush.ErrHoldLimitReached):
		sv.proven(c, now, time.Time{})
	case errors.Is(err, ticketrush.ErrQueueNotActive), errors.Is(err, ticketrush.ErrQueueTokenExpired):
		sv.refuted(c)
	}
}
