package redis

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// backend is one Redis the script suite runs on: miniredis always, the real Redis always too (the
// real one is what make test starts; a missing one fails the test).
type backend struct {
	name  string
	store func(t *testing.T) (*Store, rueidis.Client)
}

var backends = []backend{
	{"miniredis", func(t *testing.T) (*Store, rueidis.Client) {
		c, _ := dbtest.MiniRedis(t)
		return NewStore(c, "tr", prometheus.NewRegistry()), c
	}},
	{"redis", func(t *testing.T) (*Store, rueidis.Client) {
		c, prefix := dbtest.Redis(t)
		return NewStore(c, prefix, prometheus.NewRegistry()), c
	}},
}

func eachBackend(t *testing.T, fn func(t *testing.T, s *Store, c rueidis.Client)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s, c := b.store(t)
			fn(t, s, c)
		})
	}
}

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

func concert(id string, mod func(*ticketrush.QueueSettings)) ticketrush.Concert {
	q := ticketrush.DefaultQueueSettings()
	if mod != nil {
		mod(&q)
	}
	return ticketrush.Concert{ID: id, Title: "T", Venue: "V", Queue: q,
		Sections:  []ticketrush.Section{{Name: "VIP", Price: 100, Seats: 2}},
		Schedules: []ticketrush.Schedule{{ID: "s1", StartsAt: t0}}}
}

func mustLoad(t *testing.T, s *Store, c ticketrush.Concert) {
	t.Helper()
	loaded, err := s.LoadConcert(context.Background(), c, t0)
	require.NoError(t, err)
	require.True(t, loaded)
}

func eventTypes(t *testing.T, c rueidis.Client, stream string) []string {
	t.Helper()
	entries, err := c.Do(context.Background(), c.B().Xrange().Key(stream).Start("-").End("+").Build()).AsXRange()
	require.NoError(t, err)
	var types []string
	for _, e := range entries {
		types = append(types, e.FieldValues["type"])
	}
	return types
}

// TestOpenMasksPassword: a REDIS_URL that does not parse is not echoed with its password.
func TestOpenMasksPassword(t *testing.T) {
	_, err := Open(context.Background(), "redis://user:hunter2@host:bad/0")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "invalid port")
}

const (
	cid = "concert00001"
	sA  = "schedule000a"
	sB  = "schedule000b"
)

// sale loads a concert with two schedules and admits the given fans; it returns their claims.
func sale(t *testing.T, s *Store, mod func(*ticketrush.QueueSettings), fans ...string) map[string]ticketrush.QueueClaims {
	t.Helper()
	ctx := context.Background()
	c := concert(cid, mod)
	c.Schedules = []ticketrush.Schedule{{ID: sA, StartsAt: t0}, {ID: sB, StartsAt: t0}}
	mustLoad(t, s, c)
	out := map[string]ticketrush.QueueClaims{}
	for _, f := range fans {
		r, err := s.Line.Join(ctx, cid, f, t0)
		require.NoError(t, err)
		out[f] = ticketrush.QueueClaims{UserID: f, ConcertID: cid, Seq: r.Seq}
	}
	return out
}

func filter(types []string, prefixes ...string) []string {
	var out []string
	for _, t := range types {
		for _, p := range prefixes {
			if len(t) >= len(p) && t[:len(p)] == p {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// decodeStream decodes every event of stream, as the write-behind does, into b.
func decodeStream(t *testing.T, c rueidis.Client, stream string, src EventSource, b *ticketrush.RecordBatch) {
	t.Helper()
	entries, err := c.Do(context.Background(), c.B().Xrange().Key(stream).Start("-").End("+").Build()).AsXRange()
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, DecodeEvent(src, e.ID, e.FieldValues, b), "%s: %v", e.ID, e.FieldValues)
	}
}
