// Shared by the k6 scenarios: configuration, user JWTs minted here from JWT_SECRET, the API of
// docs/api.md as small functions with an endpoint tag on every request, and the thresholds
// each endpoint is held to. Plain k6 modules only: nothing is fetched from outside.
import http from 'k6/http';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import { check, sleep } from 'k6';
import { Counter, Rate } from 'k6/metrics';

// ---- configuration (environment, with the same development defaults as the Makefile) ----

function baseURL() {
  if (__ENV.BASE_URL) return __ENV.BASE_URL.replace(/\/$/, '');
  let addr = __ENV.HTTP_ADDR || '127.0.0.1:8080';
  if (addr.startsWith(':')) addr = '127.0.0.1' + addr;
  return 'http://' + addr;
}

export const BASE = baseURL();
export const JWT_SECRET = __ENV.JWT_SECRET || 'dev-jwt-secret-change-me-0123456789abcdef';
export const ADMIN_TOKEN = __ENV.ADMIN_TOKEN || 'dev-admin-token-change-me-0123456789ab';
export const PROFILE = (__ENV.PROFILE || 'short').toLowerCase();
// PURCHASE=off runs the waiting room only (join, poll, leave): for a service without the purchase path.
export const PURCHASE = (__ENV.PURCHASE || 'on').toLowerCase() !== 'off';
// POW_BITS=n asks the scenario's concert for a proof of work of n bits at every join (joinPowBits). A k6
// virtual user solves it in JavaScript, so keep n small (8: ~256 hashes a join): the load stays honest
// (every join fetches a challenge, carries a proof, and the server checks it and records its single use)
// while the load generator's CPU goes to load, not hashing. The server's cost does not depend on n.
export const POW_BITS = Number(__ENV.POW_BITS || 0);

// pick returns the settings of the running profile, with any NAME=value from the environment on top
// (numbers stay numbers).
export function pick(profiles) {
  const p = profiles[PROFILE];
  if (!p) throw new Error(`PROFILE=${PROFILE}: want one of ${Object.keys(profiles).join(', ')}`);
  const out = Object.assign({}, p);
  for (const k of Object.keys(out)) {
    const env = __ENV[k.replace(/([A-Z])/g, '_$1').toUpperCase()];
    if (env !== undefined && env !== '') out[k] = typeof out[k] === 'number' ? Number(env) : env;
  }
  return out;
}

// ---- user JWTs: HS256 with sub and exp, as the login service would mint them ----

const JWT_HEADER = encoding.b64encode('{"alg":"HS256","typ":"JWT"}', 'rawurl');

export function mintJWT(user, ttlSeconds = 4 * 3600) {
  const now = Math.floor(Date.now() / 1000);
  const payload = encoding.b64encode(JSON.stringify({ sub: user, iat: now, exp: now + ttlSeconds }), 'rawurl');
  const input = `${JWT_HEADER}.${payload}`;
  return `${input}.${crypto.hmac('sha256', JWT_SECRET, input, 'base64rawurl')}`;
}

// ---- requests ----

// Every request carries the tag ep (one per endpoint) and name (the route pattern, so that ids in
// paths do not make a series each). expect lists the statuses that are an answer, not a failure: a
// 409 SEAT_UNAVAILABLE is how a lost race is told, not an error of the service.
function params(ep, name, headers, expect, extraTags) {
  return {
    headers,
    tags: Object.assign({ ep, name }, extraTags || {}),
    responseCallback: http.expectedStatuses(...expect),
  };
}

function json(res) {
  try {
    return res.json();
  } catch (e) {
    return null;
  }
}

// code returns the problem code of an error answer, or ''.
export function code(res) {
  const b = json(res);
  return (b && b.code) || '';
}

// Fan is one user: a JWT and, once joined, a queue token.
export class Fan {
  constructor(user, jwt) {
    this.user = user;
    this.jwt = jwt || mintJWT(user);
    this.token = '';
  }

  auth(extra) {
    return Object.assign({ Authorization: `Bearer ${this.jwt}` }, extra || {});
  }

  gated(extra) {
    return this.auth(Object.assign({ 'X-Queue-Token': this.token }, extra || {}));
  }

