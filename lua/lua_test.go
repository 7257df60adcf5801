package lua

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSourceExpandsIncludes: a script that includes lib/rate_limit.lua is sent with the function in
// place of the include line, and no script is sent with an include line left in it.
func TestSourceExpandsIncludes(t *testing.T) {
	lib, err := files.ReadFile("lib/rate_limit.lua")
	require.NoError(t, err)
	src := Source("seat_hold")
	assert.True(t, strings.Contains(src, string(lib)), "seat_hold is sent with lib/rate_limit.lua in it")
	assert.Less(t, strings.Index(src, "local function limited("), strings.Index(src, "return limited(rl"),
		"defined where the include was, before its use")
	for _, name := range Names() {
		assert.False(t, strings.Contains(Source(name), include), "%s is sent with an include line left in it", name)
	}
	assert.NotContains(t, Names(), "lib", "lib/ holds includes, not scripts")
}

func TestSourcePanicsOnAnUnknownInclude(t *testing.T) {
	fsys := fstest.MapFS{"x_y.lua": {Data: []byte("--#include nothing\nreturn 1\n")},
		"a_b.lua":     {Data: []byte("local x = 1\n--#include two\nreturn two(x)\n")},
		"lib/two.lua": {Data: []byte("local function two(x)\n  return 2 * x\nend\n")}}
	assert.PanicsWithValue(t, "lua: x_y includes nothing, which lib/ does not have", func() { source(fsys, "x_y") })
	assert.Equal(t, "local x = 1\nlocal function two(x)\n  return 2 * x\nend\nreturn two(x)\n", source(fsys, "a_b"))
}

// TestSourceExpandsNestedIncludesOnce: a lib may include another, and a lib included twice (by the
// script and by a lib it includes) is put in once, at its first include.
func TestSourceExpandsNestedIncludesOnce(t *testing.T) {
	fsys := fstest.MapFS{
		"a_b.lua":      {Data: []byte("--#include two\n--#include four\nreturn four(1)\n")},
		"lib/two.lua":  {Data: []byte("local function two(x) return 2 * x end\n")},
		"lib/four.lua": {Data: []byte("--#include two\nlocal function four(x) return two(two(x)) end\n")},
		"c_d.lua":      {Data: []byte("--#include four\nreturn four(1)\n")},
		"lib/loop.lua": {Data: []byte("--#include loop\nlocal y = 1\n")},
		"e_f.lua":      {Data: []byte("--#include loop\nreturn y\n")},
	}
	assert.Equal(t, "local function two(x) return 2 * x end\nlocal function four(x) return two(two(x)) end\nreturn four(1)\n",
		source(fsys, "a_b"), "two once, before four")
	assert.Equal(t, "local function two(x) return 2 * x end\nlocal function four(x) return two(two(x)) end\nreturn four(1)\n",
		source(fsys, "c_d"), "four brings two with it")
	assert.Equal(t, "local y = 1\nreturn y\n", source(fsys, "e_f"), "a lib that includes itself ends")
}
