package redis

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ticketrush/ticketrush/internal/dbtest"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

// TestReplyShapes feeds every reply decoder the reply its script gives and replies of other shapes
// (an item more or less, a wrong type, a flag or status out of range): the well-formed one decodes, the
// others are errors. The replies are made by Lua on miniredis, so they are real RESP messages.
func TestReplyShapes(t *testing.T) {
	c, _ := dbtest.MiniRedis(t)
	msg := func(t *testing.T, lua string) rueidis.RedisMessage {
		t.Helper()
		m, err := c.Do(context.Background(), c.B().Eval().Script("return "+lua).Numkeys(0).Build()).ToMessage()
		require.NoError(t, err, lua)
		return m
	}
	decoders := map[string]func(rueidis.RedisMessage) error{
		"join":             func(m rueidis.RedisMessage) error { _, err := joinReply(m); return err },
		"leave":            func(m rueidis.RedisMessage) error { _, err := leaveReply(m); return err },
		"status":           func(m rueidis.RedisMessage) error { _, err := tokenState(m); return err },
		"tick":             func(m rueidis.RedisMessage) error { _, err := tickReply(m); return err },
		"snapshot":         func(m rueidis.RedisMessage) error { _, err := snapshotReply(m); return err },
		"hold":             func(m rueidis.RedisMessage) error { _, err := holdReply(m, &ticketrush.Reservation{}); return err },
		"charge":           func(m rueidis.RedisMessage) error { _, _, err := chargeReply(m); return err },
		"counts":           func(m rueidis.RedisMessage) error { _, err := countsReply(m, []string{"s1", "s2"}); return err },
		"load":             func(m rueidis.RedisMessage) error { _, err := loadReply(m); return err },
		"sweep":            func(m rueidis.RedisMessage) error { _, err := sweepReply(m); return err },
		"refund":           func(m rueidis.RedisMessage) error { _, err := refundReply("r1", m); return err },
		"configure":        func(m rueidis.RedisMessage) error { return configureReply(m) },
		"draw state":       func(m rueidis.RedisMessage) error { _, err := drawStateReply(m); return err },
		"seats":            func(m rueidis.RedisMessage) error { return seatsReply(m, t0, map[string]ticketrush.SeatStatus{}) },
		"remember reserve": func(m rueidis.RedisMessage) error { _, _, err := rememberReply("reserve", m); return err },
		"remember finish":  func(m rueidis.RedisMessage) error { _, _, err := rememberReply("finish", m); return err },
		"remember release": func(m rueidis.RedisMessage) error { _, _, err := rememberReply("release", m); return err },
		"seal":             func(m rueidis.RedisMessage) error { _, err := sealReply(m); return err },
		"place":            func(m rueidis.RedisMessage) error { _, _, err := placeReply(m); return err },
		"prequeue status":  func(m rueidis.RedisMessage) error { _, _, err := prequeueStatusReply(m); return err },
		"prequeue leave":   func(m rueidis.RedisMessage) error { _, err := prequeueLeaveReply(m); return err },
		"draw read":        func(m rueidis.RedisMessage) error { _, _, _, err := drawReadReply(m); return err },
	}
	const rec = `[[{"fingerprint":"fp","ref":"p1","created":true}]]` // an idempotency record, as a Lua string
	tests := []struct {
		decoder  string
		good     string
		alsoGood []string
		bad      []string
	}{
		{"join", "{'WAITING', 7, 0, 1}", nil, []string{
			"{'WAITING', 7, 0}", "{'WAITING', 7, 0, 1, 9}", "{'WAITING', '7', 0, 1}", "{'LOST', 7, 0, 1}",
			"{'WAITING', 7, 0, 2}", "{7, 7, 0, 1}", "'WAITING'"}},
		{"leave", "'ACTIVE'", nil, []string{"'GONE'", "1", "{'ACTIVE'}"}},
		{"status", "{'ACTIVE', 0, 1800000000000}", nil, []string{
			"{'ACTIVE', 0}", "{'ACTIVE', 0, 1, 2}", "{'HELD', 0, 1}", "{'ACTIVE', 'x', 1}", "{'SOLD', 0, 0}"}},
		{"tick", "{1, 0, 5, 3, 0, 0}", nil, []string{"{1, 0, 5, 3, 0}", "{1, 0, 5, 3, 0, 0, 0}", "{1, 0, 'five', 3, 0, 0}", "5",
			"{1, 0, 5, 3, 'x', 0}", "{1, 0, 5, 3, 0, 'x'}"}},
		{"snapshot", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {'12', '1', '15', '2'}, 0, 42, 2, 3, 2000}", nil, []string{
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3, 2000, 1}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {'12'}, 0, 42, 2, 3, 2000}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, 7, 0, 42, 2, 3, 2000}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 'no', {}, 0, 42, 2, 3, 2000}", "{3, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3, 2000}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {'x', '1'}, 0, 42, 2, 3, 2000}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 2, 42, 2, 3, 2000}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 'many', 2, 3, 2000}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3, 'x'}"}},
		{"hold", "{'r1', 1800000600000, 1800000000000, 0}", nil, []string{
			"{'r1', 1800000600000, 1800000000000}", "{'r1', 1800000600000, 1800000000000, 0, 0}",
			"{'r1', 'soon', 1800000000000, 0}", "{{}, 1, 2, 0}", "{'r1', 1, 2, 5}"}},
		{"charge", "{'c1', 100, 300, 1800000000000, 1}", nil, []string{
			"{'c1', 100, 300, 1800000000000}", "{'c1', 100, 300, 1800000000000, 1, 1}",
			"{'c1', '100', 300, 1800000000000, 1}", "{'c1', 100, 300, 1800000000000, 2}"}},
		{"counts", "{1, 0, 2, 1}", nil, []string{"{1, 0, 2}", "{1, 0, 2, 1, 0, 0}", "{1, 0, 'x', 1}", "7",
			"{1, 0, '2', 1}", "{1, 0, false, 1}", "{1, 0, {2}, 1}"}},
		{"load", "1", []string{"0"}, []string{"2", "-1", "'1'", "{1}"}},
		{"sweep", "3", []string{"0"}, []string{"-1", "'3'", "{3}"}},
		{"refund", `[[{"id":"rf1","user":"u","amount":300,"balance":500,"at":1800000000000}]]`, []string{"''"},
			[]string{"1", "{}", "'not json'", "{''}", "'[1]'"}},
		{"configure", "{5, 10, 0, 2}", []string{"{5, 10, 1, 0}"}, []string{
			"{5, 10, 0}", "{5, 10, 0, 2, 1}", "{'5', 10, 0, 2}", "{5, 10, 2, 2}", "{5, 10, 0, 'x'}", "'OK'", "5"}},
		{"draw state", "{'1', '0', '3', '3', 'abc', '1800000000000'}", []string{
			"{false, false, false, false, false, false}", "{'1', '4', '3', '0', false, false}"}, []string{
			"{'1', '0', '3', '3', 'abc'}", "{'1', '0', '3', '3', 'abc', '1800000000000', '1'}",
			"{'yes', '0', '3', '3', 'abc', '0'}", "{'0', '0', '3', '3', 'abc', '0'}", "{'1', 'x', '3', '3', 'abc', '0'}",
			"{'1', '0', '3', '3.5', 'abc', '0'}", "{'1', '0', '3', '3', 'abc', 'soon'}", "{'1', 0, '3', '3', 'abc', '0'}",
			"{'1', '0', {}, '3', 'abc', '0'}", "'1'"}},
		{"seats", "{'VIP-1', 'H|r1|1800000600000', 'VIP-2', 'S|r2', 'VIP-3', 'P|r3'}", []string{"{}"}, []string{
			"{'VIP-1', 'junk'}", "{'VIP-1', ''}", "{'VIP-1', 'X|r1'}", "{'VIP-1'}", "{'VIP-1', 5}", "{'VIP-1', {}}", "'VIP-1'"}},
		{"remember reserve", "{'RESERVED', " + rec + "}", []string{"{'PENDING', " + rec + "}", "{'DONE', " + rec + "}"}, []string{
			"{'RELEASED', " + rec + "}", "{'NONE', ''}", "{'LOST', " + rec + "}", "{'DONE', ''}", "{'DONE', 'not json'}",
			"{'DONE'}", "{'DONE', " + rec + ", 1}", "{1, " + rec + "}", "{'DONE', 1}", "'DONE'"}},
		{"remember finish", "{'DONE', " + rec + "}", nil, []string{"{'RESERVED', " + rec + "}", "{'PENDING', " + rec + "}",
			"{'NONE', ''}"}},
		{"remember release", "{'RELEASED', " + rec + "}", []string{"{'NONE', ''}", "{'NONE', " + rec + "}"}, []string{
			"{'DONE', " + rec + "}", "{'RESERVED', " + rec + "}", "{'RELEASED', ''}"}},
		{"seal", "{1, 0, 3, 0, 0}", []string{"{0, 0, 0, 0, 0}"}, []string{
			"{1, 0, 3, 0}", "{1, 0, 3, 0, 0, 0}", "{2, 0, 3, 0, 0}", "{1, '0', 3, 0, 0}", "{1, 0, 3, 0, 'x'}", "1"}},
		{"place", "{3, 1}", []string{"{3, 0}"}, []string{"{3}", "{3, 1, 1}", "{3, 2}", "{'3', 1}", "3"}},
		{"prequeue status", "{'PREQUEUE', 0, 0, 0}", []string{"{'ACTIVE', 7, 0, 1800000000000}"}, []string{
			"{'DONE', 0, 0, 0}", "{'SOLD_OUT', 0, 0, 0}", "{'PREQUEUE', 0, 0}", "{'PREQUEUE', 0, 0, 0, 0}",
			"{'WAITING', 'x', 1, 0}", "{7, 0, 0, 0}", "'PREQUEUE'"}},
		{"prequeue leave", "'PREQUEUE'", []string{"'NONE'"}, []string{"'WAITING'", "''", "1", "{'PREQUEUE'}"}},
		{"draw read", "{{'ann', 'bob'}, '1764326374000', 'bob'}", []string{"{{}, '', ''}", "{{'ann'}, '-12', 'ann'}"}, []string{
			"{{'ann'}, '', '', 1}", "{{'ann'}, ''}", "{'ann', '', ''}", "{{'ann', 7}, '', ''}", "{{'ann'}, 'later', 'ann'}",
			"{{'ann'}, '', 'ann'}", "{{'ann'}, '3', ''}", "{{'ann'}, 3, 'ann'}", "{}"}},
	}
	require.Len(t, tests, len(decoders), "a decoder without cases")
	for _, tt := range tests {
		t.Run(tt.decoder, func(t *testing.T) {
			decode := decoders[tt.decoder]
			require.NotNil(t, decode)
			assert.NoError(t, decode(msg(t, tt.good)), "well-formed reply %s", tt.good)
			for _, good := range tt.alsoGood {
				assert.NoError(t, decode(msg(t, good)), "well-formed reply %s", good)
			}
			for _, bad := range tt.bad {
				assert.Error(t, decode(msg(t, bad)), "malformed reply %s accepted", bad)
			}
		})
	}
}

