package catalog

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// record is the Postgres catalog as the test says it is: it keeps what it is given, answers ErrExists
// for a taken id, and holds a create until release is closed when release is set.
type record struct {
	mu       sync.Mutex
	concerts []ticketrush.Concert
	release  chan struct{}
	pingErr  error
	creates  int
	version  int64 // moves with each create
	reads    int   // calls of Concerts
}

func (r *record) CatalogVersion(context.Context) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version, nil
}

func (r *record) CreateConcert(ctx context.Context, c ticketrush.Concert) error {
	r.mu.Lock()
	r.creates++
	release := r.release
	r.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.concerts {
		if have.ID == c.ID {
			return ticketrush.ErrExists
		}
	}
	r.concerts = append(r.concerts, c)
	r.version++
	return nil
}

func (r *record) Ping(context.Context) error { return r.pingErr }

func (r *record) Concerts(context.Context) ([]ticketrush.Concert, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	return append([]ticketrush.Concert(nil), r.concerts...), nil
}

func (r *record) UpdateQueueSettings(context.Context, string, ticketrush.QueuePatch) (ticketrush.QueueSettings, error) {
	return ticketrush.QueueSettings{}, errors.New("not in this test")
}

func (r *record) AddAccessCodes(context.Context, string, []string) error {
	return errors.New("not in this test")
}

type live struct{ Live }

func (live) LoadConcert(context.Context, ticketrush.Concert, time.Time) (bool, error) {
	return true, nil
}

func (live) DefaultLineShards(context.Context) (int, error) { return 1, nil }

func (live) PlaceSeats(context.Context, ticketrush.Concert) (string, error) { return "", nil }

func concert(title string) ticketrush.Concert {
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	return ticketrush.Concert{Title: title, Venue: "KSPO Dome", Queue: ticketrush.DefaultQueueSettings(),
		Schedules: []ticketrush.Schedule{{StartsAt: at.Add(time.Hour)}, {StartsAt: at}},
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 10}}}
}

func newService(r *record) *Service {
	return NewService(r, live{}, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestCreateOutlivesItsRequest: a create slower than its request answers "not done" with the ids it
// will have, goes on, and appears; a retry with the same key answers with that concert (the same ids,
// no second copy); the same key with another concert is a conflict.
func TestCreateOutlivesItsRequest(t *testing.T) {
	r := &record{release: make(chan struct{})}
	s := newService(r)
	t.Cleanup(s.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	first, done, err := s.Create(ctx, concert("IU"), "key-1")
	require.NoError(t, err)
	assert.False(t, done, "the write outlives the request")
	require.NotEmpty(t, first.ID)
	_, ok := s.Concert(first.ID)
	assert.False(t, ok, "not there before the write commits")

	close(r.release)
	require.Eventually(t, func() bool { _, ok := s.Concert(first.ID); return ok }, 10*time.Second, 5*time.Millisecond)

	again, done, err := s.Create(context.Background(), concert("IU"), "key-1")
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, first, again, "a retry answers with the concert the first create made")
	all, err := r.Concerts(context.Background())
	require.NoError(t, err)
	assert.Len(t, all, 1, "one concert however often the create is retried")

	_, _, err = s.Create(context.Background(), concert("Another"), "key-1")
	assert.ErrorIs(t, err, ticketrush.ErrIdempotencyConflict)

	a, _, err := s.Create(context.Background(), concert("IU"), "")
	require.NoError(t, err)
	b, _, err := s.Create(context.Background(), concert("IU"), "")
	require.NoError(t, err)
	assert.NotEqual(t, a.ID, b.ID, "without a key, two creates are two concerts")
}

// TestCreatePostgresDown: a create while Postgres does not answer is ErrUnavailable (a 503), and no
// write is started.
func TestCreatePostgresDown(t *testing.T) {
	r := &record{pingErr: errors.New("dial tcp: connection refused")}
	s := newService(r)
	t.Cleanup(s.Stop)
	_, _, err := s.Create(context.Background(), concert("IU"), "")
	assert.ErrorIs(t, err, ticketrush.ErrUnavailable)
	assert.Zero(t, r.creates)
}

// TestRefreshReadsTheCatalogOnlyWhenItChanged: a refresh reads the catalog's version and reads the
// concerts only when it moved (another instance created one): an idle catalog costs one small query.
func TestRefreshReadsTheCatalogOnlyWhenItChanged(t *testing.T) {
	ctx := context.Background()
	r := &record{}
	s := newService(r)
	require.NoError(t, s.Refresh(ctx))
	require.NoError(t, s.Refresh(ctx))
	require.NoError(t, s.Refresh(ctx))
	assert.Equal(t, 1, r.reads, "read once, then unchanged")

	c := concert("Elsewhere")
	c.ID = "c0ncert00001"
	require.NoError(t, r.CreateConcert(ctx, c)) // another instance's create
	require.NoError(t, s.Refresh(ctx))
	assert.Equal(t, 2, r.reads)
	_, ok := s.Concert(c.ID)
	assert.True(t, ok, "the new concert is known")
	require.NoError(t, s.Refresh(ctx))
	assert.Equal(t, 2, r.reads)
}
