package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The on-sale's durable record (sql/0003_onsale.sql): pre-queue entries, places and draws, written by
// the write-behind worker; each row keyed by its business id, so a redelivered event changes nothing.
const (
	// A fan may enter, leave and enter again, and events may be written out of order or twice: each
	// fan's row is their newest event (by event id), an entry or a leave (left_queue), so that neither an
	// older entry written again after a leave nor a leave written before its entry brings a fan back.
	// $6 tells entries (false) from leaves (true).
	upsertPrequeue = `INSERT INTO prequeue_entries AS p (concert_id, user_id, entered_at, ev_ms, ev_seq, left_queue)
SELECT c, u, 'epoch'::timestamptz + a * interval '1 millisecond', m, q, l
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::boolean[]) AS x(c, u, a, m, q, l)
ON CONFLICT (concert_id, user_id) DO UPDATE SET entered_at = EXCLUDED.entered_at, ev_ms = EXCLUDED.ev_ms,
	ev_seq = EXCLUDED.ev_seq, left_queue = EXCLUDED.left_queue
WHERE (EXCLUDED.ev_ms, EXCLUDED.ev_seq) > (p.ev_ms, p.ev_seq)`

	insertDrawPlaces = `INSERT INTO draw_places (concert_id, place, user_id)
SELECT c, p, u FROM unnest($1::text[], $2::bigint[], $3::text[]) AS x(c, p, u)
ON CONFLICT DO NOTHING`

	insertDraws = `INSERT INTO draws (concert_id, seed, entrants, entrants_digest, drawn_at)
SELECT c, s, n, d, 'epoch'::timestamptz + a * interval '1 millisecond'
FROM unnest($1::text[], $2::bytea[], $3::bigint[], $4::text[], $5::bigint[]) AS x(c, s, n, d, a)
ON CONFLICT DO NOTHING`
)

func queueOnSale(b *pgx.Batch, rb ticketrush.RecordBatch) {
	queuePrequeue(b, rb.Prequeue, rb.PrequeueLeaves)
	if n := len(rb.DrawPlaces); n > 0 {
		cs, ps, us := make([]string, n), make([]int64, n), make([]string, n)
		for i, p := range rb.DrawPlaces {
			cs[i], ps[i], us[i] = p.ConcertID, p.Place, p.UserID
		}
		b.Queue(insertDrawPlaces, cs, ps, us)
	}
	if n := len(rb.Draws); n > 0 {
		cs, seeds, ns, ds, at := make([]string, n), make([][]byte, n), make([]int64, n), make([]string, n), make([]int64, n)
		for i, d := range rb.Draws {
			cs[i], seeds[i], ns[i], ds[i], at[i] = d.ConcertID, d.Seed, d.Entrants, d.Digest, millis(d.DrawnAt)
		}
		b.Queue(insertDraws, cs, seeds, ns, ds, at)
	}
}

// queuePrequeue writes pre-queue entries and leaves: one row per (concert, user), the newest event of
// the batch, in one INSERT ... ON CONFLICT (a statement may not change a row twice).
func queuePrequeue(b *pgx.Batch, entries, leaves []ticketrush.PrequeueEntry) {
	type event struct {
		ticketrush.PrequeueEntry
		left bool
	}
	newest := map[[2]string]event{}
	var order [][2]string
	add := func(es []ticketrush.PrequeueEntry, left bool) {
		for _, e := range es {
			k := [2]string{e.ConcertID, e.UserID}
			old, seen := newest[k]
			if !seen {
				order = append(order, k)
			}
			if !seen || old.Event.Before(e.Event) {
				newest[k] = event{e, left}
			}
		}
	}
	add(entries, false)
	add(leaves, true)
	n := len(order)
	if n == 0 {
		return
	}
	cs, us, at, ms, seqs, left := make([]string, n), make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]bool, n)
	for i, k := range order {
		e := newest[k]
		cs[i], us[i], at[i], ms[i], seqs[i], left[i] = e.ConcertID, e.UserID, millis(e.At), e.Event.Ms, e.Event.Seq, e.left
	}
	b.Queue(upsertPrequeue, cs, us, at, ms, seqs, left)
}

// Prequeue returns the users of a concert's pre-queue as the record has them, in entry order.
func (db *DB) Prequeue(ctx context.Context, concertID string) ([]ticketrush.PrequeueEntry, error) {
	rows, err := db.pool.Query(ctx, `SELECT user_id, entered_at FROM prequeue_entries WHERE concert_id = $1
		AND NOT left_queue ORDER BY entered_at, user_id`, concertID)
	if err != nil {
		return nil, fmt.Errorf("read pre-queue %s: %w", concertID, err)
	}
	var out []ticketrush.PrequeueEntry
	var e ticketrush.PrequeueEntry
	e.ConcertID = concertID
	_, err = pgx.ForEachRow(rows, []any{&e.UserID, &e.At}, func() error {
		e.At = e.At.UTC()
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read pre-queue %s: %w", concertID, err)
	}
	return out, nil
}

// Draw returns a concert's completed draw, ok false when the record has none.
func (db *DB) Draw(ctx context.Context, concertID string) (ticketrush.DrawRecord, bool, error) {
	d := ticketrush.DrawRecord{ConcertID: concertID}
	var at time.Time
	err := db.pool.QueryRow(ctx, `SELECT seed, entrants, entrants_digest, drawn_at FROM draws WHERE concert_id = $1`,
		concertID).Scan(&d.Seed, &d.Entrants, &d.Digest, &at)
	if err == pgx.ErrNoRows {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("read draw %s: %w", concertID, err)
	}
	d.DrawnAt = at.UTC()
	return d, true, nil
}

// DrawPlaces returns a concert's draw places as the record has them, by place.
func (db *DB) DrawPlaces(ctx context.Context, concertID string) ([]ticketrush.DrawPlace, error) {
	rows, err := db.pool.Query(ctx, `SELECT place, user_id FROM draw_places WHERE concert_id = $1 ORDER BY place`, concertID)
	if err != nil {
		return nil, fmt.Errorf("read draw places %s: %w", concertID, err)
	}
	var out []ticketrush.DrawPlace
	p := ticketrush.DrawPlace{ConcertID: concertID}
	_, err = pgx.ForEachRow(rows, []any{&p.Place, &p.UserID}, func() error {
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read draw places %s: %w", concertID, err)
	}
	return out, nil
}
