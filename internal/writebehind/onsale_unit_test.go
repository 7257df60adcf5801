package writebehind

import (
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
	src := &source{stream: "tr:{c:" + concert + "}:events", concertID: concert}
	seed := strings.Repeat("ab", 32)
	ev := ticketrush.EventID{Stream: src.stream, Ms: 1, Seq: 0} // the entry id the cases decode under, 1-0
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
			err := decode(entry{src: src, id: "1-0", fields: tt.fields}, &b)
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