  // join returns the queue body, or null when the join failed.
  join(concertId, tags) {
    let proof = null;
    let headers = this.auth();
    if (POW_BITS > 0) {
      proof = JSON.stringify(this.proof(concertId, tags));
      headers = this.auth({ 'Content-Type': 'application/json' });
    }
    // A join once every seat is sold is 409 SOLD_OUT (the line is closed): an answer, not a failure; the
    // fan goes home and join returns null, as for a refused join.
    const res = http.post(`${BASE}/v1/concerts/${concertId}/queue`, proof,
      params('join', 'POST /v1/concerts/{id}/queue', headers, [200, 201, 409], tags));
    const body = res.status === 200 || res.status === 201 ? json(res) : null;
    const soldOut = res.status === 409 && (json(res) || {}).code === 'SOLD_OUT';
    check(res, { 'join: 201 or 200 with a token, or 409 SOLD_OUT': () => (body !== null && !!body.token) || soldOut });
    if (body) this.token = body.token;
    return body;
  }

  // proof fetches a challenge and solves it: {challenge, nonce}.
  proof(concertId, tags) {
    const res = http.post(`${BASE}/v1/concerts/${concertId}/queue/challenge`, null,
      params('challenge', 'POST /v1/concerts/{id}/queue/challenge', this.auth(), [201], tags));
    if (res.status !== 201) return {};
    const c = json(res);
    for (let i = 0; ; i++) {
      const nonce = String(i);
      if (zeroBits(crypto.sha256(c.challenge + nonce, 'hex')) >= c.bits) return { challenge: c.challenge, nonce };
    }
  }

  poll(tags) {
    const res = http.get(`${BASE}/v1/queue`, params('poll', 'GET /v1/queue', this.auth({ 'X-Queue-Token': this.token }), [200], tags));
    const body = res.status === 200 ? json(res) : null;
    check(res, { 'poll: 200 with a status': () => body !== null && !!body.status });
    return body;
  }

  leave() {
    const res = http.del(`${BASE}/v1/queue`, null, params('leave', 'DELETE /v1/queue', this.auth({ 'X-Queue-Token': this.token }), [204]));
    check(res, { 'leave: 204': (r) => r.status === 204 });
  }

  schedules(concertId) {
    const res = http.get(`${BASE}/v1/concerts/${concertId}/schedules`,
      params('schedules', 'GET /v1/concerts/{id}/schedules', this.gated(), [200]));
    const body = res.status === 200 ? json(res) : null;
    check(res, { 'schedules: 200 with a list': () => Array.isArray(body) });
    return body || [];
  }

  seats(concertId, scheduleId) {
    const res = http.get(`${BASE}/v1/concerts/${concertId}/schedules/${scheduleId}/seats`,
      params('seats', 'GET /v1/concerts/{id}/schedules/{id}/seats', this.gated(), [200]));
    const body = res.status === 200 ? json(res) : null;
    check(res, { 'seats: 200 with a seat map': () => Array.isArray(body) });
    return body || [];
  }

  // hold returns {reservation} on 201, {refused: code} on a 409 (the seat is taken, or the fan holds
  // as many as it may), or {} on anything else.
  hold(scheduleId, seatId) {
    const res = http.post(`${BASE}/v1/reservations`, JSON.stringify({ scheduleId, seatId }),
      params('hold', 'POST /v1/reservations', this.gated({ 'Content-Type': 'application/json' }), [201, 409]));
    if (res.status === 201) {
      const r = json(res);
      check(r, { 'hold: 201 is HELD for this seat': (b) => b && b.status === 'HELD' && b.seatId === seatId && !!b.id });
      return { reservation: r };
    }
    if (res.status === 409) {
      const c = code(res);
      check(c, { 'hold: a 409 is SEAT_UNAVAILABLE or HOLD_LIMIT_REACHED': (x) => x === 'SEAT_UNAVAILABLE' || x === 'HOLD_LIMIT_REACHED' });
      return { refused: c };
    }
    return {};
  }

