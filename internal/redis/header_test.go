package redis

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/draw"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

// header is what a script's header comment says of its KEYS and ARGV: their names in order, and the
// name of a variadic tail (KEYS[5..] seats), if any.
type header struct {
	keys, args         []string
	keysTail, argsTail string
}

var headerSlot = regexp.MustCompile(`(KEYS|ARGV)\[(\d+)(\.\.)?\]\s+([\w|]+)`)

func parseHeader(t *testing.T, name, src string) header {
	t.Helper()
	var h header
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		for _, m := range headerSlot.FindAllStringSubmatch(line, -1) {
			i, _ := strconv.Atoi(m[2])
			names, tail := &h.keys, &h.keysTail
			if m[1] == "ARGV" {
				names, tail = &h.args, &h.argsTail
			}
			require.Empty(t, *tail, "%s: %s[%d] after a variadic tail", name, m[1], i)
			require.Equal(t, len(*names)+1, i, "%s: %s[%d] out of order in the header", name, m[1], i)
			if m[3] == ".." {
				*tail = m[4]
			} else {
				*names = append(*names, m[4])
			}
		}
	}
	return h
}

// keyName is the layout name of a key Go builds: tr:{c:x}:q:places is places, tr:{c:x}:seats:s1 is seats,
// tr:{w:3}:idem:u:k is idem.
func keyName(key string) string {
	_, rest, _ := strings.Cut(key, "}:")
	rest = strings.TrimPrefix(rest, "q:")
	name, _, _ := strings.Cut(rest, ":")
	return name
}

// locals returns what a script's leading local declarations name: KEYS and ARGV index -> local name.
// A declaration may convert (tonumber(ARGV[3])).
var (
	localLine = regexp.MustCompile(`^local ([\w, ]+) = (.+)$`)
	localSlot = regexp.MustCompile(`^(?:tonumber\()?(KEYS|ARGV)\[(\d+)\]\)?$`)
	bodySlot  = regexp.MustCompile(`(KEYS|ARGV)\[\d+\]`)
)

func locals(src string) (named map[string]string, body string) {
	named = map[string]string{}
	lines := strings.Split(src, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "--") {
		i++
	}
	for ; i < len(lines); i++ {
		m := localLine.FindStringSubmatch(lines[i])
		if m == nil {
			break
		}
		names, values := strings.Split(m[1], ","), strings.Split(m[2], ",")
		if len(names) != len(values) {
			break
		}
		slots := 0
		for j := range names {
			if s := localSlot.FindStringSubmatch(strings.TrimSpace(values[j])); s != nil {
				named[s[1]+"["+s[2]+"]"] = strings.TrimSpace(names[j])
				slots++
			}
		}
		if slots == 0 {
			break
		}
	}
	return named, strings.Join(lines[i:], "\n")
}

// scriptCall is one script's call as its builder builds it, with the value the test gives each named
// argument.
type scriptCall struct {
	script string
	call   call              // what the script's builder returns, exactly what the Store sends
	want   map[string]string // argument name -> value; a variadic tail joined by ","
}

