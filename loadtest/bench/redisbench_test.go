package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/lua"
)

// TestLoadScriptIsWhatTheServiceSends: the redis-benchmark row captures the service's EVALSHA of the
// hold script by its SHA, so the bench must load the text the service loads (lua.Source, its includes
// put in place), not the file as it is on disk.
func TestLoadScriptIsWhatTheServiceSends(t *testing.T) {
	c, _ := dbtest.MiniRedis(t)
	sha, err := loadScript(context.Background(), c, holdScript)
	require.NoError(t, err)
	assert.Equal(t, sha1Hex(lua.Source(holdScript)), sha)
	raw, err := os.ReadFile("../../lua/" + holdScript + ".lua")
	require.NoError(t, err)
	assert.NotEqual(t, sha1Hex(string(raw)), sha, "the file has includes: its own SHA is not the one sent")
}
