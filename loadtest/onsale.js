// onsale: the minute a sale opens. The concert has a sale (docs/api.md "On-sale") whose pre-queue is open
// from the start: fans arrive during the pre-queue (PREQUEUE tokens, polling when told), the opening
// draws them into the line by lot, and the rush of post-opening arrivals queues behind them (ramping
// arrival rate: a trickle before the opening, the spike at it). Fans poll at the pollAfterSeconds the
// server gives (taking the fresh token a pre-queue poll hands back), and once admitted list the dates
// and the seat map, hold seats (some chase the same front rows), charge points and pay. A share gives up
// in the line, cancels its holds and leaves, or walks away and lets the hold lapse. After a run,
// `ticketrush verify-draw --concert <id>` checks the draw.
//
//   k6 run loadtest/onsale.js                  short profile, about 70 s
//   PROFILE=full k6 run loadtest/onsale.js     the long one
//   any profile field can be overridden: PEAK=60 ADMIT=40 k6 run loadtest/onsale.js
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import {
  Fan, PURCHASE, createConcert, pick, planned, settle, thresholds, between, think, seatNumber,
} from './lib/ticketrush.js';

const P = pick({
  short: {
    peak: 30, // fans arriving per second at the top of the spike
    prequeue: 15, early: 10, // seconds from setup to the opening; fans per second arriving in the pre-queue
    rampUp: '10s', plateau: '30s', rampDown: '10s',
    capacity: 150, admit: 20, // activeCapacity, admitPerSecond
    schedules: 2, vipSeats: 60, rSeats: 240, // per schedule
    holdTtl: 20, activeTtl: 90,
    thinkMin: 0.2, thinkMax: 1.0, // seconds between a fan's steps
    patienceMin: 2, patienceMax: 10, // seconds a giving-up fan waits in line
    // peak 30 fans/s x iterations up to ~22 s: ~660 VUs at once; allocating VUs mid-run on a busy machine
    // drops arrivals, so they are allocated up front.
    preVUs: 800, maxVUs: 1500, gracefulStop: '60s',
  },
  full: {
    peak: 200,
    prequeue: 120, early: 50,
    rampUp: '1m', plateau: '3m', rampDown: '1m',
    capacity: 2000, admit: 150,
    schedules: 2, vipSeats: 1000, rSeats: 9000,
    holdTtl: 120, activeTtl: 600,
    thinkMin: 1, thinkMax: 5,
    patienceMin: 30, patienceMax: 300,
    preVUs: 5000, maxVUs: 30000, gracefulStop: '5m',
  },
});

// Shares of fans, by behaviour.
const CHASERS = 0.3; // go for the first free seats of the front row of the first date
const GIVE_UP_IN_LINE = 0.1; // leave the line after patienceMin..Max seconds
const CANCEL = 0.1; // hold, then cancel the holds and give back the token
const WALK_AWAY = 0.05; // hold, then do nothing: the hold and the token lapse
const PAY_TWICE = 0.05; // send a payment again with the same Idempotency-Key
const FRONT_ROW = 8; // the seats chasers fight over: the first free VIP seats

const stages = [
  { target: P.early, duration: '2s' }, // the pre-queue fills
  { target: P.early, duration: `${Math.max(P.prequeue - 4, 1)}s` },
  { target: P.peak, duration: '2s' }, // the opening
  { target: P.peak, duration: P.rampUp },
  { target: P.peak, duration: P.plateau },
  { target: 0, duration: P.rampDown },
];

const fansStarted = new Counter('fans_started');
const funnel = {
  joined: new Counter('funnel_joined'),
  admitted: new Counter('funnel_admitted'),
  browsed: new Counter('funnel_browsed'),
  held: new Counter('funnel_held'),
  paid: new Counter('funnel_paid'),
};
const dropped = {
  line: new Counter('gave_up_in_line'),
  cancel: new Counter('cancelled_holds'),
  walk: new Counter('walked_away'),
  soldOut: new Counter('sold_out'),
  lapsed: new Counter('token_lapsed'),
  holdExpired: new Counter('hold_expired_before_payment'),
};
const seatsHeld = new Counter('seats_held');
const seatsPaid = new Counter('seats_paid');
const holdConflicts = new Counter('hold_conflicts');
const timeInQueue = new Trend('time_in_queue', true);
const timeToPurchase = new Trend('time_to_purchase', true);
const pollsPerFan = new Trend('polls_per_fan');
const prequeueEntrants = new Counter('prequeue_entrants');
const placedAfterOpening = new Trend('placed_after_opening', true); // opening -> the entrant's first WAITING poll

const eps = ['join', 'poll', 'leave'].concat(PURCHASE ? ['schedules', 'seats', 'hold', 'cancel', 'charge', 'pay', 'balance'] : []);

