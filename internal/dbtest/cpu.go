package dbtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Querier is what PostgresCPU asks: a pgx pool or connection on the database to measure.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// PostgresCPU is the CPU time the backends connected to q's database have used so far, read from
// /proc/<pid>/schedstat: benchmarks of the write-behind take its difference per event, a figure the
// other processes of a busy machine inflate far less than wall time. The Postgres server must run on
// this machine (it does for every test here).
func PostgresCPU(tb testing.TB, q Querier) time.Duration {
	tb.Helper()
	d, err := BackendsCPU(context.Background(), q)
	require.NoError(tb, err)
	return d
}

// BackendsCPU is PostgresCPU for callers outside a test (the load-test bench).
func BackendsCPU(ctx context.Context, q Querier) (time.Duration, error) {
	rows, err := q.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			return 0, fmt.Errorf("postgres backend cpu: %w (the server must run on this machine)", err)
		}
		ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("postgres backend cpu: %w", err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// ProcessCPU is the CPU time (user and system) this process has used so far.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	d, err := SelfCPU()
	require.NoError(tb, err)
	return d
}

// SelfCPU is ProcessCPU for callers outside a test.
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