// TestDecodedValues: the reply decoders give back what the reply says, absent
// fields as zero, and the seats' states as the seat map shows them at now.
func TestDecodedValues(t *testing.T) {
	c, _ := dbtest.MiniRedis(t)
	msg := func(lua string) rueidis.RedisMessage {
		m, err := c.Do(context.Background(), c.B().Eval().Script("return "+lua).Numkeys(0).Build()).ToMessage()
		require.NoError(t, err, lua)
		return m
	}
	st, err := drawStateReply(msg("{'1', '4', '3', '2', 'abc', '1800000000000'}"))
	require.NoError(t, err)
	assert.Equal(t, ticketrush.DrawState{Sealed: true, Base: 4, Entrants: 3, Placed: 2, Digest: "abc", DrawnAt: t0}, st)
	st, err = drawStateReply(msg("{false, false, false, false, false, false}"))
	require.NoError(t, err)
	assert.Equal(t, ticketrush.DrawState{}, st, "a draw hash without its fields yet")

	seats := map[string]ticketrush.SeatStatus{}
	require.NoError(t, seatsReply(msg("{'A', 'H|r1|1800000001000', 'B', 'H|r2|1800000000000', 'C', 'P|r3', 'D', 'S|r4'}"), t0, seats))
	assert.Equal(t, map[string]ticketrush.SeatStatus{"A": ticketrush.SeatHeld, "C": ticketrush.SeatHeld, "D": ticketrush.SeatSold},
		seats, "B's hold lapses at now: AVAILABLE before any sweep")

	refunded, err := refundReply("r1", msg("''"))
	require.NoError(t, err)
	assert.False(t, refunded)
	loaded, err := loadReply(msg("0"))
	require.NoError(t, err)
	assert.False(t, loaded)
	n, err := sweepReply(msg("3"))
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	state, rec, err := rememberReply("reserve", msg(`{'DONE', [[{"fingerprint":"fp","ref":"p1","created":true}]]}`))
	require.NoError(t, err)
	assert.Equal(t, "DONE", state)
	assert.Equal(t, idempotencyRecord{Fingerprint: "fp", Ref: "p1", Created: true}, rec)
}
