package main

import (
	"context"
	"log/slog"
	"strings"
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

// TestSaleLogNewsKeepsItsPace: a report that writes a line keeps the log at saleLogEvery (hadNews);
// one with nothing new lets it wait its quiet pace, until a wake-up.
func TestSaleLogNewsKeepsItsPace(t *testing.T) {
	reg := prometheus.NewRegistry()
	joined := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ticketrush_queue_joined_total", Help: "h"}, []string{"concert"})
	reg.MustRegister(joined)
	var out strings.Builder
	l := newSaleLog(reg, slog.New(slog.NewTextHandler(&out, nil)))
	ctx := context.Background()

	joined.WithLabelValues("c1").Inc()
	require.NoError(t, l.report(ctx))
	assert.True(t, l.hadNews())
	assert.Equal(t, 1, strings.Count(out.String(), "msg=sale"))
	require.NoError(t, l.report(ctx))
	assert.False(t, l.hadNews(), "nothing new")
	assert.Equal(t, 1, strings.Count(out.String(), "msg=sale"))
	joined.WithLabelValues("c1").Inc()
	require.NoError(t, l.report(ctx))
	assert.True(t, l.hadNews())
}
