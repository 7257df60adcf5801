package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// postgres checks the durable record of the run's concert: no seat sold twice, the sales as in Redis,
// one debit per sale and every fan's balance as the ledger has it.
func (c *checker) postgres(ctx context.Context) {
	db, err := pgx.Connect(ctx, c.cfg.databaseURL)
	if err != nil {
		c.r.fail("postgres", "cannot reach %s: %v", redact(c.cfg.databaseURL), err)
		return
	}
	defer db.Close(ctx)
	var present bool
	if err := db.QueryRow(ctx, `SELECT to_regclass('ledger') IS NOT NULL AND to_regclass('reservations') IS NOT NULL
		AND to_regclass('payments') IS NOT NULL`).Scan(&present); err != nil || !present {
		c.r.fail("postgres", "no ledger, reservations and payments tables (%v): the durable record cannot be checked", err)
		return
	}
	c.postgresSoldTwice(ctx, db)
	c.postgresSales(ctx, db)
	c.postgresDebits(ctx, db)
	c.postgresBalances(ctx, db)
}

// query runs the query of check name, failing the check (nil rows) when it does not run.
func (c *checker) query(ctx context.Context, db *pgx.Conn, name, sql string, args ...any) pgx.Rows {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		c.r.fail(name, "%v (the schema changed? update loadtest/check)", err)
		return nil
	}
	return rows
}

// postgresSoldTwice checks that no seat has two PAID reservations.
func (c *checker) postgresSoldTwice(ctx context.Context, db *pgx.Conn) {
	if rows := c.query(ctx, db, "postgres: no seat sold twice", `SELECT schedule_id, seat_id, count(*) FROM reservations
		WHERE concert_id = $1 AND status = 'PAID' GROUP BY 1, 2 HAVING count(*) > 1`, c.s.SetupData.ConcertID); rows != nil {
		var twice []string
		for rows.Next() {
			var sch, seat string
			var n int
			if err := rows.Scan(&sch, &seat, &n); err == nil {
				twice = append(twice, fmt.Sprintf("%s/%s ×%d", sch, seat, n))
			}
		}
		c.r.expect(rows.Err() == nil && len(twice) == 0, "postgres: no seat sold twice", "%d seats sold twice%s", len(twice), list(append(twice, errText(rows.Err())...)))
	}
}

// postgresSales checks that the PAID reservations and the payments are Redis's sales.
func (c *checker) postgresSales(ctx context.Context, db *pgx.Conn) {
	var paid, payments int
	err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM reservations WHERE concert_id = $1 AND status = 'PAID'),
		(SELECT count(*) FROM payments p JOIN reservations r ON r.id = p.reservation_id WHERE r.concert_id = $1)`, c.s.SetupData.ConcertID).Scan(&paid, &payments)
	if err != nil {
		c.r.fail("postgres: sales", "%v (the schema changed? update loadtest/check)", err)
	} else {
		c.r.expect(paid == len(c.paidRes) && payments == paid, "postgres: sales = Redis", "%d PAID reservations and %d payments, Redis has %d sales", paid, payments, len(c.paidRes))
	}
}

// postgresDebits checks each reservation: payments − refunds in the ledger is 1 when PAID, else 0.
func (c *checker) postgresDebits(ctx context.Context, db *pgx.Conn) {
	if rows := c.query(ctx, db, "postgres: one debit per sale", `SELECT r.id, r.status,
		coalesce(sum(CASE l.type WHEN 'PAYMENT' THEN 1 WHEN 'REFUND' THEN -1 ELSE 0 END), 0)
		FROM reservations r LEFT JOIN ledger l ON l.reservation_id = r.id WHERE r.concert_id = $1 GROUP BY r.id, r.status`, c.s.SetupData.ConcertID); rows != nil {
		var bad []string
		n := 0
		for rows.Next() {
			var id, status string
			var net int
			if err := rows.Scan(&id, &status, &net); err != nil {
				continue
			}
			n++
			if want := map[bool]int{true: 1, false: 0}[status == "PAID"]; net != want {
				bad = append(bad, fmt.Sprintf("%s %s: %d net debits", id, status, net))
			}
		}
		c.r.expect(rows.Err() == nil && len(bad) == 0, "postgres: one debit per sale", "%d reservations%s", n, list(append(bad, errText(rows.Err())...)))
	}
}

// postgresBalances checks every fan: balance (Redis) = charges − payments + refunds (ledger), and no
// balance in the ledger ever went negative.
func (c *checker) postgresBalances(ctx context.Context, db *pgx.Conn) {
	if rows := c.query(ctx, db, "postgres: balances = ledger", `SELECT user_id, sum(delta), min(balance_after) FROM ledger
		WHERE starts_with(user_id, $1) GROUP BY user_id`, c.s.SetupData.UserPrefix); rows != nil {
		ledger := map[string]int64{}
		var bad []string
		for rows.Next() {
			var user string
			var sum, minAfter int64
			if err := rows.Scan(&user, &sum, &minAfter); err != nil {
				continue
			}
			ledger[user] = sum
			if minAfter < 0 {
				bad = append(bad, fmt.Sprintf("%s went to %d", user, minAfter))
			}
		}
		for _, u := range c.users {
			if ledger[u] != c.redisBal[u] {
				bad = append(bad, fmt.Sprintf("%s: balance %d, ledger %d", u, c.redisBal[u], ledger[u]))
			}
		}
		c.r.expect(rows.Err() == nil && len(bad) == 0, "postgres: balances = ledger", "%d fans, %d in the ledger%s", len(c.users), len(ledger), list(append(bad, errText(rows.Err())...)))
	}
}

// ---- reconcile ----
