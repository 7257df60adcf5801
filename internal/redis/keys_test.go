package redis

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

func TestSlot(t *testing.T) {
	// Known values from the Redis Cluster specification and redis-cli CLUSTER KEYSLOT.
	assert.Equal(t, 12739, slot("123456789"))
	assert.Equal(t, slot("user1000"), slot("{user1000}.following"))
	assert.Equal(t, slot("foo"), slot("tr:{foo}:bar"))
}

// TestEveryScriptTouchesOneSlot computes the hash slot of every key each script's builder gives it (the
// user's rate bucket and the other keys of a rate-limited call included) and fails when one script's
// keys span two slots.
func TestEveryScriptTouchesOneSlot(t *testing.T) {
	k := NewKeys("tr").Concert("c0ncert0001x")
	w := NewKeys("tr").Wallet("fan-42")
	lim := UserLimit{Rate: 20, Burst: 40}
	// a seat slot in the concert's own slot (a line of one shard), where a hold and a step are one call
	together := k.Schedule(SlotsTogether(k, ticketrush.Concert{Schedules: []ticketrush.Schedule{{ID: "sched0000002"}}})[0])
	claims := ticketrush.QueueClaims{ConcertID: "c0ncert0001x", UserID: "fan-42", Seq: 7}
	pass := ticketrush.JoinPass{PowID: "ab12"}
	keysOf := func(keys, _ []string) []string { return keys }
	scripts := map[string][]string{
		"concert_load":     keysOf(k.concertLoad(ticketrush.Concert{ID: "c0ncert0001x"}, "", t0)),
		"queue_join":       keysOf(k.queueJoin("fan-42", pass, lim, t0)),
		"queue_leave":      keysOf(k.queueLeave("fan-42", 7, t0)),
		"queue_status":     keysOf(k.queueStatus(claims, t0)),
		"queue_tick":       keysOf(k.queueTick(t0, 50)),
		"queue_seen":       keysOf(k.queueSeen([]uint64{3, 4}, t0)),
		"queue_snapshot":   keysOf(k.queueSnapshot(0, 10, t0)),
		"queue_configure":  keysOf(k.queueConfigure(ticketrush.QueueSettings{}, t0)),
		"seat_hold":        keysOf(k.seatHold(together, claims, "A-1", 100, "r1", lim, t0)),
		"hold_cancel":      keysOf(together.holdCancel("fan-42", "r1", lim, &k, t0)),
		"hold_sweep":       keysOf(together.holdSweep(t0, 50)),
		"schedule_counts":  keysOf(together.scheduleCounts(t0)),
		"payment_claim":    keysOf(together.paymentClaim("fan-42", "r1", lim, &k, t0)),
		"seat_sell":        keysOf(together.seatSell("r1", ticketrush.Payment{}, &k, t0)),
		"payment_release":  keysOf(together.paymentRelease("r1", &k, t0)),
		"points_charge":    keysOf(w.pointsCharge("fan-42", 100, "c1", "key{with}braces", "fp", lim, t0)),
		"wallet_debit":     keysOf(w.walletDebit("fan-42", "r1", 100, t0)),
		"wallet_refund":    keysOf(w.walletRefund("fan-42", "r1", t0)),
		"payment_remember": keysOf(w.paymentRemember("finish", "fan-42", "key{with}braces", "fp", "p1", true, "", t0)),
		"draw_seal":        keysOf(k.drawSeal(-1, t0)),
		"draw_place":       keysOf(k.drawPlace(0, nil, "", true, t0)),
		"line_seal":        keysOf(k.Shard(5).lineSeal()),
		"line_migrate":     keysOf(lineMigrate(k.Shard(5).LegacyWait(), k.Shard(5).Places(), k.Shard(5).Order(), 10)),
		"seen_migrate":     keysOf(seenMigrate(k, 10)),
		"line_place":       keysOf(k.Shard(5).linePlace(nil)),
		"draw_status":      keysOf(k.drawStatus("fan-42", t0)),
		"draw_read":        keysOf(drawRead(k.Shard(5).Prequeue(), "up", "", "", 10)),
		"prequeue_leave":   keysOf(k.prequeueLeave("fan-42", t0)),
		"line_arrive":      keysOf(k.lineArrive([]joinArgs{{user: "fan-42"}}, t0)),
		"line_enter":       keysOf(k.Shard(5).lineEnter("fan-42", arrival{seq: 3}, pass, lim, t0)),
		"line_heads":       keysOf(k.Shard(5).lineHeads(10)),
		"line_admit":       keysOf(k.lineAdmit(t0, 10, 0, "tick", nil, nil)),
		"line_pop":         keysOf(k.Shard(5).linePop(nil, nil, nil)),
		"line_leave":       keysOf(k.Shard(5).lineLeave("fan-42", 3)),
		"line_left":        keysOf(k.lineLeft("fan-42", 3, "SKIP", t0)),
	}
	for name, keys := range seatSlotKeys(k, claims, lim) {
		scripts[name] = keys
	}
	for _, name := range append(lua.Names(), "hold_cancel@schedule", "hold_sweep@schedule", "schedule_counts@schedule",
		"payment_claim@schedule", "payment_release@schedule", "seat_sell@schedule") {
		keys, ok := scripts[name]
		require.True(t, ok, "script %s has no key list in this test", name)
		require.NotEmpty(t, keys)
		want := slot(keys[0])
		for _, key := range keys {
			assert.Equal(t, want, slot(key), "%s: %s is in another slot than %s", name, key, keys[0])
		}
	}
	assert.Equal(t, len(scripts), len(lua.Names())+6, "a key list here for a script that no longer exists")
	assert.NotEqual(t, slot(k.Events()), slot(w.Events()), "concert and wallet live in their own slots")
	shardSlots := map[int]bool{}
	for n := range 8 {
		shardSlots[slot(k.Shard(n).Places())] = true
	}
	assert.Len(t, shardSlots, 8, "each line shard is a slot of its own")
	assert.NotContains(t, shardSlots, slot(k.Events()), "and none is the concert's")
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
	assert.Equal(t, "tr:{c:c1}:q:places", k.Concert("c1").Places())
	assert.Equal(t, "tr:{c:c1}:q:order", k.Concert("c1").Order())
	assert.Equal(t, "tr:{c:c1}:q:pre", k.Concert("c1").Prequeue())
	assert.Equal(t, "tr:{c:c1}:draw", k.Concert("c1").Draw())
	assert.Equal(t, "tr:{c:c1}:dkeys", k.Concert("c1").DrawKeys())
	assert.Equal(t, "tr:{w:45}:bal", k.Wallet("fan-42").Balances())
	assert.Equal(t, "tr:{w:45}:idem:fan-42:k1", k.Wallet("fan-42").Idempotency("fan-42", "k1"))
}

