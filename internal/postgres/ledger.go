package postgres

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The statements of WriteRecords: one multi-row INSERT per table, the rows passed as arrays (one round
// trip, binary encoded), idempotent by the primary key of each row. Times travel as Unix ms, 0 for null.
const (
	insertLedger = `INSERT INTO ledger (stream, ev_ms, ev_seq, id, user_id, type, amount, balance_after, reservation_id, created_at)
SELECT s, m, q, id, u, t, a, b, NULLIF(r, ''), 'epoch'::timestamptz + c * interval '1 millisecond'
FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
            $9::text[], $10::bigint[]) AS x(s, m, q, id, u, t, a, b, r, c)
ON CONFLICT DO NOTHING`

	insertReservationEvents = `INSERT INTO reservation_events (stream, ev_ms, ev_seq, reservation_id, type, status, at)
SELECT s, m, q, r, t, st, 'epoch'::timestamptz + a * interval '1 millisecond'
FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[]) AS x(s, m, q, r, t, st, a)
ON CONFLICT DO NOTHING`

	// upsertReservations merges a reservation's events in any order: the newest event decides the
	// status; columns only some events carry are filled once.
	upsertReservations = `INSERT INTO reservations AS r (id, concert_id, schedule_id, seat_id, user_id, seq, price, status,
	expires_at, created_at, claimed_at, payment_id, paid_at, ev_ms, ev_seq)
SELECT id, c, s, NULLIF(seat, ''), u, NULLIF(sq, 0), NULLIF(p, -1), st,
	'epoch'::timestamptz + NULLIF(e, 0) * interval '1 millisecond',
	'epoch'::timestamptz + NULLIF(cr, 0) * interval '1 millisecond',
	'epoch'::timestamptz + NULLIF(cl, 0) * interval '1 millisecond',
	NULLIF(pay, ''),
	'epoch'::timestamptz + NULLIF(pa, 0) * interval '1 millisecond',
	m, q
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[],
            $9::bigint[], $10::bigint[], $11::bigint[], $12::text[], $13::bigint[], $14::bigint[], $15::bigint[])
	AS x(id, c, s, seat, u, sq, p, st, e, cr, cl, pay, pa, m, q)
ON CONFLICT (id) DO UPDATE SET
	seat_id    = COALESCE(r.seat_id, EXCLUDED.seat_id),
	seq        = COALESCE(r.seq, EXCLUDED.seq),
	price      = COALESCE(r.price, EXCLUDED.price),
	expires_at = COALESCE(r.expires_at, EXCLUDED.expires_at),
	created_at = COALESCE(r.created_at, EXCLUDED.created_at),
	claimed_at = GREATEST(r.claimed_at, EXCLUDED.claimed_at),
	payment_id = COALESCE(r.payment_id, EXCLUDED.payment_id),
	paid_at    = COALESCE(r.paid_at, EXCLUDED.paid_at),
	status     = CASE WHEN (EXCLUDED.ev_ms, EXCLUDED.ev_seq) > (r.ev_ms, r.ev_seq) THEN EXCLUDED.status ELSE r.status END,
	ev_ms      = CASE WHEN (EXCLUDED.ev_ms, EXCLUDED.ev_seq) > (r.ev_ms, r.ev_seq) THEN EXCLUDED.ev_ms ELSE r.ev_ms END,
	ev_seq     = CASE WHEN (EXCLUDED.ev_ms, EXCLUDED.ev_seq) > (r.ev_ms, r.ev_seq) THEN EXCLUDED.ev_seq ELSE r.ev_seq END`

	insertPayments = `INSERT INTO payments (id, reservation_id, user_id, schedule_id, seat_id, amount, paid_at)
SELECT id, r, u, s, seat, a, 'epoch'::timestamptz + p * interval '1 millisecond'
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[]) AS x(id, r, u, s, seat, a, p)
ON CONFLICT (id) DO NOTHING` // a sale written again; a second sale of a seat breaks payments_one_per_seat

	insertProcessed = `INSERT INTO processed_batches (stream, digest, ms, seqs, types, at)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`

	upsertIdempotency = `INSERT INTO idempotency_keys AS k (user_id, key, kind, fingerprint, ref, created, refused, at)
SELECT u, k, kind, fp, ref, c, rf, 'epoch'::timestamptz + a * interval '1 millisecond'
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::text[], $8::bigint[]) AS x(u, k, kind, fp, ref, c, rf, a)
ON CONFLICT (user_id, key) DO UPDATE SET kind = EXCLUDED.kind, fingerprint = EXCLUDED.fingerprint,
	ref = EXCLUDED.ref, created = EXCLUDED.created, refused = EXCLUDED.refused, at = EXCLUDED.at
WHERE k.at < EXCLUDED.at`

	upsertQueueMarks = `INSERT INTO queue_marks AS q (concert_id, max_seq, max_leave)
SELECT c, s, l FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS x(c, s, l)
ON CONFLICT (concert_id) DO UPDATE SET max_seq = GREATEST(q.max_seq, EXCLUDED.max_seq),
	max_leave = GREATEST(q.max_leave, EXCLUDED.max_leave)`
)

// WriteRecords adds a batch of outbox events to the durable record in one transaction. Writing the same
// events again changes nothing. A batch the database refuses (a constraint it breaks) fails with
// ticketrush.ErrRecordRefused; any other failure (Postgres unreachable, a deadlock) may pass on a retry.
func (db *DB) WriteRecords(ctx context.Context, rb ticketrush.RecordBatch) error {
	b := &pgx.Batch{}
	queueLedger(b, rb.Ledger)
	queueReservations(b, rb.Reservations)
	queueProcessed(b, rb.Processed)
	queueIdempotency(b, rb.Idempotency)
	queueMarks(b, rb.QueueMarks)
	queueCodeClaims(b, rb.CodeClaims)
	queueOnSale(b, rb)
	if b.Len() == 0 {
		return nil
	}
	// One round trip: the batch's statements go in one pipeline ending in one Sync, which Postgres runs
	// as one implicit transaction (committed at the Sync, all or nothing) with the session's
	// synchronous_commit: an answer without error is a commit on disk. BEGIN and COMMIT of their own
	// would be two more round trips per batch.
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return recordError(err)
	}
	return nil
}

