package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSaleLogGathersItsSeriesOnly: the sale log's registry holds the series it reads and no other, so
// that its gather every saleLogEvery does not walk every per-concert gauge; the service's holds all.
func TestSaleLogGathersItsSeriesOnly(t *testing.T) {
	all, sale := prometheus.NewRegistry(), prometheus.NewRegistry()
	reg := alsoRegister{all, sale}
	joined := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ticketrush_queue_joined_total", Help: "h"}, []string{"concert"})
	seats := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ticketrush_concert_seats_available", Help: "h"}, []string{"concert"})
	reg.MustRegister(joined, seats)
	joined.WithLabelValues("c1").Inc()
	seats.WithLabelValues("c1").Set(3)

	names := func(g prometheus.Gatherer) (out []string) {
		families, err := g.Gather()
		require.NoError(t, err)
		for _, f := range families {
			out = append(out, f.GetName())
		}
		return out
	}
	assert.Equal(t, []string{"ticketrush_concert_seats_available", "ticketrush_queue_joined_total"}, names(all))
	assert.Equal(t, []string{"ticketrush_queue_joined_total"}, names(sale))
	for name := range saleSeries {
		assert.True(t, readBySaleLog(prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "h"}, []string{"concert"})), name)
	}
	assert.True(t, reg.Unregister(seats))
}