export const options = {
  setupTimeout: '120s',
  scenarios: {
    fans: {
      executor: 'ramping-arrival-rate',
      startRate: 0,
      timeUnit: '1s',
      stages,
      preAllocatedVUs: P.preVUs,
      maxVUs: P.maxVUs,
      gracefulStop: P.gracefulStop,
    },
  },
  thresholds: thresholds(eps, planned(0, stages), PURCHASE ? { funnel_paid: ['count>0'] } : {}),
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  // The pre-queue is open at once (prequeueOpensAt defaults to 30 minutes before the opening).
  const opensAt = new Date(Date.now() + P.prequeue * 1000).toISOString();
  const data = createConcert('onsale', {
    sale: { opensAt },
    schedules: Array.from({ length: P.schedules }, (_, i) => new Date(Date.UTC(2030, 0, 1 + i, 10)).toISOString()),
    sections: [{ name: 'VIP', price: 165000, seats: P.vipSeats }, { name: 'R', price: 143000, seats: P.rSeats }],
    queue: {
      activeCapacity: P.capacity, admitPerSecond: P.admit, activeTtlSeconds: P.activeTtl,
      holdTtlSeconds: P.holdTtl, maxHoldsPerUser: 4,
    },
  });
  data.opensAt = opensAt;
  return data;
}

export default function (data) {
  const fan = new Fan(`${data.userPrefix}${exec.scenario.iterationInTest}`);
  fansStarted.add(1);
  const t0 = Date.now();
  let q = fan.join(data.concertId);
  if (!q) return;
  funnel.joined.add(1);

  // The line: poll when the server says, until admitted; some give up first.
  const patience = Math.random() < GIVE_UP_IN_LINE ? between(P.patienceMin, P.patienceMax) * 1000 : Infinity;
  let polls = 0;
  const entrant = q.status === 'PREQUEUE';
  if (entrant) prequeueEntrants.add(1);
  while (q.status === 'WAITING' || q.status === 'PREQUEUE') {
    if (q.status === 'WAITING' && Date.now() - t0 > patience) {
      fan.leave();
      dropped.line.add(1);
      pollsPerFan.add(polls);
      return;
    }
    sleep(q.pollAfterSeconds + Math.random() * 0.2);
    const next = fan.poll();
    if (!next) return;
    if (next.token) fan.token = next.token; // a drawn pre-queue token comes back as the token of its place
    if (q.status === 'PREQUEUE' && next.status !== 'PREQUEUE' && data.opensAt) {
      placedAfterOpening.add(Date.now() - Date.parse(data.opensAt));
    }
    q = next;
    polls++;
  }
  pollsPerFan.add(polls);
  if (q.status !== 'ACTIVE') {
    dropped.lapsed.add(1);
    return;
  }
  timeInQueue.add(Date.now() - t0);
  funnel.admitted.add(1);
  if (!data.purchase) {
    think([P.thinkMin, P.thinkMax]);
    fan.leave();
    return;
  }
  buy(fan, data, t0);
}

function buy(fan, data, t0) {
  const chaser = Math.random() < CHASERS;
  const want = Math.random() < 0.7 ? 1 : 2;

  const schedules = fan.schedules(data.concertId);
  funnel.browsed.add(1);
  think([P.thinkMin, P.thinkMax]);
  const open = schedules.filter((s) => s.availableSeats > 0);
  if (open.length === 0) {
    dropped.soldOut.add(1);
    fan.leave();
    return;
  }
  const schedule = chaser && open.some((s) => s.id === schedules[0].id) ? schedules[0] : open[Math.floor(Math.random() * open.length)];

  // Hold: pick from the seat map, and after a lost race look at the map again.
  let seats = fan.seats(data.concertId, schedule.id);
  const holds = [];
  const tried = {};
  for (let attempt = 0; attempt < want + 3 && holds.length < want; attempt++) {
    const seat = choose(seats, tried, chaser);
    if (!seat) break;
    tried[seat.id] = true;
    const r = fan.hold(schedule.id, seat.id);
    if (r.reservation) {
      holds.push(r.reservation);
    } else if (r.refused === 'SEAT_UNAVAILABLE') {
      holdConflicts.add(1);
      seats = fan.seats(data.concertId, schedule.id);
    } else {
      break;
    }
  }
  if (holds.length === 0) {
    dropped.soldOut.add(1);
    fan.leave();
    return;
  }
  funnel.held.add(1);
  seatsHeld.add(holds.length);
  think([P.thinkMin, P.thinkMax]);

  const u = Math.random();
  if (u < CANCEL) {
    for (const h of holds) fan.cancel(h.id);
    fan.leave();
    dropped.cancel.add(1);
    return;
  }
  if (u < CANCEL + WALK_AWAY) {
    dropped.walk.add(1);
    return;
  }

  // Pay: charge what the seats cost, pay each hold (a few send the payment twice), look at the balance.
  const r = settle(fan, holds, PAY_TWICE);
  dropped.holdExpired.add(r.expired);
  const paid = r.paid.length;
  if (paid > 0) {
    funnel.paid.add(1);
    seatsPaid.add(paid);
    timeToPurchase.add(Date.now() - t0);
  }
  if (paid < holds.length) fan.leave();
}

// choose picks a free seat not tried yet: a chaser one of the first free VIP seats, anyone else any
// free seat.
function choose(seats, tried, chaser) {
  const free = seats.filter((s) => s.status === 'AVAILABLE' && !tried[s.id]);
  if (free.length === 0) return null;
  if (chaser) {
    const front = free.filter((s) => s.section === 'VIP').sort((a, b) => seatNumber(a.id) - seatNumber(b.id)).slice(0, FRONT_ROW);
    if (front.length > 0) return front[Math.floor(Math.random() * front.length)];
  }
  return free[Math.floor(Math.random() * free.length)];
}