// recordError marks the failures no retry can mend: data exceptions (class 22) and integrity
// constraint violations (class 23).
func recordError(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (pg.SQLState()[:2] == "22" || pg.SQLState()[:2] == "23") {
		return fmt.Errorf("%w: %s (%s)", ticketrush.ErrRecordRefused, pg.Message, pg.ConstraintName)
	}
	return fmt.Errorf("write records: %w", err)
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func queueLedger(b *pgx.Batch, entries []ticketrush.LedgerEntry) {
	if len(entries) == 0 {
		return
	}
	n := len(entries)
	streams, ids, users, types, res := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ms, seqs, amounts, balances, at := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, e := range entries {
		streams[i], ms[i], seqs[i] = e.Event.Stream, e.Event.Ms, e.Event.Seq
		ids[i], users[i], types[i], res[i] = e.ID, e.UserID, string(e.Type), e.ReservationID
		amounts[i], balances[i], at[i] = e.Amount, e.BalanceAfter, millis(e.CreatedAt)
	}
	b.Queue(insertLedger, streams, ms, seqs, ids, users, types, amounts, balances, res, at)
}

// reservationRow is one reservation's events of a batch merged into one row: one INSERT cannot touch a
// row twice.
type reservationRow struct {
	id, concert, schedule, seat, user, status, payment string
	seq, price, expires, created, claimed, paidAt      int64
	last                                               ticketrush.EventID
}

func queueReservations(b *pgx.Batch, changes []ticketrush.ReservationChange) {
	if len(changes) == 0 {
		return
	}
	n := len(changes)
	// The history: every event.
	streams, res, types, statuses := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ms, seqs, at := make([]int64, n), make([]int64, n), make([]int64, n)
	// The payments: every sale.
	var pIDs, pRes, pUsers, pSchedules, pSeats []string
	var pAmounts, pAt []int64
	rows := map[string]*reservationRow{}
	for i, c := range changes {
		streams[i], ms[i], seqs[i] = c.Event.Stream, c.Event.Ms, c.Event.Seq
		res[i], types[i], statuses[i], at[i] = c.ID, c.Type, string(c.Status), millis(c.At)

		r := rows[c.ID]
		if r == nil {
			r = &reservationRow{id: c.ID, concert: c.ConcertID, schedule: c.ScheduleID, user: c.UserID, price: -1, last: c.Event, status: string(c.Status)}
			rows[c.ID] = r
		} else if r.last.Before(c.Event) {
			r.last, r.status = c.Event, string(c.Status)
		}
		r.seat = cmp.Or(r.seat, c.SeatID)
		r.payment = cmp.Or(r.payment, c.PaymentID)
		if c.Price >= 0 && r.price < 0 {
			r.price = c.Price
		}
		switch c.Type {
		case "hold.create":
			r.seq, r.expires, r.created = int64(c.Seq), millis(c.ExpiresAt), millis(c.At)
		case "payment.claim":
			r.claimed = max(r.claimed, millis(c.At))
		case "sale":
			r.paidAt = millis(c.At)
			pIDs, pRes, pUsers = append(pIDs, c.PaymentID), append(pRes, c.ID), append(pUsers, c.UserID)
			pSchedules, pSeats = append(pSchedules, c.ScheduleID), append(pSeats, c.SeatID)
			pAmounts, pAt = append(pAmounts, c.Price), append(pAt, millis(c.At))
		}
	}
	b.Queue(insertReservationEvents, streams, ms, seqs, res, types, statuses, at)

	// In id order, so that two workers upserting the same reservations lock them in the same order.
	ordered := make([]*reservationRow, 0, len(rows))
	for _, r := range rows {
		ordered = append(ordered, r)
	}
	slices.SortFunc(ordered, func(a, b *reservationRow) int { return cmp.Compare(a.id, b.id) })
	m := len(ordered)
	ids, concerts, schedules, seats, users, sts, pays := make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m)
	sq, prices, expires, created, claimed, paid, lms, lseq := make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m)
	for i, r := range ordered {
		ids[i], concerts[i], schedules[i], seats[i], users[i], sts[i], pays[i] = r.id, r.concert, r.schedule, r.seat, r.user, r.status, r.payment
		sq[i], prices[i], expires[i], created[i], claimed[i], paid[i] = r.seq, r.price, r.expires, r.created, r.claimed, r.paidAt
		lms[i], lseq[i] = r.last.Ms, r.last.Seq
	}
	b.Queue(upsertReservations, ids, concerts, schedules, seats, users, sq, prices, sts, expires, created, claimed, pays, paid, lms, lseq)
	if len(pIDs) > 0 {
		b.Queue(insertPayments, pIDs, pRes, pUsers, pSchedules, pSeats, pAmounts, pAt)
	}
}

