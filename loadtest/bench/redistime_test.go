package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRedisTimeSection(t *testing.T) {
	cost := func(us float64) phaseCost { return phaseCost{ops: 100, scripts: 100, usec: []float64{100 * us}} }
	run := func(join float64) concertCapacity {
		return concertCapacity{masters: 1, floor: cost(1), hset: cost(0.5), join: cost(join), admit: cost(6), hold: cost(13),
			cancel: cost(18), charge: cost(16), reserve: cost(9), claim: cost(21), debit: cost(12), complete: cost(26), finish: cost(10)}
	}
	tally := &callTally{micros: map[string][]int64{
		"queue_join":     {20, 16, 18}, // median 18: ≤ 18.3
		"seat_hold":      {30, 20},     // median 25: over 19.3
		"hold_cancel":    {13},
		"points_charge":  {21},
		"queue_snapshot": {16, 16},
		labelFloorEval:   {2, 2, 3},
		labelFloorHSET:   {1, 2, 2},
	}, tickUs: 5000, ticks: 14}
	b := &bench{cfg: config{capacityFans: 3000}, na: map[string]string{},
		storm:     &stormResult{fans: 1000, took: 2 * time.Second, tally: tally, admitted: 250, atOnce: 10, failed: map[string]int64{"hold": 2}, firstErr: errors.New("409")},
		pipelined: []concertCapacity{run(9), run(11), run(30)}}
	var buf bytes.Buffer
	b.printRedisTime(&buf, true)
	out := buf.String()

	tests := []struct {
		row  string
		want []string
	}{
		{"queue_join", []string{" 18.0 ", " 3 ", " 9.0× ", " 11.00 ", " 11.0× ", "load ≤ 18.3 (55 ÷ 3) ok", "pipelined ≤ 10 MISSED"}},
		{"seat_hold", []string{" 25.0 ", "13.00", "load ≤ 19.3 (58 ÷ 3) MISSED", "pipelined ≤ 12 MISSED"}},
		{"hold_cancel", []string{" 13.0 ", "load ≤ 13.0 (39 ÷ 3) ok"}},
		{"points_charge", []string{" 21.0 ", "16.00", "load: a third of the first figure measured"}},
		{"payment_claim", []string{" n/a ", "21.00"}},
		{"tick per admitted fan", []string{" 20.0 ", " 250 ", " 6.00 "}}, // 5,000 µs ÷ 250 fans
		{"queue_snapshot", []string{" 16.0 ", " 2 "}},
		{"EVALSHA 'return 1'", []string{" 2.0 ", " 1.00 ", "(the floor)"}},
		{"HSET", []string{" 2.0 ", " 0.50 ", "(the floor)"}},
	}
	for _, tt := range tests {
		line := rowLine(t, out, tt.row)
		for _, w := range tt.want {
			assert.Contains(t, line, w, tt.row)
		}
	}
	assert.NotContains(t, rowLine(t, out, "HSET"), "×", "the floor is not a multiple of itself")
	assert.Contains(t, out, "14 ticks of the storm's line, 5,000 µs in all, for 250 fans the tick admitted (10 more joins were admitted at once")
	assert.Contains(t, out, "storm requests failed: hold 2; the first: 409")
	assert.Less(t, strings.Index(out, "HSET "), strings.Index(out, "  under load:"), "the notes under the rows")

	b.storm.tickNA = "3 joins had no answer: who admitted them is unknown"
	buf.Reset()
	b.printRedisTime(&buf, true)
	assert.Contains(t, rowLine(t, buf.String(), "tick per admitted fan"), " n/a ")
	assert.Contains(t, buf.String(), "tick per admitted fan under load: n/a, 3 joins had no answer")

	// make capacity: the pipelined column alone.
	buf.Reset()
	b.printRedisTime(&buf, false)
	line := rowLine(t, buf.String(), "queue_join")
	assert.Contains(t, line, " n/a ")
	assert.Contains(t, line, "load ≤ 18.3 (55 ÷ 3); pipelined ≤ 10 MISSED")
	assert.Contains(t, buf.String(), "under load: make bench's storm only")

	b = &bench{na: map[string]string{rowCapJoins1: "skipped (-capacity-fans 0)"}, stormNA: "skipped (-storm-fans 0)"}
	buf.Reset()
	b.printRedisTime(&buf, true)
	assert.Contains(t, buf.String(), "under load: n/a, skipped (-storm-fans 0)")
	assert.Contains(t, buf.String(), "pipelined: n/a, skipped (-capacity-fans 0)")
}
