package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/booking"
	"github.com/ticketrush/ticketrush/internal/config"
	"github.com/ticketrush/ticketrush/internal/process"
	"github.com/ticketrush/ticketrush/internal/queue"
	"github.com/ticketrush/ticketrush/internal/redis"
	"github.com/ticketrush/ticketrush/internal/writebehind"
)

// loadSettings is config.Load of an environment with the three secrets and give.
func loadSettings(t *testing.T, give map[string]string) config.Config {
	env := map[string]string{"JWT_SECRET": strings.Repeat("j", 32), "QUEUE_TOKEN_SECRET": strings.Repeat("q", 32),
		"ADMIN_TOKEN": strings.Repeat("a", 32)}
	for k, v := range give {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	return cfg
}

// TestWriteBehindSettingsPassDown: the write-behind's settings reach the worker's configuration, and
// config's defaults for them are writebehind.DefaultConfig's.
func TestWriteBehindSettingsPassDown(t *testing.T) {
	d := writebehind.DefaultConfig()
	w := process.WriteBehindConfig(loadSettings(t, nil), false)
	assert.Equal(t, []int{d.Writers, d.BatchSize, d.ReadCount, d.MaxReadCount}, []int{w.Writers, w.BatchSize, w.ReadCount, w.MaxReadCount})
	assert.Equal(t, d.ClaimIdle, w.ClaimIdle)
	assert.Zero(t, w.ReplicaWait, "a single Redis: no replica to wait for")

	w = process.WriteBehindConfig(loadSettings(t, map[string]string{"WRITEBEHIND_WRITERS": "3", "WRITEBEHIND_BATCH_SIZE": "500",
		"WRITEBEHIND_READ_COUNT": "200", "WRITEBEHIND_MAX_READ_COUNT": "800", "WRITEBEHIND_CLAIM_IDLE_SECONDS": "5"}), true)
	assert.Equal(t, []int{3, 500, 200, 800}, []int{w.Writers, w.BatchSize, w.ReadCount, w.MaxReadCount})
	assert.Equal(t, 5*time.Second, w.ClaimIdle)
	assert.Equal(t, config.ReplicaWait, w.ReplicaWait, "a cluster: an event reaches Postgres once a replica has it")
}

// TestWriteBehindClaimsBeforeStuck: entries a worker read just before it crashed, when no others wait,
// are claimed by another worker before that worker's readiness fails. It may have measured nothing
// waiting just before the read (the group's last advance); it measures again within QuietEvery, the
// entries are claimable ClaimIdle after the read, and its next look for them is within a ClaimEvery.
func TestWriteBehindClaimsBeforeStuck(t *testing.T) {
	d := writebehind.DefaultConfig()
	assert.Less(t, d.QuietEvery+config.MaxWriteBehindClaimIdle+d.ClaimEvery, d.StuckAfter)
}

// TestStreamDrainOutlastsAClaim: once a concert falls asleep the write-behind reads its stream for
// queue.StreamDrain more, time enough for entries a crashed worker left pending to become claimable (the
// longest ClaimIdle an operator may set) and for another worker's next look for them (a ClaimEvery).
func TestStreamDrainOutlastsAClaim(t *testing.T) {
	d := writebehind.DefaultConfig()
	assert.Greater(t, queue.StreamDrain, config.MaxWriteBehindClaimIdle+d.ClaimEvery)
}

// TestPayingGateOutlastsStuckPayments: a payment left claimed (its process crashed between the steps)
// keeps counting against its fan's hold limit until the sweeper finishes or undoes it, whose step sets
// the fan's gate entry to what the reservation became; were the entry to run out first, the fan could
// hold another seat beyond the limit meanwhile. The sweeper takes it up once it has been claimed for
// booking.StuckAfter, in its next round: within the sweep's interval, as the round keeps a concert with
// seats being paid awake (queue.Activity.Busy); config.IdlePace, the pace with no concert awake, bounds it too.
func TestPayingGateOutlastsStuckPayments(t *testing.T) {
	cfg := loadSettings(t, nil)
	assert.Greater(t, redis.PayingGate, booking.StuckAfter+max(cfg.SweepInterval, config.IdlePace))
}

// TestNoRequestOutlivesStuckAfter: the sweeper takes up a payment claimed booking.StuckAfter ago, when no
// request of it can still be running: each ends by its deadline, and the server gives up writing its
// answer by the write timeout.
func TestNoRequestOutlivesStuckAfter(t *testing.T) {
	assert.Greater(t, booking.StuckAfter, max(config.RequestTimeout, config.CreateTimeout, config.Server.Write))
}
