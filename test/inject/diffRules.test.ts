// The rules of diff (docs/API.md "Diff: read from a cursor") on an in-process server through
// inject(): limit default and clamp, 404 on absent topics (never creating them, never waiting),
// the byte budget, and request validation. Reads as such: test/http/diff.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertInvalid, assertOk, namer } from '../http/util.js';
import { firstAppendSeeder } from '../support/seed.js';

const { c } = injectSuite();
const name = namer('diff');

const seeded = firstAppendSeeder(c, name);
const seqs = (b: any) => b.records.map((r: any) => r.$seq);

describe('cursor and watermarks', () => {
  test('limit default 256, 0 means default, clamped to 1000', async () => {
    const t = name('big');
    const r = await c.post(`/v0/topics/${t}`, { records: Array.from({ length: 1200 }, (_, i) => ({ data: i })) });
    assert.equal(r.status, 201);
    const d0 = await c.post(`/v0/topics/${t}/diff`, {});
    assert.equal(d0.body.records.length, 256, 'default limit');
    assert.equal(d0.body.next_from_seq, 256);
    assert.equal(d0.body.caught_up, false);
    assert.equal(d0.body.lag, 1200 - 256);
    const dz = await c.post(`/v0/topics/${t}/diff`, { limit: 0 });
    assert.equal(dz.body.records.length, 256, 'limit 0 = default');
    const dmax = await c.post(`/v0/topics/${t}/diff`, { limit: 1000 });
    assert.equal(dmax.body.records.length, 1000);
    const dover = await c.post(`/v0/topics/${t}/diff`, { limit: 5000 });
    assertOk(dover, 200, 'over-max limit is clamped, not rejected');
    assert.equal(dover.body.records.length, 1000);
    assert.equal(dover.body.next_from_seq, 1000);
    const rest = await c.post(`/v0/topics/${t}/diff`, { from_seq: 1000, limit: 5000 });
    assert.equal(rest.body.records.length, 200);
    assert.equal(rest.body.caught_up, true);
  });
});

describe('absent topics', () => {
  test('diff on an absent topic is 404 and never creates it', async () => {
    const t = name('absent');
    const d = assertError(await c.post(`/v0/topics/${t}/diff`, {}), 404, 'topic_not_found');
    assert.deepEqual(d, { topic: t });
    const start = Date.now();
    assertError(await c.post(`/v0/topics/${t}/diff`, { wait_ms: 5000 }), 404, 'topic_not_found', 'with wait_ms');
    assert.ok(Date.now() - start < 2000, '404 at once, no wait');
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'not created');
  });
});

describe('byte budget (docs/API.md "Diff")', () => {
  test('max_batch_bytes stops early but returns at least one record', async () => {
    const t = await seeded(10, 'budget', () => ({ data: 'x'.repeat(100) })); // 102 bytes each
    const one = assertOk(await c.post(`/v0/topics/${t}/diff`, { max_batch_bytes: 1 }), 200);
    assert.deepEqual(seqs(one), [1], 'at least one record even above the budget');
    assert.equal(one.next_from_seq, 1, 'next_from_seq is the last record returned');
    assert.equal(one.caught_up, false);
    const some = await c.post(`/v0/topics/${t}/diff`, { max_batch_bytes: 250 });
    const n = some.body.records.length;
    assert.ok(n >= 1 && n <= 3, `250-byte budget returned ${n} records of 102 bytes`);
    assert.equal(some.body.next_from_seq, n);
    const all = await c.post(`/v0/topics/${t}/diff`, { max_batch_bytes: 0 });
    assert.equal(all.body.records.length, 10, '0 means 1 MiB');
    assertInvalid(await c.post(`/v0/topics/${t}/diff`, { max_batch_bytes: 'big' }), 'max_batch_bytes');
  });

  test('default budget stops before 1 MiB of payload', async () => {
    const t = await seeded(5, 'mib', (i) => ({ data: String(i).repeat(300000) })); // 300002 bytes each
    const d = assertOk(await c.post(`/v0/topics/${t}/diff`, {}), 200);
    assert.deepEqual(seqs(d), [1, 2, 3], '3 × 300002 fits, a 4th would pass 1 MiB');
    assert.equal(d.next_from_seq, 3);
    assert.equal(d.caught_up, false);
    const d2 = await c.post(`/v0/topics/${t}/diff`, { from_seq: 3 });
    assert.deepEqual(seqs(d2.body), [4, 5]);
  });
});

describe('validation', () => {
  test('wrong types are 400 invalid_request', async () => {
    const t = await seeded(1, 'types');
    const cases: [string, unknown][] = [
      ['from_seq', '5'],
      ['from_seq', -1],
      ['from_seq', 1.5],
      ['from_seq', null],
      ['limit', 'x'],
      ['limit', -1],
      ['limit', 2.5],
      ['node', 5],
      ['node', [1]],
      ['node', ['a', null]],
      ['node', { a: 1 }],
      ['include_tags', 1],
      ['include_tags', 'true'],
      ['include_meta', 'yes'],
      ['include_meta', null],
      ['wait_ms', -5],
      ['wait_ms', '100'],
      ['wait_ms', 0.5],
      ['max_batch_bytes', -1],
    ];
    for (const [field, value] of cases) {
      assertInvalid(await c.post(`/v0/topics/${t}/diff`, { [field]: value }), field, `diff ${field}=${JSON.stringify(value)}`);
    }
  });

  test('type errors win over a missing topic (400 before 404, docs/API.md "Which error wins")', async () => {
    assertInvalid(await c.post(`/v0/topics/${name('absent')}/diff`, { from_seq: 'x' }), 'from_seq');
  });
});
