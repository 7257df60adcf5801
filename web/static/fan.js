// The fan's page: sign-in, the concert list, the line, the seat map, points, payment and the receipt.
// Plain JavaScript, no build step. The page speaks only the public API of openapi.yaml. Every word comes
// from the catalogue of the fan's language (i18n.js); numbers, prices, dates and times go through Intl.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const JWT_KEY = 'ticketrush.jwt';
  const LANG_KEY = 'ticketrush.lang';
  const CATALOGUES = window.TICKETRUSH_I18N;
  // The API names no time zone for a venue; the page shows its times in Korea's.
  const VENUE_TIME_ZONE = 'Asia/Seoul';
  const WINDOW_MS = 60000; // the admission rate is measured over the last minute of places
  const STILL_MS = 10000; // this long without a place gained (and not paused): the line is not moving

  // ---- words: the catalogue, Intl, the live region ------------------------------------------------
  let lang = 'en';
  let locale = 'en';
  let fmt = null;

  function chooseLang() {
    const saved = localStorage.getItem(LANG_KEY);
    if (saved && CATALOGUES[saved]) return saved;
    for (const l of navigator.languages || [navigator.language]) {
      const base = String(l).toLowerCase().split('-')[0];
      if (CATALOGUES[base]) return base;
    }
    return 'en';
  }

  function setLang(l) {
    lang = l;
    // The fan's own variant when the browser names one (en-GB), else the catalogue's (ko-KR).
    locale = (navigator.languages || []).find((x) => String(x).toLowerCase().split('-')[0] === l) || CATALOGUES[l]._locale;
    document.documentElement.lang = l;
    const unit = (u) => new Intl.NumberFormat(locale, { style: 'unit', unit: u, unitDisplay: 'short' });
    const zoneName = new Intl.DateTimeFormat(locale, { timeZone: VENUE_TIME_ZONE, timeZoneName: 'long' })
      .formatToParts(new Date()).find((p) => p.type === 'timeZoneName');
    fmt = {
      num: new Intl.NumberFormat(locale),
      plural: new Intl.PluralRules(locale),
      hour: unit('hour'), minute: unit('minute'), second: unit('second'),
      list: new Intl.ListFormat(locale, { type: 'unit', style: 'narrow' }),
      date: new Intl.DateTimeFormat(locale, { timeZone: VENUE_TIME_ZONE, weekday: 'short', year: 'numeric', month: 'short',
        day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' }),
      time: new Intl.DateTimeFormat(locale, { timeZone: VENUE_TIME_ZONE, hour: 'numeric', minute: '2-digit', second: '2-digit', timeZoneName: 'short' }),
      zone: zoneName ? zoneName.value : VENUE_TIME_ZONE,
    };
    for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
    for (const el of document.querySelectorAll('[data-i18n-label]')) el.setAttribute('aria-label', t(el.dataset.i18nLabel));
    $('lang').replaceChildren(...Object.keys(CATALOGUES).map((k) => {
      const o = document.createElement('option');
      o.value = k;
      o.lang = k;
      o.textContent = CATALOGUES[k]._name;
      o.selected = k === l;
      return o;
    }));
  }

  // t is the catalogue's words for key, {name} placeholders filled from vars; an entry that is an
  // object is chosen by the plural rule of vars.count.
  function t(key, vars) {
    let s = CATALOGUES[lang][key];
    if (s === undefined) s = CATALOGUES.en[key];
    if (s === undefined) return key;
    if (typeof s === 'object') s = s[fmt.plural.select(vars.count)] || s.other;
    return s.replace(/\{(\w+)\}/g, (m, k) => (vars && k in vars ? String(vars[k]) : m));
  }
  // fill sets el's content to the words of key with elements (a link, a <strong>) in its placeholders.
  function fill(el, key, nodes, vars) {
    const parts = t(key, vars).split(/\{(\w+)\}/);
    el.replaceChildren(...parts.map((p, i) => (i % 2 ? nodes[p] || '' : p)));
  }
  const strong = (id) => {
    const s = document.createElement('strong');
    if (id) s.id = id;
    return s;
  };
  const n = (x) => fmt.num.format(x);
  const points = (x) => t('points', { n: n(x), count: x });
  const dateText = (iso) => fmt.date.format(new Date(iso));

  // duration is a span of time in words: "2 min 5 sec", "2분 5초".
  function duration(secs) {
    secs = Math.max(0, Math.round(secs));
    const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = secs % 60;
    if (h > 0) return fmt.list.format([fmt.hour.format(h), fmt.minute.format(m)]);
    if (m > 0) return fmt.list.format([fmt.minute.format(m), fmt.second.format(s)]);
    return fmt.second.format(s);
  }
  // clock is a countdown as a clock face: 29:53, 1:02:03.
  function clock(secs) {
    secs = Math.max(0, Math.floor(secs));
    const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = secs % 60;
    const two = (x) => String(x).padStart(2, '0');
    return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
  }

  // say puts news that matters (place, status, errors) in the one polite live region. A countdown is
  // shown, never said.
  let lastSaid = '';
  function say(text) {
    if (!text || text === lastSaid) return;
    lastSaid = text;
    $('announce').textContent = text;
  }

  // Every error code of the contract, in words a fan understands (err.<CODE> in the catalogue).
  const words = (e) => (CATALOGUES[lang][`err.${e.code}`] || CATALOGUES.en[`err.${e.code}`]
    ? t(`err.${e.code}`) : t('err.other', { code: e.code }));

  class ApiError extends Error {
    constructor(status, code, retryAfter) {
      super(code);
      this.status = status;
      this.code = code;
      this.retryAfter = retryAfter;
    }
  }

  // ---- state ---------------------------------------------------------------------------------------
  let jwt = null;
  let user = null;
  let concert = null; // {id, title, venue}
  let concertId = null;
  let token = null; // the queue token of (user, concert)
  let streamWorks = true; // until GET /v1/queue/events answers 404 or 405
  let pollTimer = null;
  let updates = 0;
  let ticket = null;
  let passSite = null; // GET /site.json's passSite: null, or the URL an admitted fan goes on to (renderSite)
  let lastStatus = null; // the status shown before the current one
  let shopTimer = null;
  let tick = null;
  let schedules = [];
  let scheduleId = null;
  let seatButtons = new Map();
  let lastSeats = null;
  let reservation = null;
  let paid = null; // [reservation, payment] of the receipt shown
  let focusDates = false; // the turn has come: focus moves to the dates once they are drawn
  let samples = []; // [{at, position}] of the current token, for the admission rate
  let warned = 0; // the last "minutes left" warning said, in seconds
  const errors = {}; // element id -> the ApiError shown there (redrawn when the language changes)
  let noticeError = null;

  // ---- small helpers -------------------------------------------------------------------------------
  const show = (el, on) => { el.hidden = !on; };
  function notice(e) {
    noticeError = e || null;
    const text = e ? (typeof e === 'string' ? t(e) : words(e)) : '';
    $('notice').textContent = text;
    show($('notice'), Boolean(text));
    say(text);
  }
  // reveal scrolls el into view below the sticky clock: to the top of the window (top), or just enough.
  function reveal(el, top) {
    const clockEl = $('clock');
    const above = clockEl.hidden ? 0 : clockEl.getBoundingClientRect().height;
    const r = el.getBoundingClientRect();
    if (top || r.top < above) window.scrollTo({ top: window.scrollY + r.top - above - 8 });
    else if (r.bottom > window.innerHeight) window.scrollTo({ top: window.scrollY + r.bottom - window.innerHeight + 8 });
  }
  // fieldError shows an error beside the control that caused it (aria-describedby points there), says
  // it, and brings it into view.
  function fieldError(id, e, quiet) {
    errors[id] = e || null;
    const el = $(id);
    const text = e ? (typeof e === 'string' ? t(e) : words(e)) : '';
    el.textContent = text;
    show(el, Boolean(text));
    if (text && !quiet) { // quiet: only the words change (a new language), nothing new to say or show
      say(text);
      reveal(el, false);
    }
  }
  function randomKey() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }
  function claims(tk) {
    try {
      let p = tk.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      while (p.length % 4) p += '=';
      return JSON.parse(atob(p));
    } catch (e) {
      return null;
    }
  }
  const queueKey = () => `ticketrush.queue.${user}.${concertId}`;
  const holdKey = () => `ticketrush.hold.${user}.${concertId}`;
  const startKey = () => `ticketrush.start.${user}.${concertId}`;

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

  // ---- sound and notification at the turn ----------------------------------------------------------
  let audio = null;
  // Browsers start sound only after a gesture: the first click or key press readies it.
  function readyAudio() {
    try {
      audio = audio || new AudioContext();
      if (audio.state === 'suspended') audio.resume();
    } catch (e) {
      audio = null;
    }
  }
  document.addEventListener('pointerdown', readyAudio);
  document.addEventListener('keydown', readyAudio);
  function chime() {
    if (!audio) return;
    const at = audio.currentTime;
    for (const [freq, start] of [[880, 0], [1320, 0.18]]) {
      const o = audio.createOscillator();
      const g = audio.createGain();
      o.frequency.value = freq;
      g.gain.setValueAtTime(0.0001, at + start);
      g.gain.exponentialRampToValueAtTime(0.25, at + start + 0.02);
      g.gain.exponentialRampToValueAtTime(0.0001, at + start + 0.35);
      o.connect(g).connect(audio.destination);
      o.start(at + start);
      o.stop(at + start + 0.4);
    }
    $('line').dataset.chimed = 'true';
  }
  const canNotify = () => 'Notification' in window;
  $('notify').addEventListener('click', async () => {
    try { await Notification.requestPermission(); } catch (e) { /* refused or unsupported */ }
    show($('notify-box'), canNotify() && Notification.permission === 'default');
  });
  function notifyTurn(left) {
    if (!canNotify() || Notification.permission !== 'granted') return;
    try {
      const note = new Notification(t('notify.title'), { body: t('notify.body', { left: duration(left) }), lang, tag: 'ticketrush-turn' });
      note.onclick = () => { window.focus(); note.close(); };
      $('line').dataset.notified = 'true';
    } catch (e) { /* a browser that shows notifications only from a service worker */ }
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
    $('who').textContent = t('who', { user });
    show($('signout'), true);
    return true;
  }
  function askSignIn(e) {
    localStorage.removeItem(JWT_KEY);
    jwt = null;
    for (const id of ['concerts', 'concert']) show($(id), false);
    show($('signin'), true);
    show($('signout'), false);
    $('who').textContent = '';
    notice(null);
    fieldError('signin-error', e || null);
  }
  $('signin-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    localStorage.setItem(JWT_KEY, $('jwt').value.trim());
    $('jwt').value = '';
    if (!signedIn()) {
      askSignIn('signin.invalid');
      $('jwt').focus();
      return;
    }
    show($('signin'), false);
    fieldError('signin-error', null);
    route();
  });
  $('signout').addEventListener('click', () => { askSignIn(null); });

  // ---- the concert list ----------------------------------------------------------------------------
  async function concertList() {
    const list = await api('GET', '/v1/concerts');
    return Array.isArray(list) ? list : [];
  }
  async function showConcerts() {
    show($('concerts'), true);
    document.title = t('title.concerts');
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
      notice(e);
    }
  }

  // ---- the line ------------------------------------------------------------------------------------
  function saveToken(tk) {
    if (tk !== token) samples = [];
    token = tk;
    if (tk) localStorage.setItem(queueKey(), tk);
    else {
      localStorage.removeItem(queueKey());
      localStorage.removeItem(startKey());
    }
  }
  function stopFollowing() {
    clearTimeout(pollTimer);
    pollTimer = null;
  }
  function showJoin(key) {
    stopFollowing();
    show($('join'), true);
    show($('line'), Boolean(key));
    show($('waiting-box'), false);
    show($('prequeue'), false);
    show($('leave'), false);
    show($('checked'), false);
    $('status').textContent = key ? t(key) : '';
    $('status').dataset.key = key || '';
    $('line').dataset.status = '';
    if (key) say(t(key));
    titleTick();
  }

  async function showConcert(id) {
    concertId = id;
    show($('concert'), true);
    token = localStorage.getItem(queueKey());
    try {
      const c = (await concertList()).find((x) => x.id === id);
      if (!c) {
        $('concert-title').textContent = t('concert.notfound');
        notice('concert.gone');
        return;
      }
      concert = c;
      $('concert-title').textContent = c.title;
      $('concert-venue').textContent = c.venue;
      titleTick();
    } catch (e) {
      notice(e);
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
      let tk;
      try {
        tk = await api('POST', path, Object.keys(body).length ? { body } : {});
      } catch (e) {
        if (e.code !== 'POW_REQUIRED') throw e;
        // The concert asks for a proof of work: fetch a challenge, solve it in a worker, join with it.
        const ch = await api('POST', `${path}/challenge`);
        const nonce = await solve(ch);
        tk = await api('POST', path, { body: { ...body, challenge: ch.challenge, nonce } });
      }
      fieldError('join-error', null);
      notice(null);
      saveToken(tk.token);
      render(tk);
      follow(tk);
    } catch (e) {
      if (e.code === 'ACCESS_CODE_REQUIRED' || e.code === 'ACCESS_CODE_INVALID') {
        show($('access-code-field'), true);
        $('access-code').focus();
      }
      if (e.code === 'UNAUTHENTICATED') askSignIn(e);
      else fieldError('join-error', e);
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
    showJoin('line.left');
  });

  // follow keeps the status live: the event stream when the service has one, else polling at
  // pollAfterSeconds. tk is a status already shown, if any.
  function follow(tk) {
    stopFollowing();
    if (tk && (final(tk.status) || tk.status === 'ACTIVE')) return;
    if (streamWorks) stream();
    else poll();
  }
  const final = (s) => s === 'EXPIRED' || s === 'DONE' || s === 'SOLD_OUT';
  function later(secs) {
    stopFollowing();
    pollTimer = setTimeout(follow, Math.max(0.25, secs || 5) * 1000);
  }

  async function poll() {
    if (!token) return;
    try {
      const tk = await api('GET', '/v1/queue', { queue: token });
      $('line').dataset.via = 'poll';
      render(tk);
      if (!final(tk.status) && tk.status !== 'ACTIVE') later(tk.pollAfterSeconds);
    } catch (e) {
      lineFailed(e);
    }
  }

  // stream reads GET /v1/queue/events (Server-Sent Events, event "status"). EventSource cannot send the
  // Authorization and X-Queue-Token headers, so this reads the stream with fetch. A stream that ends
  // without a final status after it worked a while is opened again at once: it is how the page hears.
  async function stream() {
    let res;
    const opened = Date.now();
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
            $('line').dataset.via = 'stream';
            render(last);
          }
        }
      }
    } catch (e) {
      // The stream broke. After it had carried statuses, open it again; one that breaks before its
      // first status is not one this page can use: poll from now on.
      if (!last) streamWorks = false;
    }
    if (last && (final(last.status) || last.status === 'ACTIVE')) return;
    const lasted = Date.now() - opened;
    later(last && lasted >= 1000 ? 0.25 : (last ? last.pollAfterSeconds : 1));
  }

  function lineFailed(e) {
    if (e.code === 'QUEUE_TOKEN_INVALID' || e.code === 'QUEUE_TOKEN_EXPIRED') {
      saveToken(null);
      showJoin(`err.${e.code}`);
      return;
    }
    failed(e);
    if (e.status !== 401) later(e.retryAfter || 5);
  }

  function failed(e, where) {
    if (e.code === 'UNAUTHENTICATED') {
      askSignIn(e);
      return;
    }
    if (where) fieldError(where, e);
    else notice(e);
  }

  // rate measures how the line moves: places gained a second over the last minute, null when it has
  // not been watched long enough to tell, 0 when it does not move.
  function rate(tk) {
    const now = Date.now();
    // A place further back (the draw placed the fan, the line was rebuilt) starts the measure again.
    if (samples.length && tk.position > samples[samples.length - 1].position) samples = [];
    samples.push({ at: now, position: tk.position });
    samples = samples.filter((s) => now - s.at <= WINDOW_MS);
    const first = samples[0];
    const gained = first.position - tk.position;
    if (gained > 0) return gained / Math.max(1, (now - first.at) / 1000);
    return now - first.at >= STILL_MS ? 0 : null;
  }

  // progress shows how far the fan has come since joining: the place then against the place now.
  function progress(tk) {
    let start = null;
    try { start = JSON.parse(localStorage.getItem(startKey()) || 'null'); } catch (e) { start = null; }
    if (!start || start.token !== token || tk.position > start.position) {
      start = { token, position: tk.position };
      localStorage.setItem(startKey(), JSON.stringify(start));
    }
    const moved = start.position - tk.position;
    const bar = $('progress');
    bar.max = Math.max(1, start.position);
    bar.value = moved;
    const text = t('wait.moved', { moved: n(moved), start: n(start.position), count: moved });
    bar.setAttribute('aria-valuetext', text);
    $('progress-text').textContent = text;
  }

  function waitText(tk) {
    if (tk.paused) return t('wait.paused');
    const r = rate(tk);
    if (r === null) return t('wait.measuring');
    if (r === 0) return t('wait.still');
    const secs = tk.position / r;
    return secs < 60 ? t('wait.soon') : t('wait.about', { d: duration(Math.ceil(secs / 60) * 60) });
  }

  // ---- the protected site: where the deployment sends an admitted fan with their pass --------------

  // renderSite shows, while the fan is ACTIVE with a pass, the link on to the deployment's site, which
  // carries the newest pass (every poll may bring a fresh one) and names the site it goes to.
  function renderSite() {
    const ok = Boolean(passSite && ticket && ticket.status === 'ACTIVE' && ticket.pass);
    show($('pass-site'), ok);
    if (!ok) return;
    const u = new URL(passSite);
    u.searchParams.set('pass', ticket.pass);
    const a = $('pass-site-link');
    a.href = u.toString();
    a.textContent = t('turn.site', { site: u.host });
  }

  // render shows one queue status. Unknown statuses read "please wait" and are polled again.
  function render(tk) {
    const before = ticket ? ticket.status : lastStatus;
    ticket = tk;
    if (tk.token && tk.token !== token) saveToken(tk.token); // a pre-queue token may come back renewed
    updates += 1;
    const line = $('line');
    line.dataset.status = tk.status;
    line.dataset.updates = String(updates);
    line.dataset.paused = String(Boolean(tk.paused));
    line.dataset.renderedAt = String(performance.now());
    const waiting = tk.status === 'WAITING' || tk.status === 'PREQUEUE';
    $('checked').textContent = t('line.checked', { time: fmt.time.format(new Date()) });
    show($('checked'), waiting);
    show($('join'), false);
    show(line, tk.status !== 'ACTIVE'); // when ACTIVE the shop says it is the fan's turn
    show($('leave'), waiting);
    show($('waiting-box'), tk.status === 'WAITING');
    show($('prequeue'), tk.status === 'PREQUEUE');
    show($('draw-key'), Boolean(tk.drawKey));
    show($('notify-box'), waiting && canNotify() && Notification.permission === 'default');
    $('draw-key-value').textContent = tk.drawKey || '';
    let key;
    let vars = {};
    switch (tk.status) {
      case 'WAITING':
        vars = { n: n(tk.position) };
        key = tk.paused ? 'status.paused' : (tk.position === 1 ? 'status.next' : 'status.place');
        $('position').textContent = n(tk.position);
        $('wait').textContent = waitText(tk);
        progress(tk);
        break;
      case 'PREQUEUE':
        key = 'status.prequeue';
        drawLink.href = `/v1/concerts/${encodeURIComponent(tk.concertId)}/draw`;
        countdown();
        break;
      case 'ACTIVE':
        key = 'status.active';
        if (before !== 'ACTIVE') turnCame(before === 'WAITING' || before === 'PREQUEUE');
        openShop();
        break;
      case 'EXPIRED':
        saveToken(null);
        closeShop();
        showJoin('status.expired');
        return;
      case 'DONE':
        saveToken(null);
        closeShop();
        key = 'status.done';
        break;
      case 'SOLD_OUT':
        saveToken(null);
        closeShop();
        key = 'status.soldout';
        break;
      default:
        key = 'status.unknown';
    }
    const text = t(key, vars);
    if ($('status').textContent !== text) $('status').textContent = text;
    $('status').dataset.key = key;
    lastStatus = tk.status;
    renderSite();
    // The live region hears a change of status, and of place at most every 20 s (not every poll).
    const now = Date.now();
    if (key !== 'status.active' && (before !== tk.status || key === 'status.paused' || now - (render.saidAt || 0) >= 20000)) {
      if (text !== lastSaid) render.saidAt = now;
      say(text);
    }
    titleTick();
  }

  // turnCame: the tab's title changes (titleTick), focus moves to the dates, and when the fan was
  // waiting here a short sound plays and, if they allowed it, a system notification shows.
  function turnCame(fromLine) {
    focusDates = true;
    warned = 0;
    const left = ticket.activeUntil ? (Date.parse(ticket.activeUntil) - Date.now()) / 1000 : 0;
    say(t('say.turn', { left: duration(left) }));
    if (fromLine) {
      chime();
      notifyTurn(left);
    }
  }

  // ---- countdowns: the tab's title, the bar at the top, the pre-queue, the hold ----------------------
  const opensIn = strong('opens-in');
  const opensAt = document.createElement('span');
  const drawLink = document.createElement('a');
  drawLink.id = 'draw-link';
  drawLink.href = '/';

  function titleTick() {
    const name = concert ? concert.title : null;
    let title = name ? t('title.concert', { concert: name }) : t('title.concerts');
    const now = Date.now();
    if (ticket && ticket.status === 'ACTIVE' && ticket.activeUntil && shopTimer) {
      title = t('title.turn', { left: clock((Date.parse(ticket.activeUntil) - now) / 1000) });
    } else if (ticket && ticket.status === 'WAITING' && name) {
      title = t(ticket.paused ? 'title.paused' : 'title.waiting', { n: n(ticket.position), concert: name });
    } else if (ticket && ticket.status === 'PREQUEUE' && ticket.opensAt && name) {
      title = t('title.prequeue', { left: clock((Date.parse(ticket.opensAt) - now) / 1000), concert: name });
    }
    if (document.title !== title) document.title = title;
  }

  function countdown() {
    if (!tick) tick = setInterval(countdown, 1000);
    const now = Date.now();
    titleTick();
    if (ticket && ticket.status === 'PREQUEUE' && ticket.opensAt) {
      opensIn.textContent = duration((Date.parse(ticket.opensAt) - now) / 1000);
      opensAt.textContent = dateText(ticket.opensAt);
      fill($('opens-text'), 'pre.opens', { countdown: opensIn, time: opensAt });
      drawLink.textContent = t('pre.drawlink');
      fill($('prequeue-draw'), 'pre.draw', { link: drawLink });
    }
    let turn = null;
    if (ticket && ticket.status === 'ACTIVE' && ticket.activeUntil && shopTimer) {
      const left = (Date.parse(ticket.activeUntil) - now) / 1000;
      turn = clock(left);
      fill($('turn-left'), 'turn.left', { left: strong('time-left') });
      $('time-left').textContent = turn;
      $('clock-turn').textContent = t('clock.turn', { left: turn });
      for (const mark of [300, 60]) {
        if (left <= mark && left > mark - 5 && warned !== mark) {
          warned = mark;
          say(t('say.warn', { left: duration(mark) }));
        }
      }
      if (left <= 0 && !pollTimer) later(1); // the turn is over: ask the service
    }
    let held = null;
    if (reservation && reservation.status === 'HELD') {
      const left = (Date.parse(reservation.expiresAt) - now) / 1000;
      held = clock(left);
      fill($('hold-time'), 'hold.time', { left: strong('hold-left') });
      $('hold-left').textContent = held;
      $('clock-hold').textContent = t('clock.hold', { left: held });
      if (left <= 0) loadHold(reservation.id);
    }
    show($('clock-turn'), Boolean(turn));
    show($('clock-hold'), Boolean(held));
    show($('clock'), Boolean(turn || held));
  }

  // ---- the shop: dates and the seat map ------------------------------------------------------------
  function openShop() {
    show($('shop'), true);
    if (shopTimer) { countdown(); return; }
    shopTimer = setInterval(refreshShop, 5000);
    countdown();
    refreshShop();
  }
  function closeShop() {
    clearInterval(shopTimer);
    shopTimer = null;
    show($('shop'), false);
    show($('seatmap-box'), false);
    countdown();
  }

  async function refreshShop() {
    try {
      schedules = await api('GET', `/v1/concerts/${encodeURIComponent(concertId)}/schedules`, { queue: token });
      if (!scheduleId && schedules.length) {
        const open = schedules.find((s) => s.availableSeats > 0) || schedules[0];
        scheduleId = open.id;
      }
      renderDates();
      if (scheduleId) await refreshSeats();
    } catch (e) {
      if (e.status === 410 || e.status === 401 || e.status === 403) {
        closeShop();
        poll(); // ask the line what happened
        return;
      }
      notice(e);
    }
  }

  function renderDates() {
    $('zone-note').textContent = t('dates.zone', { zone: fmt.zone });
    $('dates').replaceChildren(...schedules.map((s) => {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'date';
      b.dataset.schedule = s.id;
      b.setAttribute('aria-pressed', String(s.id === scheduleId));
      const left = s.availableSeats > 0
        ? t('date.left', { n: n(s.availableSeats), total: n(s.totalSeats), count: s.availableSeats }) : t('date.soldout');
      b.textContent = t('date.button', { date: dateText(s.startsAt), left });
      b.addEventListener('click', () => {
        scheduleId = s.id;
        seatButtons = new Map();
        renderDates();
        $('dates').querySelector(`[data-schedule="${CSS.escape(s.id)}"]`).focus();
        refreshSeats().catch((e) => failed(e));
      });
      li.append(b);
      return li;
    }));
    if (focusDates && schedules.length) {
      focusDates = false;
      const b = $('dates').querySelector('[aria-pressed="true"]') || $('dates').querySelector('button');
      b.focus();
    }
  }

  async function refreshSeats() {
    const id = scheduleId;
    const seats = await api('GET', `/v1/concerts/${encodeURIComponent(concertId)}/schedules/${encodeURIComponent(id)}/seats`, { queue: token });
    if (id !== scheduleId) return;
    lastSeats = seats;
    paintSeats();
  }

  const number = (seat) => seat.id.slice(seat.section.length + 1) || seat.id;

  function paintSeats() {
    const seats = lastSeats;
    const id = scheduleId;
    const s = schedules.find((x) => x.id === id);
    $('seatmap-h').textContent = s ? t('seatmap.h', { date: dateText(s.startsAt) }) : t('seatmap.any');
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
        fs.dataset.section = section;
        const lg = document.createElement('legend');
        const grid = document.createElement('div');
        grid.className = 'seats';
        for (const seat of list) {
          const b = document.createElement('button');
          b.type = 'button';
          b.dataset.seat = seat.id;
          b.textContent = number(seat);
          b.setAttribute('aria-describedby', 'seat-error');
          b.addEventListener('click', () => hold(seat, b));
          seatButtons.set(seat.id, b);
          grid.append(b);
        }
        fs.append(lg, grid);
        return fs;
      }));
    }
    for (const fs of map.querySelectorAll('fieldset')) {
      const first = seats.find((x) => x.section === fs.dataset.section);
      fs.querySelector('legend').textContent = t('section', { section: fs.dataset.section, price: first ? points(first.price) : '' });
    }
    const counts = { AVAILABLE: 0, HELD: 0, SOLD: 0 };
    for (const seat of seats) {
      const b = seatButtons.get(seat.id);
      const mine = reservation && reservation.status === 'HELD' && reservation.seatId === seat.id && reservation.scheduleId === id;
      counts[seat.status] = (counts[seat.status] || 0) + 1;
      b.className = `seat s-${seat.status}${mine ? ' mine s-MINE' : ''}`;
      b.disabled = seat.status !== 'AVAILABLE';
      const state = mine ? 'MINE' : (['AVAILABLE', 'HELD', 'SOLD'].includes(seat.status) ? seat.status : 'HELD');
      b.setAttribute('aria-label', t('seat.label', { section: seat.section, number: number(seat), price: points(seat.price), state: t(`state.${state}`) }));
    }
    let summary;
    if (seats.length > 0 && counts.SOLD === seats.length) summary = t('seats.soldout');
    else if (counts.AVAILABLE === 0) summary = t('seats.none');
    else summary = t('seats.counts', { available: n(counts.AVAILABLE), held: n(counts.HELD), sold: n(counts.SOLD) });
    if ($('seat-summary').textContent !== summary) $('seat-summary').textContent = summary;
    $('seatmap-box').dataset.state = counts.SOLD === seats.length ? 'SOLD_OUT' : 'OPEN';
  }

  // ---- holding, points, paying ---------------------------------------------------------------------
  async function hold(seat, button) {
    fieldError('seat-error', null);
    try {
      const r = await api('POST', '/v1/reservations', { queue: token, body: { scheduleId, seatId: seat.id } });
      notice(null);
      await showHold(r, true);
      refreshShop(); // the dates' seats left and the map, both changed by the hold
    } catch (e) {
      // The refusal goes beside the seat's section, where the fan is looking.
      button.closest('fieldset').after($('seat-error'));
      failed(e, 'seat-error');
      refreshSeats().catch(() => {});
    }
  }

  async function loadHold(id) {
    try {
      await showHold(await api('GET', `/v1/reservations/${encodeURIComponent(id)}`), false);
    } catch (e) {
      localStorage.removeItem(holdKey());
      show($('hold'), false);
    }
  }

  const balance = strong('balance');
  balance.textContent = '…';

  function holdWords() {
    const r = reservation;
    const seat = { id: r.seatId, section: r.seatId.replace(/-[^-]*$/, '') };
    $('hold-seat').textContent = t('hold.seat', { section: seat.section, number: number(seat), price: points(r.price) });
    fill($('balance-text'), 'hold.balance', { balance });
    if (balance.dataset.value !== undefined) balance.textContent = n(Number(balance.dataset.value));
  }

  // showHold shows the fan's hold; after a hold they just made (focus), the view and focus go to it.
  async function showHold(r, focus) {
    reservation = r;
    if (r.status !== 'HELD') {
      localStorage.removeItem(holdKey());
      show($('hold'), false);
      countdown();
      if (r.status === 'EXPIRED') notice('err.RESERVATION_EXPIRED');
      return;
    }
    localStorage.setItem(holdKey(), r.id);
    fieldError('pay-error', null);
    fieldError('charge-error', null);
    holdWords();
    show($('hold'), true);
    countdown();
    if (focus) {
      countdown(); // the clock at the top shows the hold before the view moves under it
      reveal($('hold'), true);
      $('hold-h').focus({ preventScroll: true });
      say(t('say.held', { seat: r.seatId, left: duration((Date.parse(r.expiresAt) - Date.now()) / 1000) }));
    }
    await refreshBalance();
  }

  async function refreshBalance() {
    try {
      const b = await api('GET', '/v1/points');
      balance.dataset.value = String(b.balance);
      balance.textContent = n(b.balance);
      if (reservation && !$('amount').value) $('amount').value = String(Math.max(1, reservation.price - b.balance));
    } catch (e) {
      failed(e, 'pay-error');
    }
  }

  $('charge-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const amount = Number($('amount').value);
    if (!Number.isInteger(amount)) {
      fieldError('charge-error', 'err.INVALID_AMOUNT');
      $('amount').focus();
      return;
    }
    try {
      const c = await api('POST', '/v1/points/charges', { body: { amount }, idem: randomKey() });
      fieldError('charge-error', null);
      fieldError('pay-error', null);
      balance.dataset.value = String(c.balance);
      balance.textContent = n(c.balance);
      $('amount').value = '';
      say(t('say.charged', { balance: n(c.balance) }));
    } catch (e) {
      failed(e, 'charge-error');
      $('amount').focus();
    }
  });

  $('cancel').addEventListener('click', async () => {
    if (!reservation) return;
    const id = reservation.id;
    try {
      await api('DELETE', `/v1/reservations/${encodeURIComponent(id)}`);
    } catch (e) {
      if (e.code === 'RESERVATION_NOT_HELD' || e.code === 'NOT_FOUND') {
        await loadHold(id); // no longer held (paid, lapsed): show what it is now
        return;
      }
      failed(e, 'pay-error'); // not cancelled: the hold stays, with the refusal beside it
      return;
    }
    fieldError('pay-error', null);
    reservation = null;
    localStorage.removeItem(holdKey());
    show($('hold'), false);
    countdown();
    say(t('say.cancelled'));
    if (shopTimer) refreshSeats().catch(() => {});
  });

  // A payment's Idempotency-Key, kept for the next try only when the last got no answer of its own (the
  // network, 429, 5xx), so that a retry never pays twice. A refusal ends the key: the server answers
  // every retry with the key with that refusal, so a fan who charges points after "not enough points"
  // pays with a new one.
  let payKey = null;
  $('pay').addEventListener('click', async () => {
    if (!reservation) return;
    const r = reservation;
    $('pay').disabled = true;
    if (!payKey || payKey.res !== r.id) payKey = { res: r.id, key: randomKey() };
    try {
      const p = await api('POST', '/v1/payments', { body: { reservationId: r.id }, idem: payKey.key });
      payKey = null;
      fieldError('pay-error', null);
      receipt(r, p);
    } catch (e) {
      if (e.status > 0 && e.status < 500 && e.status !== 429) payKey = null;
      failed(e, 'pay-error');
      if (e.code === 'RESERVATION_EXPIRED' || e.code === 'RESERVATION_NOT_HELD') loadHold(r.id);
    } finally {
      $('pay').disabled = false;
    }
  });

  function receiptWords() {
    const [r, p] = paid;
    const date = schedules.find((s) => s.id === r.scheduleId);
    const rows = [
      ['receipt.seat', r.seatId],
      ['receipt.date', date ? dateText(date.startsAt) : r.scheduleId],
      ['receipt.paid', points(p.amount)],
      ['receipt.left', n(p.balance)],
      ['receipt.at', dateText(p.paidAt)],
      ['receipt.id', p.id],
    ];
    $('receipt-list').replaceChildren(...rows.map(([k, v]) => {
      const d = document.createElement('div');
      const dt = document.createElement('dt');
      dt.textContent = t(k);
      const dd = document.createElement('dd');
      dd.textContent = v;
      d.append(dt, dd);
      return d;
    }));
  }

  function receipt(r, p) {
    reservation = null;
    paid = [r, p];
    localStorage.removeItem(holdKey());
    show($('hold'), false);
    receiptWords();
    closeShop();
    show($('receipt'), true);
    reveal($('receipt'), true);
    $('receipt-h').focus({ preventScroll: true });
    say(t('receipt.p'));
    poll(); // the line says DONE when this was the last hold
  }

  // Another tab of the same fan joined or left: follow its token (one token per fan and concert).
  window.addEventListener('storage', (ev) => {
    if (ev.key === LANG_KEY && ev.newValue && CATALOGUES[ev.newValue] && ev.newValue !== lang) {
      relocalise(ev.newValue);
      return;
    }
    if (!concertId || ev.key !== queueKey() || ev.newValue === token) return;
    token = ev.newValue;
    samples = [];
    if (token) follow();
    else showJoin('');
  });

  // ---- the language switch -------------------------------------------------------------------------
  // relocalise redraws everything shown in language l.
  function relocalise(l) {
    setLang(l);
    if (user) $('who').textContent = t('who', { user });
    if (!concert && concertId) $('concert-title').textContent = t('concert.notfound');
    if (ticket && $('line').dataset.status) {
      render.saidAt = Date.now();
      const tk = ticket;
      ticket = null;
      lastStatus = tk.status;
      render(tk);
    } else if ($('status').dataset.key) {
      $('status').textContent = t($('status').dataset.key);
    }
    if (schedules.length) renderDates();
    if (lastSeats && !$('seatmap-box').hidden) paintSeats();
    if (reservation && reservation.status === 'HELD') holdWords();
    if (paid) receiptWords();
    for (const [id, e] of Object.entries(errors)) if (e) fieldError(id, e, true);
    if (noticeError) $('notice').textContent = typeof noticeError === 'string' ? t(noticeError) : words(noticeError);
    countdown();
    titleTick();
  }
  $('lang').addEventListener('change', () => {
    const l = $('lang').value;
    localStorage.setItem(LANG_KEY, l);
    relocalise(l);
  });

  // ---- routing -------------------------------------------------------------------------------------
  function route() {
    const m = location.pathname.match(/^\/concerts\/([^/]+)\/?$/);
    if (m) showConcert(decodeURIComponent(m[1]));
    else showConcerts();
  }

  setLang(chooseLang());
  api('GET', '/site.json').then((d) => { passSite = (d && d.passSite) || null; renderSite(); }).catch(() => {});
  takeFragmentToken();
  if (signedIn()) route();
  else askSignIn(null);
})();
