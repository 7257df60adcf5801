// poll-storm: a paused line full of fans, all polling, at a rate that climbs in steps. It finds the poll
// ceiling: the highest step whose polls still answer within the SLO with no errors and no dropped
// iterations. Each step's latency is its own series in the summary (http_req_duration{ep:poll,step:N}).
//
//   k6 run loadtest/poll-storm.js              short: 2,000 fans, steps up to 3,000 polls/s, ~70 s
//   PROFILE=full k6 run loadtest/poll-storm.js 20,000 fans, steps up to 30,000 polls/s
//   FANS=5000 STEPS=500,1000,2000 STEP_TIME=10s k6 run loadtest/poll-storm.js
import http from 'k6/http';
import exec from 'k6/execution';
import { check } from 'k6';
import { Counter } from 'k6/metrics';
import { BASE, Fan, mintJWT, createConcert, pick, planned, thresholds, seconds } from './lib/ticketrush.js';

const P = pick({
  short: { fans: 2000, steps: '250,500,1000,1500,2000,3000', stepTime: '8s', rampTime: '2s', preVUs: 50, maxVUs: 400 },
  full: { fans: 20000, steps: '1000,2000,5000,10000,15000,20000,30000', stepTime: '30s', rampTime: '5s', preVUs: 200, maxVUs: 3000 },
});
const STEPS = String(P.steps).split(',').map(Number);

// A staircase: ramp to each step, hold it.
const stages = [];
for (const s of STEPS) {
  stages.push({ target: s, duration: P.rampTime }, { target: s, duration: P.stepTime });
}
const stepLength = seconds(P.rampTime) + seconds(P.stepTime);

const notWaiting = new Counter('polls_not_waiting');

const stepThresholds = {};
for (const s of STEPS) {
  // Informational: gives every step its own line in the summary.
  stepThresholds[`http_req_duration{ep:poll,step:${s}}`] = ['p(99)>=0'];
  stepThresholds[`http_req_failed{step:${s}}`] = ['rate>=0'];
}

export const options = {
  setupTimeout: '300s',
  batchPerHost: 50,
  scenarios: {
    polls: {
      executor: 'ramping-arrival-rate',
      startRate: STEPS[0],
      timeUnit: '1s',
      stages,
      preAllocatedVUs: P.preVUs,
      maxVUs: P.maxVUs,
      gracefulStop: '10s',
    },
  },
  thresholds: thresholds(['poll'], planned(STEPS[0], stages), stepThresholds),
  summaryTrendStats: ['avg', 'med', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  const data = createConcert('poll-storm', {
    schedules: ['2030-01-01T10:00:00Z'],
    sections: [{ name: 'R', price: 1000, seats: 1 }],
    queue: { activeCapacity: 1, admitPerSecond: 1, paused: true },
  });
  // Line the fans up, 200 joins at a time.
  const tokens = [];
  for (let i = 0; i < P.fans; i += 200) {
    const reqs = [];
    for (let j = i; j < Math.min(i + 200, P.fans); j++) {
      reqs.push(['POST', `${BASE}/v1/concerts/${data.concertId}/queue`, null,
        { headers: { Authorization: `Bearer ${mintJWT(`${data.userPrefix}s${j}`)}` }, tags: { ep: 'setup', name: 'setup join' } }]);
    }
    for (const res of http.batch(reqs)) {
      if (res.status !== 201 && res.status !== 200) throw new Error(`setup join: ${res.status} ${res.body}`);
      tokens.push(res.json().token);
    }
  }
  data.tokens = tokens;
  data.setupFans = P.fans;
  return data;
}

const jwts = {}; // per VU: user -> JWT, minted on first use

export default function (data) {
  const i = Math.floor(Math.random() * data.tokens.length);
  const user = `${data.userPrefix}s${i}`;
  const fan = new Fan(user, jwts[user] || (jwts[user] = mintJWT(user)));
  fan.token = data.tokens[i];
  const elapsed = (Date.now() - exec.scenario.startTime) / 1000;
  const step = STEPS[Math.min(STEPS.length - 1, Math.floor(elapsed / stepLength))];
  const q = fan.poll({ step: String(step) });
  const waiting = q !== null && q.status === 'WAITING' && q.position >= 1 && q.position <= data.tokens.length;
  check(q, { 'poll: WAITING with a position in the line': () => waiting });
  if (q && !waiting) notWaiting.add(1);
}
