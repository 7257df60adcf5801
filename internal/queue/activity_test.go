package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// activityStore records the wake-ups written and answers Awake with what the test says.
type activityStore struct {
	wakes  [][]string
	awake  map[string]time.Time
	failed error // the next Wake fails with it
}

func (s *activityStore) Wake(_ context.Context, ids []string, _ time.Time) error {
	if err := s.failed; err != nil {
		s.failed = nil
		return err
	}
	if len(ids) > 0 {
		s.wakes = append(s.wakes, ids)
	}
	return nil
}

func (s *activityStore) Awake(context.Context, time.Time) (map[string]time.Time, error) {
	return s.awake, nil
}

func (s *activityStore) ForgetAsleep(context.Context, time.Time) error { return nil }

// TestActivityWakesAtMostOnceASecond: a join writes its concert's wake-up at once, but one instance
// writes a concert at most once a second however many fans join or poll; polls go out together with
// the next flush; a wake-up Redis refused goes out with the next flush.
func TestActivityWakesAtMostOnceASecond(t *testing.T) {
	ctx := context.Background()
	now := t0
	st := &activityStore{}
	a := NewActivity(st, func() time.Time { return now }, nil)

	require.NoError(t, a.Wake(ctx, "c1"))
	require.NoError(t, a.Wake(ctx, "c1"))
	a.Saw("c1")
	a.Saw("c2")
	a.Saw("c3")
	require.NoError(t, a.Flush(ctx))
	assert.Equal(t, [][]string{{"c1"}}, st.wakes[:1], "the join wrote c1 at once, the second not")
	require.Len(t, st.wakes, 2)
	assert.ElementsMatch(t, []string{"c2", "c3"}, st.wakes[1], "the polls of c2 and c3 in one command; c1 was written this second")

	now = now.Add(time.Second)
	st.failed = errors.New("redis down")
	a.Touch(ctx, "c1")
	require.NoError(t, a.Flush(ctx))
	assert.Equal(t, []string{"c1"}, st.wakes[2], "the refused wake-up goes out with the next flush")
}

// TestActivityAwakeWindow: a concert is awake for awakeFor after its last wake-up or busy round, and a
// closed sale's wake-ups do not count (its busy rounds, for its last holds, still do).
func TestActivityAwakeWindow(t *testing.T) {
	ctx := context.Background()
	now := t0
	st := &activityStore{awake: map[string]time.Time{"c1": t0, "closed": t0}}
	a := NewActivity(st, func() time.Time { return now }, func(id string, _ time.Time) bool { return id == "closed" })

	require.NoError(t, a.Poll(ctx))
	assert.Equal(t, []string{"c1"}, a.IDs())
	now = t0.Add(awakeFor - time.Millisecond)
	assert.True(t, a.IsAwake("c1"))
	a.Busy("closed")
	a.LineBusy("c1")
	now = t0.Add(awakeFor + time.Millisecond)
	assert.Equal(t, []string{"c1", "closed"}, a.IDs(), "kept awake by their rounds")
	now = now.Add(awakeFor)
	assert.Empty(t, a.IDs())
	assert.Equal(t, []string{"c1", "closed"}, a.Recent(StreamDrain), "their streams are read a while longer")
	now = now.Add(StreamDrain)
	assert.Empty(t, a.Recent(StreamDrain))

	a.LineBusy("closed")
	assert.Empty(t, a.IDs(), "a closed sale's line keeps nothing awake")
}

// TestActivitySettle: a start wakes every concert for settleFor, so that the first rounds find what an
// earlier process left (a concert with holds and nobody polling); then only the busy ones stay.
func TestActivitySettle(t *testing.T) {
	now := t0
	a := NewActivity(&activityStore{}, func() time.Time { return now }, nil)
	a.Settle([]string{"c1", "c2"})
	assert.Equal(t, []string{"c1", "c2"}, a.IDs(), "every concert gets a first round")
	a.Busy("c2") // its round found a hold open
	now = now.Add(settleFor + time.Millisecond)
	assert.Equal(t, []string{"c2"}, a.IDs())
}

// TestActivitySeatsWakeEveryProcess: a hold, a cancel or a payment (SeatsChanged) wakes its concert for
// every process at once, and a round that found work (Busy) with the process' next Poll, each at most
// once a second; seat activity wakes a closed sale, its line does not.
func TestActivitySeatsWakeEveryProcess(t *testing.T) {
	ctx := context.Background()
	now := t0
	st := &activityStore{}
	closed := func(id string, _ time.Time) bool { return id == "closed" }
	api := NewActivity(st, func() time.Time { return now }, closed)

	api.SeatsChanged(ctx, "closed")
	api.SeatsChanged(ctx, "closed")
	assert.Equal(t, [][]string{{seatsMember("closed")}}, st.wakes, "written at once, once a second")
	api.Busy("c1")
	api.Busy("c1")
	api.LineBusy("c2")
	api.LineBusy("closed")
	require.NoError(t, api.Poll(ctx))
	require.Len(t, st.wakes, 2)
	assert.ElementsMatch(t, []string{seatsMember("c1"), "c2"}, st.wakes[1], "the rounds' work in one command before the read")

	// Another process reads them: the closed sale's seats wake it there, its line would not.
	st.awake = map[string]time.Time{seatsMember("closed"): now, "c2": now, "closed": now}
	other := NewActivity(st, func() time.Time { return now }, closed)
	require.NoError(t, other.Poll(ctx))
	assert.Equal(t, []string{"c2", "closed"}, other.IDs())
	st.awake = map[string]time.Time{"closed": now}
	now = now.Add(awakeFor + time.Millisecond)
	require.NoError(t, other.Poll(ctx))
	assert.Empty(t, other.IDs(), "a closed sale's line wakes nothing")
}

// TestActivityWokenSignalsWakeUps: the paced loops' channel closes when this process writes a wake-up
// (a join here) and when a Poll finds a concert awake that was asleep here, not when nothing changed.
func TestActivityWokenSignalsWakeUps(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	st := &activityStore{}
	a := NewActivity(st, func() time.Time { return now }, nil)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	woken := a.Woken()
	require.NoError(t, a.Poll(ctx))
	assert.False(t, closed(woken), "nothing awake, nothing woken")
	assert.False(t, a.AnyAwake())

	a.Touch(ctx, "c1") // a join on this instance
	assert.True(t, closed(woken), "a wake-up written here")
	woken = a.Woken()
	assert.False(t, closed(woken), "a new channel for the next wake-up")
	st.awake = map[string]time.Time{"c1": now} // what the live zset now holds
	require.NoError(t, a.Poll(ctx))
	assert.True(t, closed(woken), "the Poll finds c1 awake")
	assert.True(t, a.AnyAwake())

	woken = a.Woken()
	require.NoError(t, a.Poll(ctx))
	assert.False(t, closed(woken), "c1 awake already: no news")
	now = now.Add(awakeFor + time.Second)
	assert.False(t, a.AnyAwake(), "asleep after awakeFor")
}
