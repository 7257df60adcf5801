package booking

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketrush/ticketrush/internal/prom"
	"github.com/ticketrush/ticketrush/internal/ticketrush"
)

type metrics struct {
	held              *prometheus.CounterVec
	lapsed            *prometheus.CounterVec
	cancelled         *prometheus.CounterVec
	holdsRefused      *prometheus.CounterVec
	refusedInMemory   prometheus.Counter
	seatViewSchedules prometheus.Gauge
	paid              *prometheus.CounterVec
	paymentsRefused   *prometheus.CounterVec
	seats             *prometheus.GaugeVec
	charged           prometheus.Counter
	debited           prometheus.Counter
	refunded          prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		held:         prom.CounterVec("ticketrush_holds_total", "Seats held.", "concert"),
		lapsed:       prom.CounterVec("ticketrush_holds_lapsed_total", "Holds that lapsed unpaid.", "concert"),
		cancelled:    prom.CounterVec("ticketrush_holds_cancelled_total", "Holds cancelled by their fan.", "concert"),
		holdsRefused: prom.CounterVec("ticketrush_holds_refused_total", "Hold attempts refused, by reason.", "reason"),
		refusedInMemory: prom.Counter("ticketrush_holds_refused_in_memory_total",
			"Hold attempts refused SEAT_UNAVAILABLE by the instance's seat view without a Redis round trip (also counted in ticketrush_holds_refused_total)."),
		seatViewSchedules: prom.Gauge("ticketrush_seat_view_schedules",
			"Schedules in the instance's seat view: read or held on this instance in the last 10 s, refreshed a few times a second."),
		paid:            prom.CounterVec("ticketrush_payments_total", "Seats paid (sales).", "concert"),
		paymentsRefused: prom.CounterVec("ticketrush_payments_refused_total", "Payments refused, by reason.", "reason"),
		seats: prom.GaugeVec("ticketrush_seats", "Seats per schedule by state (available, held, sold).",
			"concert", "schedule", "state"),
		charged:  prom.Counter("ticketrush_points_charged_total", "Points charged (sum of amounts)."),
		debited:  prom.Counter("ticketrush_points_debited_total", "Points debited by payments (sum of amounts)."),
		refunded: prom.Counter("ticketrush_points_refunded_total", "Points refunded by compensating refunds (sum of amounts)."),
	}
	reg.MustRegister(m.held, m.lapsed, m.cancelled, m.holdsRefused, m.refusedInMemory, m.seatViewSchedules, m.paid, m.paymentsRefused, m.seats,
		m.charged, m.debited, m.refunded)
	return m
}

func (m *metrics) observeSeats(c ticketrush.Concert, counts []ticketrush.ScheduleCount) {
	total := float64(c.TotalSeats())
	for _, n := range counts {
		m.seats.WithLabelValues(c.ID, n.ScheduleID, "available").Set(total - float64(n.Taken))
		m.seats.WithLabelValues(c.ID, n.ScheduleID, "held").Set(float64(n.Taken - n.Sold))
		m.seats.WithLabelValues(c.ID, n.ScheduleID, "sold").Set(float64(n.Sold))
	}
}

// refusal is the reason label of a refused hold or payment (the code of an error the table marks as
// a refusal), or "" for an error that is not a refusal.
func refusal(err error) string {
	if info := ticketrush.ErrorInfo(err); info.Refusal && err != nil {
		return string(info.Code)
	}
	return ""
}

// concertLoaded makes a concert's counters exist at 0, so that a dashboard panel that adds or divides
// them (the Sale overview's conversion, holds that end paid) has data before each one's first event: a
// sale where nobody cancelled still shows its conversion. The sweeper calls it for every concert of the
// catalog on each round.
func (m *metrics) concertLoaded(concertID string) {
	for _, c := range []*prometheus.CounterVec{m.held, m.lapsed, m.cancelled, m.paid} {
		c.WithLabelValues(concertID)
	}
}