// scriptCalls builds every script's call through the builder the Store calls, of concert c1 and fan-1's
// wallet.
func scriptCalls() []scriptCall {
	k := NewKeys("tr").Concert("c1")
	w := NewKeys("tr").Wallet("fan-1")
	now := time.UnixMilli(1_800_000_000_000)
	claims := ticketrush.QueueClaims{ConcertID: "c1", UserID: "fan-1", Seq: 7}
	q := ticketrush.QueueSettings{ActiveCapacity: 11, AdmitPerSecond: 12, ActiveTTL: 13 * time.Second,
		HoldTTL: 14 * time.Second, MaxHoldsPerUser: 15, Paused: true, JoinPowBits: 16, AccessCodeRequired: true,
		ActivePerSeat: 17, AbandonAfter: 18 * time.Second, NoShow: 19 * time.Second, LineShards: 21}
	const at = "1800000000000"
	lim := UserLimit{Rate: 20, Burst: 40}
	sale := ticketrush.Sale{OpensAt: now.Add(time.Minute), PrequeueOpensAt: now.Add(30 * time.Second)}
	for i := range sale.Seed {
		sale.Seed[i] = 7
	}
	var k9, k8 draw.Key
	copy(k9[:], bytes.Repeat([]byte{9}, 32))
	copy(k8[:], bytes.Repeat([]byte{8}, 32))
	entrants := []draw.Entrant{{User: "fan-1", Key: k9}, {User: "fan-2", Key: k8}}
	return append([]scriptCall{
		{"concert_load", built(k.concertLoad(ticketrush.Concert{ID: "c1", Title: "T", Venue: "V", Queue: q, Sale: &sale,
			Schedules: []ticketrush.Schedule{{ID: "s1"}, {ID: "s2"}}, Sections: []ticketrush.Section{{Name: "A", Seats: 3}}}, "s1,s2@7", now)),
			map[string]string{"title": "T", "venue": "V", "cap": "11", "rate": "12", "ttl": "13000", "hold": "14000",
				"maxholds": "15", "paused": "1", "now": at, "pow": "16", "codereq": "1", "opens": "1800000060000",
				"pqopens": "1800000030000", "seed": strings.Repeat("07", 32), "aps": "17", "total": "6",
				"abandon": "18000", "noshow": "19000", "shards": "21", "sched": "s1,s2@7", "lv": "4"}},
		{"line_arrive", built(k.lineArrive([]joinArgs{{user: "fan-1", code: "cafe"}, {user: "fan-2"}}, now)),
			map[string]string{"now": at, "coded": "1", "joins": "fan-1,fan-2,cafe,"}},
		{"line_enter", built(k.Shard(3).lineEnter("fan-1", arrival{seq: 7, code: "1", pow: 16, codeRequired: true},
			ticketrush.JoinPass{PowID: "ab12", PowBits: 20, PowExpires: now.Add(time.Minute)}, lim, now)),
			map[string]string{"joins": "fan-1," + at + ",7,20,40,ab12,20,1800000060000,16,1,1"}},
		{"line_heads", built(k.Shard(3).lineHeads(50)), map[string]string{"count": "50"}},
		{"line_admit", built(k.lineAdmit(now, 50, 9, "tick", []string{"fan-3:4", "fan-4:5"}, []lineFan{{user: "fan-1", seq: 7, seen: 5}, {user: "fan-2", seq: 8}})),
			map[string]string{"now": at, "batch": "50", "waiting": "9", "mode": "tick", "shown": "fan-3:4,fan-4:5", "user": "fan-1,7,5,fan-2,8,0"}},
		{"line_pop", built(k.Shard(3).linePop([]lineFan{{user: "fan-1", seq: 7}, {user: "fan-2", seq: 8}},
			map[string]string{"fan-1": "7:1800000001000:0"}, []string{"fan-3:4"})),
			map[string]string{"applied": "fan-3:4", "user": "fan-1,7,7:1800000001000:0,fan-2,8,"}},
		{"line_leave", built(k.Shard(3).lineLeave("fan-1", 7)), map[string]string{"user": "fan-1", "seq": "7"}},
		{"line_left", built(k.lineLeft("fan-1", 7, "SKIP", now)), map[string]string{"user": "fan-1", "seq": "7", "from": "SKIP", "now": at}},
		{"queue_join", built(k.queueJoin("fan-1", ticketrush.JoinPass{PowID: "ab12", PowBits: 20,
			PowExpires: now.Add(time.Minute), CodeHash: "cafe"}, lim, now)),
			map[string]string{"user": "fan-1", "now": at, "ulimit": "20", "uburst": "40", "powid": "ab12", "powbits": "20",
				"powexp": "1800000060000", "code": "cafe"}},
		{"draw_seal", built(k.drawSeal(12, now)), map[string]string{"now": at, "given": "12"}},
		{"draw_place", built(k.drawPlace(3, entrants, "d1", false, now)),
			map[string]string{"from": "3", "keys": string(bytes.Repeat([]byte{9}, 32)) + string(bytes.Repeat([]byte{8}, 32)),
				"digest": "d1", "now": at, "inline": "0", "user": "fan-1,fan-2"}},
		{"line_seal", built(k.Shard(3).lineSeal()), map[string]string{}},
		{"line_migrate", built(lineMigrate(k.LegacyWait(), k.Places(), k.Order(), 1000)), map[string]string{"batch": "1000"}},
		{"seen_migrate", built(seenMigrate(k, 1000)), map[string]string{"batch": "1000", "version": "4"}},
		{"line_place", built(k.Shard(3).linePlace([]lineFan{{user: "fan-1", seq: 7}, {user: "fan-2", seq: 8}})),
			map[string]string{"user": "fan-1,7,fan-2,8"}},
		{"prequeue_leave", built(k.prequeueLeave("fan-1", now)), map[string]string{"user": "fan-1", "now": at}},
		{"draw_status", built(k.drawStatus("fan-1", now)), map[string]string{"user": "fan-1", "now": at}},
		{"draw_read", built(drawRead(k.Shard(3).Prequeue(), "down", "-12", "fan-1", 500)),
			map[string]string{"dir": "down", "score": "-12", "last": "fan-1", "count": "500"}},
		{"queue_leave", built(k.queueLeave("fan-1", 7, now)), map[string]string{"user": "fan-1", "seq": "7", "now": at}},
		{"queue_status", built(k.queueStatus(claims, now)), map[string]string{"user": "fan-1", "seq": "7", "now": at}},
		{"queue_tick", built(k.queueTick(now, 50)), map[string]string{"now": at, "batch": "50"}},
		{"queue_seen", built(k.queueSeen([]uint64{7, 9}, now)), map[string]string{"now": at, "seqs": "7,9"}},
		{"queue_snapshot", built(k.queueSnapshot(9, 100, now)), map[string]string{"after": "9", "limit": "100", "now": at}},
		{"queue_configure", built(k.queueConfigure(q, now)), map[string]string{"cap": "11", "rate": "12", "paused": "1", "now": at,
			"pow": "16", "codereq": "1", "aps": "17", "abandon": "18000", "noshow": "19000"}},
		{"seat_hold", built(k.seatHold(k.Schedule("s1"), claims, "A-1", 500, "r1", lim, now)),
			map[string]string{"user": "fan-1", "seq": "7", "schedule": "s1", "seat": "A-1", "price": "500", "id": "r1", "now": at,
				"ulimit": "20", "uburst": "40"}},
		{"hold_cancel", built(k.Schedule("s1").holdCancel("fan-1", "r1", lim, &k, now)),
			map[string]string{"user": "fan-1", "id": "r1", "now": at, "ulimit": "20", "uburst": "40", "payms": "60000"}},
		{"hold_sweep", built(k.Schedule("s1").holdSweep(now, 50)), map[string]string{"now": at, "batch": "50", "schedule": "s1"}},
		{"schedule_counts", built(k.Schedule("s1").scheduleCounts(now)), map[string]string{"now": at, "schedule": "s1"}},
		{"payment_claim", built(k.Schedule("s1").paymentClaim("fan-1", "r1", lim, &k, now)),
			map[string]string{"user": "fan-1", "id": "r1", "now": at, "ulimit": "20", "uburst": "40", "payms": "60000"}},
		{"payment_release", built(k.Schedule("s1").paymentRelease("r1", &k, now)), map[string]string{"id": "r1", "now": at, "payms": "60000"}},
		{"points_charge", built(w.pointsCharge("fan-1", 100, "c1", "k1", "fp1", lim, now)),
			map[string]string{"user": "fan-1", "amount": "100", "id": "c1", "now": at, "key": "k1", "fp": "fp1", "ulimit": "20", "uburst": "40",
				"ttl": strconv.Itoa(int(ticketrush.IdempotencyTTL / time.Second)), "limit": strconv.Itoa(ticketrush.MaxBalance)}},
		{"wallet_debit", built(w.walletDebit("fan-1", "r1", 500, now)),
			map[string]string{"user": "fan-1", "id": "r1", "amount": "500", "payment": ticketrush.PaymentID("r1"), "now": at}},
		{"wallet_refund", built(w.walletRefund("fan-1", "r1", now)),
			map[string]string{"user": "fan-1", "id": "r1", "refund": ticketrush.RefundID("r1"), "now": at}},
		{"payment_remember", built(w.paymentRemember("finish", "fan-1", "k1", "fp1", "p1", true, "INSUFFICIENT_BALANCE", now)),
			map[string]string{"user": "fan-1", "key": "k1", "fp": "fp1", "ref": "p1", "created": "1",
				"ttl": strconv.Itoa(int(ticketrush.IdempotencyTTL / time.Second)), "now": at, "step": "finish",
				"refused": "INSUFFICIENT_BALANCE"}},
	}, seatSlotCalls(k, claims, lim, now, at)...)
}

