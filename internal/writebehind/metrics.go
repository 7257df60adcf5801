package writebehind

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/prom"
)

// metrics are the worker's figures, with the names of the project's metrics contract.
type metrics struct {
	backlog     prometheus.Gauge
	lag         prometheus.Gauge
	batchSize   prometheus.Histogram
	flush       prometheus.Histogram
	events      prometheus.Counter
	deadLetters prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		backlog: prom.Gauge("ticketrush_writebehind_backlog_events",
			"Events not yet written to Postgres over every stream: pending (delivered, not acknowledged) and not yet delivered."),
		lag: prom.Gauge("ticketrush_writebehind_lag_seconds",
			"Age of the oldest event not yet acknowledged by the write-behind group; 0 when there is none."),
		batchSize: prom.Histogram("ticketrush_writebehind_batch_size", "Events per Postgres transaction of the write-behind.",
			1, 10, 50, 100, 250, 500, 1000, 2000, 4000, 8000),
		flush: prom.Histogram("ticketrush_writebehind_flush_duration_seconds",
			"Time to write one batch to Postgres and acknowledge it in Redis, retries included.",
			.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30),
		events: prom.Counter("ticketrush_writebehind_events_total", "Events written to Postgres and acknowledged."),
		deadLetters: prom.Counter("ticketrush_writebehind_dead_letters_total",
			"Events moved to a dead-letter stream after failing to be written."),
	}
	reg.MustRegister(m.backlog, m.lag, m.batchSize, m.flush, m.events, m.deadLetters)
	return m
}