// seatSlotKeys is the keys of the scripts of a concert whose seats have slots of their own, the calls
// of the scripts that also run on the concert's slot (hold_cancel, ...) on a schedule's slot under
// the name "<script>@schedule".
func seatSlotKeys(k ConcertKeys, claims ticketrush.QueueClaims, lim UserLimit) map[string][]string {
	keysOf := func(keys, _ []string) []string { return keys }
	s := k.Schedule("sched0000002")
	return map[string][]string{
		"gate_apply": keysOf(gateAt{k: k, shard: k.Shard(5)}.gateApply([]gateStep{{kind: gateHoldStep, user: "fan-42", id: "r1", seq: 7, now: t0},
			{kind: gateFollowStep, user: "fan-42", id: "r1", now: t0}}, lim)),
		"token_done":               keysOf(k.tokenDone("fan-42", 7, t0)),
		"inventory_carry":          keysOf(k.inventoryCarry(1, 1, t0)),
		"schedule_load":            keysOf(s.scheduleLoad(10, t0)),
		"seat_take":                keysOf(s.seatTake(claims, "A-1", 100, "r1", t0, t0)),
		"seat_sell@schedule":       keysOf(s.seatSell("r1", ticketrush.Payment{}, nil, t0)),
		"hold_cancel@schedule":     keysOf(s.holdCancel("fan-42", "r1", lim, nil, t0)),
		"hold_sweep@schedule":      keysOf(s.holdSweep(t0, 50)),
		"schedule_counts@schedule": keysOf(s.scheduleCounts(t0)),
		"payment_claim@schedule":   keysOf(s.paymentClaim("fan-42", "r1", lim, nil, t0)),
		"payment_release@schedule": keysOf(s.paymentRelease("r1", nil, t0)),
	}
}

