package writebehind

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWarningsAreRateLimited: a storm of one kind of warning (a dead master fails every read of its
// streams) logs one line per warnEvery saying how many it stands for; the metric counts every one, and
// another kind is logged on its own. Every kind is counted from 0 before its first warning.
func TestWarningsAreRateLimited(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	reg := prometheus.NewRegistry()
	ws := newWarnings(slog.New(slog.NewJSONHandler(&buf, nil)), func() time.Time { return now }, reg)

	for range 1000 {
		ws.warn("writebehind: read stream", "err", "connection refused")
	}
	ws.warn("writebehind: acknowledge", "err", "connection refused")
	now = now.Add(warnEvery - time.Millisecond)
	ws.warn("writebehind: read stream", "err", "connection refused")
	now = now.Add(time.Millisecond)
	ws.warn("writebehind: read stream", "err", "connection refused")

	type line struct {
		Msg        string `json:"msg"`
		Suppressed int    `json:"suppressed"`
	}
	var lines []line
	for _, raw := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var l line
		require.NoError(t, json.Unmarshal([]byte(raw), &l))
		lines = append(lines, l)
	}
	assert.Equal(t, []line{
		{"writebehind: read stream", 0},
		{"writebehind: acknowledge", 0},
		{"writebehind: read stream", 1000},
	}, lines)
	counts := map[string]float64{}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		require.Equal(t, "ticketrush_writebehind_warnings_total", f.GetName())
		for _, m := range f.GetMetric() {
			counts[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	assert.Equal(t, map[string]float64{ // every kind exists at 0 from the start
		"redis": 0, "create group": 0, "read stream": 1002, "postgres did not take a batch; trying again": 0,
		"keep pending entries": 0, "measure backlog": 0, "trim": 0, "acknowledge": 1, "dead-letter": 0,
	}, counts)
}
