package http

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type httpMetrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	unavailable *prometheus.CounterVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	labels := []string{"route", "method", "status"}
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_http_requests_total",
			Help: "HTTP requests by route pattern, method and status.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketrush_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern, method and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, labels),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketrush_http_unavailable_total",
			Help: "Requests answered 503 UNAVAILABLE because Redis or Postgres did not answer in time, by route pattern.",
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.duration, m.unavailable)
	return m
}

func (m *httpMetrics) observe(route, method string, status int, d time.Duration) {
	method = methodLabel(method)
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, method, code).Inc()
	m.duration.WithLabelValues(route, method, code).Observe(d.Seconds())
}

// methodLabel bounds the method label: a client may send any token as a method, so anything but the
// methods of RFC 9110 is counted as "other" (one series, however many methods are invented).
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "other"
}
