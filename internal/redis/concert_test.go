package redis

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

func TestLoadConcertOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store, c rueidis.Client) {
		ctx := context.Background()
		mustLoad(t, s, concert("c1", nil))
		again, err := s.LoadConcert(ctx, concert("c1", func(q *ticketrush.QueueSettings) { q.ActiveCapacity = 5 }), t0)
		require.NoError(t, err)
		assert.False(t, again, "a loaded concert is left as it is")
		capacity, err := c.Do(ctx, c.B().Hget().Key(s.keys.Concert("c1").Cfg()).Field("cap").Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "1000", capacity)
	})
}
