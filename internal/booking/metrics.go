package booking

import (
	"github.com/prometheus/client_golang/prometheus"

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
	concert := []string{"concert"}
	m := &metrics{
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_holds_total", Help: "Seats held."}, concert),
		lapsed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_holds_lapsed_total", Help: "Holds that lapsed unpaid."}, concert),
		cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_holds_cancelled_total", Help: "Holds cancelled by their fan."}, concert),
		holdsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_holds_refused_total", Help: "Hold attempts refused, by reason."}, []string{"reason"}),
		refusedInMemory: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketrush_holds_refused_in_memory_total",
			Help: "Hold attempts refused SEAT_UNAVAILABLE by the instance's seat view without a Redis round trip (also counted in ticketrush_holds_refused_total)."}),
		seatViewSchedules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ticketrush_seat_view_schedules",
			Help: "Schedules in the instance's seat view: read or held on this instance in the last 10 s, refreshed a few times a second."}),
		paid: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_payments_total", Help: "Seats paid (sales)."}, concert),
		paymentsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_payments_refused_total", Help: "Payments refused, by reason."}, []string{"reason"}),
		seats: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketrush_seats", Help: "Seats per schedule by state (available, held, sold)."},
			[]string{"concert", "schedule", "state"}),
		charged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketrush_points_charged_total", Help: "Points charged (sum of amounts)."}),
		debited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketrush_points_debited_total", Help: "Points debited by payments (sum of amounts)."}),
		refunded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketrush_points_refunded_total", Help: "Points refunded by compensating refunds (sum of amounts)."}),
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
