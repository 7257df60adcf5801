package dbtest

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/config"
)

// TestPrivateRedisRunsWithTheSettings: the tests' and benchmarks' private redis-server runs with the
// settings the project runs Redis with, so that a benchmark measures the scripts as they run.
func TestPrivateRedisRunsWithTheSettings(t *testing.T) {
	c := Client(t, PrivateRedis(t))
	for i := 0; i+1 < len(config.RedisServerArgs); i += 2 {
		name := strings.TrimPrefix(config.RedisServerArgs[i], "--")
		got, err := c.Do(context.Background(), c.B().ConfigGet().Parameter(name).Build()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, config.RedisServerArgs[i+1], got[name], name)
	}
}
