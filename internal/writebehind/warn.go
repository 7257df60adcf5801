package writebehind

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// warnEvery is how often one kind of warning is logged at most. While a Redis master is down every
// round fails on each of its streams (hundreds of warnings a second per worker): the log says so once
// per warnEvery with how many it left out, and ticketrush_writebehind_warnings_total counts them all.
const warnEvery = 5 * time.Second

// The kinds of warning the worker logs, each a constant message; the kind label is the message without
// "writebehind: ".
const (
	warnRedis       = "writebehind: redis"
	warnCreateGroup = "writebehind: create group"
	warnReadStream  = "writebehind: read stream"
	warnFlush       = "writebehind: postgres did not take a batch; trying again"
	warnKeepPending = "writebehind: keep pending entries"
	warnAck         = "writebehind: acknowledge"
	warnDeadLetter  = "writebehind: dead-letter"
	warnMeasure     = "writebehind: measure backlog"
	warnTrim        = "writebehind: trim"
)

// warnKinds are all of them: newWarnings makes each one's counter exist at 0, so that the Write-behind
// dashboard's warnings panel shows 0 and not "no data" while nothing goes wrong.
var warnKinds = []string{warnRedis, warnCreateGroup, warnReadStream, warnFlush, warnKeepPending, warnAck, warnDeadLetter,
	warnMeasure, warnTrim}

// warnings logs the worker's warnings, each kind at most once per warnEvery, and counts every one.
type warnings struct {
	log   *slog.Logger
	now   func() time.Time
	count *prometheus.CounterVec

	mu   sync.Mutex
	last map[string]time.Time // kind -> when it was last logged
	left map[string]int       // kind -> warnings not logged since
}

func newWarnings(log *slog.Logger, now func() time.Time, reg prometheus.Registerer) *warnings {
	count := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketrush_writebehind_warnings_total",
		Help: "Write-behind warnings by kind, logged or not (the log has each kind at most once per 5 s).",
	}, []string{"kind"})
	reg.MustRegister(count)
	for _, msg := range warnKinds {
		count.WithLabelValues(strings.TrimPrefix(msg, "writebehind: "))
	}
	return &warnings{log: log, now: now, count: count, last: map[string]time.Time{}, left: map[string]int{}}
}

// warn counts a warning of kind msg (a constant "writebehind: ..." message) and logs it unless that kind
// was logged less than warnEvery ago; a logged line says how many it stands for (suppressed).
func (ws *warnings) warn(msg string, args ...any) {
	kind := strings.TrimPrefix(msg, "writebehind: ")
	ws.count.WithLabelValues(kind).Inc()
	now := ws.now()
	ws.mu.Lock()
	last, seen := ws.last[kind]
	if seen && now.Sub(last) < warnEvery {
		ws.left[kind]++
		ws.mu.Unlock()
		return
	}
	suppressed := ws.left[kind]
	ws.last[kind], ws.left[kind] = now, 0
	ws.mu.Unlock()
	ws.log.Warn(msg, append(args, "suppressed", suppressed)...)
}
