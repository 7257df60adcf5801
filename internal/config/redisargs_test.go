package config

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisServerArgsEverywhere: every Redis the project starts outside Go (make run's, the local
// cluster's, the compose file's) passes each of RedisServerArgs' settings with its value, so that what
// the benchmarks measure is how it runs.
func TestRedisServerArgsEverywhere(t *testing.T) {
	require.Zero(t, len(RedisServerArgs)%2, "flag and value pairs")
	for _, f := range []string{"scripts/services.sh", "scripts/cluster.sh", "docker-compose.yml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		require.NoError(t, err)
		for i := 0; i < len(RedisServerArgs); i += 2 {
			flag, value := RedisServerArgs[i], RedisServerArgs[i+1]
			// a shell word (--flag value) or a compose list ("--flag", "value")
			re := regexp.MustCompile(regexp.QuoteMeta(flag) + `"?,?\s+"?` + regexp.QuoteMeta(value) + `\b`)
			assert.Regexp(t, re, string(b), "%s: %s %s", f, flag, value)
		}
	}
}
