// The fan's page: sign-in, the concert list, the line, the seat map, points, payment and the receipt.
// Plain JavaScript, no build step. The page speaks only the public API of openapi.yaml.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const JWT_KEY = 'ticketrush.jwt';
  const num = new Intl.NumberFormat('en-US');
  const when = new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' });

  // Every error code of the contract, in words a fan understands.
  const MESSAGES = {
    UNAUTHENTICATED: 'Your sign-in has expired or is not valid. Please sign in again.',
    QUEUE_TOKEN_INVALID: 'We could not recognise your place in line. Please join the line again.',
    QUEUE_NOT_ACTIVE: 'It is not your turn yet. Keep this page open; it moves on by itself.',
    QUEUE_TOKEN_EXPIRED: 'Your turn has ended. Join the line again to try once more.',
    POW_REQUIRED: 'Your browser has to solve a short puzzle before joining. Please try again.',
    POW_INVALID: 'The puzzle answer was not accepted. Please try again.',
    ACCESS_CODE_REQUIRED: 'This sale needs an access code. Enter the code you received.',
    ACCESS_CODE_INVALID: 'That access code is not valid, or someone else already used it.',
    NOT_FOUND: 'We could not find that. It may have been removed.',
    SEAT_UNAVAILABLE: 'Someone else just took that seat. Please pick another one.',
    HOLD_LIMIT_REACHED: 'You already hold as many seats as you may. Pay for or cancel one first.',
    INSUFFICIENT_BALANCE: 'You do not have enough points. Charge points, then pay.',
    RESERVATION_NOT_HELD: 'This seat is no longer held for you.',
    IDEMPOTENCY_CONFLICT: 'This was already sent with different details. Please reload the page.',
    BALANCE_LIMIT: 'That would take your points past the limit of 1,000,000,000.',
    SALE_NOT_OPEN: 'The sale has not opened yet. Please come back when it opens.',
    SALE_CLOSED: 'This sale has closed. The line takes nobody any more.',
    SOLD_OUT: 'Sold out: every seat of this concert is sold.',
    DRAW_NOT_READY: 'The draw has not happened yet.',
    RESERVATION_EXPIRED: 'Your hold ran out before payment, so the seat went back on sale. Please pick a seat again.',
    INVALID_AMOUNT: 'Enter a whole number of points from 1 to 10,000,000.',
    INVALID_REQUEST: 'Something in the request was not right. Please reload the page and try again.',
    PAYLOAD_TOO_LARGE: 'That was too much to send at once.',
    UNSUPPORTED_MEDIA_TYPE: 'This page is out of date. Please reload it.',
    REQUEST_TIMEOUT: 'Your connection is slow and the request did not arrive in time. Please try again.',
    RATE_LIMITED: 'Too many requests at once. We will try again in a moment.',
    UNAVAILABLE: 'The service is very busy. We will try again in a moment.',
    NETWORK: 'We cannot reach the service. Check your connection; we will keep trying.',
    INTERNAL: 'Something went wrong on our side. Please try again.',
    METHOD_NOT_ALLOWED: 'This page is out of date. Please reload it.',
    HEADERS_TOO_LARGE: 'Your browser sent too much with the request. Clear the data this site keeps and reload.',
    NOT_IMPLEMENTED: 'Your browser sent something the service does not support. Please reload the page.',
    HTTP_VERSION_NOT_SUPPORTED: 'Your browser spoke in a way the service does not support. Please update it.',
  };
  const words = (e) => MESSAGES[e.code] || `Something went wrong (${e.code}). Please try again.`;

  class ApiError extends Error {
    constructor(status, code, retryAfter) {
      super(code);
      this.status = status;
      this.code = code;
      this.retryAfter = retryAfter;
    }
  }

  // state
  let jwt = null;
  let user = null;
  let concertId = null;
  let token = null; // the queue token of (user, concert)
  let streamWorks = true; // until GET /v1/queue/events answers 404 or 405
  let pollTimer = null;
  let updates = 0;
  let ticket = null;
  let shopTimer = null;
  let tick = null;
  let schedules = [];
  let scheduleId = null;
  let seatButtons = new Map();
  let reservation = null;

  // ---- small helpers -------------------------------------------------------------------------------
  const show = (el, on) => { el.hidden = !on; };
  function notice(text) {
    $('notice').textContent = text || '';
    show($('notice'), Boolean(text));
  }
  function duration(secs) {
    secs = Math.max(0, Math.round(secs));
    const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = secs % 60;
    if (h > 0) return `${h} h ${m} min`;
    if (m > 0) return `${m} min ${String(s).padStart(2, '0')} s`;
    return `${s} s`;
  }
  function randomKey() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }
  function claims(t) {
    try {
      let p = t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      while (p.length % 4) p += '=';
      return JSON.parse(atob(p));
    } catch (e) {
      return null;
    }
  }
  const queueKey = () => `ticketrush.queue.${user}.${concertId}`;
  const holdKey = () => `ticketrush.hold.${user}.${concertId}`;

  async function api(method, path, opts = {}) {
    const headers = { Accept: 'application/json' };
    if (jwt) headers.Authorization = `Bearer ${jwt}`;
    if (opts.queue) headers['X-Queue-Token'] = opts.queue;
    if (opts.idem) headers['Idempotency-Key'] = opts.idem;
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    let res;
    try {
      res = await fetch(path, { method, headers, cache: 'no-store', credentials: 'omit',
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    } catch (e) {
      throw new ApiError(0, 'NETWORK', 0);
    }
    if (res.status === 204) return null;
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      throw new ApiError(res.status, (data && data.code) || `HTTP_${res.status}`,
        Number(res.headers.get('Retry-After')) || 0);
    }
    return data;
  }

  // ---- sign-in -------------------------------------------------------------------------------------
  function takeFragmentToken() {
    const m = location.hash.match(/(?:^#|&)token=([^&]+)/);
    if (!m) return;
    localStorage.setItem(JWT_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search); // the token leaves the address bar
  }
  function signedIn() {
    jwt = localStorage.getItem(JWT_KEY);
    const c = jwt && claims(jwt);
    if (!c || typeof c.sub !== 'string' || (c.exp && c.exp * 1000 < Date.now())) {
      jwt = null;
      return false;
    }
    user = c.sub;
    $('who').textContent = `Signed in as ${user}`;
    show($('signout'), true);
    return true;
  }
  function askSignIn(message) {
    localStorage.removeItem(JWT_KEY);
    jwt = null;
    for (const id of ['concerts', 'concert']) show($(id), false);
    show($('signin'), true);
    show($('signout'), false);
    $('who').textContent = '';
    notice(message || '');
  }
  $('signin-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    localStorage.setItem(JWT_KEY, $('jwt').value.trim());
    $('jwt').value = '';
    if (!signedIn()) {
      askSignIn('That does not look like a valid sign-in token.');
      return;
    }
    show($('signin'), false);
    notice('');
    route();
  });
  $('signout').addEventListener('click', () => { askSignIn(''); });

  // ---- the concert list ----------------------------------------------------------------------------
  async function concertList() {
    const list = await api('GET', '/v1/concerts');
    return Array.isArray(list) ? list : [];
  }
  async function showConcerts() {
    show($('concerts'), true);
    const ul = $('concert-list');
    try {
      const list = await concertList();
      ul.replaceChildren(...list.map((c) => {
        const li = document.createElement('li');
        const a = document.createElement('a');
        a.href = `/concerts/${encodeURIComponent(c.id)}`;
        a.textContent = c.title;
        const venue = document.createElement('span');
        venue.className = 'muted';
        venue.textContent = c.venue;
        li.append(a, venue);
        return li;
      }));
      show($('no-concerts'), list.length === 0);
    } catch (e) {
      notice(words(e));
    }
  }

  // ---- the line ------------------------------------------------------------------------------------
  function saveToken(t) {
    token = t;
    if (t) localStorage.setItem(queueKey(), t);
    else localStorage.removeItem(queueKey());
  }
  function stopFollowing() {
    clearTimeout(pollTimer);
    pollTimer = null;
  }
  function showJoin(text) {
    stopFollowing();
    show($('join'), true);
    show($('line'), Boolean(text));
    show($('waiting-figures'), false);
    show($('prequeue'), false);
    show($('leave'), false);
    $('status').textContent = text || '';
    $('line').dataset.status = '';
  }

  async function showConcert(id) {
    concertId = id;
    show($('concert'), true);
    token = localStorage.getItem(queueKey());
    try {
      const c = (await concertList()).find((x) => x.id === id);
      if (!c) {
        $('concert-title').textContent = 'Concert not found';
        notice('This concert does not exist, or it is no longer on sale.');
        return;
      }
      $('concert-title').textContent = c.title;
      $('concert-venue').textContent = c.venue;
      document.title = `${c.title} · ticketrush`;
    } catch (e) {
      notice(words(e));
    }
    const held = localStorage.getItem(holdKey());
    if (held) loadHold(held);
    if (token) follow();
    else showJoin('');
  }

  $('join-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {};
    const code = $('access-code').value.trim();
    if (code) body.accessCode = code;
    $('join-button').disabled = true;
    const path = `/v1/concerts/${encodeURIComponent(concertId)}/queue`;
    try {
      let t;
      try {
        t = await api('POST', path, Object.keys(body).length ? { body } : {});
      } catch (e) {
        if (e.code !== 'POW_REQUIRED') throw e;
        // The concert asks for a proof of work: fetch a challenge, solve it in a worker, join with it.
        const ch = await api('POST', `${path}/challenge`);
        const nonce = await solve(ch);
        t = await api('POST', path, { body: { ...body, challenge: ch.challenge, nonce } });
      }
      notice('');
      saveToken(t.token);
      render(t);
      follow(t);
    } catch (e) {
      if (e.code === 'ACCESS_CODE_REQUIRED' || e.code === 'ACCESS_CODE_INVALID') show($('access-code-field'), true);
      failed(e);
    } finally {
      $('join-button').disabled = false;
    }
  });

  // solve finds the nonce of a proof-of-work challenge in a Web Worker, showing its progress.
  function solve(ch) {
    return new Promise((resolve, reject) => {
      const worker = new Worker('/static/pow.js');
      const bar = $('pow-progress');
      bar.value = 0;
      show($('pow'), true);
      const done = () => {
        worker.terminate();
        show($('pow'), false);
      };
      worker.onmessage = (ev) => {
        if (ev.data.nonce !== undefined) {
          done();
          resolve(ev.data.nonce);
          return;
        }
        bar.value = 1 - Math.exp(-ev.data.tries / ev.data.expected); // the chance to have found it by now
      };
      worker.onerror = () => {
        done();
        reject(new ApiError(0, 'POW_INVALID', 0));
      };
      worker.postMessage({ challenge: ch.challenge, bits: ch.bits });
    });
  }

  $('leave').addEventListener('click', async () => {
    try {
      await api('DELETE', '/v1/queue', { queue: token });
    } catch (e) {
      if (e.status !== 401 && e.status !== 410) { failed(e); return; }
    }
    saveToken(null);
    showJoin('You left the line.');
  });

  // follow keeps the status live: the event stream when the service has one, else polling at
  // pollAfterSeconds. t is a status already shown, if any.
  function follow(t) {
    stopFollowing();
    if (t && (final(t.status) || t.status === 'ACTIVE')) return;
    if (streamWorks) stream();
    else poll();
  }
  const final = (s) => s === 'EXPIRED' || s === 'DONE' || s === 'SOLD_OUT';
  function later(secs) {
    stopFollowing();
    pollTimer = setTimeout(follow, Math.max(1, secs || 5) * 1000);
  }

  async function poll() {
    if (!token) return;
    try {
      const t = await api('GET', '/v1/queue', { queue: token });
      render(t);
      if (!final(t.status) && t.status !== 'ACTIVE') later(t.pollAfterSeconds);
    } catch (e) {
      lineFailed(e);
    }
  }

  // stream reads GET /v1/queue/events (Server-Sent Events, event "status"). EventSource cannot send the
  // Authorization and X-Queue-Token headers, so this reads the stream with fetch.
  async function stream() {
    let res;
    try {
      res = await fetch('/v1/queue/events', { cache: 'no-store', credentials: 'omit',
        headers: { Accept: 'text/event-stream', Authorization: `Bearer ${jwt}`, 'X-Queue-Token': token } });
    } catch (e) {
      streamWorks = false;
      poll();
      return;
    }
    if (res.status === 404 || res.status === 405 || (res.ok && !res.body)) {
      streamWorks = false; // no stream here: poll
      poll();
      return;
    }
    if (!res.ok) {
      let code = `HTTP_${res.status}`;
      try { code = (await res.json()).code || code; } catch (e) { /* not JSON */ }
      lineFailed(new ApiError(res.status, code, Number(res.headers.get('Retry-After')) || 0));
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let last = null;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data += line.slice(5).replace(/^ /, '');
          }
          if (event === 'status' && data) {
            last = JSON.parse(data);
            render(last);
          }
        }
      }
    } catch (e) {
      streamWorks = false; // the stream broke: poll from now on
    }
    if (!last || !(final(last.status) || last.status === 'ACTIVE')) later(last ? last.pollAfterSeconds : 1);
  }

  function lineFailed(e) {
    if (e.code === 'QUEUE_TOKEN_INVALID' || e.code === 'QUEUE_TOKEN_EXPIRED') {
      saveToken(null);
      showJoin(words(e));
      return;
    }
    failed(e);
    if (e.status !== 401) later(e.retryAfter || 5);
  }

  function failed(e) {
    if (e.code === 'UNAUTHENTICATED') {
      askSignIn(words(e));
      return;
    }
    notice(words(e));
  }

  // render shows one queue status. Unknown statuses read "please wait" and are polled again.
  function render(t) {
    ticket = t;
    if (t.token && t.token !== token) saveToken(t.token); // a pre-queue token may come back renewed
    updates += 1;
    const line = $('line');
    line.dataset.status = t.status;
    line.dataset.updates = String(updates);
    $('checked').textContent = `Checked at ${new Date().toLocaleTimeString()}.`;
    show($('join'), false);
    show(line, t.status !== 'ACTIVE'); // when ACTIVE the shop says it is the fan's turn
    show($('leave'), t.status === 'WAITING' || t.status === 'PREQUEUE');
    show($('waiting-figures'), t.status === 'WAITING');
    show($('prequeue'), t.status === 'PREQUEUE');
    show($('draw-key'), Boolean(t.drawKey));
    $('draw-key-value').textContent = t.drawKey || '';
    let text;
    switch (t.status) {
      case 'WAITING':
        text = t.position === 1 ? 'You are next in line.' : `You are number ${num.format(t.position)} in line.`;
        $('position').textContent = num.format(t.position);
        $('wait').textContent = t.estimatedWaitSeconds > 0 ? `about ${duration(t.estimatedWaitSeconds)}` : 'any moment now';
        break;
      case 'PREQUEUE':
        text = 'You are in the pre-queue. Your place is drawn when the sale opens.';
        $('draw-link').href = `/v1/concerts/${encodeURIComponent(t.concertId)}/draw`;
        countdown();
        break;
      case 'ACTIVE':
        text = 'It is your turn.';
        openShop();
        break;
      case 'EXPIRED':
        saveToken(null);
        closeShop();
        showJoin('Your turn has ended, or you were away too long and lost your place. You can join the line again.');
        return;
      case 'DONE':
        saveToken(null);
        closeShop();
        text = 'You are done: your purchase is complete.';
        break;
      case 'SOLD_OUT':
        saveToken(null);
        closeShop();
        text = 'Sold out: every seat of this concert is sold.';
        break;
      default:
        text = 'Please wait, we will check again.';
    }
    if ($('status').textContent !== text) $('status').textContent = text; // aria-live speaks changes only
  }

  // ---- countdowns ----------------------------------------------------------------------------------
  function countdown() {
    if (!tick) tick = setInterval(countdown, 1000);
    const now = Date.now();
    if (ticket && ticket.status === 'PREQUEUE' && ticket.opensAt) {
      $('opens-in').textContent = duration((Date.parse(ticket.opensAt) - now) / 1000);
    }
    if (ticket && ticket.status === 'ACTIVE' && ticket.activeUntil) {
      const left = (Date.parse(ticket.activeUntil) - now) / 1000;
      $('time-left').textContent = duration(left);
      if (left <= 0 && !pollTimer) later(1); // the turn is over: ask the service
    }
    if (reservation && reservation.status === 'HELD') {
      const left = (Date.parse(reservation.expiresAt) - now) / 1000;
      $('hold-left').textContent = duration(left);
      if (left <= 0) loadHold(reservation.id);
    }
  }

  // ---- the shop: dates and the seat map ------------------------------------------------------------
  function openShop() {
    countdown();
    show($('shop'), true);
    if (shopTimer) return;
    refreshShop();
    shopTimer = setInterval(refreshShop, 5000);
  }
  function closeShop() {
    clearInterval(shopTimer);
    shopTimer = null;
    show($('shop'), false);
  }

  async function refreshShop() {
    try {
      schedules = await api('GET', `/v1/concerts/${encodeURIComponent(concertId)}/schedules`, { queue: token });
      renderDates();
      if (!scheduleId && schedules.length) {
        const open = schedules.find((s) => s.availableSeats > 0) || schedules[0];
        scheduleId = open.id;
      }
      if (scheduleId) await refreshSeats();
    } catch (e) {
      if (e.status === 410 || e.status === 401 || e.status === 403) {
        closeShop();
        poll(); // ask the line what happened
        return;
      }
      notice(words(e));
    }
  }

  function renderDates() {
    $('dates').replaceChildren(...schedules.map((s) => {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'date';
      b.dataset.schedule = s.id;
      b.setAttribute('aria-pressed', String(s.id === scheduleId));
      const left = s.availableSeats > 0 ? `${num.format(s.availableSeats)} of ${num.format(s.totalSeats)} seats left` : 'sold out';
      b.textContent = `${when.format(new Date(s.startsAt))}: ${left}`;
      b.addEventListener('click', () => {
        scheduleId = s.id;
        seatButtons = new Map();
        renderDates();
        refreshSeats();
      });
      li.append(b);
      return li;
    }));
  }

  async function refreshSeats() {
    const id = scheduleId;
    const seats = await api('GET', `/v1/concerts/${encodeURIComponent(concertId)}/schedules/${encodeURIComponent(id)}/seats`, { queue: token });
    if (id !== scheduleId) return;
    const s = schedules.find((x) => x.id === id);
    $('seatmap-h').textContent = s ? `Seats on ${when.format(new Date(s.startsAt))}` : 'Seats';
    show($('seatmap-box'), true);
    const map = $('seatmap');
    if (seatButtons.size === 0 || seatButtons.size !== seats.length) {
      seatButtons = new Map();
      const groups = new Map();
      for (const seat of seats) {
        if (!groups.has(seat.section)) groups.set(seat.section, []);
        groups.get(seat.section).push(seat);
      }
      map.replaceChildren(...Array.from(groups, ([section, list]) => {
        const fs = document.createElement('fieldset');
        const lg = document.createElement('legend');
        lg.textContent = `${section}: ${num.format(list[0].price)} points`;
        const grid = document.createElement('div');
        grid.className = 'seats';
        for (const seat of list) {
          const b = document.createElement('button');
          b.type = 'button';
          b.dataset.seat = seat.id;
          b.textContent = seat.id.slice(seat.section.length + 1) || seat.id;
          b.addEventListener('click', () => hold(seat));
          seatButtons.set(seat.id, b);
          grid.append(b);
        }
        fs.append(lg, grid);
        return fs;
      }));
    }
    const counts = { AVAILABLE: 0, HELD: 0, SOLD: 0 };
    for (const seat of seats) {
      const b = seatButtons.get(seat.id);
      const mine = reservation && reservation.status === 'HELD' && reservation.seatId === seat.id && reservation.scheduleId === id;
      counts[seat.status] = (counts[seat.status] || 0) + 1;
      b.className = `seat s-${seat.status}${mine ? ' mine' : ''}`;
      b.disabled = seat.status !== 'AVAILABLE';
      const label = { AVAILABLE: 'available', HELD: 'held', SOLD: 'sold' }[seat.status] || 'unavailable';
      b.setAttribute('aria-label', `Seat ${seat.id}, ${num.format(seat.price)} points, ${mine ? 'held by you' : label}`);
    }
    let summary;
    if (seats.length > 0 && counts.SOLD === seats.length) summary = 'Sold out: every seat of this date is sold.';
    else if (counts.AVAILABLE === 0) summary = 'No seat is free right now. Held seats come back if they are not paid for; this map refreshes by itself.';
    else summary = `${num.format(counts.AVAILABLE)} seats available, ${num.format(counts.HELD)} held, ${num.format(counts.SOLD)} sold.`;
    if ($('seat-summary').textContent !== summary) $('seat-summary').textContent = summary;
    $('seatmap-box').dataset.state = counts.SOLD === seats.length ? 'SOLD_OUT' : 'OPEN';
  }

  // ---- holding, points, paying ---------------------------------------------------------------------
  async function hold(seat) {
    try {
      const r = await api('POST', '/v1/reservations', { queue: token, body: { scheduleId, seatId: seat.id } });
      notice('');
      showHold(r);
      refreshSeats();
    } catch (e) {
      failed(e);
      refreshSeats().catch(() => {});
    }
  }

  async function loadHold(id) {
    try {
      showHold(await api('GET', `/v1/reservations/${encodeURIComponent(id)}`));
    } catch (e) {
      localStorage.removeItem(holdKey());
      show($('hold'), false);
    }
  }

  async function showHold(r) {
    reservation = r;
    if (r.status !== 'HELD') {
      localStorage.removeItem(holdKey());
      show($('hold'), false);
      if (r.status === 'EXPIRED') notice(MESSAGES.RESERVATION_EXPIRED);
      return;
    }
    localStorage.setItem(holdKey(), r.id);
    $('hold-seat').textContent = `Seat ${r.seatId} for ${num.format(r.price)} points.`;
    show($('hold'), true);
    countdown();
    await refreshBalance();
  }

  async function refreshBalance() {
    try {
      const b = await api('GET', '/v1/points');
      $('balance').textContent = num.format(b.balance);
      $('balance').dataset.value = String(b.balance);
      if (reservation && !$('amount').value) $('amount').value = String(Math.max(1, reservation.price - b.balance));
    } catch (e) {
      failed(e);
    }
  }

  $('charge-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const amount = Number($('amount').value);
    if (!Number.isInteger(amount)) {
      notice(MESSAGES.INVALID_AMOUNT);
      return;
    }
    try {
      const c = await api('POST', '/v1/points/charges', { body: { amount }, idem: randomKey() });
      notice('');
      $('balance').textContent = num.format(c.balance);
      $('balance').dataset.value = String(c.balance);
      $('amount').value = '';
    } catch (e) {
      failed(e);
    }
  });

  $('cancel').addEventListener('click', async () => {
    if (!reservation) return;
    try {
      await api('DELETE', `/v1/reservations/${encodeURIComponent(reservation.id)}`);
    } catch (e) {
      failed(e);
    }
    reservation = null;
    localStorage.removeItem(holdKey());
    show($('hold'), false);
    if (shopTimer) refreshSeats().catch(() => {});
  });

  $('pay').addEventListener('click', async () => {
    if (!reservation) return;
    const r = reservation;
    $('pay').disabled = true;
    try {
      // The same key for every try of this reservation: a retry never pays twice.
      const p = await api('POST', '/v1/payments', { body: { reservationId: r.id }, idem: `pay-${r.id}` });
      notice('');
      receipt(r, p);
    } catch (e) {
      failed(e);
      if (e.code === 'RESERVATION_EXPIRED' || e.code === 'RESERVATION_NOT_HELD') loadHold(r.id);
    } finally {
      $('pay').disabled = false;
    }
  });

  function receipt(r, p) {
    reservation = null;
    localStorage.removeItem(holdKey());
    show($('hold'), false);
    const date = schedules.find((s) => s.id === r.scheduleId);
    const rows = [
      ['Seat', r.seatId],
      ['Date', date ? when.format(new Date(date.startsAt)) : r.scheduleId],
      ['Paid', `${num.format(p.amount)} points`],
      ['Points left', num.format(p.balance)],
      ['Paid at', new Date(p.paidAt).toLocaleString()],
      ['Payment', p.id],
    ];
    $('receipt-list').replaceChildren(...rows.map(([k, v]) => {
      const d = document.createElement('div');
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      d.append(dt, dd);
      return d;
    }));
    show($('receipt'), true);
    $('receipt').scrollIntoView();
    closeShop();
    poll(); // the line says DONE when this was the last hold
  }

  // Another tab of the same fan joined or left: follow its token (one token per fan and concert).
  window.addEventListener('storage', (ev) => {
    if (!concertId || ev.key !== queueKey() || ev.newValue === token) return;
    token = ev.newValue;
    if (token) follow();
    else showJoin('');
  });

  // ---- routing -------------------------------------------------------------------------------------
  function route() {
    const m = location.pathname.match(/^\/concerts\/([^/]+)\/?$/);
    if (m) showConcert(decodeURIComponent(m[1]));
    else showConcerts();
  }

  takeFragmentToken();
  if (signedIn()) route();
  else askSignIn('');
})();
