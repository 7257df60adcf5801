package redis

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The ARGV of each script, in the order of its header; the KEYS are in keys.go. Both are pure
// functions, held against the headers by TestScriptHeaders.

func loadArgs(c ticketrush.Concert, now time.Time) []string {
	q := c.Queue
	return []string{c.Title, c.Venue, itoa(q.ActiveCapacity), itoa(q.AdmitPerSecond), ms(q.ActiveTTL), ms(q.HoldTTL),
		itoa(q.MaxHoldsPerUser), flag(q.Paused), millis(now), itoa(q.JoinPowBits), flag(q.AccessCodeRequired),
		saleOpens(c.Sale), salePrequeueOpens(c.Sale), saleSeed(c.Sale), itoa(q.ActivePerSeat),
		itoa(c.TotalSeats() * len(c.Schedules)), ms(q.AbandonAfter), ms(q.NoShow)}
}

func saleOpens(s *ticketrush.Sale) string {
	if s == nil {
		return ""
	}
	return millis(s.OpensAt)
}

func salePrequeueOpens(s *ticketrush.Sale) string {
	if s == nil {
		return ""
	}
	return millis(s.PrequeueOpensAt)
}

func saleSeed(s *ticketrush.Sale) string {
	if s == nil {
		return ""
	}
	return hex.EncodeToString(s.Seed[:])
}

func drawSealArgs(now time.Time) []string { return []string{millis(now)} }

// drawPlaceArgs builds draw_place's ARGV for a batch starting after draw place from.
func drawPlaceArgs(from int64, batch []draw.Entrant, digest string, now time.Time) []string {
	args := make([]string, 0, 4+len(batch))
	args = append(args, i64toa(from), DrawKeysValue(batch), digest, millis(now))
	for _, e := range batch {
		args = append(args, e.User)
	}
	return args
}

func drawStatusArgs(userID string, now time.Time) []string { return []string{userID, millis(now)} }

func prequeueLeaveArgs(userID string, now time.Time) []string { return []string{userID, millis(now)} }

func joinArgs(userID string, now time.Time) []string { return []string{userID, millis(now)} }

func leaveArgs(userID string, seq uint64, now time.Time) []string {
	return []string{userID, utoa(seq), millis(now)}
}

func statusArgs(c ticketrush.QueueClaims, now time.Time) []string {
	return []string{c.UserID, utoa(c.Seq), millis(now)}
}

func tickArgs(now time.Time, batch int) []string { return []string{millis(now), itoa(batch)} }

func snapshotArgs(afterLeave uint64, limit int, now time.Time) []string {
	return []string{utoa(afterLeave), itoa(limit), millis(now)}
}

func configureArgs(q ticketrush.QueueSettings, now time.Time) []string {
	return []string{itoa(q.ActiveCapacity), itoa(q.AdmitPerSecond), flag(q.Paused), millis(now), itoa(q.JoinPowBits),
		flag(q.AccessCodeRequired), itoa(q.ActivePerSeat), ms(q.AbandonAfter), ms(q.NoShow)}
}

func holdArgs(c ticketrush.QueueClaims, scheduleID, seatID string, price int64, resID string, now time.Time) []string {
	return []string{c.UserID, utoa(c.Seq), scheduleID, seatID, i64toa(price), resID, millis(now)}
}

func cancelArgs(userID, resID string, now time.Time) []string {
	return []string{userID, resID, millis(now)}
}

func sweepArgs(now time.Time, batch int, scheduleIDs []string) []string {
	return append([]string{millis(now), itoa(batch)}, scheduleIDs...)
}

func countsArgs(now time.Time, scheduleIDs []string) []string {
	return append([]string{millis(now)}, scheduleIDs...)
}

func claimArgs(userID, resID string, now time.Time) []string {
	return []string{userID, resID, millis(now)}
}

func completeArgs(resID string, d ticketrush.Payment, now time.Time) []string {
	return []string{resID, d.ID, i64toa(d.Balance), millis(d.PaidAt), millis(now)}
}

func releaseArgs(resID string, now time.Time) []string { return []string{resID, millis(now)} }

func debitArgs(userID, resID string, amount int64, now time.Time) []string {
	return []string{userID, resID, i64toa(amount), ticketrush.PaymentID(resID), millis(now)}
}

func refundArgs(userID, resID string, now time.Time) []string {
	return []string{userID, resID, ticketrush.RefundID(resID), millis(now)}
}

func chargeArgs(userID string, amount int64, chargeID string, now time.Time, idemKey, fingerprint string) []string {
	return []string{userID, i64toa(amount), chargeID, millis(now), idemKey, fingerprint,
		strconv.Itoa(int(ticketrush.IdempotencyTTL / time.Second)), strconv.Itoa(ticketrush.MaxBalance)}
}

func rememberArgs(userID, key, fingerprint, ref string, created bool, now time.Time, step string) []string {
	return []string{userID, key, fingerprint, ref, flag(created), strconv.Itoa(int(ticketrush.IdempotencyTTL / time.Second)),
		millis(now), step}
}

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

// passArgs are queue_join's powid ("" none, '-' failed the check), powbits, powexp (ms) and code.
func passArgs(p ticketrush.JoinPass) []string {
	id := p.PowID
	if p.PowInvalid {
		id = "-"
	}
	exp := "0"
	if !p.PowExpires.IsZero() {
		exp = millis(p.PowExpires)
	}
	return []string{id, itoa(p.PowBits), exp, p.CodeHash}
}

// UserLimit is the per-user rate of the state-changing scripts (USER_RATE_LIMIT/s, bursts of
// USER_RATE_BURST); Rate 0 turns it off.
type UserLimit struct{ Rate, Burst int }

// limitArgs are the ulimit, uburst ARGV each rate-limited script takes last.
func limitArgs(l UserLimit) []string { return []string{itoa(l.Rate), itoa(l.Burst)} }

func itoa(n int) string         { return strconv.Itoa(n) }
func utoa(n uint64) string      { return strconv.FormatUint(n, 10) }
func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