// queueProcessed writes the events that leave no row of their own as one processed_batches row per
// stream (sql/0015_processed_batches.sql): their ids, types and times in arrays, keyed by the digest of
// the ids, so that the same batch written again changes nothing.
func queueProcessed(b *pgx.Batch, events []ticketrush.ProcessedEvent) {
	if len(events) == 0 {
		return
	}
	events = slices.Clone(events)
	slices.SortFunc(events, func(x, y ticketrush.ProcessedEvent) int {
		return cmp.Or(cmp.Compare(x.Event.Stream, y.Event.Stream), cmp.Compare(x.Event.Ms, y.Event.Ms),
			cmp.Compare(x.Event.Seq, y.Event.Seq))
	})
	for start := 0; start < len(events); {
		end := start + 1
		for end < len(events) && events[end].Event.Stream == events[start].Event.Stream {
			end++
		}
		one := events[start:end]
		n := len(one)
		ms, seqs, at, types := make([]int64, n), make([]int64, n), make([]int64, n), make([]string, n)
		h, id := sha256.New(), make([]byte, 0, 48) // the ids "ms-seq", comma-separated
		for i, e := range one {
			ms[i], seqs[i], types[i], at[i] = e.Event.Ms, e.Event.Seq, e.Type, millis(e.At)
			id = id[:0]
			if i > 0 {
				id = append(id, ',')
			}
			id = strconv.AppendInt(append(strconv.AppendInt(id, e.Event.Ms, 10), '-'), e.Event.Seq, 10)
			h.Write(id)
		}
		b.Queue(insertProcessed, one[0].Event.Stream, h.Sum(nil), ms, seqs, types, at)
		start = end
	}
}

