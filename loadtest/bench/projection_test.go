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

// TestPrintSplit: the projection split where the work is, from the largest cluster measured: the
// concert's slot keeps its part on one master whatever N, the shards spread; then the same at the one
// Redis's floor. The slot's part is its master's time less the shards beside it.
func TestPrintSplit(t *testing.T) {
	var out strings.Builder
	printSplit(&out, []mastersRow{
		{masters: 1, join: 20, floor: 1},
		{masters: 3, join: 10, joinSlot: 4, joinShards: 30, floor: 2},
		{masters: 6, join: 7.5, joinSlot: 0.8, joinShards: 63.2, floor: 2, calls: 0.25},
		{masters: 12, na: "no 24 free ports"},
	}, 1)
	s := out.String()
	assert.Contains(t, s, "split, from 6 masters (the opening's joins from 512 goroutines, 0.25 script calls a join): 0.80 µs a join on the concert's slot, 63.20 in the line's shards")
	assert.Contains(t, s, "32: 500,000;", "64/32 = 2 µs a master")
	assert.Contains(t, s, "1,000,000 a second at 64 masters", "64/64 = 1 µs")
	assert.Contains(t, s, "at one Redis's floor (1.00 against 2.00 µs): 0.40 µs a join on the concert's slot, 31.60 in the line's shards")
	assert.Contains(t, s, "1,000,000 a second at 32 masters", "32/32 = 1 µs")
	assert.Equal(t, 0, splitMastersFor(1.5, 10, 1e6), "1.5 µs on one master whatever N")

	// 4 shards, one beside the concert's slot: 200 µs elsewhere is 66.7 a shard, so the slot's own is
	// 100 - 66.7 of its master's 100.
	c := concertCapacity{masters: 3, concertMaster: 1, shards: 4, shardsBeside: 1, opening: phaseCost{ops: 10, usec: []float64{100, 100, 100}}}
	assert.InDelta(t, 3.333, joinSlot(c), 0.001)
	c.shardsBeside = 4
	assert.Zero(t, joinSlot(c), "every shard beside it: one Redis")
}
