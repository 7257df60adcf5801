package http

import (
	"strconv"
	"sync"
	"sync/atomic"
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

// route returns the series of one route pattern. Each request of the route finds its counter and
// histogram there by method and status, without hashing its label values again (WithLabelValues
// hashes all three on every call).
func (m *httpMetrics) route(pattern string) *routeSeries {
	return &routeSeries{m: m, route: pattern}
}

// routeSeries caches one route's children by method and status: a copy-on-write map, read without a
// lock; a new pair (a handful per route) copies it once.
type routeSeries struct {
	m     *httpMetrics
	route string
	mu    sync.Mutex // serialises writers
	seen  atomic.Pointer[map[seriesKey]seriesPair]
}

type seriesKey struct {
	method string // the bounded label (methodLabel)
	status int
}

type seriesPair struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func (rs *routeSeries) observe(method string, status int, d time.Duration) {
	k := seriesKey{methodLabel(method), status}
	var p seriesPair
	ok := false
	if seen := rs.seen.Load(); seen != nil {
		p, ok = (*seen)[k]
	}
	if !ok {
		p = rs.add(k)
	}
	p.requests.Inc()
	p.duration.Observe(d.Seconds())
}

func (rs *routeSeries) add(k seriesKey) seriesPair {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	old := rs.seen.Load()
	if old != nil {
		if p, ok := (*old)[k]; ok {
			return p
		}
	}
	code := strconv.Itoa(k.status)
	p := seriesPair{requests: rs.m.requests.WithLabelValues(rs.route, k.method, code),
		duration: rs.m.duration.WithLabelValues(rs.route, k.method, code)}
	next := make(map[seriesKey]seriesPair, 1)
	if old != nil {
		for kk, v := range *old {
			next[kk] = v
		}
	}
	next[k] = p
	rs.seen.Store(&next)
	return p
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