// TestScriptHeaders holds every script's header against what Go builds for it, through the builder the
// Store calls: the keys, by their layout name, and the arguments, by the value the test gives each
// named argument, in the header's count and order (a reordered key or argument fails here, not in a
// sale). It also checks that each
// script names its KEYS and ARGV once, at the top, with the header's names, and uses only the names
// below (variadic tails excepted).
func TestScriptHeaders(t *testing.T) {
	tests := scriptCalls()
	require.Len(t, tests, len(lua.Names()), "every script has a case here, and every case a script")
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			src := lua.Source(tt.script)
			h := parseHeader(t, tt.script, src)

			// KEYS: Go's keys by layout name, against the header's names.
			var gotKeys []string
			for _, key := range tt.call.keys {
				gotKeys = append(gotKeys, keyName(key))
			}
			wantKeys := append([]string(nil), h.keys...)
			for i, n := range wantKeys {
				if n == "cevents" { // the concert's stream, beside a seat slot's (events) in a step's follow
					wantKeys[i] = "events"
				}
			}
			tailNames := strings.Split(h.keysTail, "|") // a tail of pairs names both: inv|holds
			for i := 0; len(wantKeys) < len(gotKeys) && h.keysTail != ""; i++ {
				wantKeys = append(wantKeys, tailNames[i%len(tailNames)])
			}
			assert.Equal(t, wantKeys, gotKeys, "KEYS: the header's names vs the keys Go builds")

			// ARGV: Go's arguments against the test's value of each of the header's names, in order.
			require.GreaterOrEqual(t, len(tt.call.args), len(h.args), "ARGV: Go builds fewer than the header names")
			var wantArgs []string
			for _, n := range h.args {
				v, ok := tt.want[n]
				require.True(t, ok, "ARGV %s of the header has no value in this test", n)
				wantArgs = append(wantArgs, v)
			}
			assert.Equal(t, len(wantArgs), len(h.args))
			for i := range wantArgs {
				assert.Equal(t, wantArgs[i], tt.call.args[i], "ARGV %s in the header's order %v", h.args[i], h.args)
			}
			tail := tt.call.args[len(h.args):]
			if h.argsTail == "" {
				assert.Empty(t, tail, "ARGV: Go builds more than the header names")
			} else {
				assert.Equal(t, tt.want[h.argsTail], strings.Join(tail, ","), "ARGV tail %s", h.argsTail)
			}
			names := len(h.args)
			if h.argsTail != "" {
				names++
			}
			assert.Len(t, tt.want, names, "a value in this test for an argument the header does not name")

			// The script names every fixed KEYS[i] and ARGV[i] at the top, with the header's name, and
			// uses the names below.
			named, body := locals(src)
			for i, n := range h.keys {
				assert.Equal(t, n, named["KEYS["+strconv.Itoa(i+1)+"]"], "KEYS[%d] is not named %s at the top", i+1, n)
			}
			for i, n := range h.args {
				assert.Equal(t, n, named["ARGV["+strconv.Itoa(i+1)+"]"], "ARGV[%d] is not named %s at the top", i+1, n)
			}
			assert.Len(t, named, len(h.keys)+len(h.args), "a local names a slot the header does not")
			assert.Empty(t, bodySlot.FindAllString(body, -1), "KEYS[i] or ARGV[i] used below the names")
		})
	}
}

