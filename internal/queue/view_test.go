package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

// snapshot is a found concert's snapshot: the line is (head, tail] without the leaves, which get
// ordinals from firstOrdinal on.
func snapshot(head, tail, firstOrdinal uint64, leaves ...uint64) ticketrush.QueueSnapshot {
	s := ticketrush.QueueSnapshot{Found: true, Head: head, Tail: tail, ActiveCapacity: 10, AdmitPerSecond: 5}
	for i, seq := range leaves {
		s.Leaves = append(s.Leaves, ticketrush.Leave{Seq: seq, Ordinal: firstOrdinal + uint64(i)})
	}
	return s
}

func newView(s ticketrush.QueueSnapshot) *view {
	v := &view{}
	v.apply(s, t0)
	return v
}

// position looks seq up and requires the view to place it as WAITING.
func position(t *testing.T, v *view, seq uint64) int64 {
	t.Helper()
	st, pos, ok := v.lookup(seq)
	require.True(t, ok, "seq %d", seq)
	require.Equal(t, ticketrush.StatusWaiting, st, "seq %d", seq)
	return pos
}

func TestViewPositionsIncreaseWithSeq(t *testing.T) {
	v := newView(snapshot(100, 200, 1, 105, 150, 151))

	tests := []struct {
		give uint64
		want int64
	}{
		{101, 1}, {104, 4}, {106, 5}, {149, 48}, {152, 49}, {200, 97},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, position(t, v, tt.give), "seq %d", tt.give)
	}

	// Over the whole line: every waiting seq is placed, strictly after every earlier one, and the
	// positions are 1..N without gaps.
	var last int64
	for seq := uint64(101); seq <= 200; seq++ {
		st, pos, ok := v.lookup(seq)
		require.True(t, ok, "seq %d", seq)
		if seq == 105 || seq == 150 || seq == 151 {
			assert.Equal(t, ticketrush.StatusExpired, st, "a leaver's token")
			assert.Zero(t, pos)
			continue
		}
		require.Equal(t, ticketrush.StatusWaiting, st)
		assert.Equal(t, last+1, pos, "seq %d", seq)
		last = pos
	}
	assert.EqualValues(t, 97, last)
}

func TestViewLeavesCloseTheGap(t *testing.T) {
	v := newView(snapshot(0, 10, 0))
	require.EqualValues(t, 10, position(t, v, 10))
	require.EqualValues(t, 2, position(t, v, 2))

	// A leave read from a snapshot.
	v.apply(snapshot(0, 10, 1, 3), t0.Add(time.Second))
	assert.EqualValues(t, 9, position(t, v, 10))
	assert.EqualValues(t, 2, position(t, v, 2), "a leave behind a fan does not move them")
	assert.EqualValues(t, 1, v.lastLeave)

	// A leave this instance made: its own next poll sees the gap closed at once.
	v.leftLine(5)
	assert.EqualValues(t, 8, position(t, v, 10))
	st, _, ok := v.lookup(5)
	assert.True(t, ok)
	assert.Equal(t, ticketrush.StatusExpired, st)

	// The same leave, read back from the next snapshot, is not counted twice.
	v.apply(snapshot(0, 10, 2, 5), t0.Add(2*time.Second))
	assert.EqualValues(t, 8, position(t, v, 10))
	assert.EqualValues(t, 2, v.lastLeave)
	assert.Equal(t, []uint64{3, 5}, v.left)

	// Leaves arrive in ordinal order, not seq order.
	v.apply(snapshot(0, 10, 3, 9, 4), t0.Add(3*time.Second))
	assert.Equal(t, []uint64{3, 4, 5, 9}, v.left)
	assert.EqualValues(t, 6, position(t, v, 10))
	assert.EqualValues(t, 5, position(t, v, 8))
	assert.EqualValues(t, 4, v.lastLeave)
}

func TestViewTrimsBehindHead(t *testing.T) {
	v := newView(snapshot(0, 20, 1, 3, 5, 8))
	require.Equal(t, []uint64{3, 5, 8}, v.left)

	// The head passes 3 and 5: they leave the view's leave list; 8 still counts.
	v.apply(snapshot(5, 20, 4), t0.Add(time.Second))
	assert.Equal(t, []uint64{8}, v.left)
	assert.EqualValues(t, 1, position(t, v, 6))
	assert.EqualValues(t, 3, position(t, v, 9), "9 - head 5 - one leave")

	// A leave behind the head is not kept.
	v.leftLine(4)
	v.apply(snapshot(5, 20, 4, 2), t0.Add(2*time.Second))
	assert.Equal(t, []uint64{8}, v.left)

	// A fan admitted at their join (nobody waited) moves the head to their seq.
	v.arrived(ticketrush.JoinResult{Status: ticketrush.StatusActive, Seq: 21, Created: true})
	assert.EqualValues(t, 21, v.head)
	assert.EqualValues(t, 21, v.tail)
	assert.Empty(t, v.left)

	// A rejoin that finds an older ACTIVE token moves nothing.
	v.arrived(ticketrush.JoinResult{Status: ticketrush.StatusActive, Seq: 30, Created: false})
	assert.EqualValues(t, 21, v.head)

	// Head and tail only grow: a snapshot older than a local update does not move them back.
	v.apply(snapshot(9, 20, 5), t0.Add(3*time.Second))
	assert.EqualValues(t, 21, v.head)
	assert.EqualValues(t, 30, v.tail)
}

