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
