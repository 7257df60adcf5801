package redis

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
	"github.com/ticketrush/ticketrush/lua"
)

// The on-sale's events decode to their rows (and each to one home row of its own id), or are refused
// as malformed.
func TestDecodeOnSale(t *testing.T) {
	const concert = "c0ncert00001"
	src := EventSource{Stream: "tr:{c:" + concert + "}:events", ConcertID: concert}
	seed := strings.Repeat("ab", 32)
	ev := ticketrush.EventID{Stream: src.Stream, Ms: 1, Seq: 0}                       // the entry id the cases decode under, 1-0
	markTo := func(seq uint64, why string) func(*testing.T, ticketrush.RecordBatch) { // the event's arrival mark
		return func(t *testing.T, b ticketrush.RecordBatch) {
			require.Len(t, b.QueueMarks, 1)
			assert.EqualValues(t, seq, b.QueueMarks[0].MaxSeq, why)
		}
	}
	tests := []struct {
		name   string
		fields map[string]string
		want   string // "" for an event that decodes
		check  func(t *testing.T, b ticketrush.RecordBatch)
	}{
		{"pre-queue entry", map[string]string{"type": "queue.prequeue", "user": "ann", "at": "1000"}, "",
			func(t *testing.T, b ticketrush.RecordBatch) {
				assert.Equal(t, []ticketrush.PrequeueEntry{{ConcertID: concert, UserID: "ann", At: time.UnixMilli(1000).UTC(), Event: ev}}, b.Prequeue)
			}},
		{"seal", map[string]string{"type": "draw.seal", "n": "3", "base": "0", "seq": "3", "at": "1"}, "",
			markTo(3, "the seal raises the arrival mark past every place")},
		{"places", map[string]string{"type": "draw.place", "from": "1000", "users": "ann,bob,cy", "at": "1"}, "",
			func(t *testing.T, b ticketrush.RecordBatch) {
				assert.Equal(t, []ticketrush.DrawPlace{
					{ConcertID: concert, Place: 1001, UserID: "ann"}, {ConcertID: concert, Place: 1002, UserID: "bob"},
					{ConcertID: concert, Place: 1003, UserID: "cy"}}, b.DrawPlaces)
			}},
		{"an empty draw's only batch", map[string]string{"type": "draw.place", "from": "0", "users": "", "at": "1"}, "",
			func(t *testing.T, b ticketrush.RecordBatch) { assert.Empty(t, b.DrawPlaces) }},
		{"done", map[string]string{"type": "draw.done", "n": "3", "digest": "d1", "seed": seed, "at": "5"}, "",
			func(t *testing.T, b ticketrush.RecordBatch) {
				require.Len(t, b.Draws, 1)
				assert.EqualValues(t, 3, b.Draws[0].Entrants)
				assert.Len(t, b.Draws[0].Seed, 32)
			}},
		{"pre-queue leave", map[string]string{"type": "queue.unprequeue", "user": "ann", "at": "2000"}, "",
			func(t *testing.T, b ticketrush.RecordBatch) {
				assert.Equal(t, []ticketrush.PrequeueEntry{{ConcertID: concert, UserID: "ann", At: time.UnixMilli(2000).UTC(), Event: ev}}, b.PrequeueLeaves)
			}},
		{"a round's admissions", map[string]string{"type": "queue.admits", "users": "ann,bob,cy", "seqs": "7,9,12", "until": "5", "at": "1"}, "",
			markTo(12, "the round raises the arrival mark to its highest seq")},
		{"a round's lapses, one without its seq", map[string]string{"type": "queue.lapses", "users": "ann,bob", "seqs": "0,3", "at": "1"}, "",
			markTo(3, "")},
		{"admissions whose lists do not pair up", map[string]string{"type": "queue.admits", "users": "ann,bob", "seqs": "7", "until": "5", "at": "1"}, "2 users for 1 seqs", nil},
		{"admissions with a seq that is not one", map[string]string{"type": "queue.admits", "users": "ann,bob", "seqs": "7,x", "until": "5", "at": "1"}, "entry 1 is not a user and a seq", nil},
		{"admissions with a user that is not one", map[string]string{"type": "queue.admits", "users": "ann,b b", "seqs": "7,8", "until": "5", "at": "1"}, "entry 1 is not a user and a seq", nil},
		{"admissions without their seqs", map[string]string{"type": "queue.admits", "users": "ann", "until": "5", "at": "1"}, `"seqs" is missing`, nil},
		{"places without their start", map[string]string{"type": "draw.place", "users": "ann", "at": "1"}, `"from" is missing`, nil},
		{"done with a short seed", map[string]string{"type": "draw.done", "n": "3", "digest": "d1", "seed": "abcd", "at": "5"}, "seed", nil},
		{"pre-queue entry without its user", map[string]string{"type": "queue.prequeue", "at": "1"}, `"user" is missing`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b ticketrush.RecordBatch
			err := DecodeEvent(src, "1-0", tt.fields, &b)
			if tt.want != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 1, b.Len(), "one home row per event")
			tt.check(t, b)
		})
	}
}

