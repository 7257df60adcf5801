package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// pingTimeout bounds the reachability probe a scrape makes.
const pingTimeout = time.Second

// Collector returns a Prometheus collector of the pool's statistics (read from pgxpool.Stat at each
// scrape, so nothing is counted twice and nothing runs between scrapes) and of whether Postgres
// answers a ping at that moment. Register it once per DB.
func (db *DB) Collector() prometheus.Collector {
	return newPoolCollector(db.pool.Stat, func(ctx context.Context) error { return db.pool.Ping(ctx) })
}

// poolCollector turns a pool snapshot into metrics at scrape time.
type poolCollector struct {
	stat func() *pgxpool.Stat
	ping func(ctx context.Context) error

	up, acquired, idle, constructing, total, max                 *prometheus.Desc
	acquires, acquireSeconds, waits, waitSeconds, canceled, news *prometheus.Desc
}

func newPoolCollector(stat func() *pgxpool.Stat, ping func(ctx context.Context) error) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("ticketrush_postgres_"+name, help, nil, nil)
	}
	return &poolCollector{
		stat:           stat,
		ping:           ping,
		up:             d("up", "1 when Postgres answered a ping at the last scrape, else 0."),
		acquired:       d("pool_acquired_conns", "Connections of the pool currently in use."),
		idle:           d("pool_idle_conns", "Connections of the pool currently idle."),
		constructing:   d("pool_constructing_conns", "Connections of the pool being opened."),
		total:          d("pool_total_conns", "Connections of the pool: acquired, idle and being opened."),
		max:            d("pool_max_conns", "Largest number of connections the pool may open."),
		acquires:       d("pool_acquire_count_total", "Successful acquires of a connection from the pool."),
		acquireSeconds: d("pool_acquire_duration_seconds_total", "Time spent in successful acquires, waits included."),
		waits:          d("pool_empty_acquire_count_total", "Successful acquires that had to wait because no connection was idle."),
		waitSeconds:    d("pool_acquire_wait_seconds_total", "Time successful acquires spent waiting for a connection to be released or opened."),
		canceled:       d("pool_canceled_acquire_count_total", "Acquires given up because their context ended."),
		news:           d("pool_new_conns_total", "Connections opened by the pool."),
	}
}

// Describe sends the descriptions of every metric.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.acquired, c.idle, c.constructing, c.total, c.max,
		c.acquires, c.acquireSeconds, c.waits, c.waitSeconds, c.canceled, c.news} {
		ch <- d
	}
}

// Collect pings Postgres (bounded by pingTimeout) and reads the pool's statistics.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	up := 1.0
	if err := c.ping(ctx); err != nil {
		up = 0
	}
	cancel()
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)

	s := c.stat()
	gauge := func(d *prometheus.Desc, v int32) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.acquired, s.AcquiredConns())
	gauge(c.idle, s.IdleConns())
	gauge(c.constructing, s.ConstructingConns())
	gauge(c.total, s.TotalConns())
	gauge(c.max, s.MaxConns())
	counter(c.acquires, float64(s.AcquireCount()))
	counter(c.acquireSeconds, s.AcquireDuration().Seconds())
	counter(c.waits, float64(s.EmptyAcquireCount()))
	counter(c.waitSeconds, s.EmptyAcquireWaitTime().Seconds())
	counter(c.canceled, float64(s.CanceledAcquireCount()))
	counter(c.news, float64(s.NewConnsCount()))
}
