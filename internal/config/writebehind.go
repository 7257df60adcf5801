package config

import "time"

// The write-behind's bounds. MaxWriteBehindClaimIdle: the entries a worker read just before it crashed
// are claimed by another (once pending this long, found by that worker's next look: within its QuietEvery
// and a ClaimEvery) before readiness calls that worker stuck (StuckAfter without an acknowledgement while
// events wait; writebehind.Config, TestWriteBehindClaimsBeforeStuck).
const (
	MaxWriteBehindWriters   = 64
	maxWriteBehindCount     = 1_000_000
	MaxWriteBehindClaimIdle = 15 * time.Second
)

// loadWriteBehind reads the write-behind's batch and reader settings into c, reporting each bad one to bad.
func (c *Config) loadWriteBehind(getenv func(string) string, bad func(name, format string, args ...any)) {
	var err error
	if c.WriteBehindWriters, err = positive(getenv("WRITEBEHIND_WRITERS"), 2, MaxWriteBehindWriters); err != nil {
		bad("WRITEBEHIND_WRITERS", "%v", err)
	}
	if c.WriteBehindBatchSize, err = positive(getenv("WRITEBEHIND_BATCH_SIZE"), 4000, maxWriteBehindCount); err != nil {
		bad("WRITEBEHIND_BATCH_SIZE", "%v", err)
	}
	if c.WriteBehindReadCount, err = positive(getenv("WRITEBEHIND_READ_COUNT"), 1000, maxWriteBehindCount); err != nil {
		bad("WRITEBEHIND_READ_COUNT", "%v", err)
	}
	if c.WriteBehindMaxReadCount, err = positive(getenv("WRITEBEHIND_MAX_READ_COUNT"), 16000, maxWriteBehindCount); err != nil {
		bad("WRITEBEHIND_MAX_READ_COUNT", "%v", err)
	} else if c.WriteBehindReadCount > 0 && c.WriteBehindMaxReadCount < c.WriteBehindReadCount {
		bad("WRITEBEHIND_MAX_READ_COUNT", "want at least WRITEBEHIND_READ_COUNT (%d), got %d", c.WriteBehindReadCount, c.WriteBehindMaxReadCount)
	}
	claimIdle, err := positive(getenv("WRITEBEHIND_CLAIM_IDLE_SECONDS"), 10, int(MaxWriteBehindClaimIdle/time.Second))
	if err != nil {
		bad("WRITEBEHIND_CLAIM_IDLE_SECONDS", "%v", err)
	}
	c.WriteBehindClaimIdle = time.Duration(claimIdle) * time.Second
}
