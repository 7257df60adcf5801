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
		"join":     func(m rueidis.RedisMessage) error { _, err := joinReply(m); return err },
		"leave":    func(m rueidis.RedisMessage) error { _, err := leaveReply(m); return err },
		"status":   func(m rueidis.RedisMessage) error { _, err := tokenState(m); return err },
		"tick":     func(m rueidis.RedisMessage) error { _, err := tickReply(m); return err },
		"snapshot": func(m rueidis.RedisMessage) error { _, err := snapshotReply(m); return err },
		"hold":     func(m rueidis.RedisMessage) error { _, err := holdReply(m, &ticketrush.Reservation{}); return err },
		"charge":   func(m rueidis.RedisMessage) error { _, _, err := chargeReply(m); return err },
		"counts":   func(m rueidis.RedisMessage) error { _, err := countsReply(&m, []string{"s1", "s2"}); return err },
	}
	tests := []struct {
		decoder string
		good    string
		bad     []string
	}{
		{"join", "{'WAITING', 7, 0, 1}", []string{
			"{'WAITING', 7, 0}", "{'WAITING', 7, 0, 1, 9}", "{'WAITING', '7', 0, 1}", "{'LOST', 7, 0, 1}",
			"{'WAITING', 7, 0, 2}", "{7, 7, 0, 1}", "'WAITING'"}},
		{"leave", "'ACTIVE'", []string{"'GONE'", "1", "{'ACTIVE'}"}},
		{"status", "{'ACTIVE', 0, 1800000000000}", []string{
			"{'ACTIVE', 0}", "{'ACTIVE', 0, 1, 2}", "{'HELD', 0, 1}", "{'ACTIVE', 'x', 1}", "{'SOLD', 0, 0}"}},
		{"tick", "{1, 0, 5, 3, 0, 0}", []string{"{1, 0, 5, 3, 0}", "{1, 0, 5, 3, 0, 0, 0}", "{1, 0, 'five', 3, 0, 0}", "5",
			"{1, 0, 5, 3, 'x', 0}", "{1, 0, 5, 3, 0, 'x'}"}},
		{"snapshot", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {'12', '1', '15', '2'}, 0, 42, 2, 3, 2000}", []string{
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3, 2000, 1}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {'12'}, 0, 42, 2, 3, 2000}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, 7, 0, 42, 2, 3, 2000}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 'no', {}, 0, 42, 2, 3, 2000}", "{3, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3, 2000}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {'x', '1'}, 0, 42, 2, 3, 2000}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 2, 42, 2, 3, 2000}",
			"{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 'many', 2, 3, 2000}", "{1, 10, 20, 10, 9, 3, 100, 50, 0, {}, 0, 42, 2, 3, 'x'}"}},
		{"hold", "{'r1', 1800000600000, 1800000000000, 0}", []string{
			"{'r1', 1800000600000, 1800000000000}", "{'r1', 1800000600000, 1800000000000, 0, 0}",
			"{'r1', 'soon', 1800000000000, 0}", "{{}, 1, 2, 0}", "{'r1', 1, 2, 5}"}},
		{"charge", "{'c1', 100, 300, 1800000000000, 1}", []string{
			"{'c1', 100, 300, 1800000000000}", "{'c1', 100, 300, 1800000000000, 1, 1}",
			"{'c1', '100', 300, 1800000000000, 1}", "{'c1', 100, 300, 1800000000000, 2}"}},
		{"counts", "{1, 0, 2, 1}", []string{"{1, 0, 2}", "{1, 0, 2, 1, 0, 0}", "{1, 0, 'x', 1}", "7"}},
	}
	require.Len(t, tests, len(decoders), "a decoder without cases")
	for _, tt := range tests {
		t.Run(tt.decoder, func(t *testing.T) {
			decode := decoders[tt.decoder]
			require.NotNil(t, decode)
			assert.NoError(t, decode(msg(t, tt.good)), "well-formed reply %s", tt.good)
			for _, bad := range tt.bad {
				assert.Error(t, decode(msg(t, bad)), "malformed reply %s accepted", bad)
			}
		})
	}
}