func queueIdempotency(b *pgx.Batch, recs []ticketrush.IdempotencyRecord) {
	if len(recs) == 0 {
		return
	}
	// The newest record of each (user, key), in key order.
	newest := map[[2]string]ticketrush.IdempotencyRecord{}
	for _, r := range recs {
		k := [2]string{r.UserID, r.Key}
		if old, ok := newest[k]; !ok || old.At.Before(r.At) {
			newest[k] = r
		}
	}
	keys := make([][2]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	n := len(keys)
	users, ks, kinds, fps, refs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	created, refused, at := make([]bool, n), make([]string, n), make([]int64, n)
	for i, k := range keys {
		r := newest[k]
		users[i], ks[i], kinds[i], fps[i], refs[i], created[i], refused[i], at[i] = r.UserID, r.Key, r.Kind, r.Fingerprint, r.Ref, r.Created, r.Refused, millis(r.At)
	}
	b.Queue(upsertIdempotency, users, ks, kinds, fps, refs, created, refused, at)
}

func queueMarks(b *pgx.Batch, marks []ticketrush.QueueMark) {
	if len(marks) == 0 {
		return
	}
	high := map[string]ticketrush.QueueMark{}
	for _, m := range marks {
		h := high[m.ConcertID]
		h.ConcertID, h.MaxSeq, h.MaxLeave = m.ConcertID, max(h.MaxSeq, m.MaxSeq), max(h.MaxLeave, m.MaxLeave)
		high[m.ConcertID] = h
	}
	ids := make([]string, 0, len(high))
	for id := range high {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	seqs, leaves := make([]int64, len(ids)), make([]int64, len(ids))
	for i, id := range ids {
		seqs[i], leaves[i] = int64(high[id].MaxSeq), int64(high[id].MaxLeave)
	}
	b.Queue(upsertQueueMarks, ids, seqs, leaves)
}

const claimCodes = `UPDATE access_codes AS a SET owner = x.u, claimed_at = 'epoch'::timestamptz + x.t * interval '1 millisecond'
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS x(c, h, u, t)
WHERE a.concert_id = x.c AND a.code_hash = x.h AND a.owner IS NULL`

// queueCodeClaims records each access code's first user; a code has one (the join script's rule), so a
// redelivered claim changes nothing.
func queueCodeClaims(b *pgx.Batch, claims []ticketrush.CodeClaim) {
	if len(claims) == 0 {
		return
	}
	n := len(claims)
	cs, hs, us, at := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, c := range claims {
		cs[i], hs[i], us[i], at[i] = c.ConcertID, c.CodeHash, c.UserID, millis(c.At)
	}
	b.Queue(claimCodes, cs, hs, us, at)
}

// AddAccessCodes records new access codes of a concert, by hash.
func (db *DB) AddAccessCodes(ctx context.Context, concertID string, hashes []string) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO access_codes (concert_id, code_hash)
		SELECT $1, h FROM unnest($2::text[]) AS x(h) ON CONFLICT DO NOTHING`, concertID, hashes)
	if err != nil {
		return fmt.Errorf("add access codes %s: %w", concertID, err)
	}
	return nil
}

// AccessCodes returns a concert's access codes: hash -> owner ("" unclaimed).
func (db *DB) AccessCodes(ctx context.Context, concertID string) (map[string]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT code_hash, COALESCE(owner, '') FROM access_codes WHERE concert_id = $1`, concertID)
	if err != nil {
		return nil, fmt.Errorf("access codes %s: %w", concertID, err)
	}
	out := map[string]string{}
	var h, owner string
	if _, err := pgx.ForEachRow(rows, []any{&h, &owner}, func() error { out[h] = owner; return nil }); err != nil {
		return nil, fmt.Errorf("access codes %s: %w", concertID, err)
	}
	return out, nil
}

// History returns a user's newest ledger entries, newest first.
func (db *DB) History(ctx context.Context, userID string, limit int) ([]ticketrush.LedgerEntry, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, type, amount, balance_after, COALESCE(reservation_id, ''), created_at
		FROM ledger WHERE user_id = $1 ORDER BY ev_ms DESC, ev_seq DESC LIMIT $2`, userID, limit)
	if err != nil {
		return nil, fmt.Errorf("points history: %w", errors.Join(ticketrush.ErrUnavailable, err))
	}
	out := []ticketrush.LedgerEntry{}
	var e ticketrush.LedgerEntry
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.Type, &e.Amount, &e.BalanceAfter, &e.ReservationID, &e.CreatedAt}, func() error {
		e.UserID = userID
		e.CreatedAt = e.CreatedAt.UTC()
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("points history: %w", errors.Join(ticketrush.ErrUnavailable, err))
	}
	return out, nil
}

// HasRecords reports whether the record holds any reservation or point movement: what Redis must hold
// too, so that a Redis without them has lost its state.
func (db *DB) HasRecords(ctx context.Context) (bool, error) {
	var has bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger) OR EXISTS (SELECT 1 FROM reservations)`).Scan(&has)
	if err != nil {
		return false, fmt.Errorf("look for records: %w", err)
	}
	return has, nil
}
