package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// CreateConcert writes a concert, its sections, schedules and every seat of every schedule in one
// transaction.
func (db *DB) CreateConcert(ctx context.Context, c ticketrush.Concert) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		q := c.Queue
		_, err := tx.Exec(ctx, `INSERT INTO concerts (id, title, venue, active_capacity, admit_per_second,
			active_ttl_seconds, hold_ttl_seconds, max_holds_per_user, paused, active_per_seat, abandon_after_seconds,
			no_show_seconds) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
			c.ID, c.Title, c.Venue, q.ActiveCapacity, q.AdmitPerSecond, int(q.ActiveTTL/time.Second),
			int(q.HoldTTL/time.Second), q.MaxHoldsPerUser, q.Paused, q.ActivePerSeat, int(q.AbandonAfter/time.Second),
			int(q.NoShow/time.Second))
		if err != nil {
			return fmt.Errorf("insert concert: %w", err)
		}
		for i, s := range c.Sections {
			if _, err := tx.Exec(ctx, `INSERT INTO sections (concert_id, name, price, seats, ordinal) VALUES ($1,$2,$3,$4,$5)`,
				c.ID, s.Name, s.Price, s.Seats, i); err != nil {
				return fmt.Errorf("insert section %s: %w", s.Name, err)
			}
		}
		var rows [][]any
		for _, sc := range c.Schedules {
			if _, err := tx.Exec(ctx, `INSERT INTO schedules (id, concert_id, starts_at) VALUES ($1,$2,$3)`,
				sc.ID, c.ID, sc.StartsAt); err != nil {
				return fmt.Errorf("insert schedule: %w", err)
			}
			for _, s := range c.Sections {
				for n := 1; n <= s.Seats; n++ {
					rows = append(rows, []any{sc.ID, s.Name + "-" + strconv.Itoa(n), s.Name, s.Price})
				}
			}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"seats"}, []string{"schedule_id", "seat_id", "section", "price"},
			pgx.CopyFromRows(rows))
		if err != nil {
			return fmt.Errorf("copy seats: %w", err)
		}
		return nil
	})
}

// Concerts returns the whole catalog, oldest concert first.
func (db *DB) Concerts(ctx context.Context) ([]ticketrush.Concert, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, title, venue, active_capacity, admit_per_second, active_ttl_seconds,
		hold_ttl_seconds, max_holds_per_user, paused, active_per_seat, abandon_after_seconds, no_show_seconds
		FROM concerts ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list concerts: %w", err)
	}
	var out []ticketrush.Concert
	index := map[string]int{}
	for rows.Next() {
		var c ticketrush.Concert
		var ttl, hold, abandon, noShow int
		if err := rows.Scan(&c.ID, &c.Title, &c.Venue, &c.Queue.ActiveCapacity, &c.Queue.AdmitPerSecond, &ttl, &hold,
			&c.Queue.MaxHoldsPerUser, &c.Queue.Paused, &c.Queue.ActivePerSeat, &abandon, &noShow); err != nil {
			return nil, fmt.Errorf("list concerts: %w", err)
		}
		c.Queue.AbandonAfter = time.Duration(abandon) * time.Second
		c.Queue.NoShow = time.Duration(noShow) * time.Second
		c.Queue.ActiveTTL = time.Duration(ttl) * time.Second
		c.Queue.HoldTTL = time.Duration(hold) * time.Second
		index[c.ID] = len(out)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list concerts: %w", err)
	}
	rows, err = db.pool.Query(ctx, `SELECT concert_id, name, price, seats FROM sections ORDER BY concert_id, ordinal`)
	if err != nil {
		return nil, fmt.Errorf("list sections: %w", err)
	}
	var cid string
	var s ticketrush.Section
	_, err = pgx.ForEachRow(rows, []any{&cid, &s.Name, &s.Price, &s.Seats}, func() error {
		if i, ok := index[cid]; ok {
			out[i].Sections = append(out[i].Sections, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list sections: %w", err)
	}
	rows, err = db.pool.Query(ctx, `SELECT concert_id, id, starts_at FROM schedules ORDER BY concert_id, starts_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	var sc ticketrush.Schedule
	_, err = pgx.ForEachRow(rows, []any{&cid, &sc.ID, &sc.StartsAt}, func() error {
		if i, ok := index[cid]; ok {
			sc.StartsAt = sc.StartsAt.UTC()
			out[i].Schedules = append(out[i].Schedules, sc)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// UpdateQueueSettings applies a patch to a concert's queue settings and returns the result.
func (db *DB) UpdateQueueSettings(ctx context.Context, concertID string, p ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	var q ticketrush.QueueSettings
	var ttl, hold, abandon, noShow int
	err := db.pool.QueryRow(ctx, `UPDATE concerts SET
			active_capacity = COALESCE($2, active_capacity),
			admit_per_second = COALESCE($3, admit_per_second),
			paused = COALESCE($4, paused),
			active_per_seat = COALESCE($5, active_per_seat),
			abandon_after_seconds = COALESCE($6, abandon_after_seconds),
			no_show_seconds = COALESCE($7, no_show_seconds)
		WHERE id = $1
		RETURNING active_capacity, admit_per_second, active_ttl_seconds, hold_ttl_seconds, max_holds_per_user, paused,
			active_per_seat, abandon_after_seconds, no_show_seconds`,
		concertID, p.ActiveCapacity, p.AdmitPerSecond, p.Paused, p.ActivePerSeat, seconds(p.AbandonAfter), seconds(p.NoShow)).
		Scan(&q.ActiveCapacity, &q.AdmitPerSecond, &ttl, &hold, &q.MaxHoldsPerUser, &q.Paused, &q.ActivePerSeat, &abandon, &noShow)
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
