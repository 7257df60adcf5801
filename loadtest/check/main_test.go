package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func newChecker(prefix string, out *bytes.Buffer) *checker {
	s := summary{SetupData: &setupData{ConcertID: "concert00001", Schedules: []string{"schedule000a"}, UserPrefix: "fan-"}}
	return &checker{cfg: options{prefix: prefix, bin: "true", drain: time.Second}, s: s, r: &report{w: out},
		users: []string{"fan-0"}}
}

// TestCheckReadsUnderThePrefix holds a seat under a fresh key prefix and checks that the checker finds
// the reservation there (REDIS_KEY_PREFIX, not a hard-coded tr).
func TestCheckReadsUnderThePrefix(t *testing.T) {
	ctx := context.Background()
	rc, prefix := dbtest.Redis(t)
	store := redis.NewStore(rc, prefix, prometheus.NewRegistry())
	q := ticketrush.DefaultQueueSettings()
	c := ticketrush.Concert{ID: "concert00001", Title: "T", Venue: "V", Queue: q,
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 2}},
		Schedules: []ticketrush.Schedule{{ID: "schedule000a", StartsAt: time.Now()}}}
	now := time.Now()
	_, err := store.LoadConcert(ctx, c, now)
	require.NoError(t, err)
	j, err := store.Line.Join(ctx, c.ID, "fan-0", now)
	require.NoError(t, err)
	require.Equal(t, ticketrush.StatusActive, j.Status)
	_, _, err = store.Seats.Hold(ctx, ticketrush.QueueClaims{UserID: "fan-0", ConcertID: c.ID, Seq: j.Seq}, "schedule000a", "VIP-1", 100, now)
	require.NoError(t, err)

	var out bytes.Buffer
	ch := newChecker(prefix, &out)
	ch.rdb = rc
	ch.redis(ctx)
	assert.Contains(t, out.String(), "1 reservations map[HELD:1]", out.String())
	assert.Zero(t, ch.r.fails, out.String())
}

// TestCheckFailsWhatItCannotCheck: no write-behind group on the streams, no durable record, no
// reconcile command; each is a failure, not a skip.
func TestCheckFailsWhatItCannotCheck(t *testing.T) {
	ctx := context.Background()
	rc, prefix := dbtest.Redis(t)

	var out bytes.Buffer
	ch := newChecker(prefix, &out)
	ch.rdb = rc
	assert.False(t, ch.drain(ctx), "nothing reads the streams")
	assert.Equal(t, 1, ch.r.fails, out.String())

	ch.cfg.databaseURL = dbtest.Postgres(t) // a fresh database without the schema
	ch.postgres(ctx)
	assert.Equal(t, 2, ch.r.fails, out.String())

	ch.reconcile(ctx) // "true" has no reconcile command
	assert.Equal(t, 3, ch.r.fails, out.String())
	assert.NotContains(t, out.String(), "SKIP")
}

func TestRedact(t *testing.T) {
	assert.Equal(t, "redis://:xxxxx@10.0.0.1:6379/0", redact("redis://:s3cret@10.0.0.1:6379/0"))
	assert.Equal(t, "postgres://app:xxxxx@db:5432/tr?sslmode=disable", redact("postgres://app:s3cret@db:5432/tr?sslmode=disable"))
	assert.Equal(t, "redis://127.0.0.1:6379/0", redact("redis://127.0.0.1:6379/0"))
	assert.NotContains(t, redact("postgres://app:s3cret@db:5432/%zz"), "s3cret")
}
