package redis

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/lua"
)

// crc16 is Redis Cluster's CRC16 (XMODEM).
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slot is the Redis Cluster hash slot of key, hash tags included.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16([]byte(key)) % 16384)
}

func TestSlot(t *testing.T) {
	// Known values from the Redis Cluster specification and redis-cli CLUSTER KEYSLOT.
	assert.Equal(t, 12739, slot("123456789"))
	assert.Equal(t, slot("user1000"), slot("{user1000}.following"))
	assert.Equal(t, slot("foo"), slot("tr:{foo}:bar"))
}

// TestEveryScriptTouchesOneSlot computes the hash slot of every key each script is given and fails when
// one script's keys span two slots.
func TestEveryScriptTouchesOneSlot(t *testing.T) {
	k := NewKeys("tr").Concert("c0ncert0001x")
	w := NewKeys("tr").Wallet("fan-42")
	schedules := []string{"sched0000001", "sched0000002", "sched0000003"}
	scripts := map[string][]string{
		"concert_load":     k.load(),
		"queue_join":       k.join(),
		"queue_leave":      k.leave(),
		"queue_status":     k.status(),
		"queue_tick":       k.tick(),
		"queue_snapshot":   k.snapshot(),
		"queue_configure":  k.configure(),
		"seat_hold":        k.hold(schedules[1]),
		"hold_cancel":      k.cancel(schedules[1]),
		"hold_sweep":       k.sweep(schedules),
		"schedule_counts":  k.counts(schedules),
		"payment_claim":    k.claim(schedules[0]),
		"payment_complete": k.complete(schedules[0]),
		"payment_release":  k.release(schedules[0]),
		"points_charge":    w.charge("fan-42", "key{with}braces"),
		"wallet_debit":     w.money(),
		"wallet_refund":    w.money(),
		"payment_remember": w.remember("fan-42", "key{with}braces"),
		"draw_seal":        k.drawSeal(),
		"draw_place":       k.drawPlace(),
		"draw_status":      k.drawStatus(),
		"prequeue_leave":   k.prequeueLeave(),
	}
	for _, name := range lua.Names() {
		keys, ok := scripts[name]
		require.True(t, ok, "script %s has no key list in this test", name)
		require.NotEmpty(t, keys)
		want := slot(keys[0])
		for _, key := range keys {
			assert.Equal(t, want, slot(key), "%s: %s is in another slot than %s", name, key, keys[0])
		}
	}
	assert.Equal(t, len(scripts), len(lua.Names()), "a key list here for a script that no longer exists")
	assert.NotEqual(t, slot(k.Events()), slot(w.Events()), "concert and wallet live in their own slots")
}

func TestWalletShardIsStable(t *testing.T) {
	// Golden values: the shard of a user is part of the data layout (a balance lives on its shard's
	// key), so a change of hash or of shard count, which would strand every balance, fails here.
	golden := []struct {
		give string
		want int
	}{
		{"fan-42", 45},
		{"u1", 54},
		{"", 0},
		{"user-7", 33},
		{"a-very-long-user-id-0123456789", 17},
	}
	for _, tt := range golden {
		assert.Equal(t, tt.want, WalletShard(tt.give), "shard of %q", tt.give)
	}
	seen := map[int]bool{}
	for i := 0; i < 1000; i++ {
		n := WalletShard("fan-" + string(rune('a'+i%26)) + strings.Repeat("x", i%7))
		require.True(t, n >= 0 && n < WalletShards)
		seen[n] = true
	}
	assert.Greater(t, len(seen), 20, "users spread over the shards")
}

// TestKeyNames pins key names that outlive a deploy: renaming one strands the state under the old name
// (a renamed state marker makes every live Redis look emptied).
func TestKeyNames(t *testing.T) {
	k := NewKeys("tr")
	assert.Equal(t, "tr:state", k.State())
	assert.Equal(t, "tr:{c:c1}:res", k.Concert("c1").Reservations())
	assert.Equal(t, "tr:{c:c1}:seats:s1", k.Concert("c1").Seats("s1"))
	assert.Equal(t, "tr:{c:c1}:q:wait", k.Concert("c1").Wait())
	assert.Equal(t, "tr:{c:c1}:q:pre", k.Concert("c1").Prequeue())
	assert.Equal(t, "tr:{c:c1}:draw", k.Concert("c1").Draw())
	assert.Equal(t, "tr:{c:c1}:dkeys", k.Concert("c1").DrawKeys())
	assert.Equal(t, "tr:{w:45}:bal", k.Wallet("fan-42").Balances())
	assert.Equal(t, "tr:{w:45}:idem:fan-42:k1", k.Wallet("fan-42").Idempotency("fan-42", "k1"))
}
