package main

import (
	"context"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// saleLogEvery is how often the log tells how each concert's sale goes.
const saleLogEvery = 5 * time.Second

// saleLog writes the sale as it happens to the service's log: at most one line per concert every
// saleLogEvery, for a concert that saw news since the last line (joins, admissions, holds, payments, or
// a change of waiting or active fans), never a line per request. Its figures are the process's own
// metrics (what this process did, and the line as its view last read it), so that the log and the
// dashboards never disagree: those of the waiting room and the purchase path only, registered with a
// registry of their own as well (alsoRegister), so that reading them asks nothing of Redis (the
// service's registry also holds ticketrush_redis_up, which pings every slot it needs when gathered).
type saleLog struct {
	gather prometheus.Gatherer
	log    *slog.Logger
	last   map[string]saleFigures
	news   bool // the last report wrote a line
}

// saleLogQuiet is how often the log looks while its last report found no news and nothing woke up on
// this instance meanwhile (serve runs it paced: a wake-up, such as a join here, makes it look at once).
const saleLogQuiet = 30 * time.Second

// hadNews reports whether the last report wrote a line: the log keeps its pace while the sale moves.
func (l *saleLog) hadNews() bool { return l.news }

// saleFigures are one concert's figures: counters so far, and the line now.
type saleFigures struct {
	joined, admitted, held, paid float64
	waiting, active              float64
}

// saleSeries maps each metric the log reads to the figure it fills.
var saleSeries = map[string]func(*saleFigures) *float64{
	"ticketrush_queue_joined_total":   func(f *saleFigures) *float64 { return &f.joined },
	"ticketrush_queue_admitted_total": func(f *saleFigures) *float64 { return &f.admitted },
	"ticketrush_holds_total":          func(f *saleFigures) *float64 { return &f.held },
	"ticketrush_payments_total":       func(f *saleFigures) *float64 { return &f.paid },
	"ticketrush_queue_waiting":        func(f *saleFigures) *float64 { return &f.waiting },
	"ticketrush_queue_active":         func(f *saleFigures) *float64 { return &f.active },
}

// alsoRegister registers every collector with the Registerer it wraps, and those of the series the sale
// log reads (saleSeries) with also as well: the log gathers also every saleLogEvery, and gathering the
// other per-concert series (a dozen gauges for each of hundreds of concerts) cost an idle service more
// than anything else it did (a sixth of its CPU, perf record of `make idlecost`).
type alsoRegister struct {
	prometheus.Registerer
	also prometheus.Registerer
}

func (a alsoRegister) Register(c prometheus.Collector) error {
	if err := a.Registerer.Register(c); err != nil {
		return err
	}
	if !readBySaleLog(c) {
		return nil
	}
	return a.also.Register(c)
}

// fqNameOf finds a metric's name in its descriptor's text (Desc{fqName: "...", ...}): the client
// library gives no other access to it.
var fqNameOf = regexp.MustCompile(`fqName: "([^"]+)"`)

// readBySaleLog reports whether c collects a series of saleSeries.
func readBySaleLog(c prometheus.Collector) bool {
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	read := false
	for d := range descs {
		if m := fqNameOf.FindStringSubmatch(d.String()); m != nil && saleSeries[m[1]] != nil {
			read = true
		}
	}
	return read
}

func (a alsoRegister) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := a.Register(c); err != nil {
			panic(err)
		}
	}
}

func (a alsoRegister) Unregister(c prometheus.Collector) bool {
	a.also.Unregister(c)
	return a.Registerer.Unregister(c)
}

func newSaleLog(gather prometheus.Gatherer, log *slog.Logger) *saleLog {
	return &saleLog{gather: gather, log: log, last: map[string]saleFigures{}}
}

// report writes a line for each concert with news since the last report.
func (l *saleLog) report(context.Context) error {
	families, err := l.gather.Gather()
	if err != nil {
		return err
	}
	now := map[string]saleFigures{}
	for _, mf := range families {
		field, ok := saleSeries[mf.GetName()]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			concert := labelOf(m, "concert")
			if concert == "" {
				continue
			}
			f := now[concert]
			*field(&f) = m.GetCounter().GetValue() + m.GetGauge().GetValue()
			now[concert] = f
		}
	}
	concerts := make([]string, 0, len(now))
	for c := range now {
		concerts = append(concerts, c)
	}
	slices.Sort(concerts)
	l.news = false
	for _, c := range concerts {
		f, before := now[c], l.last[c]
		if f == before {
			continue // no news
		}
		l.news = true
		l.log.Info("sale", "concert", c, "joined", int64(f.joined-before.joined), "admitted", int64(f.admitted-before.admitted),
			"held", int64(f.held-before.held), "paid", int64(f.paid-before.paid), "waiting", int64(f.waiting), "active", int64(f.active))
	}
	l.last = now
	return nil
}

func labelOf(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}
