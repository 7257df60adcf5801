// Package postgres is the adapter for the durable record: the catalog, and (fed by the write-behind)
// every reservation, payment and point movement.
package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketrush/ticketrush/sql"
)

// DB is a pool on the service's database.
type DB struct {
	pool *pgxpool.Pool
}

// Open connects to url and checks that the server answers.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	return &DB{pool: pool}, nil
}

// Close closes the pool.
func (db *DB) Close() { db.pool.Close() }

// Pool is the pgx pool, for pool statistics.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Ping reports whether Postgres answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// migrationLock is the advisory lock that keeps two instances from migrating at once.
const migrationLock = 7_202_611

// Migrate applies every embedded migration not yet applied, each in its own transaction, and returns
// the versions it applied.
func (db *DB) Migrate(ctx context.Context) ([]int, error) {
	files, err := fs.Glob(sql.Migrations, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLock)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var applied []int
	for _, f := range files {
		num, _, ok := strings.Cut(f, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil {
			return applied, fmt.Errorf("migrate: %s: want NNNN_name.sql", f)
		}
		var done bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)", version).Scan(&done); err != nil {
			return applied, fmt.Errorf("migrate: %w", err)
		}
		if done {
			continue
		}
		body, err := sql.Migrations.ReadFile(f)
		if err != nil {
			return applied, err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, f)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migrate %s: %w", f, err)
		}
		applied = append(applied, version)
	}
	return applied, nil
}