// TestSeatSlotsTouchOneSlotEach: each script of a schedule's seat slot touches that slot alone, each
// schedule is a slot of its own and none is the concert's; the gate's steps touch the fan's shard alone.
func TestSeatSlotsTouchOneSlotEach(t *testing.T) {
	k := NewKeys("tr").Concert("c0ncert0001x")
	claims := ticketrush.QueueClaims{ConcertID: "c0ncert0001x", UserID: "fan-42", Seq: 7}
	for name, keys := range seatSlotKeys(k, claims, UserLimit{Rate: 20, Burst: 40}) {
		want := slot(k.Schedule("sched0000002").Seats())
		switch name {
		case "gate_apply": // on the fan's shard
			want = slot(k.Shard(5).Places())
		case "inventory_carry", "token_done":
			want = slot(k.Events())
		}
		for _, key := range keys {
			assert.Equal(t, want, slot(key), "%s: %s", name, key)
		}
	}
	slots := map[int]bool{slot(k.Events()): true}
	for _, id := range []SeatSlot{"sched0000001", "sched0000002", "sched0000003"} {
		slots[slot(k.Schedule(id).Seats())] = true
	}
	assert.Len(t, slots, 4, "each schedule's seats in a slot of its own, none the concert's")
	assert.Equal(t, "tr:{c:c1:s:s1}:seats", NewKeys("tr").Concert("c1").Schedule("s1").Seats())
	assert.Equal(t, "tr:{c:c1:s:s1@7}:seats", NewKeys("tr").Concert("c1").Schedule("s1@7").Seats())
	assert.Equal(t, "s1", SeatSlot("s1@7").ScheduleID())
	assert.Equal(t, "tr:{c:c1}:ugate", NewKeys("tr").Concert("c1").Gate())
}

// TestStepCallsWithTheGate: a step of a reservation on a seat slot in the concert's own slot (one call,
// its follow in it) sends the keys and arguments of the same step on a slot elsewhere, then the concert's
// keys of the follow, which TestScriptHeaders holds against each header.
func TestStepCallsWithTheGate(t *testing.T) {
	k := NewKeys("tr").Concert("c1")
	s := k.Schedule("s1")
	lim := UserLimit{Rate: 20, Burst: 40}
	pay := ticketrush.Payment{ID: "p1", Balance: 3, PaidAt: t0}
	tests := []struct {
		script          string
		alone, withGate call
	}{
		{"hold_cancel", built(s.holdCancel("fan-1", "r1", lim, nil, t0)), built(s.holdCancel("fan-1", "r1", lim, &k, t0))},
		{"payment_claim", built(s.paymentClaim("fan-1", "r1", lim, nil, t0)), built(s.paymentClaim("fan-1", "r1", lim, &k, t0))},
		{"payment_release", built(s.paymentRelease("r1", nil, t0)), built(s.paymentRelease("r1", &k, t0))},
		{"seat_sell", built(s.seatSell("r1", pay, nil, t0)), built(s.seatSell("r1", pay, &k, t0))},
	}
	names := func(keys []string) []string {
		out := make([]string, len(keys))
		for i, key := range keys {
			out[i] = keyName(key)
		}
		return out
	}
	for _, tt := range tests {
		assert.Equal(t, names(append(append([]string(nil), tt.alone.keys...), k.followKeys()...)), names(tt.withGate.keys), tt.script)
		assert.Equal(t, tt.alone.args, tt.withGate.args, tt.script)
		if i := slices.Index(names(tt.alone.keys), "rl"); i >= 0 {
			assert.Equal(t, s.UserRate("fan-1"), tt.alone.keys[i], "%s: the seat slot's rate bucket", tt.script)
			assert.Equal(t, k.UserRate("fan-1"), tt.withGate.keys[i], "%s: in the concert's slot, the concert's", tt.script)
		}
	}
}
