package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// CreateConcert writes a concert, its placement, sections, schedules and every seat of every schedule in
// one transaction; the seats travel by COPY, generated as they are sent. It returns ticketrush.ErrExists, writing
// nothing, when a concert with that id is there already (a retried create), and an error that is
// ErrUnavailable when Postgres cannot be reached or does not answer in time.
func (db *DB) CreateConcert(ctx context.Context, c ticketrush.Concert) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		q := c.Queue
		tag, err := tx.Exec(ctx, `INSERT INTO concerts (id, title, venue, active_capacity, admit_per_second,
			active_ttl_seconds, hold_ttl_seconds, max_holds_per_user, paused, join_pow_bits, access_code_required,
			active_per_seat, abandon_after_seconds, no_show_seconds, line_shards, seat_slots)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16) ON CONFLICT (id) DO NOTHING`,
			c.ID, c.Title, c.Venue, q.ActiveCapacity, q.AdmitPerSecond, int(q.ActiveTTL/time.Second),
			int(q.HoldTTL/time.Second), q.MaxHoldsPerUser, q.Paused, q.JoinPowBits, q.AccessCodeRequired,
			q.ActivePerSeat, int(q.AbandonAfter/time.Second), int(q.NoShow/time.Second), max(1, q.LineShards),
			placementValue(c.Placement))
		if err != nil {
			return fmt.Errorf("insert concert: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ticketrush.ErrExists
		}
		if sale := c.Sale; sale != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO concert_sales (concert_id, opens_at, prequeue_opens_at, seed, closes_at)
				VALUES ($1,$2,$3,$4,$5)`, c.ID, sale.OpensAt, sale.PrequeueOpensAt, sale.Seed[:], nullTime(sale.ClosesAt)); err != nil {
				return fmt.Errorf("insert sale: %w", err)
			}
		}
		for i, s := range c.Sections {
			if _, err := tx.Exec(ctx, `INSERT INTO sections (concert_id, name, price, seats, ordinal) VALUES ($1,$2,$3,$4,$5)`,
				c.ID, s.Name, s.Price, s.Seats, i); err != nil {
				return fmt.Errorf("insert section %s: %w", s.Name, err)
			}
		}
		for _, sc := range c.Schedules {
			if _, err := tx.Exec(ctx, `INSERT INTO schedules (id, concert_id, starts_at) VALUES ($1,$2,$3)`,
				sc.ID, c.ID, sc.StartsAt); err != nil {
				return fmt.Errorf("insert schedule: %w", err)
			}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"seats"}, []string{"schedule_id", "seat_id", "section", "price"}, newSeatRows(c))
		if err != nil {
			return fmt.Errorf("copy seats: %w", err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ticketrush.ErrExists) {
		return unavailable(ctx, err)
	}
	return err
}

// unavailable marks err as ErrUnavailable when it says that Postgres could not be reached or did not
// answer in time (not when Postgres refused the statement, which is a bug to fix, a 500).
func unavailable(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	switch {
	case errors.As(err, &pgErr):
		if strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P03" || pgErr.Code == "53300" {
			break // connection exception, admin shutdown, cannot connect now, too many connections
		}
		return err
	case errors.As(err, &connectErr), errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), pgconn.SafeToRetry(err), ctx.Err() != nil:
	default:
		return err
	}
	return errors.Join(ticketrush.ErrUnavailable, err)
}

// seatRows generates the seat rows of every schedule for COPY, one at a time.
type seatRows struct {
	c             ticketrush.Concert
	sched, sec, n int
	row           []any
}

func newSeatRows(c ticketrush.Concert) *seatRows { return &seatRows{c: c, row: make([]any, 4)} }

func (r *seatRows) Next() bool {
	if r.sched >= len(r.c.Schedules) {
		return false
	}
	r.n++
	if r.n > r.c.Sections[r.sec].Seats {
		r.n, r.sec = 1, r.sec+1
		if r.sec == len(r.c.Sections) {
			r.sec, r.sched = 0, r.sched+1
			if r.sched == len(r.c.Schedules) {
				return false
			}
		}
	}
	s := r.c.Sections[r.sec]
	r.row[0], r.row[1], r.row[2], r.row[3] = r.c.Schedules[r.sched].ID, ticketrush.SeatID(s.Name, r.n), s.Name, s.Price
	return true
}

func (r *seatRows) Values() ([]any, error) { return r.row, nil }
func (r *seatRows) Err() error             { return nil }

// CatalogVersion is the catalog's version (sql/0010_catalog_version.sql): it moves with every change of
// what Concerts returns.
func (db *DB) CatalogVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := db.pool.QueryRow(ctx, `SELECT v FROM catalog_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("catalog version: %w", err)
	}
	return v, nil
}

