package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketrush/ticketrush/internal/pass"
)

var _ pass.Store = (*DB)(nil)

// passKeyLock is the advisory lock under which a pass key is added: two instances starting at once,
// or a rotation beside a start, add one key, not two.
const passKeyLock = 7_202_612

// PassKeys returns every admission-pass key, oldest signs_from first (docs/pass.md).
func (db *DB) PassKeys(ctx context.Context) ([]pass.Key, error) {
	rows, err := db.pool.Query(ctx, `SELECT kid, seed, created_at, signs_from FROM pass_keys ORDER BY signs_from`)
	if err != nil {
		return nil, fmt.Errorf("read pass keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pass.Key, error) {
		var k pass.Key
		err := r.Scan(&k.ID, &k.Seed, &k.CreatedAt, &k.SignsFrom)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("read pass keys: %w", err)
	}
	return keys, nil
}

// AddPassKey adds k unless a key already signs from after `unless`, and reports whether it did.
// The check and the insert hold one lock, so concurrent callers add one key between them.
func (db *DB) AddPassKey(ctx context.Context, k pass.Key, unless time.Time) (bool, error) {
	added := false
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", passKeyLock); err != nil {
			return err
		}
		var taken bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pass_keys WHERE signs_from > $1)", unless).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return nil
		}
		_, err := tx.Exec(ctx, "INSERT INTO pass_keys (kid, seed, created_at, signs_from) VALUES ($1, $2, $3, $4)",
			k.ID, k.Seed, k.CreatedAt, k.SignsFrom)
		added = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("add pass key: %w", err)
	}
	return added, nil
}

// DeletePassKeys deletes every key a later key replaced before `before`, and returns their kids.
func (db *DB) DeletePassKeys(ctx context.Context, before time.Time) ([]string, error) {
	rows, err := db.pool.Query(ctx, `DELETE FROM pass_keys k WHERE EXISTS
		(SELECT 1 FROM pass_keys n WHERE n.signs_from > k.signs_from AND n.signs_from < $1) RETURNING kid`, before)
	if err != nil {
		return nil, fmt.Errorf("delete pass keys: %w", err)
	}
	kids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("delete pass keys: %w", err)
	}
	return kids, nil
}