func TestDecode(t *testing.T) {
	const concert = "c0ncert00001"
	res := concert + "sched0000001" + "r00000000001"
	shard := WalletShard("alice")
	csrc := EventSource{Stream: "tr:{c:" + concert + "}:events", ConcertID: concert}
	wsrc := EventSource{Stream: "tr:{w:" + strconv.Itoa(shard) + "}:events", Shard: shard}
	tests := []struct {
		name   string
		src    EventSource
		fields map[string]string
		want   string // "" for an event that decodes
	}{
		{"charge", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "alice", "amount": "100", "balance": "100", "at": "1"}, ""},
		{"charge with a key", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "alice", "amount": "100", "balance": "100", "at": "1", "idem": "k", "fp": "f"}, ""},
		{"debit", wsrc, map[string]string{"type": "point.debit", "id": "p" + res, "res": res, "user": "alice", "amount": "1e3", "balance": "0", "at": "1"}, ""},
		{"debit without its reservation", wsrc, map[string]string{"type": "point.debit", "id": "p1", "user": "alice", "amount": "100", "balance": "0", "at": "1"}, `"res" is missing`},
		{"a user of another shard", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "bob-" + strconv.Itoa(shard+1), "amount": "1", "balance": "1", "at": "1"}, "not of wallet shard"},
		{"an amount that is not a number", wsrc, map[string]string{"type": "point.charge", "id": "c1", "user": "alice", "amount": "lots", "balance": "1", "at": "1"}, "not an integer"},
		{"idempotency record", wsrc, map[string]string{"type": "idem.remember", "user": "alice", "key": "k", "fp": "f", "ref": "p1", "created": "1", "at": "1"}, ""},
		{"unknown wallet event", wsrc, map[string]string{"type": "point.gift", "user": "alice"}, "unknown wallet event"},
		{"hold", csrc, map[string]string{"type": "hold.create", "res": res, "user": "u", "schedule": "sched0000001", "seat": "A-1", "price": "5", "expires": "9", "seq": "3", "at": "1"}, ""},
		{"claim", csrc, map[string]string{"type": "payment.claim", "res": res, "user": "u", "at": "1"}, ""},
		{"a reservation of another concert", csrc, map[string]string{"type": "payment.claim", "res": "x0ncert00001sched0000001r00000000001", "user": "u", "at": "1"}, "not one of concert"},
		{"a reservation of another schedule", csrc, map[string]string{"type": "hold.lapse", "res": res, "user": "u", "schedule": "sched0000002", "seat": "A-1", "at": "1"}, "of schedule"},
		{"a sale without its payment", csrc, map[string]string{"type": "sale", "res": res, "user": "u", "schedule": "sched0000001", "seat": "A-1", "price": "5", "at": "1"}, `"payment" is missing`},
		{"queue", csrc, map[string]string{"type": "queue.leave", "user": "u", "seq": "4", "from": "WAITING", "ord": "2", "at": "1"}, ""},
		{"abandoned", csrc, map[string]string{"type": "queue.abandons", "users": "u,v", "seqs": "4,5", "seens": "1,2", "at": "3"}, ""},
		{"sold out", csrc, map[string]string{"type": "concert.soldout", "sold": "2", "at": "1"}, ""},
		{"no time", csrc, map[string]string{"type": "queue.join", "user": "u", "seq": "4"}, `"at" is missing`},
		{"no type", csrc, map[string]string{"user": "u"}, `"type" is missing`},
		{"unknown concert event", csrc, map[string]string{"type": "hold.teleport", "at": "1"}, "unknown concert event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b ticketrush.RecordBatch
			err := DecodeEvent(tt.src, "1-0", tt.fields, &b)
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, b.Len(), "one home row per event")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// scriptEvent is one XADD of a script: the stream it names, its event type and the fields it writes
// beside type.
type scriptEvent struct {
	script, stream, typ string
	fields              []string
}

// scriptEvents reads every redis.call('XADD', stream, '*', field, value, ...) of a script. An XADD of
// unpack(t) reads the fields of t's table literal (local t = {...}) and those appended to it
// (t[#t + 1], t[#t + 2] = 'name', value). Field names and the type must be string literals.
func scriptEvents(t *testing.T, name, src string) []scriptEvent {
	var out []scriptEvent
	for rest := src; ; {
		i := strings.Index(rest, "redis.call('XADD',")
		if i < 0 {
			return out
		}
		rest = rest[i+len("redis.call"):]
		args := luaList(t, name, rest, '(', ')')
		require.GreaterOrEqual(t, len(args), 3, "lua/%s.lua: an XADD without stream and id", name)
		pairs := args[3:]
		if len(pairs) == 1 {
			pairs = unpacked(t, name, src, pairs[0])
		}
		ev := scriptEvent{script: name, stream: args[1]}
		if !assert.Zero(t, len(pairs)%2, "lua/%s.lua: an XADD with an odd field list %v", name, pairs) {
			continue
		}
		for k := 0; k < len(pairs); k += 2 {
			field, ok := luaString(pairs[k])
			if !assert.True(t, ok, "lua/%s.lua: an XADD field name that is not a string literal: %s", name, pairs[k]) {
				continue
			}
			if field == "type" {
				ev.typ, ok = luaString(pairs[k+1])
				assert.True(t, ok, "lua/%s.lua: an XADD type that is not a string literal: %s", name, pairs[k+1])
				continue
			}
			ev.fields = append(ev.fields, field)
		}
		out = append(out, ev)
	}
}

// unpacked is the field list of unpack(t): t's table literal and what is appended to it.
func unpacked(t *testing.T, name, src, arg string) []string {
	m := regexp.MustCompile(`^unpack\((\w+)\)$`).FindStringSubmatch(arg)
	require.NotNil(t, m, "lua/%s.lua: an XADD whose fields are neither listed nor unpack(table): %s", name, arg)
	table := m[1]
	decl := "local " + table + " = {"
	i := strings.Index(src, decl)
	require.GreaterOrEqual(t, i, 0, "lua/%s.lua: no %q for the XADD's fields", name, decl)
	out := luaList(t, name, src[i+len(decl)-1:], '{', '}')
	appended := regexp.MustCompile(`(?m)^\s*` + table + `\[#` + table + ` \+ \d+\](?:, ` + table + `\[#` + table + ` \+ \d+\])* = (.*)$`)
	for _, a := range appended.FindAllStringSubmatch(src, -1) {
		out = append(out, luaList(t, name, "("+a[1]+")", '(', ')')...)
	}
	return out
}

// luaList splits the bracketed list s starts with (open ... close) at its top-level commas.
func luaList(t *testing.T, name, s string, open, close byte) []string {
	require.Equal(t, open, s[0])
	var items []string
	depth, start := 0, 1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			end := strings.IndexByte(s[i+1:], c)
			require.GreaterOrEqual(t, end, 0, "lua/%s.lua: an unterminated string", name)
			i += end + 1
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
			if depth == 0 {
				require.Equal(t, close, c, "lua/%s.lua: unbalanced brackets", name)
				return append(items, strings.TrimSpace(s[start:i]))
			}
		case ',':
			if depth == 1 {
				items = append(items, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	require.Fail(t, "lua/"+name+".lua: an unclosed list")
	return nil
}

// luaString is the value of a Lua string literal.
func luaString(s string) (string, bool) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], true
	}
	return "", false
}

// Every event a script writes is one the decoder knows, with fields it knows, and the decoder knows
// no event that no script writes.
func TestScriptEventsAreKnown(t *testing.T) {
	known := map[string][]string{}
	for typ, et := range vocabulary {
		known[typ] = et.fields
	}
	written := map[string]bool{}
	n := 0
	for _, name := range lua.Names() {
		for _, ev := range scriptEvents(t, name, lua.Source(name)) {
			n++
			written[ev.typ] = true
			fields, ok := known[ev.typ]
			if !assert.True(t, ok, "lua/%s.lua writes event type %q, which the decoder does not know", name, ev.typ) {
				continue
			}
			for _, f := range ev.fields {
				assert.Contains(t, fields, f, "lua/%s.lua writes field %q of %s, which the decoder does not know", name, f, ev.typ)
			}
		}
	}
	for typ := range known {
		assert.True(t, written[typ], "event type %q: the decoder knows it and no script writes it", typ)
	}
	assert.Len(t, known, 28, "the event types")
	t.Logf("%d XADDs of %d event types", n, len(written))
}

// sampleFields is a value of every event field the decoder accepts, for the events of sampleConcert
// and sampleWallet.
var sampleFields = map[string]string{
	"at": "1", "res": "c0ncert00001sched0000001r00000000001", "user": "alice", "schedule": "sched0000001", "seat": "A-1",
	"price": "5", "expires": "9", "seq": "3", "payment": "p1", "sold": "2", "from": "0", "users": "ann,bob", "seqs": "3,4", "seens": "1,2", "n": "2",
	"digest": "d1", "seed": strings.Repeat("ab", 32), "base": "0", "cap": "1", "rate": "1", "paused": "0", "aps": "0",
	"code": "h1", "until": "9", "ord": "2", "seen": "1", "key": "k", "fp": "f", "ref": "p1", "created": "1", "id": "c1",
	"amount": "100", "balance": "100", "idem": "k", "kind": "charge", "refused": "BALANCE_LIMIT",
}

// sampleConcert and sampleWallet are the streams the sample events decode from: the concert of the
// sample reservation, and the wallet shard of the sample user.
var (
	sampleConcert = NewKeys("tr").ConcertEvents("c0ncert00001")
	sampleWallet  = NewKeys("tr").WalletEvents(WalletShard("alice"))
)

// Every XADD of the scripts writes what the decoder requires of its event: its fields, from sample
// values of exactly the fields it writes, decode from the stream the script's builder gives it, a
// concert's or a wallet shard's (a sale that left out its payment would be dead-lettered).
func TestScriptEventsDecode(t *testing.T) {
	keys := NewKeys("tr")
	concertStream, walletStream := keys.ConcertEvents("c1").Stream, keys.WalletEvents(WalletShard("fan-1")).Stream
	calls := map[string]call{}
	for _, c := range scriptCalls() {
		calls[c.script] = c.call
	}
	n := 0
	for _, name := range lua.Names() {
		src := lua.Source(name)
		named, _ := locals(src)
		for _, ev := range scriptEvents(t, name, src) {
			n++
			// The key the XADD writes to, as the script's builder builds it.
			stream := ""
			for slot, local := range named {
				if i, ok := strings.CutPrefix(slot, "KEYS["); ok && local == ev.stream {
					k, _ := strconv.Atoi(strings.TrimSuffix(i, "]"))
					require.Less(t, k-1, len(calls[name].keys), "lua/%s.lua: KEYS[%d] is not built", name, k)
					stream = calls[name].keys[k-1]
				}
			}
			if stream == "" && strings.Contains(src, "'@"+ev.stream+"'") {
				continue // a rule's XADD that the script answers itself (gate_apply's shard writes no event)
			}
			var from EventSource
			switch stream {
			case concertStream:
				from = sampleConcert
			case keys.LineEvents("c1", Layout{Shards: 4}, 3).Stream:
				from = keys.LineEvents("c1", Layout{Shards: 4}, 3)
			case keys.Concert("c1").Schedule("s1").Events(): // a seat slot's (seatslot.go)
				from = NewKeys("tr").SeatEvents("c0ncert00001", "sched0000001")
			case walletStream:
				from = sampleWallet
			default:
				assert.Fail(t, "lua/"+name+".lua: an XADD to neither event stream", "%s: %q", ev.typ, stream)
				continue
			}
			walletEvent := vocabulary[ev.typ].wallet
			assert.Equal(t, walletEvent, from.ConcertID == "",
				"lua/%s.lua writes %s to %s: a wallet event belongs on a wallet shard's stream, a concert event on a concert's", name, ev.typ, stream)
			fields := map[string]string{"type": ev.typ}
			for _, f := range ev.fields {
				v, ok := sampleFields[f]
				require.True(t, ok, "no sample value for field %q", f)
				fields[f] = v
			}
			var b ticketrush.RecordBatch
			assert.NoError(t, DecodeEvent(from, "1-0", fields, &b), "lua/%s.lua: %s from the fields its XADD writes", name, ev.typ)
		}
	}
	assert.Positive(t, n)
}

// The decoder decodes every listed event from its listed fields (it needs no other) on its own kind of
// stream, and refuses it on the other kind, and refuses a type that is not listed.
func TestDecoderKnowsTheListedEvents(t *testing.T) {
	for typ, et := range vocabulary {
		fields := map[string]string{"type": typ}
		for _, f := range et.fields {
			v, ok := sampleFields[f]
			require.True(t, ok, "no sample value for field %q", f)
			fields[f] = v
		}
		own, other := sampleConcert, sampleWallet
		if et.wallet {
			own, other = other, own
		}
		var b ticketrush.RecordBatch
		assert.NoError(t, DecodeEvent(own, "1-0", fields, &b), "%s from its listed fields", typ)
		var de *decodeError
		assert.ErrorAs(t, DecodeEvent(other, "1-0", fields, &b), &de, "%s on the other kind of stream", typ)
	}
	for _, src := range []EventSource{sampleConcert, sampleWallet} {
		var b ticketrush.RecordBatch
		var de *decodeError
		assert.ErrorAs(t, DecodeEvent(src, "1-0", map[string]string{"type": "queue.unknown", "at": "1"}, &b), &de)
	}
}

func TestDeadLetterStream(t *testing.T) {
	assert.Equal(t, "tr:{w:3}:dead", NewKeys("tr").WalletEvents(3).DeadLetters)
	assert.Equal(t, "tr:{c:abc}:dead", NewKeys("tr").ConcertEvents("abc").DeadLetters)
}

// The event streams are the 64 wallet shards', in order, then the given concerts'.
func TestEventStreams(t *testing.T) {
	keys := NewKeys("tr")
	streams := keys.EventStreams([]string{"a", "b"})
	require.Len(t, streams, WalletShards+2)
	assert.Equal(t, "tr:{w:0}:events", streams[0])
	assert.Equal(t, "tr:{w:63}:events", streams[WalletShards-1])
	assert.Equal(t, []string{"tr:{c:a}:events", "tr:{c:b}:events"}, streams[WalletShards:])
	assert.Equal(t, keys.WalletEvents(5), keys.EventSources(nil)[5])
}
