// The operator's console: concerts, the live line, pause and resume, capacity and rate, creating a
// concert. The admin token is entered once and kept in sessionStorage (this tab only).
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = 'ticketrush.admin';
  const num = new Intl.NumberFormat('en-US');
  let admin = sessionStorage.getItem(KEY);
  let selected = null;
  let timer = null;
  let state = null;

  const show = (el, on) => { el.hidden = !on; };
  function notice(text) {
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

  $('signin-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    admin = $('admin-token').value.trim();
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
    $('capacity').value = '';
    $('rate').value = '';
    state = null;
    refresh();
    clearInterval(timer);
    timer = setInterval(refresh, 2000);
  }

  const LABELS = [
    ['waiting', 'Waiting'], ['active', 'Choosing seats (active)'], ['activeCapacity', 'Capacity'],
    ['admitPerSecond', 'Admissions a second'], ['prequeue', 'In the pre-queue'], ['abandoned', 'Abandoned'],
  ];

  async function refresh() {
    if (!selected) return;
    try {
      const q = await api('GET', `/admin/v1/concerts/${encodeURIComponent(selected)}/queue`, undefined, true);
      render(q);
    } catch (e) {
      if (admin) notice(e.message);
    }
  }

  function render(q) {
    state = q;
    const rows = LABELS.filter(([k]) => typeof q[k] === 'number').map(([k, label]) => [k, label, num.format(q[k])]);
    if (q.seats) {
      rows.push(['seats', 'Seats available / held / sold',
        `${num.format(q.seats.available)} / ${num.format(q.seats.held)} / ${num.format(q.seats.sold)}`]);
    }
    if (q.opensAt) rows.push(['opensAt', 'Sale opens', new Date(q.opensAt).toLocaleString()]);
    $('figures').replaceChildren(...rows.map(([k, label, v]) => {
      const d = document.createElement('div');
      const dt = document.createElement('dt');
      dt.textContent = label;
      const dd = document.createElement('dd');
      dd.dataset.figure = k;
      dd.textContent = v;
      d.append(dt, dd);
      return d;
    }));
    let text = q.paused ? 'Paused: nobody is admitted; fans can still join.' : 'Running: fans are admitted as room frees up.';
    if (q.soldOut) text = 'Sold out.';
    if ($('live-state').textContent !== text) $('live-state').textContent = text;
    $('live').dataset.paused = String(Boolean(q.paused));
    $('pause').disabled = Boolean(q.paused);
    $('resume').disabled = !q.paused;
    if (document.activeElement !== $('capacity') && !$('capacity').value) $('capacity').value = String(q.activeCapacity);
    if (document.activeElement !== $('rate') && !$('rate').value) $('rate').value = String(q.admitPerSecond);
    $('updated').textContent = new Date().toLocaleTimeString();
    notice('');
  }

  async function patch(body) {
    try {
      await api('PATCH', `/admin/v1/concerts/${encodeURIComponent(selected)}/queue`, body, true);
      await refresh();
    } catch (e) {
      if (admin) notice(e.message);
    }
  }
  $('pause').addEventListener('click', () => patch({ paused: true }));
  $('resume').addEventListener('click', () => patch({ paused: false }));
  $('settings-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = {};
    const cap = Number($('capacity').value), rate = Number($('rate').value);
    if ($('capacity').value !== '' && Number.isInteger(cap)) body.activeCapacity = cap;
    if ($('rate').value !== '' && Number.isInteger(rate)) body.admitPerSecond = rate;
    patch(body);
  });

  $('create-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const schedules = $('c-dates').value.split('\n').map((s) => s.trim()).filter(Boolean).map((s) => {
        const d = new Date(`${s.replace(' ', 'T')}:00Z`);
        if (Number.isNaN(d.getTime())) throw new Error(`Not a date: ${s}`);
        return d.toISOString();
      });
      const sections = $('c-sections').value.split('\n').map((s) => s.trim()).filter(Boolean).map((s) => {
        const [name, price, seats] = s.split(/\s+/);
        if (!name || !Number.isInteger(Number(price)) || !Number.isInteger(Number(seats))) throw new Error(`Not "name price seats": ${s}`);
        return { name, price: Number(price), seats: Number(seats) };
      });
      const c = await api('POST', '/admin/v1/concerts', {
        title: $('c-title').value.trim(), venue: $('c-venue').value.trim(), schedules, sections,
        queue: { activeCapacity: Number($('c-capacity').value), admitPerSecond: Number($('c-rate').value) },
      }, true);
      notice('');
      await concerts();
      select(c.id, c.title);
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

  if (admin) start();
  else signOut('');
})();
