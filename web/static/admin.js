// The operator's console: concerts, the live line, pause and resume, the queue settings, access codes,
// the on-sale's draw, creating a concert (with a sale). The admin token is entered once and kept in sessionStorage (this tab only).
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = 'ticketrush.admin';
  const num = new Intl.NumberFormat('en-US');
  let admin = sessionStorage.getItem(KEY);
  let selected = null;
  let timer = null;
  let state = null;
  let drawDone = false; // no more draw reads for the selected concert: drawn, or it has no sale

  const show = (el, on) => { el.hidden = !on; };
  // notice says what went wrong; a refresh's success clears only a refresh's failure, so that an
  // operator's refused action stays said until their next action.
  let noticeOfRefresh = false;
  function notice(text, ofRefresh) {
    noticeOfRefresh = Boolean(text && ofRefresh);
    $('notice').textContent = text || '';
    show($('notice'), Boolean(text));
  }

  async function api(method, path, body, auth) {
    const headers = { Accept: 'application/json' };
    if (auth) headers.Authorization = `Bearer ${admin}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res;
    try {
      res = await fetch(path, { method, headers, cache: 'no-store', credentials: 'omit',
        body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      throw new Error('The service does not answer.');
    }
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (res.status === 401) {
      signOut('That admin token was refused. Enter it again.');
      throw new Error('refused');
    }
    if (!res.ok) throw new Error((data && (data.detail || data.title)) || `HTTP ${res.status}`);
    return data;
  }

  function signOut(message) {
    sessionStorage.removeItem(KEY);
    admin = null;
    clearInterval(timer);
    timer = null;
    show($('console'), false);
    show($('signout'), false);
    show($('signin'), true);
    notice(message);
  }

  // check asks the service whether token is the admin token: every admin endpoint answers 401 to a
  // wrong one before anything else, so a read of a concert's line answers 200 or 404 to the right one.
  async function check(token) {
    let probe = 'sign-in-check';
    try {
      const list = await (await fetch('/v1/concerts', { cache: 'no-store', credentials: 'omit' })).json();
      if (Array.isArray(list) && list.length) probe = list[0].id;
    } catch (e) { /* the probe id does not matter */ }
    const res = await fetch(`/admin/v1/concerts/${encodeURIComponent(probe)}/queue`, {
      headers: { Accept: 'application/json', Authorization: `Bearer ${token}` }, cache: 'no-store', credentials: 'omit' });
    return res.status !== 401;
  }

  function signInError(text) {
    $('signin-error').textContent = text || '';
    show($('signin-error'), Boolean(text));
  }

  $('signin-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = $('admin-token').value.trim();
    const button = $('signin-form').querySelector('button');
    button.disabled = true;
    try {
      if (!(await check(token))) {
        signInError('The service refused that admin token. Check it and try again.');
        $('admin-token').focus();
        $('admin-token').select();
        return;
      }
    } catch (e) {
      signInError('The service does not answer: the token could not be checked. Try again.');
      return;
    } finally {
      button.disabled = false;
    }
    signInError('');
    admin = token;
    $('admin-token').value = '';
    sessionStorage.setItem(KEY, admin);
    start();
  });
  $('signout').addEventListener('click', () => signOut(''));

  async function concerts() {
    const list = await api('GET', '/v1/concerts');
    $('concert-list').replaceChildren(...list.map((c) => {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'link';
      b.dataset.concert = c.id;
      b.setAttribute('aria-pressed', String(c.id === selected));
      b.textContent = `${c.title} (${c.venue})`;
      b.addEventListener('click', () => select(c.id, c.title));
      const id = document.createElement('span');
      id.className = 'muted';
      id.textContent = `id ${c.id} · `;
      const fan = document.createElement('a');
      fan.href = `/concerts/${encodeURIComponent(c.id)}`;
      fan.textContent = 'fan page';
      li.append(b, id, fan);
      return li;
    }));
    show($('no-concerts'), list.length === 0);
    return list;
  }

  function select(id, title) {
    selected = id;
    location.hash = `concert=${encodeURIComponent(id)}`;
    for (const b of document.querySelectorAll('[data-concert]')) b.setAttribute('aria-pressed', String(b.dataset.concert === id));
    $('live-h').textContent = `The line: ${title}`;
    show($('live'), true);
    for (const f of ['capacity', 'rate', 's-per-seat', 's-abandon', 's-noshow', 's-pow', 's-code', 'codes']) {
      $(f).value = '';
      $(f).dataset.shown = '';
    }
    history10 = [];
    drawCharts();
    show($('codes-box'), false);
    show($('settings-now'), false);
    show($('draw'), false);
    drawDone = false;
    state = null;
    refresh();
    clearInterval(timer);
    timer = setInterval(refresh, 2000);
  }

  const LABELS = [
    ['waiting', 'Waiting'], ['active', 'Choosing seats (active)'], ['activeCapacity', 'Capacity'],
    ['admitPerSecond', 'Admissions a second'], ['activePerSeat', 'Active per available seat'],
    ['prequeue', 'In the pre-queue'], ['abandoned', 'Abandoned'],
  ];

  // facts fills a <dl> with [key, label, value] rows, the value's element marked data-<attr>=key.
  function facts(dl, attr, rows) {
    dl.replaceChildren(...rows.map(([k, label, v]) => {
      const d = document.createElement('div');
      const dt = document.createElement('dt');
      dt.textContent = label;
      const dd = document.createElement('dd');
      dd.dataset[attr] = k;
      dd.textContent = v;
      d.append(dt, dd);
      return d;
    }));
  }

  async function refresh() {
    if (!selected) return;
    try {
      const q = await api('GET', `/admin/v1/concerts/${encodeURIComponent(selected)}/queue`, undefined, true);
      render(q);
    } catch (e) {
      if (admin) notice(e.message, true);
    }
    if (!drawDone) await draw(selected);
  }

  // draw shows the public draw of the concert's sale (docs/api.md, On-sale); a concert without a sale has none.
  async function draw(id) {
    let res, d = null;
    try {
      res = await fetch(`/v1/concerts/${encodeURIComponent(id)}/draw`, { headers: { Accept: 'application/json' },
        cache: 'no-store', credentials: 'omit' });
      d = await res.json();
    } catch (e) {
      return; // tried again on the next refresh
    }
    if (id !== selected) return;
    if (res.status === 404) {
      drawDone = true;
      show($('draw'), false);
      return;
    }
    if (!res.ok || !d) return;
    const when = (t) => (t ? new Date(t).toLocaleString() : 'not yet');
    facts($('draw-facts'), 'draw', [
      ['status', 'Status', d.status],
      ['prequeueOpensAt', 'Pre-queue opens', when(d.prequeueOpensAt)],
      ['opensAt', 'Sale opens', when(d.opensAt)],
      ['commitment', 'Commitment (SHA-256 of the seed)', d.commitment || 'not published yet'],
      ['entrants', 'Entrants', typeof d.entrants === 'number' ? num.format(d.entrants) : 'not drawn yet'],
      ['entrantsDigest', 'Digest of the keys file', d.entrantsDigest || 'not drawn yet'],
      ['seed', 'Seed', d.seed || 'secret until the draw'],
    ]);
    const drawn = d.status === 'DRAWN';
    $('draw-keys').href = `/v1/concerts/${encodeURIComponent(id)}/draw/keys`;
    show($('draw-keys'), drawn);
    show($('draw'), true);
    drawDone = drawn;
  }

  function render(q) {
    state = q;
    sample(q);
    const rows = LABELS.filter(([k]) => typeof q[k] === 'number').map(([k, label]) => [k, label, num.format(q[k])]);
    if (typeof q.soldOut === 'boolean') rows.push(['soldOut', 'Sold out', q.soldOut ? 'yes' : 'no']);
    if (q.seats) {
      rows.push(['seats', 'Seats available / held / sold',
        `${num.format(q.seats.available)} / ${num.format(q.seats.held)} / ${num.format(q.seats.sold)}`]);
    }
    if (q.opensAt) rows.push(['opensAt', 'Sale opens', new Date(q.opensAt).toLocaleString()]);
    facts($('figures'), 'figure', rows);
    let text = q.paused ? 'Paused: nobody is admitted; fans can still join.' : 'Running: fans are admitted as room frees up.';
    if (q.soldOut) text = 'Sold out.';
    if ($('live-state').textContent !== text) $('live-state').textContent = text;
    $('live').dataset.paused = String(Boolean(q.paused));
    $('pause').disabled = Boolean(q.paused);
    $('resume').disabled = !q.paused;
    showSettings({ ...known[selected], ...q });
    $('updated').textContent = new Date().toLocaleTimeString();
    if (noticeOfRefresh) notice('');
  }

  // ---- the last 10 minutes: waiting, active, admitted a second, seats left --------------------------
  const SPAN = 10 * 60 * 1000;
  const SERIES = [
    ['waiting', 'Waiting', '#0b57d0'], ['active', 'Choosing seats (active)', '#1e7d32'],
    ['admitted', 'Admitted a second', '#8a4b00'], ['seats', 'Seats left', '#6a1b9a'],
  ];
  let history10 = []; // [{at, waiting, active, admitted, seats}]
  let lastAdmitted = null; // {at, total} of the previous read of the admissions counter

  // admittedTotal is the concert's admissions so far: the live read's own figure when it has one, else
  // the service's counter ticketrush_queue_admitted_total (its /metrics, same origin), else null.
  async function admittedTotal(id, q) {
    if (typeof q.admitted === 'number') return q.admitted;
    try {
      const res = await fetch('/metrics', { cache: 'no-store', credentials: 'omit' });
      if (!res.ok) return null;
      const text = await res.text();
      let total = null;
      for (const line of text.split('\n')) {
        if (line.startsWith('ticketrush_queue_admitted_total{') && line.includes(`concert="${id}"`)) {
          total = (total || 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
        }
      }
      return total === null ? 0 : total;
    } catch (e) {
      return null;
    }
  }

  async function sample(q) {
    const id = selected;
    const at = Date.now();
    const total = await admittedTotal(id, q);
    if (id !== selected) return;
    let admitted = null;
    if (total !== null && lastAdmitted && lastAdmitted.id === id && at > lastAdmitted.at) {
      admitted = Math.max(0, (total - lastAdmitted.total) / ((at - lastAdmitted.at) / 1000));
    }
    lastAdmitted = total === null ? null : { id, at, total };
    history10.push({ at, waiting: q.waiting, active: q.active, admitted, seats: q.seats ? q.seats.available : null });
    history10 = history10.filter((p) => at - p.at <= SPAN);
    drawCharts();
  }

  const SVG = 'http://www.w3.org/2000/svg';
  function svg(name, attrs) {
    const el = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    return el;
  }

  // drawCharts draws one small chart a series, its own scale from 0 to its highest value in the span.
  function drawCharts() {
    const W = 300, H = 64, now = Date.now();
    $('charts').replaceChildren(...SERIES.map(([key, label, colour]) => {
      const points = history10.filter((p) => typeof p[key] === 'number');
      const top = Math.max(1, ...points.map((p) => p[key]));
      const fig = document.createElement('figure');
      fig.className = 'chart';
      fig.dataset.series = key;
      fig.dataset.points = String(points.length);
      fig.dataset.max = String(points.length ? Math.max(...points.map((p) => p[key])) : 0);
      const cap = document.createElement('figcaption');
      const last = points.length ? points[points.length - 1][key] : null;
      const fmt = (v) => num.format(Math.round(v * 10) / 10);
      cap.textContent = last === null ? `${label}: not measured yet` : `${label}: ${fmt(last)} now, up to ${fmt(top)} in 10 minutes`;
      const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': cap.textContent, preserveAspectRatio: 'none' });
      chart.append(svg('line', { x1: 0, y1: H - 1, x2: W, y2: H - 1, stroke: '#6b6b6b', 'stroke-width': 1 }));
      const xy = points.map((p) => `${((W * (SPAN - (now - p.at))) / SPAN).toFixed(1)},${(H - 2 - ((H - 6) * p[key]) / top).toFixed(1)}`);
      if (xy.length) {
        chart.append(svg('polyline', { points: xy.join(' '), fill: 'none', stroke: colour, 'stroke-width': 2,
          'vector-effect': 'non-scaling-stroke' }));
      }
      fig.append(cap, chart);
      return fig;
    }));
  }

  const SETTINGS = [
    ['activeCapacity', 'Capacity'], ['admitPerSecond', 'Admissions a second'], ['activePerSeat', 'Active per available seat'],
    ['abandonAfterSeconds', 'Abandon after, seconds'], ['noShowSeconds', 'No-show after, seconds'],
    ['joinPowBits', 'Proof of work, bits'], ['accessCodeRequired', 'Access code required'],
    ['activeTtlSeconds', 'Active session, seconds'], ['holdTtlSeconds', 'Hold, seconds'], ['maxHoldsPerUser', 'Holds a fan'],
  ];
  // The settings form shows the values in force: those of the live read, and of the last create or
  // PATCH answer of this tab for those the live read does not carry. An input the operator is editing
  // (focused, or typed in and not saved) is left alone.
  const INPUTS = [['capacity', 'activeCapacity'], ['rate', 'admitPerSecond'], ['s-per-seat', 'activePerSeat'],
    ['s-abandon', 'abandonAfterSeconds'], ['s-noshow', 'noShowSeconds'], ['s-pow', 'joinPowBits'], ['s-code', 'accessCodeRequired']];
  const known = {}; // concert id -> settings from a create or PATCH answer
  // edited: the operator changed the input from the value in force it showed.
  const edited = (el) => el.value !== (el.dataset.shown || '');
  function showSettings(q) {
    for (const [id, key] of INPUTS) {
      const el = $(id);
      if (document.activeElement === el || edited(el)) continue;
      if (typeof q[key] === 'number' || typeof q[key] === 'boolean') el.value = String(q[key]);
      el.dataset.shown = el.value;
      if (el.tagName === 'INPUT') el.placeholder = key in q ? '' : 'not shown by the service: empty leaves it unchanged';
    }
  }

  // settings shows the queue settings the service answered (a create or a PATCH): the live read has not all of them.
  function settings(s) {
    if (!s) return;
    known[selected] = s;
    for (const [id] of INPUTS) $(id).dataset.shown = $(id).value; // saved: what they show is in force
    showSettings({ ...(state || {}), ...s });
    facts($('settings-list'), 'setting', SETTINGS.filter(([k]) => k in s).map(([k, label]) => [k, label,
      typeof s[k] === 'boolean' ? (s[k] ? 'yes' : 'no') : num.format(s[k])]));
    show($('settings-now'), true);
  }

  async function patch(body) {
    try {
      notice('');
      settings(await api('PATCH', `/admin/v1/concerts/${encodeURIComponent(selected)}/queue`, body, true));
      await refresh();
    } catch (e) {
      if (admin) notice(e.message);
    }
  }
  $('pause').addEventListener('click', () => patch({ paused: true }));
  $('resume').addEventListener('click', () => patch({ paused: false }));
  // Saving sends only the settings the operator changed: sending a value in force again could undo
  // another operator's change made since this page read it.
  $('settings-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = {};
    for (const [id, key] of INPUTS) {
      const el = $(id);
      if (!edited(el) || el.value === '') continue;
      if (key === 'accessCodeRequired') body[key] = el.value === 'true';
      else if (whole(el.value) !== undefined) body[key] = whole(el.value);
    }
    if (Object.keys(body).length === 0) {
      notice('Nothing to save: change a setting first.');
      return;
    }
    patch(body);
  });

  $('codes-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const id = selected;
    try {
      const count = whole($('code-count').value);
      if (!count) throw new Error('Issue at least one code.');
      const res = await api('POST', `/admin/v1/concerts/${encodeURIComponent(id)}/access-codes`, { count }, true);
      if (id !== selected) return;
      $('codes').value = res.codes.join('\n');
      show($('codes-box'), true);
      notice('');
      $('codes').focus();
      $('codes').select();
    } catch (e) {
      if (admin) notice(e.message);
    }
  });

  // whole is an input's whole number, undefined when it is empty (or not one).
  function whole(text) {
    if (String(text).trim() === '') return undefined;
    const n = Number(text);
    return Number.isInteger(n) ? n : undefined;
  }

  // utc reads "YYYY-MM-DD HH:MM[:SS]" as UTC, as an RFC 3339 string.
  function utc(s) {
    const m = s.trim().match(/^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})(:\d{2})?$/);
    const d = m && new Date(`${m[1]}T${m[2]}${m[3] || ':00'}Z`);
    if (!d || Number.isNaN(d.getTime())) throw new Error(`Not a date: ${s}`);
    return d.toISOString();
  }

  $('create-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const schedules = $('c-dates').value.split('\n').map((s) => s.trim()).filter(Boolean).map(utc);
      const sections = $('c-sections').value.split('\n').map((s) => s.trim()).filter(Boolean).map((s) => {
        const [name, price, seats] = s.split(/\s+/);
        if (!name || !Number.isInteger(Number(price)) || !Number.isInteger(Number(seats))) throw new Error(`Not "name price seats": ${s}`);
        return { name, price: Number(price), seats: Number(seats) };
      });
      const queue = { activeCapacity: Number($('c-capacity').value), admitPerSecond: Number($('c-rate').value) };
      for (const [id, key] of [['c-per-seat', 'activePerSeat'], ['c-abandon', 'abandonAfterSeconds'],
        ['c-noshow', 'noShowSeconds'], ['c-pow', 'joinPowBits']]) {
        const v = whole($(id).value);
        if (v !== undefined) queue[key] = v;
      }
      if ($('c-code').checked) queue.accessCodeRequired = true;
      const body = { title: $('c-title').value.trim(), venue: $('c-venue').value.trim(), schedules, sections, queue };
      if ($('c-opens').value.trim()) {
        body.sale = { opensAt: utc($('c-opens').value) };
        if ($('c-prequeue').value.trim()) body.sale.prequeueOpensAt = utc($('c-prequeue').value);
        if ($('c-closes').value.trim()) body.sale.closesAt = utc($('c-closes').value);
      } else if ($('c-prequeue').value.trim() || $('c-closes').value.trim()) {
        throw new Error('A pre-queue or a closing needs the time the sale opens.');
      }
      const c = await api('POST', '/admin/v1/concerts', body, true);
      notice('');
      await concerts();
      select(c.id, c.title);
      settings(c.queue);
    } catch (e) {
      if (admin) notice(e.message);
    }
  });

  async function start() {
    show($('signin'), false);
    show($('console'), true);
    show($('signout'), true);
    try {
      const list = await concerts();
      const m = location.hash.match(/concert=([^&]+)/);
      const c = m && list.find((x) => x.id === decodeURIComponent(m[1]));
      if (c) select(c.id, c.title);
    } catch (e) {
      notice(e.message);
    }
  }

  if (admin) {
    check(admin).then((ok) => (ok ? start() : signOut('That admin token was refused. Enter it again.')),
      () => start());
  } else signOut('');
})();
