package queue

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/prom"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

type metrics struct {
	joined    *prometheus.CounterVec
	admitted  *prometheus.CounterVec
	left      *prometheus.CounterVec
	lapsed    *prometheus.CounterVec
	polls     *prometheus.CounterVec
	waiting   *prometheus.GaugeVec
	active    *prometheus.GaugeVec
	capacity  *prometheus.GaugeVec
	rate      *prometheus.GaugeVec
	paused    *prometheus.GaugeVec
	measured  *prometheus.GaugeVec
	backWait  *prometheus.GaugeVec
	seats     *prometheus.GaugeVec
	soldOut   *prometheus.GaugeVec
	abandoned *prometheus.CounterVec

	// streamReadFailures counts an event stream's reads that failed for want of a dependency.
	streamReadFailures prometheus.Counter

	// fromView and fromRedis are the polls' two series, looked up once: every poll counts one.
	fromView, fromRedis prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		joined:   prom.CounterVec("ticketrush_queue_joined_total", "New queue tokens issued.", "concert"),
		admitted: prom.CounterVec("ticketrush_queue_admitted_total", "Fans admitted into the active set.", "concert"),
		left: prom.CounterVec("ticketrush_queue_left_total",
			"Tokens given back by their fan, by the state they left from.", "concert", "from"),
		lapsed: prom.CounterVec("ticketrush_queue_lapsed_total", "ACTIVE tokens that lapsed after activeTtlSeconds.", "concert"),
		polls: prom.CounterVec("ticketrush_queue_polls_total",
			"Queue polls by what answered them: the instance's view or Redis.", "source"),
		waiting:  prom.GaugeVec("ticketrush_queue_waiting", "Fans waiting in line.", "concert"),
		active:   prom.GaugeVec("ticketrush_queue_active", "Fans in the active set.", "concert"),
		capacity: prom.GaugeVec("ticketrush_queue_active_capacity", "Size of the active set.", "concert"),
		rate:     prom.GaugeVec("ticketrush_queue_admit_per_second", "Configured admission rate.", "concert"),
		paused:   prom.GaugeVec("ticketrush_queue_paused", "1 while admission is paused.", "concert"),
		measured: prom.GaugeVec("ticketrush_queue_admission_rate",
			"Measured admissions per second over the last 30 s (the configured rate until measured).", "concert"),
		backWait: prom.GaugeVec("ticketrush_queue_estimated_wait_seconds",
			"Estimated wait of a fan joining the back of the line now.", "concert"),
		seats: prom.GaugeVec("ticketrush_concert_seats_available",
			"Seats AVAILABLE now over every schedule (a lapsed hold counts as available).", "concert"),
		soldOut: prom.GaugeVec("ticketrush_concert_sold_out", "1 once every seat of the concert is SOLD.", "concert"),
		abandoned: prom.CounterVec("ticketrush_queue_abandoned_total",
			"Fans dropped by the admission tick: WAITING ones silent for abandonAfterSeconds (reason silent), ACTIVE ones with no gated call within noShowSeconds (reason noshow).",
			"concert", "reason"),
		streamReadFailures: prom.Counter("ticketrush_queue_stream_read_failures_total",
			"Reads of an event stream's token that failed because a dependency did not answer; the stream stays open and reads again."),
	}
	reg.MustRegister(m.joined, m.admitted, m.left, m.lapsed, m.polls, m.waiting, m.active, m.capacity, m.rate, m.paused,
		m.measured, m.backWait, m.seats, m.soldOut, m.abandoned, m.streamReadFailures)
	// At 0 from the start: "Polls answered from memory" divides by their sum.
	m.fromView, m.fromRedis = m.polls.WithLabelValues("view"), m.polls.WithLabelValues("redis")
	return m
}

// concertLoaded makes a concert's counters exist at 0, so that a dashboard panel that adds or divides
// them (the Sale overview's conversion, tokens lapsed and given back) has data before each one's first
// event: a sale where no token lapsed still shows its lapses as 0. The scheduler calls it for every
// concert of the catalog on each tick.
func (m *metrics) concertLoaded(concertID string) {
	for _, c := range []*prometheus.CounterVec{m.joined, m.admitted, m.lapsed} {
		c.WithLabelValues(concertID)
	}
	for _, from := range []ticketrush.QueueStatus{ticketrush.StatusWaiting, ticketrush.StatusActive} {
		m.left.WithLabelValues(concertID, string(from))
	}
}

func (m *metrics) observe(concertID string, s ticketrush.QueueSnapshot, v *view) {
	if !s.Found {
		return
	}
	rate := v.rate()
	wait, _ := pacing(s.Waiting, rate)
	m.measured.WithLabelValues(concertID).Set(rate)
	m.backWait.WithLabelValues(concertID).Set(wait.Seconds())
	m.waiting.WithLabelValues(concertID).Set(float64(s.Waiting))
	m.active.WithLabelValues(concertID).Set(float64(s.Active))
	m.capacity.WithLabelValues(concertID).Set(float64(s.ActiveCapacity))
	m.rate.WithLabelValues(concertID).Set(float64(s.AdmitPerSecond))
	paused := 0.0
	if s.Paused {
		paused = 1
	}
	m.paused.WithLabelValues(concertID).Set(paused)
	m.seats.WithLabelValues(concertID).Set(float64(s.SeatsAvailable))
	soldOut := 0.0
	if s.SoldOut {
		soldOut = 1
	}
	m.soldOut.WithLabelValues(concertID).Set(soldOut)
}
