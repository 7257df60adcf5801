package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// What restore and reconcile read back from the record.

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// Reservations returns every reservation of a concert as the record has it; a PAID one carries the
// balance its payment left.
func (db *DB) Reservations(ctx context.Context, concertID string) ([]ticketrush.ReservationRecord, error) {
	rows, err := db.pool.Query(ctx, `SELECT r.id, r.schedule_id, COALESCE(r.seat_id, ''), r.user_id, COALESCE(r.seq, 0),
			COALESCE(r.price, -1), r.status, r.expires_at, r.created_at, r.claimed_at, COALESCE(r.payment_id, ''), r.paid_at,
			COALESCE(l.balance_after, 0)
		FROM reservations r LEFT JOIN ledger l ON l.id = r.payment_id
		WHERE r.concert_id = $1 ORDER BY r.id`, concertID)
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	var out []ticketrush.ReservationRecord
	var r ticketrush.ReservationRecord
	var expires, created, claimed, paid *time.Time
	var seq int64
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.ScheduleID, &r.SeatID, &r.UserID, &seq, &r.Price, &r.Status,
		&expires, &created, &claimed, &r.PaymentID, &paid, &r.Balance}, func() error {
		r.ConcertID, r.Seq = concertID, uint64(seq)
		r.ExpiresAt, r.CreatedAt, r.ClaimedAt, r.PaidAt = utc(expires), utc(created), utc(claimed), utc(paid)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	return out, nil
}

// Balances returns every user's balance: the sum of their ledger.
func (db *DB) Balances(ctx context.Context) (map[string]int64, error) {
	return db.int64s(ctx, "balances", `SELECT user_id, sum(delta) FROM ledger GROUP BY user_id`)
}

// int64s runs a query of (key, number) rows into a map; an error names what it reads.
func (db *DB) int64s(ctx context.Context, what, query string, args ...any) (map[string]int64, error) {
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	out := map[string]int64{}
	var key string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&key, &n}, func() error { out[key] = n; return nil })
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}

// Movements returns the ledger entries of one type (every payment, or every refund).
func (db *DB) Movements(ctx context.Context, typ ticketrush.LedgerType) ([]ticketrush.LedgerEntry, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, user_id, amount, balance_after, COALESCE(reservation_id, ''), created_at
		FROM ledger WHERE type = $1`, string(typ))
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	var out []ticketrush.LedgerEntry
	e := ticketrush.LedgerEntry{Type: typ}
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.UserID, &e.Amount, &e.BalanceAfter, &e.ReservationID, &e.CreatedAt}, func() error {
		e.CreatedAt = e.CreatedAt.UTC()
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return out, nil
}

// IdempotencySince returns the Idempotency-Key records made after since; a charge's carries its
// amount and the balance it left, a refusal's its code.
func (db *DB) IdempotencySince(ctx context.Context, since time.Time) ([]ticketrush.IdempotencyRecord, error) {
	rows, err := db.pool.Query(ctx, `SELECT k.user_id, k.key, k.kind, k.fingerprint, k.ref, k.created, k.refused, k.at,
			COALESCE(l.amount, 0), COALESCE(l.balance_after, 0)
		FROM idempotency_keys k LEFT JOIN ledger l ON k.kind = 'charge' AND l.id = k.ref
		WHERE k.at > $1`, since)
	if err != nil {
		return nil, fmt.Errorf("read idempotency keys: %w", err)
	}
	var out []ticketrush.IdempotencyRecord
	var r ticketrush.IdempotencyRecord
	_, err = pgx.ForEachRow(rows, []any{&r.UserID, &r.Key, &r.Kind, &r.Fingerprint, &r.Ref, &r.Created, &r.Refused, &r.At, &r.Amount, &r.Balance}, func() error {
		r.At = r.At.UTC()
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read idempotency keys: %w", err)
	}
	return out, nil
}

// QueueMarks returns the highest queue seq and leave ordinal of every concert that has them.
func (db *DB) QueueMarks(ctx context.Context) (map[string]ticketrush.QueueMark, error) {
	rows, err := db.pool.Query(ctx, `SELECT concert_id, max_seq, max_leave FROM queue_marks`)
	if err != nil {
		return nil, fmt.Errorf("read queue marks: %w", err)
	}
	out := map[string]ticketrush.QueueMark{}
	var m ticketrush.QueueMark
	var seq, leave int64
	_, err = pgx.ForEachRow(rows, []any{&m.ConcertID, &seq, &leave}, func() error {
		m.MaxSeq, m.MaxLeave = uint64(seq), uint64(leave)
		out[m.ConcertID] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read queue marks: %w", err)
	}
	return out, nil
}

// BalancesAt returns the balance of every user of a wallet stream counting only its events up to and
// including upTo: the record as of that point of the stream.
func (db *DB) BalancesAt(ctx context.Context, upTo ticketrush.EventID) (map[string]int64, error) {
	return db.int64s(ctx, "balances", `SELECT user_id, sum(delta) FROM ledger
		WHERE stream = $1 AND (ev_ms, ev_seq) <= ($2, $3) GROUP BY user_id`, upTo.Stream, upTo.Ms, upTo.Seq)
}

// ReservationsAt returns the reservations of a concert stream with the status its events up to and
// including upTo left them in, and their payment when that status is PAID.
func (db *DB) ReservationsAt(ctx context.Context, upTo ticketrush.EventID) (map[string]ticketrush.ReservationRecord, error) {
	rows, err := db.pool.Query(ctx, `SELECT e.reservation_id, e.status, COALESCE(r.user_id, ''), COALESCE(r.schedule_id, ''),
			COALESCE(r.seat_id, ''), COALESCE(r.price, -1), COALESCE(p.id, ''), COALESCE(p.amount, -1)
		FROM (SELECT DISTINCT ON (reservation_id) reservation_id, status FROM reservation_events
		      WHERE stream = $1 AND (ev_ms, ev_seq) <= ($2, $3)
		      ORDER BY reservation_id, ev_ms DESC, ev_seq DESC) e
		LEFT JOIN reservations r ON r.id = e.reservation_id
		LEFT JOIN payments p ON p.reservation_id = e.reservation_id AND e.status = 'PAID'`, upTo.Stream, upTo.Ms, upTo.Seq)
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	out := map[string]ticketrush.ReservationRecord{}
	var r ticketrush.ReservationRecord
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Status, &r.UserID, &r.ScheduleID, &r.SeatID, &r.Price, &r.PaymentID, &r.PaidAmount}, func() error {
		out[r.ID] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	return out, nil
}

// LedgerAmounts returns the amount of each of the given ledger entries that exists.
func (db *DB) LedgerAmounts(ctx context.Context, ids []string) (map[string]int64, error) {
	return db.int64s(ctx, "ledger", `SELECT id, amount FROM ledger WHERE id = ANY($1)`, ids)
}