func TestViewLookupRefuses(t *testing.T) {
	v := newView(snapshot(10, 20, 1, 15))
	tests := []struct {
		name   string
		give   uint64
		wantOK bool
	}{
		{"far behind head", 1, false},
		{"at head", 10, false},
		{"first in line", 11, true},
		{"a leaver", 15, true},
		{"tail", 20, true},
		{"beyond tail", 21, false},
		{"far beyond tail", 1_000_000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, pos, ok := v.lookup(tt.give)
			assert.Equal(t, tt.wantOK, ok)
			if !ok {
				assert.Empty(t, st)
				assert.Zero(t, pos)
			}
		})
	}

	// A join this instance made extends the tail, so its own token is placed at once.
	v.arrived(ticketrush.JoinResult{Status: ticketrush.StatusWaiting, Seq: 21, Created: true})
	assert.EqualValues(t, 10, position(t, v, 21))

	// A concert Redis does not have: the view answers nothing.
	empty := newView(ticketrush.QueueSnapshot{})
	_, _, ok := empty.lookup(1)
	assert.False(t, ok)
	_, _, ok = (&view{}).lookup(1)
	assert.False(t, ok, "a view before its first snapshot")
}

func TestPacing(t *testing.T) {
	tests := []struct {
		name          string
		position      int64
		rate          float64
		wantWait      time.Duration
		wantPollAfter time.Duration
	}{
		{"next in line", 1, 50, time.Second, time.Second},
		{"front", 10, 1, 10 * time.Second, time.Second},
		{"near", 50, 5, 10 * time.Second, time.Second},
		{"a minute away", 600, 10, 60 * time.Second, 6 * time.Second},
		{"rounds up", 61, 1, 61 * time.Second, 7 * time.Second},
		{"five minutes away", 300, 1, 300 * time.Second, 30 * time.Second},
		{"an hour away", 3600, 1, 3600 * time.Second, 30 * time.Second},
		{"fast rate", 1000, 1000, time.Second, time.Second},
		{"slow measured rate", 15, 0.5, 30 * time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, poll := pacing(tt.position, tt.rate)
			assert.Equal(t, tt.wantWait, wait)
			assert.Equal(t, tt.wantPollAfter, poll)
		})
	}

	// Bounds over a sweep: poll after 1..30 s, never sooner for a fan further back.
	for _, rate := range []float64{0.5, 1, 7, 50, 1000} {
		prev := time.Duration(0)
		for pos := int64(1); pos <= 1_000_000; pos = pos*3/2 + 1 {
			_, poll := pacing(pos, rate)
			require.GreaterOrEqual(t, poll, time.Second, "pos %d rate %v", pos, rate)
			require.LessOrEqual(t, poll, 30*time.Second, "pos %d rate %v", pos, rate)
			require.GreaterOrEqual(t, poll, prev, "pos %d rate %v", pos, rate)
			prev = poll
		}
	}
}

func TestViewRate(t *testing.T) {
	at := func(d time.Duration, admitted uint64, configured int) (ticketrush.QueueSnapshot, time.Time) {
		s := snapshot(0, 0, 0)
		s.Admitted, s.AdmitPerSecond = admitted, configured
		return s, t0.Add(d)
	}
	apply := func(v *view, d time.Duration, admitted uint64, configured int) {
		s, when := at(d, admitted, configured)
		v.apply(s, when)
	}

	t.Run("no measurement yet: the configured rate", func(t *testing.T) {
		v := &view{}
		apply(v, 0, 0, 40)
		assert.InDelta(t, 40, v.rate(), 1e-9)
	})
	t.Run("a configured rate below 1 counts as 1", func(t *testing.T) {
		v := &view{}
		apply(v, 0, 0, 0)
		assert.InDelta(t, 1, v.rate(), 1e-9)
	})
	t.Run("under 5 s of samples: the configured rate", func(t *testing.T) {
		v := &view{}
		apply(v, 0, 0, 40)
		apply(v, 4*time.Second, 400, 40)
		assert.InDelta(t, 40, v.rate(), 1e-9)
	})
	t.Run("measured over the samples", func(t *testing.T) {
		v := &view{}
		apply(v, 0, 100, 40)
		apply(v, 5*time.Second, 125, 40)
		apply(v, 10*time.Second, 200, 40)
		assert.InDelta(t, 10, v.rate(), 1e-9, "100 admitted over 10 s")
	})
	t.Run("nobody admitted (paused): the configured rate", func(t *testing.T) {
		v := &view{}
		apply(v, 0, 100, 40)
		apply(v, 10*time.Second, 100, 40)
		assert.InDelta(t, 40, v.rate(), 1e-9)
	})
	t.Run("only the last 30 s count", func(t *testing.T) {
		v := &view{}
		apply(v, 0, 0, 40)
		apply(v, 20*time.Second, 200, 40)  // 10/s
		apply(v, 40*time.Second, 1000, 40) // 40/s since the last sample
		assert.Len(t, v.samples, 2)
		assert.InDelta(t, 40, v.rate(), 1e-9)
		apply(v, 45*time.Second, 1100, 40)
		assert.InDelta(t, 900.0/25, v.rate(), 1e-9, "from 20 s to 45 s")
	})
}

func TestViewStartsAfreshWhenRedisLostTheLine(t *testing.T) {
	before := snapshot(500, 1000, 1, 700)
	before.Admitted = 500
	v := newView(before)
	assert.Equal(t, int64(1000-500-1), position(t, v, 1000))
	// Redis emptied and restored: the line starts again from seq 1, with a leave of ordinal 1.
	v.apply(snapshot(0, 3, 1, 2), t0.Add(time.Second))
	assert.Equal(t, int64(1), position(t, v, 1))
	assert.Equal(t, int64(2), position(t, v, 3), "seq 2 left: the new leave log is read from its start")
	_, _, ok := v.lookup(700)
	assert.False(t, ok, "arrivals of the old line are beyond the new tail: asked of Redis")
}
