// hot-seat: thousands of fans race for a few seats. The line has room for everyone, so every fan is
// admitted at once and goes straight for the same handful of seats; winners pay (a few cancel, which
// throws their seat back into the race), losers leave. What it shows: holds stay fast under contention,
// every 409 is SEAT_UNAVAILABLE or HOLD_LIMIT_REACHED, and no more seats are sold than exist (the
// seats_paid threshold here, and the invariant check after the run for "no seat sold twice").
//
//   k6 run loadtest/hot-seat.js               short: ~2,500 fans for 20 seats in ~6 s
//   PROFILE=full k6 run loadtest/hot-seat.js  ~25,000 fans for 100 seats
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';
import { Fan, createConcert, pick, planned, settle, thresholds } from './lib/ticketrush.js';

const P = pick({
  short: { seats: 20, rate: 500, rampTime: '2s', raceTime: '4s', preVUs: 300, maxVUs: 1500 },
  full: { seats: 100, rate: 1000, rampTime: '5s', raceTime: '20s', preVUs: 2000, maxVUs: 10000 },
});
const ATTEMPTS = 3; // holds a fan tries before giving up
const LIST_FIRST = 0.5; // share that looks at the seat map before trying; the rest guess
const CANCEL = 0.1; // winners that cancel instead of paying

const stages = [
  { target: P.rate, duration: P.rampTime },
  { target: P.rate, duration: P.raceTime },
];

const fansStarted = new Counter('fans_started');
const won = new Counter('holds_won');
const lost = new Counter('holds_lost');
const paid = new Counter('seats_paid');
const cancelled = new Counter('holds_cancelled');
const emptyHanded = new Counter('fans_empty_handed');
const timeToWin = new Trend('time_to_win', true);

export const options = {
  setupTimeout: '120s',
  scenarios: {
    race: {
      executor: 'ramping-arrival-rate',
      startRate: 0,
      timeUnit: '1s',
      stages,
      preAllocatedVUs: P.preVUs,
      maxVUs: P.maxVUs,
      gracefulStop: '30s',
    },
  },
  thresholds: thresholds(['join', 'seats', 'hold', 'cancel', 'charge', 'pay', 'balance', 'leave'], planned(0, stages), {
    seats_paid: [`count<=${P.seats}`, 'count>0'],
    holds_won: ['count>0'],
  }),
  summaryTrendStats: ['avg', 'min', 'med', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  return createConcert('hot-seat', {
    schedules: ['2030-01-01T10:00:00Z'],
    sections: [{ name: 'VIP', price: 165000, seats: P.seats }],
    queue: {
      activeCapacity: 1000000, admitPerSecond: 1000000, activeTtlSeconds: 600, holdTtlSeconds: 300,
      maxHoldsPerUser: 1,
    },
  });
}

export default function (data) {
  const fan = new Fan(`${data.userPrefix}${exec.scenario.iterationInTest}`);
  fansStarted.add(1);
  const t0 = Date.now();
  let q = fan.join(data.concertId);
  if (!q) return;
  for (let i = 0; q && q.status === 'WAITING' && i < 20; i++) q = fan.poll(); // admitted within a tick
  if (!q || q.status !== 'ACTIVE') return;

  const schedule = data.schedules[0];
  let free = null;
  if (Math.random() < LIST_FIRST) {
    free = fan.seats(data.concertId, schedule).filter((s) => s.status === 'AVAILABLE').map((s) => s.id);
  }
  let held = null;
  for (let a = 0; a < ATTEMPTS && !held; a++) {
    let seat;
    if (free) {
      if (free.length === 0) break;
      seat = free.splice(Math.floor(Math.random() * free.length), 1)[0];
    } else {
      seat = `VIP-${1 + Math.floor(Math.random() * P.seats)}`;
    }
    const r = fan.hold(schedule, seat);
    if (r.reservation) {
      held = r.reservation;
    } else if (r.refused) {
      lost.add(1);
    } else {
      break;
    }
  }
  if (!held) {
    emptyHanded.add(1);
    fan.leave();
    return;
  }
  won.add(1);
  timeToWin.add(Date.now() - t0);
  if (Math.random() < CANCEL) {
    if (fan.cancel(held.id)) cancelled.add(1);
    fan.leave();
    return;
  }
  paid.add(settle(fan, [held], 0).paid.length);
}
