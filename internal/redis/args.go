package redis

import (
	"strconv"
	"time"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The ARGV of each script, in the order of its header; the KEYS are in keys.go. Both are pure
// functions, held against the headers by TestScriptHeaders.

func loadArgs(c ticketrush.Concert, now time.Time) []string {
	q := c.Queue
	return []string{c.Title, c.Venue, itoa(q.ActiveCapacity), itoa(q.AdmitPerSecond), ms(q.ActiveTTL), ms(q.HoldTTL),
		itoa(q.MaxHoldsPerUser), flag(q.Paused), millis(now), itoa(q.ActivePerSeat), itoa(c.TotalSeats() * len(c.Schedules)),
		ms(q.AbandonAfter), ms(q.NoShow)}
}

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
	return []string{itoa(q.ActiveCapacity), itoa(q.AdmitPerSecond), flag(q.Paused), millis(now), itoa(q.ActivePerSeat),
		ms(q.AbandonAfter), ms(q.NoShow)}
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

func rememberArgs(userID, key, fingerprint, ref string, created bool, now time.Time) []string {
	return []string{userID, key, fingerprint, ref, flag(created), strconv.Itoa(int(ticketrush.IdempotencyTTL / time.Second)),
		millis(now)}
}

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }
