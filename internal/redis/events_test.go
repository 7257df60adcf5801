package redis

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// The on-sale's events decode to their rows (and each to one home row of its own id), or are refused
// as malformed.
func TestDecodeOnSale(t *testing.T) {
	const concert = "c0ncert00001"
	src := EventSource{Stream: "tr:{c:" + concert + "}:events", ConcertID: concert}
	seed := strings.Repeat("ab", 32)
	ev := ticketrush.EventID{Stream: src.Stream, Ms: 1, Seq: 0} // the entry id the cases decode under, 1-0
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
			func(t *testing.T, b ticketrush.RecordBatch) {
				require.Len(t, b.QueueMarks, 1)
				assert.EqualValues(t, 3, b.QueueMarks[0].MaxSeq, "the seal raises the arrival mark past every place")
			}},
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
		{"abandoned", csrc, map[string]string{"type": "queue.abandon", "user": "u", "seq": "4", "seen": "1", "at": "3"}, ""},
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