  cancel(resId) {
    const res = http.del(`${BASE}/v1/reservations/${resId}`, null,
      params('cancel', 'DELETE /v1/reservations/{id}', this.auth(), [204, 409]));
    check(res, { 'cancel: 204 (or 409 RESERVATION_NOT_HELD once lapsed)': (r) => r.status === 204 || code(r) === 'RESERVATION_NOT_HELD' });
    return res.status === 204;
  }

  charge(amount, key) {
    const res = http.post(`${BASE}/v1/points/charges`, JSON.stringify({ amount }),
      params('charge', 'POST /v1/points/charges', this.auth({ 'Content-Type': 'application/json', 'Idempotency-Key': key }), [201]));
    const body = res.status === 201 ? json(res) : null;
    check(body, { 'charge: 201 with the new balance': (b) => b !== null && b.amount === amount && b.balance >= amount });
    return body;
  }

  balance() {
    const res = http.get(`${BASE}/v1/points`, params('balance', 'GET /v1/points', this.auth(), [200]));
    const body = res.status === 200 ? json(res) : null;
    check(body, { 'balance: 200 with a balance': (b) => b !== null && typeof b.balance === 'number' });
    return body ? body.balance : null;
  }

  // pay returns the payment, or {expired: true} when the hold lapsed first (410), or null.
  pay(resId, key) {
    const res = http.post(`${BASE}/v1/payments`, JSON.stringify({ reservationId: resId }),
      params('pay', 'POST /v1/payments', this.auth({ 'Content-Type': 'application/json', 'Idempotency-Key': key }), [200, 201, 410]));
    if (res.status === 410) return { expired: true };
    const body = res.status === 200 || res.status === 201 ? json(res) : null;
    check(body, { 'pay: 201/200 for this reservation': (b) => b !== null && b.reservationId === resId && !!b.id });
    return body;
  }
}

// Money as the fans saw it, summed over the run; the invariant check (loadtest/check) holds the service's
// balances and sales to these. Count each charge and payment once, from its first answer.
export const money = {
  charged: new Counter('points_charged'),
  paid: new Counter('points_paid'),
  balanceAsExpected: new Rate('balance_as_expected'),
};

// settle pays each hold (charging their total first), then checks that the balance is what this
// fan expects: it is a new user, so charges − payments. It returns the holds it paid.
export function settle(fan, holds, payTwiceShare) {
  const total = holds.reduce((sum, h) => sum + h.price, 0);
  const c = fan.charge(total, `${fan.user}-charge`);
  if (!c) return { paid: [], expired: 0 };
  money.charged.add(total);
  const paid = [];
  let expired = 0;
  let spent = 0;
  for (const h of holds) {
    const key = `${fan.user}-pay-${h.id}`;
    const p = fan.pay(h.id, key);
    if (p && p.expired) {
      expired++;
      continue;
    }
    if (!p) continue;
    money.paid.add(p.amount);
    spent += p.amount;
    paid.push(h);
    if (Math.random() < payTwiceShare) {
      const again = fan.pay(h.id, key);
      check(again, { 'pay: a retry with the same Idempotency-Key returns the same payment': (a) => a !== null && a.id === p.id && a.amount === p.amount });
    }
  }
  const b = fan.balance();
  money.balanceAsExpected.add(b !== null && b === total - spent);
  return { paid, expired };
}

// ---- admin ----

export function admin(method, path, body) {
  const res = http.request(method, `${BASE}${path}`, body === undefined ? null : JSON.stringify(body), {
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    tags: { ep: 'admin', name: `${method} ${path.replace(/concerts\/[a-z0-9]+/, 'concerts/{id}')}` },
  });
  if (res.status < 200 || res.status > 299) {
    throw new Error(`${method} ${path}: ${res.status} ${res.body}`);
  }
  return json(res);
}

