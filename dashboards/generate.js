// Generates the ticketrush Grafana dashboards into json/ with the Grafana Foundation SDK.
//
//   npm ci && node generate.js      (or `make dashboards` from the repo root)
//
// The JSON it writes is committed: Grafana provisions it (provisioning/), `make promcheck` runs every
// query in it against a live service, the Go test lint_test.go checks its units, descriptions and
// thresholds, and generate.test.js checks that it is what this file generates.
//
// Conventions in the queries:
// - Per-concert queue gauges, seat gauges and the write-behind gauges are global figures that every
//   instance reports alike: they are combined across instances with max. Counters are per instance and
//   summed; histograms are summed by le before histogram_quantile.
// - Ratios whose numerator may have no series yet (no 5xx so far) use `(num or den * 0) / den`, so that
//   "no errors" shows as 0 and not as "no data".
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const dash = require('@grafana/grafana-foundation-sdk/dashboard');
const common = require('@grafana/grafana-foundation-sdk/common');
const prometheus = require('@grafana/grafana-foundation-sdk/prometheus');
const timeseries = require('@grafana/grafana-foundation-sdk/timeseries');
const stat = require('@grafana/grafana-foundation-sdk/stat');
const bargauge = require('@grafana/grafana-foundation-sdk/bargauge');
const units = require('@grafana/grafana-foundation-sdk/units');

// The datasource provisioned by provisioning/datasources/prometheus.yml.
const DATASOURCE = { type: 'prometheus', uid: 'prometheus' };
const RATE = '$__rate_interval';

// Threshold colours.
const GREEN = 'green';
const YELLOW = 'yellow';
const ORANGE = 'orange';
const RED = 'red';
const NEUTRAL = 'blue'; // for figures where no value is good or bad

/** Thresholds from a base colour and [value, colour] steps upwards. */
function thresholds(base, ...steps) {
  return new dash.ThresholdsConfigBuilder()
    .mode(dash.ThresholdsMode.Absolute)
    .steps([{ value: null, color: base }, ...steps.map(([value, color]) => ({ value, color }))]);
}

/** A Prometheus query. */
function query(expr, legend, opts = {}) {
  const q = new prometheus.DataqueryBuilder().datasource(DATASOURCE).expr(expr).legendFormat(legend || '__auto');
  if (opts.instant) q.instant(true).range(false);
  return q;
}

/** Adds the parts every panel has: datasource, description, unit, thresholds, targets, size. */
function base(builder, p) {
  builder
    .title(p.title)
    .description(p.description)
    .datasource(DATASOURCE)
    .unit(p.unit)
    .thresholds(p.thresholds)
    .span(p.w || 12)
    .height(p.h || 8);
  if (p.min !== undefined) builder.min(p.min);
  if (p.max !== undefined) builder.max(p.max);
  if (p.decimals !== undefined) builder.decimals(p.decimals);
  if (p.mappings) builder.mappings(p.mappings);
  p.targets.forEach((t, i) => builder.withTarget(t.refId(String.fromCharCode(65 + i))));
  return builder;
}

/** A time series panel; thresholds are drawn as dashed lines when they mean something. */
function ts(p) {
  const b = base(new timeseries.PanelBuilder(), p)
    .lineWidth(1)
    .fillOpacity(p.stack ? 30 : 10)
    .showPoints(common.VisibilityMode.Never)
    .legend(new common.VizLegendOptionsBuilder()
      .displayMode(common.LegendDisplayMode.List)
      .placement(common.LegendPlacement.Bottom)
      .showLegend(true))
    .tooltip(new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Multi).sort(common.SortOrder.Descending))
    .thresholdsStyle(new common.GraphThresholdsStyleConfigBuilder()
      .mode(p.drawThresholds ? common.GraphThresholdsStyleMode.Dashed : common.GraphThresholdsStyleMode.Off));
  if (p.stack) b.stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal));
  return b;
}

/** A single-value panel, coloured by its thresholds. */
function single(p) {
  return base(new stat.PanelBuilder(), { w: 4, h: 5, ...p })
    .graphMode(p.sparkline === false ? common.BigValueGraphMode.None : common.BigValueGraphMode.Area)
    .colorMode(common.BigValueColorMode.Value)
    .textMode(p.textMode || common.BigValueTextMode.Auto)
    .reduceOptions(new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false));
}

/** Horizontal bars, one per series. */
function bars(p) {
  return base(new bargauge.PanelBuilder(), p)
    .orientation(common.VizOrientation.Horizontal)
    .displayMode(common.BarGaugeDisplayMode.Gradient)
    .showUnfilled(true)
    .reduceOptions(new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false));
}

/** A multi-value variable over a label of a metric, "All" meaning any value. */
function variable(name, label, metric) {
  return new dash.QueryVariableBuilder(name)
    .label(label)
    .datasource(DATASOURCE)
    .query(`label_values(${metric}, ${name})`)
    .definition(`label_values(${metric}, ${name})`)
    .refresh(dash.VariableRefresh.OnTimeRangeChanged)
    .sort(dash.VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ selected: true, text: ['All'], value: ['$__all'] });
}