// seatSlotCalls is the calls of the scripts of a concert whose seats have slots of their own
// (seatslot.go): on the concert's slot, and on schedule s1's.
func seatSlotCalls(k ConcertKeys, claims ticketrush.QueueClaims, lim UserLimit, now time.Time, at string) []scriptCall {
	s1 := k.Schedule("s1")
	return []scriptCall{
		{"gate_apply", built(gateAt{k: k, shard: k.Shard(3), hold: "14000", maxHolds: "15"}.gateApply([]gateStep{
			{kind: gateHoldStep, user: "fan-1", id: "r1", seq: 7, now: now},
			{kind: gateFollowStep, user: "fan-1", id: "r1", seq: 7, status: "PAYING", expires: now.Add(time.Second), now: now},
		}, lim)),
			map[string]string{"ulimit": "20", "uburst": "40", "paying": "60000", "hold": "14000", "maxholds": "15",
				"steps": "H,fan-1,r1,7,,," + at + ",,F,fan-1,r1,7,PAYING,1800000001000," + at + ","}},
		{"token_done", built(k.tokenDone("fan-1", 7, now)), map[string]string{"user": "fan-1", "seq": "7", "now": at}},
		{"inventory_carry", built(k.inventoryCarry(40, 2, now)), map[string]string{"avail": "40", "sold": "2", "now": at}},
		{"schedule_load", built(s1.scheduleLoad(30, now)), map[string]string{"seats": "30", "now": at}},
		{"seat_take", built(s1.seatTake(claims, "A-1", 500, "r1", now.Add(time.Second), now)),
			map[string]string{"user": "fan-1", "seq": "7", "schedule": "s1", "seat": "A-1", "price": "500", "id": "r1",
				"expires": "1800000001000", "now": at}},
		{"seat_sell", built(s1.seatSell("r1", ticketrush.Payment{ID: "p1", Balance: 300, PaidAt: now.Add(time.Second)}, &k, now)),
			map[string]string{"id": "r1", "payment": "p1", "balance": "300", "paid": "1800000001000", "now": at, "payms": "60000"}},
	}
}