// createConcert creates the scenario's concert and checks that the service answers as docs/api.md says
// (and, unless PURCHASE=off, that the purchase path is served). It returns the setup data every
// scenario shares; the invariant check (loadtest/check) reads it from k6's summary export.
export function createConcert(scenario, spec) {
  const health = http.get(`${BASE}/readyz`, { tags: { ep: 'admin', name: 'GET /readyz' } });
  if (health.status !== 200) {
    exec.test.abort(`${BASE}/readyz answers ${health.status}: start the service (make run) or set BASE_URL`);
  }
  const runId = Date.now().toString(36);
  if (POW_BITS > 0) spec = Object.assign({}, spec, { queue: Object.assign({}, spec.queue || {}, { joinPowBits: POW_BITS }) });
  const c = admin('POST', '/admin/v1/concerts', Object.assign({ title: `loadtest ${scenario} ${runId}`, venue: 'k6' }, spec));
  const data = {
    runId,
    scenario,
    baseUrl: BASE,
    concertId: c.id,
    schedules: c.schedules.map((s) => s.id),
    sections: spec.sections,
    queue: c.queue,
    userPrefix: `lt${runId}${scenario[0]}-`,
    purchase: PURCHASE,
  };
  if (PURCHASE) probePurchase(data);
  return data;
}

// probePurchase makes sure the purchase path answers before fans are sent at it: a route that is not
// served yet answers 404 to an ACTIVE fan.
function probePurchase(data) {
  if (data.queue.paused) return;
  const f = new Fan(`${data.userPrefix}probe`);
  const q = f.join(data.concertId);
  if (!q || q.status !== 'ACTIVE') return; // the line is not empty: the fans will find out
  const res = http.get(`${BASE}/v1/concerts/${data.concertId}/schedules`,
    { headers: f.gated(), tags: { ep: 'admin', name: 'probe' }, responseCallback: http.expectedStatuses(200, 404) });
  f.leave();
  if (res.status === 404) {
    exec.test.abort('the purchase path is not served (GET /v1/concerts/{id}/schedules is 404); run with PURCHASE=off for the waiting room alone');
  }
}

// ---- thresholds ----

// SLOs per endpoint tag, in ms: [p95, p99]. One machine runs k6, the service, Redis and Postgres, so
// these are loose; a dedicated load machine should tighten them.
export const SLO = {
  join: [200, 500],
  poll: [100, 250],
  leave: [200, 500],
  schedules: [200, 500],
  seats: [300, 800],
  hold: [200, 500],
  cancel: [200, 500],
  charge: [300, 800],
  pay: [400, 1000],
  balance: [200, 500],
};

// thresholds returns the common thresholds plus p95/p99 for each endpoint in eps. plannedIterations
// sets the allowance of dropped iterations (1%).
export function thresholds(eps, plannedIterations, extra) {
  const t = {
    http_req_failed: [{ threshold: 'rate<0.01', abortOnFail: true, delayAbortEval: '10s' }],
    dropped_iterations: [`count<${Math.max(1, Math.ceil(plannedIterations * 0.01))}`],
    checks: ['rate>0.99'],
  };
  for (const ep of eps) {
    t[`http_req_duration{ep:${ep}}`] = [`p(95)<${SLO[ep][0]}`, `p(99)<${SLO[ep][1]}`];
  }
  if (eps.includes('balance')) t.balance_as_expected = ['rate==1'];
  return Object.assign(t, extra || {});
}

// planned counts the iterations a ramping-arrival-rate scenario starts (per second rates).
export function planned(startRate, stages) {
  let n = 0;
  let rate = startRate;
  for (const s of stages) {
    const secs = seconds(s.duration);
    n += ((rate + s.target) / 2) * secs;
    rate = s.target;
  }
  return Math.round(n);
}

export function seconds(d) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(String(d));
  if (!m) throw new Error(`bad duration ${d}`);
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2]];
}

// ---- small helpers ----

export function between(lo, hi) {
  return lo + Math.random() * (hi - lo);
}

export function think(range) {
  sleep(between(range[0], range[1]));
}

// seatNumber is n of a seat id "<section>-<n>".
export function seatNumber(id) {
  return Number(id.slice(id.lastIndexOf('-') + 1));
}

// zeroBits counts the leading zero bits of a hex digest.
function zeroBits(hex) {
  let n = 0;
  for (const ch of hex) {
    const v = parseInt(ch, 16);
    if (v === 0) { n += 4; continue; }
    return n + (v < 2 ? 3 : v < 4 ? 2 : v < 8 ? 1 : 0);
  }
  return n;
}
