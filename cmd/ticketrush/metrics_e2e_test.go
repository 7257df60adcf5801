package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metric reads /metrics and returns the sum of the samples of family whose labels include match.
func (s *service) metric(t *testing.T, family string, match map[string]string) float64 {
	t.Helper()
	res := s.do(t, req{method: "GET", path: "/metrics"})
	require.Equal(t, http.StatusOK, res.status)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(res.body))
	require.NoError(t, err)
	f, ok := families[family]
	if !ok {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if labels[k] != v {
				continue next
			}
		}
		total += value(m)
	}
	return total
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestFunnelCounters drives the HTTP flow (join, admit, hold, pay, lapse, cancel) and checks that the
// funnel counters move with it.
func TestFunnelCounters(t *testing.T) {
	s := startService(t, nil)
	concertID, scheduleID := s.saleConcert(t, map[string]any{"activeCapacity": 1, "holdTtlSeconds": 1})
	c := map[string]string{"concert": concertID}
	alice, bob := buyer(t, "alice"), buyer(t, "bob")

	token := s.admitted(t, alice, concertID)
	_, bobTicket := s.join(t, bob, concertID)
	assert.Equal(t, 2.0, s.metric(t, "ticketrush_queue_joined_total", c))
	assert.Equal(t, 1.0, s.metric(t, "ticketrush_queue_admitted_total", c), "alice admitted at once")

	var lapsing, paid reservation
	decodeStrict(t, s.hold(t, alice, token, scheduleID, "R-1"), &lapsing)
	decodeStrict(t, s.hold(t, alice, token, scheduleID, "R-2"), &paid)
	assert.Equal(t, 2.0, s.metric(t, "ticketrush_holds_total", c))
	requireProblem(t, s.hold(t, alice, token, scheduleID, "R-2"), 409, "SEAT_UNAVAILABLE")
	assert.Equal(t, 1.0, s.metric(t, "ticketrush_holds_refused_total", map[string]string{"reason": "SEAT_UNAVAILABLE"}))
	// Refused once, by the instance's seat view (alice's token was proven ACTIVE here within the last
	// second) or, when that proof has already lapsed on a slow machine, by the seat_hold script.
	inMemory := s.metric(t, "ticketrush_holds_refused_in_memory_total", nil)
	// A concert whose seats are spread over slots (on a cluster) takes the seat in seat_take.
	byScript := s.metric(t, "ticketrush_redis_script_errors_total", map[string]string{"script": "seat_hold", "code": "SEAT_UNAVAILABLE"}) +
		s.metric(t, "ticketrush_redis_script_errors_total", map[string]string{"script": "seat_take", "code": "SEAT_UNAVAILABLE"})
	assert.Equal(t, 1.0, inMemory+byScript, "the refusal is counted once, in memory (%v) or by the script (%v)", inMemory, byScript)

	require.Eventually(t, func() bool { return s.metric(t, "ticketrush_holds_lapsed_total", c) == 2 }, 10*time.Second, 50*time.Millisecond,
		"both one-second holds lapse")
	requireProblem(t, s.pay(t, alice, paid.ID, ""), 410, "RESERVATION_EXPIRED")
	assert.Equal(t, 1.0, s.metric(t, "ticketrush_payments_refused_total", map[string]string{"reason": "RESERVATION_EXPIRED"}))

	// Hold again in time and pay: a sale, points charged and debited, alice DONE, bob admitted.
	require.Equal(t, http.StatusCreated, s.charge(t, alice, 500000, "").status)
	assert.Equal(t, 500000.0, s.metric(t, "ticketrush_points_charged_total", nil), "this process charged 500000")
	res := s.hold(t, alice, token, scheduleID, "VIP-1")
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	decodeStrict(t, res, &paid)
	require.Equal(t, http.StatusCreated, s.pay(t, alice, paid.ID, "").status)
	assert.Equal(t, 1.0, s.metric(t, "ticketrush_payments_total", c))
	assert.GreaterOrEqual(t, s.metric(t, "ticketrush_points_debited_total", nil), 165000.0)
	require.Eventually(t, func() bool { return s.status(bob, bobTicket.Token) == "ACTIVE" }, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, 2.0, s.metric(t, "ticketrush_queue_admitted_total", c), "bob admitted by the scheduler")
	require.Eventually(t, func() bool {
		return s.metric(t, "ticketrush_seats", map[string]string{"concert": concertID, "schedule": scheduleID, "state": "sold"}) == 1
	}, 10*time.Second, 50*time.Millisecond, "the seat gauges follow the sale")

	bobToken := bobTicket.Token
	var cancelled reservation
	decodeStrict(t, s.hold(t, bob, bobToken, scheduleID, "R-3"), &cancelled)
	require.Equal(t, http.StatusNoContent, s.do(t, req{method: "DELETE", path: "/v1/reservations/" + cancelled.ID, headers: bob.auth("")}).status)
	assert.Equal(t, 1.0, s.metric(t, "ticketrush_holds_cancelled_total", c))
	s.leave(t, bob, bobToken)
	assert.Equal(t, 1.0, s.metric(t, "ticketrush_queue_left_total", map[string]string{"concert": concertID, "from": "ACTIVE"}))

	assert.Positive(t, s.metric(t, "ticketrush_http_requests_total", map[string]string{"route": "/v1/reservations", "status": "201"}))
	assert.Positive(t, s.metric(t, "ticketrush_redis_script_calls_total", map[string]string{"script": "seat_hold"})+
		s.metric(t, "ticketrush_redis_script_calls_total", map[string]string{"script": "seat_take"}))
}