/** A dashboard with the common settings and a link menu to the other ticketrush dashboards. */
function dashboard(uid, title, description) {
  return new dash.DashboardBuilder(title)
    .uid(uid)
    .description(description)
    .tags(['ticketrush'])
    .editable()
    .timezone('utc')
    .time({ from: 'now-30m', to: 'now' })
    .refresh('5s')
    .tooltip(dash.DashboardCursorSync.Crosshair)
    .link(new dash.DashboardLinkBuilder('ticketrush')
      .type(dash.DashboardLinkType.Dashboards)
      .tags(['ticketrush'])
      .asDropdown(true)
      .includeVars(false)
      .keepTime(true));
}

/** Numbers the panels 1.. in layout order (the SDK leaves ids to the caller). */
function build(builder) {
  const d = builder.build();
  let id = 1;
  for (const p of d.panels) {
    p.id = id++;
    for (const child of p.panels || []) child.id = id++;
  }
  return d;
}

const concert = 'concert=~"$concert"';

function saleOverview() {
  const funnel = [
    ['joined', 'ticketrush_queue_joined_total'],
    ['admitted', 'ticketrush_queue_admitted_total'],
    ['held', 'ticketrush_holds_total'],
    ['paid', 'ticketrush_payments_total'],
  ];
  const over = (metric) => `sum(increase(${metric}{${concert}}[$__range]))`;
  const conv = (to, from) => `${over(to)} / ${over(from)}`;

  return build(dashboard('ticketrush-sale-overview', 'Sale overview',
    'An on-sale at a glance: how many fans wait, how fast they get in, how fast seats go.')
    .withVariable(variable('concert', 'Concert', 'ticketrush_queue_waiting'))

    .withRow(new dash.RowBuilder('Waiting room'))
    .withPanel(single({
      title: 'Fans waiting',
      description: 'Fans in line (WAITING) over the selected concerts. Yellow past 100,000, red past 500,000: a line that long takes long to drain at usual admission rates.',
      unit: units.Short,
      thresholds: thresholds(GREEN, [100000, YELLOW], [500000, RED]),
      targets: [query(`sum(max by (concert) (ticketrush_queue_waiting{${concert}}))`, 'waiting')],
    }))
    .withPanel(single({
      title: 'Admission rate',
      description: 'Fans admitted per second, as measured by the scheduler (ticketrush_queue_admission_rate). 0 is normal with nobody in line; with fans waiting see paused, the active set, and the TicketrushAdmissionStalled alert.',
      unit: units.CountsPerSecond,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum(max by (concert) (ticketrush_queue_admission_rate{${concert}}))`, 'admitted/s')],
    }))
    .withPanel(single({
      title: 'Estimated wait',
      description: 'Estimated wait of a fan joining now at the back of the line (the longest of the selected concerts). Yellow past 15 minutes, red past an hour.',
      unit: units.Seconds,
      thresholds: thresholds(GREEN, [900, YELLOW], [3600, RED]),
      targets: [query(`max(ticketrush_queue_estimated_wait_seconds{${concert}})`, 'wait')],
    }))
    .withPanel(single({
      title: 'Active set used',
      description: 'Fans in the active set over its capacity. At 100% the line moves only as fans pay, leave or lapse; yellow from 95%.',
      unit: units.PercentUnit,
      min: 0,
      thresholds: thresholds(GREEN, [0.95, YELLOW]),
      targets: [query(`sum(max by (concert) (ticketrush_queue_active{${concert}})) / sum(max by (concert) (ticketrush_queue_active_capacity{${concert}}))`, 'used')],
    }))
    .withPanel(single({
      title: 'Admission paused',
      description: 'Whether admission is paused (PATCH /admin/v1/concerts/{id}/queue) for any selected concert: joins still queue, nobody is admitted.',
      unit: units.NoUnit,
      sparkline: false,
      thresholds: thresholds(GREEN, [1, RED]),
      mappings: [{ type: dash.MappingType.ValueToText, options: { 0: { text: 'running', index: 0 }, 1: { text: 'PAUSED', index: 1 } } }],
      targets: [query(`max(ticketrush_queue_paused{${concert}})`, 'paused')],
    }))
    .withPanel(single({
      title: 'Seats sold per second',
      description: 'Seats paid for per second over the selected concerts: how fast the sale goes.',
      unit: units.CountsPerSecond,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum(rate(ticketrush_payments_total{${concert}}[${RATE}]))`, 'sold/s')],
    }))
    .withPanel(ts({
      title: 'Queue depth',
      description: 'Fans waiting in line and fans in the active set, per concert, with the active set capacity.',
      unit: units.Short,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`max by (concert) (ticketrush_queue_waiting{${concert}})`, 'waiting {{concert}}'),
        query(`max by (concert) (ticketrush_queue_active{${concert}})`, 'active {{concert}}'),
        query(`max by (concert) (ticketrush_queue_active_capacity{${concert}})`, 'capacity {{concert}}'),
      ],
    }))
    .withPanel(ts({
      title: 'Admission',
      description: 'Fans admitted per second per concert: measured by the scheduler, counted from the admitted counter, and the configured admitPerSecond. Admission below the configured rate means the active set is full.',
      unit: units.CountsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`max by (concert) (ticketrush_queue_admission_rate{${concert}})`, 'measured {{concert}}'),
        query(`sum by (concert) (rate(ticketrush_queue_admitted_total{${concert}}[${RATE}]))`, 'admitted {{concert}}'),
        query(`max by (concert) (ticketrush_queue_admit_per_second{${concert}})`, 'configured {{concert}}'),
      ],
    }))
    .withPanel(ts({
      title: 'Estimated wait',
      description: 'Estimated wait at the back of the line per concert. Dashed lines: 15 minutes and an hour.',
      unit: units.Seconds,
      min: 0,
      thresholds: thresholds(GREEN, [900, YELLOW], [3600, RED]),
      drawThresholds: true,
      targets: [query(`max by (concert) (ticketrush_queue_estimated_wait_seconds{${concert}})`, '{{concert}}')],
    }))
    .withPanel(ts({
      title: 'Tokens lapsed and given back',
      description: 'ACTIVE tokens that lapsed after activeTtlSeconds, and tokens their fans gave back, by the state they left from. Many lapses mean fans are admitted but do not buy in time.',
      unit: units.CountsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`sum by (concert) (rate(ticketrush_queue_lapsed_total{${concert}}[${RATE}]))`, 'lapsed {{concert}}'),
        query(`sum by (concert, from) (rate(ticketrush_queue_left_total{${concert}}[${RATE}]))`, 'left from {{from}} {{concert}}'),
      ],
    }))
    .withPanel(ts({
      title: 'Fans abandoned',
      description: 'Fans the admission tick dropped per second, by reason: "silent" are WAITING fans who stopped polling for abandonAfterSeconds, "noshow" are ACTIVE fans who made no gated call within noShowSeconds. Many no-shows hold the active set for nothing.',
      unit: units.CountsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum by (concert, reason) (rate(ticketrush_queue_abandoned_total{${concert}}[${RATE}]))`, '{{reason}} {{concert}}')],
    }))

    .withRow(new dash.RowBuilder('Funnel'))
    .withPanel(bars({
      title: 'Funnel over the time range',
      description: 'Fans who joined the line, were admitted, held a seat, and seats paid, over the dashboard time range.',
      unit: units.Short,
      min: 0,
      w: 8,
      thresholds: thresholds(NEUTRAL),
      targets: funnel.map(([name, metric]) => query(over(metric), name, { instant: true })),
    }))
    .withPanel(single({
      title: 'Conversion',
      description: 'Share of each funnel step that reached the next over the time range: joined → admitted (capped by the active set), admitted → held, held → paid, and joined → paid overall.',
      unit: units.PercentUnit,
      w: 8,
      h: 8,
      sparkline: false,
      textMode: common.BigValueTextMode.ValueAndName,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(conv('ticketrush_queue_admitted_total', 'ticketrush_queue_joined_total'), 'joined → admitted', { instant: true }),
        query(conv('ticketrush_holds_total', 'ticketrush_queue_admitted_total'), 'admitted → held', { instant: true }),
        query(conv('ticketrush_payments_total', 'ticketrush_holds_total'), 'held → paid', { instant: true }),
        query(conv('ticketrush_payments_total', 'ticketrush_queue_joined_total'), 'joined → paid', { instant: true }),
      ],
    }))
    .withPanel(single({
      title: 'Holds that end paid',
      description: 'Paid holds over holds that ended (paid, lapsed or cancelled) in the time range. Red below 50%, yellow below 80%: fans hold seats they cannot pay for (balance, payment errors) or holds are too short.',
      unit: units.PercentUnit,
      w: 8,
      h: 8,
      min: 0,
      max: 1,
      thresholds: thresholds(RED, [0.5, YELLOW], [0.8, GREEN]),
      targets: [query(
        `${over('ticketrush_payments_total')} / (${over('ticketrush_payments_total')} + ${over('ticketrush_holds_lapsed_total')} + ${over('ticketrush_holds_cancelled_total')})`,
        'paid', { instant: true })],
    }))
    .withPanel(ts({
      title: 'Funnel per second',
      description: 'Joins, admissions, holds, payments, lapsed holds and cancelled holds per second over the selected concerts.',
      unit: units.CountsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [
        ...funnel.map(([name, metric]) => query(`sum(rate(${metric}{${concert}}[${RATE}]))`, name)),
        query(`sum(rate(ticketrush_holds_lapsed_total{${concert}}[${RATE}]))`, 'holds lapsed'),
        query(`sum(rate(ticketrush_holds_cancelled_total{${concert}}[${RATE}]))`, 'holds cancelled'),
      ],
    }))
    .withPanel(ts({
      title: 'Payments refused',
      description: 'Payments refused per second by reason (INSUFFICIENT_BALANCE, RESERVATION_EXPIRED, ...), all concerts. Yellow past 1/s, red past 10/s.',
      unit: units.CountsPerSecond,
      min: 0,
      thresholds: thresholds(GREEN, [1, YELLOW], [10, RED]),
      drawThresholds: true,
      targets: [query(`sum by (reason) (rate(ticketrush_payments_refused_total[${RATE}]))`, '{{reason}}')],
    }))

    .withRow(new dash.RowBuilder('Seats'))
    .withPanel(single({
      title: 'Sold out',
      description: 'Whether every seat of each selected concert is SOLD, that is paid for (ticketrush_concert_sold_out); seats still held do not count. Red once sold out, as in Seats left per schedule.',
      unit: units.NoUnit,
      w: 8,
      sparkline: false,
      textMode: common.BigValueTextMode.ValueAndName,
      thresholds: thresholds(GREEN, [1, RED]),
      mappings: [{ type: dash.MappingType.ValueToText, options: { 0: { text: 'on sale', index: 0 }, 1: { text: 'SOLD OUT', index: 1 } } }],
      targets: [query(`max by (concert) (ticketrush_concert_sold_out{${concert}})`, '{{concert}}')],
    }))
    .withPanel(ts({
      title: 'Seats available per concert',
      description: 'AVAILABLE seats per concert over all its schedules, as the queue view counts them (a lapsed hold counts as available). Dashed lines: 100 and sold out.',
      unit: units.Short,
      min: 0,
      w: 16,
      thresholds: thresholds(RED, [1, ORANGE], [100, GREEN]),
      drawThresholds: true,
      targets: [query(`max by (concert) (ticketrush_concert_seats_available{${concert}})`, '{{concert}}')],
    }))
    .withPanel(bars({
      title: 'Seats left per schedule',
      description: 'AVAILABLE seats per schedule (performance). Orange under 100, red when sold out.',
      unit: units.Short,
      min: 0,
      thresholds: thresholds(RED, [1, ORANGE], [100, GREEN]),
      targets: [query(`max by (concert, schedule) (ticketrush_seats{${concert}, state="available"})`, '{{concert}} {{schedule}}', { instant: true })],
    }))
    .withPanel(ts({
      title: 'Seats by state',
      description: 'Seats available, held and sold over the selected concerts, stacked: the total is the number of seats on sale.',
      unit: units.Short,
      min: 0,
      stack: true,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum by (state) (max by (concert, schedule, state) (ticketrush_seats{${concert}}))`, '{{state}}')],
    }))
    .withPanel(ts({
      title: 'Points charged and spent',
      description: 'Points (KRW) charged to wallets and debited by payments, per second, all concerts.',
      unit: units.SouthKoreanWon,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`sum(rate(ticketrush_points_charged_total[${RATE}]))`, 'charged/s'),
        query(`sum(rate(ticketrush_points_debited_total[${RATE}]))`, 'spent/s'),
      ],
    }))

    .withRow(new dash.RowBuilder('On-sale draw'))
    .withPanel(ts({
      title: 'Pre-queue',
      description: 'Fans in the pre-queue of each concert with a sale, until its draw at the opening (then 0). Measured by the scheduler every tick.',
      unit: units.Short,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`max by (concert) (ticketrush_draw_prequeue_entrants{${concert}})`, '{{concert}}')],
    }))
    .withPanel(ts({
      title: 'Draw: entrants placed and time to draw',
      description: 'Entrants placed in line by the draw per second (progress while a draw runs), and how long each completed draw took from seal to the last place. Admission starts only once a draw is complete; a million entrants take seconds.',
      unit: units.Short,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`sum by (concert) (rate(ticketrush_draw_placed_total{${concert}}[${RATE}]))`, 'placed/s {{concert}}'),
        query(`max by (concert) (ticketrush_draw_duration_seconds{${concert}})`, 'seconds to draw {{concert}}'),
      ],
    })));
}

