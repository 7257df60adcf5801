// The committed dashboards are exactly what generate.js generates: `npm test` here, or
// `make dashboards-check` from the repo root. After editing generate.js, run `make dashboards`.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { dashboards, render, OUT } = require('./generate.js');

test('committed JSON equals the generated JSON', () => {
  const generated = dashboards();
  for (const [name, d] of Object.entries(generated)) {
    const file = path.join(OUT, name);
    assert.ok(fs.existsSync(file), `${name} is not committed: run make dashboards`);
    assert.equal(fs.readFileSync(file, 'utf8'), render(d), `${name} differs from what generate.js makes: run make dashboards`);
  }
  const extra = fs.readdirSync(OUT).filter((f) => !(f in generated));
  assert.deepEqual(extra, [], 'json/ holds files generate.js does not make');
});

test('dashboard uids and titles are unique', () => {
  const all = Object.values(dashboards());
  assert.equal(new Set(all.map((d) => d.uid)).size, all.length);
  assert.equal(new Set(all.map((d) => d.title)).size, all.length);
});
