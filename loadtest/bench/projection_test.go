package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFitMasters: figures that follow a + c/N give back a and c, and the masters a rate needs.
func TestFitMasters(t *testing.T) {
	b := func(n float64) float64 { return 0.5 + 24/n }
	a, c, ok := fitMasters([][2]float64{{1, b(1)}, {3, b(3)}, {6, b(6)}})
	require.True(t, ok)
	assert.InDelta(t, 0.5, a, 1e-9)
	assert.InDelta(t, 24, c, 1e-9)
	assert.Equal(t, 48, mastersFor(a, c, 1e6), "0.5 + 24/48 = 1 µs: a million a second")
	assert.Equal(t, 0, mastersFor(2, c, 1e6), "2 µs on one master whatever N: never a million")

	a, c, ok = fitMasters([][2]float64{{1, 20}, {3, 7}, {6, 3}})
	require.True(t, ok)
	assert.Zero(t, a, "a fit below zero: all of it spreads")
	assert.Greater(t, c, 0.0)
	a, c, ok = fitMasters([][2]float64{{3, 10}, {6, 30}, {12, 50}})
	require.True(t, ok)
	assert.Zero(t, c, "more per join on more masters: nothing spreads")
	assert.InDelta(t, 30, a, 1e-9, "the mean")
	_, _, ok = fitMasters([][2]float64{{1, 20}})
	assert.False(t, ok, "one size fits nothing")
}

// TestPrintMasters: each size's row, the floor, and the projection from the sizes measured; a size
// without figures says why and is left out of the fit.
func TestPrintMasters(t *testing.T) {
	var out strings.Builder
	printMasters(&out, []mastersRow{
		{masters: 1, join: 20, hold: 25, cancel: 12.5, pay: 100, joinShare: 1, holdShare: 1, cancelShare: 1, payShare: 1},
		{masters: 3, join: 10, hold: 10, pay: 40, joinShare: 0.5, holdShare: 0.4, payShare: 0.4},
		{masters: 6, join: 7.5, hold: 8, pay: 30, joinShare: 0.3, holdShare: 0.3, payShare: 0.3},
		{masters: 12, na: "no 24 free ports"},
	}, 1.25)
	s := out.String()
	assert.Contains(t, s, "  1        20.0 (100%)      25.0 (100%)      12.5 (100%)      100.0 (100%)         50,000     40,000      10,000")
	assert.Contains(t, s, "  12       n/a: no 24 free ports")
	assert.Contains(t, s, "floor: 1.25 µs per EVALSHA of 'return 1'")
	assert.Contains(t, s, "≈ 5.00 + 15.00/N (fit over the 2 clusters", "the clusters alone: 10 = 5 + 15/3, 7.5 = 5 + 15/6")
	assert.Contains(t, s, "1,000,000 a second at no size: the 5.00 µs that stay on one master allow 200,000 at most")
}