function api() {
  const route = 'route=~"$route"';
  const req = (sel) => `sum(rate(ticketrush_http_requests_total{${sel}}[${RATE}]))`;
  const reqBy = (by, sel) => `sum by (${by}) (rate(ticketrush_http_requests_total{${sel}}[${RATE}]))`;
  const quantile = (q, by) => `histogram_quantile(${q}, sum by (${by ? by + ', ' : ''}le) (rate(ticketrush_http_request_duration_seconds_bucket{${route}}[${RATE}])))`;
  const errorRatio = thresholds(GREEN, [0.01, YELLOW], [0.05, RED]);
  const latency = thresholds(GREEN, [0.25, YELLOW], [1, RED]);
  const job = 'job="ticketrush"';

  return build(dashboard('ticketrush-api', 'API',
    'Rate, errors and duration of the HTTP API per route pattern, the queue poll path, and the processes.')
    .withVariable(variable('route', 'Route', 'ticketrush_http_requests_total'))

    .withRow(new dash.RowBuilder('Overview'))
    .withPanel(single({
      title: 'Requests per second',
      description: 'HTTP requests per second over the selected routes, all instances.',
      unit: units.RequestsPerSecond,
      thresholds: thresholds(NEUTRAL),
      targets: [query(req(route), 'requests/s')],
    }))
    .withPanel(single({
      title: '5xx ratio',
      description: 'Share of requests answered with a 5xx. Yellow from 1%, red from 5% (the TicketrushElevated5xxRate and TicketrushHigh5xxRate alerts).',
      unit: units.PercentUnit,
      thresholds: errorRatio,
      targets: [query(`(${req(`${route}, status=~"5.."`)} or ${req(route)} * 0) / ${req(route)}`, '5xx')],
    }))
    .withPanel(single({
      title: '4xx ratio',
      description: 'Share of requests refused with a 4xx (bad tokens, sold seats, not yet admitted...). Some are normal in a sale; yellow from 20%, red from 50%: clients or an attack hammer the API.',
      unit: units.PercentUnit,
      thresholds: thresholds(GREEN, [0.2, YELLOW], [0.5, RED]),
      targets: [query(`(${req(`${route}, status=~"4.."`)} or ${req(route)} * 0) / ${req(route)}`, '4xx')],
    }))
    .withPanel(single({
      title: 'p99 latency',
      description: '99th percentile of request duration over the selected routes. Yellow from 250 ms, red from 1 s.',
      unit: units.Seconds,
      thresholds: latency,
      targets: [query(quantile(0.99), 'p99')],
    }))
    .withPanel(single({
      title: 'Instances up',
      description: 'ticketrush instances Prometheus scrapes successfully. Red at 0.',
      unit: units.Short,
      thresholds: thresholds(RED, [1, GREEN]),
      targets: [query(`sum(up{${job}})`, 'up')],
    }))
    .withPanel(single({
      title: 'Build',
      description: 'Versions running (ticketrush_build_info), with how many instances run each.',
      unit: units.Short,
      sparkline: false,
      textMode: common.BigValueTextMode.ValueAndName,
      thresholds: thresholds(NEUTRAL),
      targets: [query('count by (version) (ticketrush_build_info)', '{{version}}')],
    }))

    .withRow(new dash.RowBuilder('Rate'))
    .withPanel(ts({
      title: 'Requests per second by route',
      description: 'HTTP requests per second by route pattern and method. "unmatched" counts requests no route takes.',
      unit: units.RequestsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(reqBy('route, method', route), '{{method}} {{route}}')],
    }))
    .withPanel(ts({
      title: 'Responses by status',
      description: 'Responses per second by HTTP status over the selected routes.',
      unit: units.RequestsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(reqBy('status', route), '{{status}}')],
    }))

    .withRow(new dash.RowBuilder('Errors'))
    .withPanel(ts({
      title: '5xx ratio by route',
      description: 'Share of each route\'s requests answered with a 5xx. Dashed lines: 1% and 5%.',
      unit: units.PercentUnit,
      min: 0,
      thresholds: errorRatio,
      drawThresholds: true,
      targets: [query(`(${reqBy('route', `${route}, status=~"5.."`)} or ${reqBy('route', route)} * 0) / ${reqBy('route', route)}`, '{{route}}')],
    }))
    .withPanel(ts({
      title: '4xx by route and status',
      description: 'Client errors per second by route and status: 401 bad or expired tokens, 403 not yet admitted, 409 seat taken or hold limit, 429 rate limited.',
      unit: units.RequestsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(reqBy('route, status', `${route}, status=~"4.."`), '{{status}} {{route}}')],
    }))
    .withPanel(ts({
      title: '503 unavailable by route',
      description: 'Requests answered 503 UNAVAILABLE per second by route, because Redis or Postgres did not answer within the request timeout (ticketrush_http_unavailable_total). 0 while the stores answer; any is red: fans are turned away by an outage, not by the sale.',
      unit: units.RequestsPerSecond,
      min: 0,
      thresholds: thresholds(GREEN, [0.001, RED]),
      targets: [query(`sum by (route) (rate(ticketrush_http_unavailable_total{${route}}[${RATE}]))`, '{{route}}')],
    }))

    .withRow(new dash.RowBuilder('Duration'))
    .withPanel(ts({
      title: 'p99 latency by route',
      description: '99th percentile of request duration by route. Dashed lines: 250 ms and 1 s.',
      unit: units.Seconds,
      min: 0,
      thresholds: latency,
      drawThresholds: true,
      targets: [query(quantile(0.99, 'route'), '{{route}}')],
    }))
    .withPanel(ts({
      title: 'p50 latency by route',
      description: 'Median request duration by route. Dashed lines: 250 ms and 1 s.',
      unit: units.Seconds,
      min: 0,
      thresholds: latency,
      drawThresholds: true,
      targets: [query(quantile(0.5, 'route'), '{{route}}')],
    }))

    .withRow(new dash.RowBuilder('Queue polls'))
    .withPanel(ts({
      title: 'Polls by source',
      description: 'Queue polls per second by what answered them: "view" from the instance\'s in-memory view of the line (no Redis round trip), "redis" from a Redis script.',
      unit: units.RequestsPerSecond,
      min: 0,
      stack: true,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum by (source) (rate(ticketrush_queue_polls_total[${RATE}]))`, '{{source}}')],
    }))
    .withPanel(ts({
      title: 'Polls answered from memory',
      description: 'Share of queue polls the in-memory view answered. Below 95% (yellow) or 80% (red) polls cost Redis round trips: the view is stale or most pollers are ACTIVE.',
      unit: units.PercentUnit,
      min: 0,
      max: 1,
      thresholds: thresholds(RED, [0.8, YELLOW], [0.95, GREEN]),
      drawThresholds: true,
      targets: [query(`(sum(rate(ticketrush_queue_polls_total{source="view"}[${RATE}])) or sum(rate(ticketrush_queue_polls_total[${RATE}])) * 0) / sum(rate(ticketrush_queue_polls_total[${RATE}]))`, 'from memory')],
    }))

    .withRow(new dash.RowBuilder('Processes'))
    .withPanel(ts({
      title: 'CPU',
      description: 'CPU used per instance, in cores.',
      unit: units.Short,
      min: 0,
      w: 6,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`rate(process_cpu_seconds_total{${job}}[${RATE}])`, '{{instance}}')],
    }))
    .withPanel(ts({
      title: 'Memory',
      description: 'Resident memory and Go heap in use per instance.',
      unit: units.BytesIEC,
      min: 0,
      w: 6,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`process_resident_memory_bytes{${job}}`, 'resident {{instance}}'),
        query(`go_memstats_heap_inuse_bytes{${job}}`, 'heap {{instance}}'),
      ],
    }))
    .withPanel(ts({
      title: 'Goroutines',
      description: 'Goroutines per instance. A steady climb under steady load is a leak.',
      unit: units.Short,
      min: 0,
      w: 6,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`go_goroutines{${job}}`, '{{instance}}')],
    }))
    .withPanel(ts({
      title: 'GC pause',
      description: 'Longest garbage-collection pause per instance. Yellow from 10 ms, red from 50 ms: GC pauses add to every request in flight.',
      unit: units.Seconds,
      min: 0,
      w: 6,
      thresholds: thresholds(GREEN, [0.01, YELLOW], [0.05, RED]),
      targets: [query(`go_gc_duration_seconds{${job}, quantile="1"}`, '{{instance}}')],
    })));
}

function redisScripts() {
  const script = 'script=~"$script"';
  const calls = (by) => `sum${by ? ` by (${by})` : ''} (rate(ticketrush_redis_script_calls_total{${script}}[${RATE}]))`;
  const failed = (by) => `sum${by ? ` by (${by})` : ''} (rate(ticketrush_redis_script_errors_total{${script}, code=~"IO|REDIS"}[${RATE}]))`;
  const quantile = (q, by) => `histogram_quantile(${q}, sum by (${by ? by + ', ' : ''}le) (rate(ticketrush_redis_script_duration_seconds_bucket{${script}}[${RATE}])))`;
  const latency = thresholds(GREEN, [0.005, YELLOW], [0.025, RED]);
  const failures = thresholds(GREEN, [0.001, YELLOW], [0.01, RED]);

  return build(dashboard('ticketrush-redis-scripts', 'Redis scripts',
    'Every Lua script of the hot path: calls, latency (round trip included) and error replies by code.')
    .withVariable(variable('script', 'Script', 'ticketrush_redis_script_calls_total'))

    .withRow(new dash.RowBuilder('Overview'))
    .withPanel(single({
      title: 'Script calls per second',
      description: 'Lua script calls per second over the selected scripts, all instances.',
      unit: units.OpsPerSecond,
      w: 8,
      thresholds: thresholds(NEUTRAL),
      targets: [query(calls(), 'calls/s')],
    }))
    .withPanel(single({
      title: 'p99 script latency',
      description: '99th percentile of a script call, round trip included. Yellow from 5 ms, red from 25 ms: Redis runs one script at a time, so slow scripts hold up all others.',
      unit: units.Seconds,
      w: 8,
      thresholds: latency,
      targets: [query(quantile(0.99), 'p99')],
    }))
    .withPanel(single({
      title: 'Failed calls',
      description: 'Share of script calls that failed in Redis: IO (no connection, timeout) or REDIS (an error Redis raised, for example OOM under noeviction). Business refusals do not count. Yellow from 0.1%, red from 1%.',
      unit: units.PercentUnit,
      w: 8,
      thresholds: failures,
      targets: [query(`(${failed()} or ${calls()} * 0) / ${calls()}`, 'failed')],
    }))

    .withRow(new dash.RowBuilder('Calls and latency'))
    .withPanel(ts({
      title: 'Calls per second by script',
      description: 'Lua script calls per second by script.',
      unit: units.OpsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(calls('script'), '{{script}}')],
    }))
    .withPanel(ts({
      title: 'Redis time by script',
      description: 'Seconds per second spent in each script, round trip included: which scripts keep Redis (single-threaded) busy.',
      unit: units.Seconds,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum by (script) (rate(ticketrush_redis_script_duration_seconds_sum{${script}}[${RATE}]))`, '{{script}}')],
    }))
    .withPanel(ts({
      title: 'p99 latency by script',
      description: '99th percentile of each script\'s calls. Dashed lines: 5 ms and 25 ms.',
      unit: units.Seconds,
      min: 0,
      thresholds: latency,
      drawThresholds: true,
      targets: [query(quantile(0.99, 'script'), '{{script}}')],
    }))
    .withPanel(ts({
      title: 'p50 latency by script',
      description: 'Median of each script\'s calls. Dashed lines: 5 ms and 25 ms.',
      unit: units.Seconds,
      min: 0,
      thresholds: latency,
      drawThresholds: true,
      targets: [query(quantile(0.5, 'script'), '{{script}}')],
    }))

    .withRow(new dash.RowBuilder('Errors'))
    .withPanel(ts({
      title: 'Error replies by code',
      description: 'Script error replies per second by script and code. Refusals such as SEAT_UNAVAILABLE or HOLD_LIMIT_REACHED are the business working; IO and REDIS are Redis failing; CANCELED is the caller giving up.',
      unit: units.OpsPerSecond,
      min: 0,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum by (script, code) (rate(ticketrush_redis_script_errors_total{${script}}[${RATE}]))`, '{{code}} {{script}}')],
    }))
    .withPanel(ts({
      title: 'Failed calls by script',
      description: 'Share of each script\'s calls that failed in Redis (IO or REDIS). Dashed lines: 0.1% and 1%.',
      unit: units.PercentUnit,
      min: 0,
      thresholds: failures,
      drawThresholds: true,
      targets: [query(`(${failed('script')} or ${calls('script')} * 0) / ${calls('script')}`, '{{script}}')],
    }))
    .withPanel(ts({
      title: 'Unreplicated writes by script',
      description: 'Writes of the replicated steps (WAIT for one replica, on a Redis Cluster) taken per second by a master with no replica connected: a failover of that master would lose them. Always 0 on a single Redis, which does not wait; any is red.',
      unit: units.OpsPerSecond,
      min: 0,
      thresholds: thresholds(GREEN, [0.001, RED]),
      targets: [query(`sum by (script) (rate(ticketrush_redis_unreplicated_writes_total{${script}}[${RATE}]))`, '{{script}}')],
    })));
}

function writeBehind() {
  const lag = thresholds(GREEN, [30, YELLOW], [300, RED]);
  const backlog = thresholds(GREEN, [10000, YELLOW], [100000, RED]);
  const pool = 'ticketrush_postgres_pool';

  return build(dashboard('ticketrush-write-behind', 'Write-behind',
    'Whether the durable record keeps up: the stream backlog and lag, batches written to Postgres, dead letters, and the Postgres pool.')

    .withRow(new dash.RowBuilder('Keeping up'))
    .withPanel(single({
      title: 'Lag',
      description: 'Age of the oldest event not yet written to Postgres. Yellow from 30 s, red from 5 minutes (the TicketrushWriteBehindLagging and TicketrushWriteBehindStuck alerts).',
      unit: units.Seconds,
      w: 6,
      thresholds: lag,
      targets: [query('max(ticketrush_writebehind_lag_seconds)', 'lag')],
    }))
    .withPanel(single({
      title: 'Backlog',
      description: 'Events pending or not yet delivered over all streams. Yellow from 10,000, red from 100,000.',
      unit: units.Short,
      w: 6,
      thresholds: backlog,
      targets: [query('max(ticketrush_writebehind_backlog_events)', 'events')],
    }))
    .withPanel(single({
      title: 'Events written per second',
      description: 'Events written to Postgres per second, all instances.',
      unit: units.EventsPerSecond,
      w: 6,
      thresholds: thresholds(NEUTRAL),
      targets: [query(`sum(rate(ticketrush_writebehind_events_total[${RATE}]))`, 'events/s')],
    }))
    .withPanel(single({
      title: 'Dead letters',
      description: 'Events moved to the dead-letter stream over the time range, after failing too many times. Any is red: those changes are missing from the ledger.',
      unit: units.Short,
      w: 6,
      thresholds: thresholds(GREEN, [1, RED]),
      targets: [query('sum(increase(ticketrush_writebehind_dead_letters_total[$__range]))', 'dead letters', { instant: true })],
    }))
    .withPanel(ts({
      title: 'Lag',
      description: 'Age of the oldest unacknowledged event. Dashed lines: 30 s and 5 minutes.',
      unit: units.Seconds,
      min: 0,
      thresholds: lag,
      drawThresholds: true,
      targets: [query('max(ticketrush_writebehind_lag_seconds)', 'lag')],
    }))
    .withPanel(ts({
      title: 'Backlog',
      description: 'Events pending or not yet delivered over all streams. Dashed lines: 10,000 and 100,000.',
      unit: units.Short,
      min: 0,
      thresholds: backlog,
      drawThresholds: true,
      targets: [query('max(ticketrush_writebehind_backlog_events)', 'backlog')],
    }))

    .withRow(new dash.RowBuilder('Batches'))
    .withPanel(ts({
      title: 'Events written and dead letters',
      description: 'Events written to Postgres per second, and events moved to the dead-letter stream per second.',
      unit: units.EventsPerSecond,
      min: 0,
      w: 8,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`sum(rate(ticketrush_writebehind_events_total[${RATE}]))`, 'written'),
        query(`sum(rate(ticketrush_writebehind_dead_letters_total[${RATE}]))`, 'dead letters'),
      ],
    }))
    .withPanel(ts({
      title: 'Batch size',
      description: 'Events per batch written to Postgres: median, 99th percentile and mean. Batches near the maximum mean the worker is behind and catching up.',
      unit: units.Short,
      min: 0,
      w: 8,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`histogram_quantile(0.5, sum by (le) (rate(ticketrush_writebehind_batch_size_bucket[${RATE}])))`, 'p50'),
        query(`histogram_quantile(0.99, sum by (le) (rate(ticketrush_writebehind_batch_size_bucket[${RATE}])))`, 'p99'),
        query(`sum(rate(ticketrush_writebehind_batch_size_sum[${RATE}])) / sum(rate(ticketrush_writebehind_batch_size_count[${RATE}]))`, 'mean'),
      ],
    }))
    .withPanel(ts({
      title: 'Flush duration',
      description: 'Time to write a batch to Postgres and commit: median and 99th percentile. Dashed lines: 500 ms and 2 s.',
      unit: units.Seconds,
      min: 0,
      w: 8,
      thresholds: thresholds(GREEN, [0.5, YELLOW], [2, RED]),
      drawThresholds: true,
      targets: [
        query(`histogram_quantile(0.5, sum by (le) (rate(ticketrush_writebehind_flush_duration_seconds_bucket[${RATE}])))`, 'p50'),
        query(`histogram_quantile(0.99, sum by (le) (rate(ticketrush_writebehind_flush_duration_seconds_bucket[${RATE}])))`, 'p99'),
      ],
    }))
    .withPanel(ts({
      title: 'Warnings by kind',
      description: 'Write-behind warnings per second by kind (Redis or Postgres failing, a stream not read, a batch not taken, entries not acknowledged), logged or not: the log has each kind at most once per 5 s. Any is yellow, past 1/s red.',
      unit: units.CountsPerSecond,
      min: 0,
      w: 24,
      thresholds: thresholds(GREEN, [0.001, YELLOW], [1, RED]),
      drawThresholds: true,
      targets: [query(`sum by (kind) (rate(ticketrush_writebehind_warnings_total[${RATE}]))`, '{{kind}}')],
    }))

    .withRow(new dash.RowBuilder('Postgres'))
    .withPanel(single({
      title: 'Postgres up',
      description: 'Whether Postgres answered every instance\'s ping at the last scrape (the TicketrushPostgresDown alert).',
      unit: units.NoUnit,
      w: 4,
      sparkline: false,
      thresholds: thresholds(RED, [1, GREEN]),
      mappings: [{ type: dash.MappingType.ValueToText, options: { 0: { text: 'DOWN', index: 0 }, 1: { text: 'up', index: 1 } } }],
      targets: [query('min(ticketrush_postgres_up)', 'up')],
    }))
    .withPanel(single({
      title: 'Pool in use',
      description: 'Connections in use over the pool size, the busiest instance. Yellow from 70%, red from 90%: acquires start to wait.',
      unit: units.PercentUnit,
      w: 4,
      min: 0,
      max: 1,
      thresholds: thresholds(GREEN, [0.7, YELLOW], [0.9, RED]),
      targets: [query(`max(${pool}_acquired_conns / ${pool}_max_conns)`, 'in use')],
    }))
    .withPanel(ts({
      title: 'Pool connections',
      description: 'Connections per instance: in use, idle, total, and the pool maximum.',
      unit: units.Short,
      min: 0,
      w: 8,
      thresholds: thresholds(NEUTRAL),
      targets: [
        query(`${pool}_acquired_conns`, 'in use {{instance}}'),
        query(`${pool}_idle_conns`, 'idle {{instance}}'),
        query(`${pool}_total_conns`, 'total {{instance}}'),
        query(`${pool}_max_conns`, 'max {{instance}}'),
      ],
    }))
    .withPanel(ts({
      title: 'Pool acquire time',
      description: 'Mean time to get a connection from the pool, and seconds per second spent waiting because none was idle, per instance. Dashed lines: 10 ms and 100 ms.',
      unit: units.Seconds,
      min: 0,
      w: 8,
      thresholds: thresholds(GREEN, [0.01, YELLOW], [0.1, RED]),
      drawThresholds: true,
      targets: [
        query(`rate(${pool}_acquire_duration_seconds_total[${RATE}]) / rate(${pool}_acquire_count_total[${RATE}])`, 'mean acquire {{instance}}'),
        query(`rate(${pool}_acquire_wait_seconds_total[${RATE}])`, 'waiting {{instance}}'),
      ],
    })));
}

/** Every dashboard by file name. */
function dashboards() {
  return {
    'sale-overview.json': saleOverview(),
    'api.json': api(),
    'redis-scripts.json': redisScripts(),
    'write-behind.json': writeBehind(),
  };
}

/** The bytes of a dashboard file. */
function render(d) {
  return JSON.stringify(d, null, 2) + '\n';
}

const OUT = path.join(__dirname, 'json');

module.exports = { dashboards, render, OUT };

if (require.main === module) {
  fs.mkdirSync(OUT, { recursive: true });
  for (const [name, d] of Object.entries(dashboards())) {
    fs.writeFileSync(path.join(OUT, name), render(d));
    console.log(`wrote ${path.relative(process.cwd(), path.join(OUT, name))}`);
  }
}