// Concerts returns the whole catalog, oldest concert first.
func (db *DB) Concerts(ctx context.Context) ([]ticketrush.Concert, error) {
	out, index, err := db.concertRows(ctx)
	if err != nil {
		return nil, err
	}
	if err := db.addSections(ctx, out, index); err != nil {
		return nil, err
	}
	if err := db.addSchedules(ctx, out, index); err != nil {
		return nil, err
	}
	if err := db.addSales(ctx, out, index); err != nil {
		return nil, err
	}
	return out, nil
}

// concertRows reads every concert's own row (its queue settings and placement), oldest first, and
// indexes them by id.
func (db *DB) concertRows(ctx context.Context) ([]ticketrush.Concert, map[string]int, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, title, venue, active_capacity, admit_per_second, active_ttl_seconds,
		hold_ttl_seconds, max_holds_per_user, paused, join_pow_bits, access_code_required, active_per_seat,
		abandon_after_seconds, no_show_seconds, line_shards, seat_slots FROM concerts ORDER BY created_at, id`)
	if err != nil {
		return nil, nil, fmt.Errorf("list concerts: %w", err)
	}
	var out []ticketrush.Concert
	index := map[string]int{}
	for rows.Next() {
		var c ticketrush.Concert
		var ttl, hold, abandon, noShow int
		var slots *string
		if err := rows.Scan(&c.ID, &c.Title, &c.Venue, &c.Queue.ActiveCapacity, &c.Queue.AdmitPerSecond, &ttl, &hold,
			&c.Queue.MaxHoldsPerUser, &c.Queue.Paused, &c.Queue.JoinPowBits, &c.Queue.AccessCodeRequired,
			&c.Queue.ActivePerSeat, &abandon, &noShow, &c.Queue.LineShards, &slots); err != nil {
			return nil, nil, fmt.Errorf("list concerts: %w", err)
		}
		c.Placement = placementOf(slots)
		c.Queue.AbandonAfter = time.Duration(abandon) * time.Second
		c.Queue.NoShow = time.Duration(noShow) * time.Second
		c.Queue.ActiveTTL = time.Duration(ttl) * time.Second
		c.Queue.HoldTTL = time.Duration(hold) * time.Second
		index[c.ID] = len(out)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("list concerts: %w", err)
	}
	return out, index, nil
}

// addSections adds their sections, in order, to the concerts of out (index: their places by id).
func (db *DB) addSections(ctx context.Context, out []ticketrush.Concert, index map[string]int) error {
	var s ticketrush.Section
	return db.forConcertRows(ctx, "sections", `SELECT concert_id, name, price, seats FROM sections ORDER BY concert_id, ordinal`,
		index, []any{&s.Name, &s.Price, &s.Seats}, func(i int) error {
			out[i].Sections = append(out[i].Sections, s)
			return nil
		})
}

// addSchedules adds their schedules, earliest first, to the concerts of out (index: their places by id).
func (db *DB) addSchedules(ctx context.Context, out []ticketrush.Concert, index map[string]int) error {
	var sc ticketrush.Schedule
	return db.forConcertRows(ctx, "schedules", `SELECT concert_id, id, starts_at FROM schedules ORDER BY concert_id, starts_at, id`,
		index, []any{&sc.ID, &sc.StartsAt}, func(i int) error {
			sc.StartsAt = sc.StartsAt.UTC()
			out[i].Schedules = append(out[i].Schedules, sc)
			return nil
		})
}

// addSales adds their sales to the concerts of out that have one (index: their places by id).
func (db *DB) addSales(ctx context.Context, out []ticketrush.Concert, index map[string]int) error {
	var opens, pqopens time.Time
	var closes *time.Time
	var seed []byte
	return db.forConcertRows(ctx, "sales", `SELECT concert_id, opens_at, prequeue_opens_at, seed, closes_at FROM concert_sales`,
		index, []any{&opens, &pqopens, &seed, &closes}, func(i int) error {
			if len(seed) != 32 {
				return fmt.Errorf("sale of %s: seed of %d bytes", out[i].ID, len(seed))
			}
			sale := &ticketrush.Sale{OpensAt: opens.UTC(), PrequeueOpensAt: pqopens.UTC(), ClosesAt: utc(closes)}
			copy(sale.Seed[:], seed)
			out[i].Sale = sale
			return nil
		})
}

// forConcertRows runs query, whose rows start with a concert's id, scanning the rest of each into dest,
// and calls add with the place in out of each concert index knows; what names the rows in its errors.
func (db *DB) forConcertRows(ctx context.Context, what, query string, index map[string]int, dest []any, add func(i int) error) error {
	rows, err := db.pool.Query(ctx, query)
	if err != nil {
		return fmt.Errorf("list %s: %w", what, err)
	}
	var cid string
	_, err = pgx.ForEachRow(rows, append([]any{&cid}, dest...), func() error {
		if i, ok := index[cid]; ok {
			return add(i)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", what, err)
	}
	return nil
}

// RecordPlacement records a concert's placement unless its record has one already, and returns the one
// recorded: slots, or the earlier one (a placement is recorded once, and never written over). It moves
// the catalog version (sql/0010_catalog_version.sql), so every instance's catalog reads it.
func (db *DB) RecordPlacement(ctx context.Context, concertID, slots string) (ticketrush.Placement, error) {
	if _, err := db.pool.Exec(ctx, `UPDATE concerts SET seat_slots = $2 WHERE id = $1 AND (seat_slots IS NULL OR seat_slots = '')`,
		concertID, slots); err != nil {
		return ticketrush.Placement{}, unavailable(ctx, fmt.Errorf("record placement of %s: %w", concertID, err))
	}
	var got *string
	err := db.pool.QueryRow(ctx, `SELECT seat_slots FROM concerts WHERE id = $1`, concertID).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return ticketrush.Placement{}, fmt.Errorf("record placement of %s: %w", concertID, ticketrush.ErrNotFound)
	}
	if err != nil {
		return ticketrush.Placement{}, unavailable(ctx, fmt.Errorf("record placement of %s: %w", concertID, err))
	}
	return placementOf(got), nil
}

// placementValue is the seat_slots value of p: SQL null while it is not recorded.
func placementValue(p ticketrush.Placement) *string {
	if !p.Recorded {
		return nil
	}
	return &p.Slots
}

// placementOf reads a seat_slots value.
func placementOf(slots *string) ticketrush.Placement {
	if slots == nil || *slots == "" { // '': seats in the concert's keys, before layout version 3: not placed
		return ticketrush.Placement{}
	}
	return ticketrush.Placement{Slots: *slots, Recorded: true}
}

// UpdateQueueSettings applies a patch to a concert's queue settings and returns the result.
func (db *DB) UpdateQueueSettings(ctx context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	var q ticketrush.QueueSettings
	var ttl, hold, abandon, noShow int
	err := db.pool.QueryRow(ctx, `UPDATE concerts SET
			active_capacity = COALESCE($2, active_capacity),
			admit_per_second = COALESCE($3, admit_per_second),
			paused = COALESCE($4, paused),
			join_pow_bits = COALESCE($5, join_pow_bits),
			access_code_required = COALESCE($6, access_code_required),
			active_per_seat = COALESCE($7, active_per_seat),
			abandon_after_seconds = COALESCE($8, abandon_after_seconds),
			no_show_seconds = COALESCE($9, no_show_seconds)
		WHERE id = $1
		RETURNING active_capacity, admit_per_second, active_ttl_seconds, hold_ttl_seconds, max_holds_per_user, paused,
			join_pow_bits, access_code_required, active_per_seat, abandon_after_seconds, no_show_seconds, line_shards`,
		concertID, p.ActiveCapacity, p.AdmitPerSecond, p.Paused, p.JoinPowBits, p.AccessCodeRequired, p.ActivePerSeat,
		seconds(p.AbandonAfter), seconds(p.NoShow)).
		Scan(&q.ActiveCapacity, &q.AdmitPerSecond, &ttl, &hold, &q.MaxHoldsPerUser, &q.Paused, &q.JoinPowBits,
			&q.AccessCodeRequired, &q.ActivePerSeat, &abandon, &noShow, &q.LineShards)
	if errors.Is(err, pgx.ErrNoRows) {
		return q, ticketrush.ErrNotFound
	}
	if err != nil {
		return q, fmt.Errorf("update queue settings %s: %w", concertID, err)
	}
	q.ActiveTTL = time.Duration(ttl) * time.Second
	q.HoldTTL = time.Duration(hold) * time.Second
	q.AbandonAfter = time.Duration(abandon) * time.Second
	q.NoShow = time.Duration(noShow) * time.Second
	return q, nil
}

// seconds is a patched duration in whole seconds, nil when it is not patched.
func seconds(d *time.Duration) *int {
	if d == nil {
		return nil
	}
	n := int(*d / time.Second)
	return &n
}

// nullTime is t, or SQL null for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ConcertsBelowLayout lists the concerts whose live state was last written in a layout version below
// version (sql/0014_layout_version.sql), oldest first.
func (db *DB) ConcertsBelowLayout(ctx context.Context, version int) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT id FROM concerts WHERE layout_version < $1 ORDER BY created_at, id`, version)
	if err != nil {
		return nil, unavailable(ctx, fmt.Errorf("concerts below layout %d: %w", version, err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable(ctx, fmt.Errorf("concerts below layout %d: %w", version, err))
	}
	return ids, nil
}

// RecordLayoutVersion records that a concert's live state is in layout version (never lowering it).
func (db *DB) RecordLayoutVersion(ctx context.Context, concertID string, version int) error {
	if _, err := db.pool.Exec(ctx, `UPDATE concerts SET layout_version = $2 WHERE id = $1 AND layout_version < $2`,
		concertID, version); err != nil {
		return unavailable(ctx, fmt.Errorf("record layout version of %s: %w", concertID, err))
	}
	return nil
}
