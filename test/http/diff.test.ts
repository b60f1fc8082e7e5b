// Diff (docs/API.md "Diff: read from a cursor") on a spawned server: exclusive cursor, node
// filter, include_meta/tags, caught_up/lag/next_from_seq/earliest_seq, long-poll, the `recreated`
// tombstone and recency. Its rules (limit default and clamp, 404 on absent topics, the byte
// budget, request validation) run in the fast tier: test/inject/diffRules.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk, namer, sleep } from './util.js';
import { httpSuite } from '../support/httpSuite.js';
import { firstAppendSeeder } from '../support/seed.js';

const name = namer('diff');
const { c } = httpSuite();

const DIFF_KEYS = ['caught_up', 'earliest_seq', 'head_seq', 'lag', 'next_from_seq', 'performance', 'records', 'tombstone', 'topic'];

const seeded = firstAppendSeeder(c, name);
const seqs = (b: any) => b.records.map((r: any) => r.$seq);

describe('cursor and watermarks', () => {
  test('from_seq is exclusive; response fields', async () => {
    const t = await seeded(10);
    const all = assertOk(await c.post(`/v0/topics/${t}/diff`, { from_seq: 0 }), 200);
    assert.deepEqual(Object.keys(all).sort(), DIFF_KEYS.filter((k) => k in all).sort());
    for (const k of DIFF_KEYS) assert.ok(k in all, `diff response has ${k}`);
    assert.equal(all.topic, t);
    assert.deepEqual(seqs(all), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(all.next_from_seq, 10);
    assert.equal(all.head_seq, 10);
    assert.equal(all.earliest_seq, 1);
    assert.equal(all.caught_up, true);
    assert.equal(all.lag, 0);
    assert.equal(all.tombstone, null);
    assert.equal(typeof all.performance.records_scanned, 'number');
    assert.ok(all.performance.records_scanned >= 10, 'records_scanned counts examined records');

    const mid = await c.post(`/v0/topics/${t}/diff`, { from_seq: 3 });
    assert.deepEqual(seqs(mid.body), [4, 5, 6, 7, 8, 9, 10]);
    const last = await c.post(`/v0/topics/${t}/diff`, { from_seq: 9 });
    assert.deepEqual(seqs(last.body), [10]);
    const tail = await c.post(`/v0/topics/${t}/diff`, { from_seq: 10 });
    assert.deepEqual(tail.body.records, []);
    assert.equal(tail.body.next_from_seq, 10);
    assert.equal(tail.body.caught_up, true);
    assert.equal(tail.body.lag, 0);
    assert.equal(tail.body.tombstone, null);
  });

  test('limit: partial read, caught_up false, lag, resume from next_from_seq', async () => {
    const t = await seeded(10);
    const p1 = assertOk(await c.post(`/v0/topics/${t}/diff`, { limit: 3 }), 200);
    assert.deepEqual(seqs(p1), [1, 2, 3]);
    assert.equal(p1.next_from_seq, 3);
    assert.equal(p1.caught_up, false);
    assert.equal(p1.lag, 7);
    const p2 = await c.post(`/v0/topics/${t}/diff`, { from_seq: p1.next_from_seq, limit: 3 });
    assert.deepEqual(seqs(p2.body), [4, 5, 6]);
    assert.equal(p2.body.lag, 4);
    const p3 = await c.post(`/v0/topics/${t}/diff`, { from_seq: p2.body.next_from_seq, limit: 4 });
    assert.deepEqual(seqs(p3.body), [7, 8, 9, 10]);
    assert.equal(p3.body.caught_up, true);
    assert.equal(p3.body.lag, 0);
  });

  test('empty topic: records [], next_from_seq 0, earliest_seq = head+1, caught_up', async () => {
    const t = name('empty');
    await c.put(`/v0/topics/${t}`);
    const b = assertOk(await c.post(`/v0/topics/${t}/diff`, {}), 200);
    assert.deepEqual(b.records, []);
    assert.equal(b.head_seq, 0);
    assert.equal(b.earliest_seq, 1);
    assert.equal(b.next_from_seq, 0);
    assert.equal(b.caught_up, true);
    assert.equal(b.lag, 0);
    assert.equal(b.tombstone, null);
  });
});

describe('filters and projections', () => {
  test('node filter (string or array) omits records but next_from_seq advances', async () => {
    const nodes = ['a', 'b', undefined, 'a', 'a'];
    const t = await seeded(5, 'node', (i) => (nodes[i] ? { data: i + 1, node: nodes[i] } : { data: i + 1 }));
    const fa = await c.post(`/v0/topics/${t}/diff`, { node: 'a' });
    assertOk(fa, 200);
    assert.deepEqual(seqs(fa.body), [2, 3]);
    assert.equal(fa.body.next_from_seq, 5, 'filtered tail still advances the cursor');
    assert.equal(fa.body.caught_up, true);
    assert.equal(fa.body.lag, 0);
    assert.ok(fa.body.performance.records_scanned >= 5, 'records_scanned includes filtered records');
    const fab = await c.post(`/v0/topics/${t}/diff`, { node: ['a', 'b'] });
    assert.deepEqual(seqs(fab.body), [3]);
    assert.equal(fab.body.next_from_seq, 5);
    const tailOnly = await c.post(`/v0/topics/${t}/diff`, { from_seq: 3, node: 'a' });
    assert.deepEqual(tailOnly.body.records, [], 'only filtered records after the cursor');
    assert.equal(tailOnly.body.next_from_seq, 5);
    assert.equal(tailOnly.body.caught_up, true);
    const other = await c.post(`/v0/topics/${t}/diff`, { node: 'zzz' });
    assert.deepEqual(seqs(other.body), [1, 2, 3, 4, 5]);
    const emptyArr = await c.post(`/v0/topics/${t}/diff`, { node: [] });
    assertOk(emptyArr, 200, 'empty node array filters nothing');
    assert.equal(emptyArr.body.records.length, 5);
  });

  test('dedupe_node:false opts the topic out of node filtering', async () => {
    const t = name('nodedupe');
    await c.put(`/v0/topics/${t}`, { dedupe_node: false });
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }], node: 'a' });
    const d = await c.post(`/v0/topics/${t}/diff`, { node: 'a' });
    assert.deepEqual(seqs(d.body), [1, 2]);
  });

  test('include_meta false drops meta; default true includes it', async () => {
    const t = await seeded(2, 'meta', (i) => ({ data: i, meta: { i } }));
    const on = await c.post(`/v0/topics/${t}/diff`, {});
    assert.deepEqual(
      on.body.records.map((r: any) => r.meta),
      [{ i: 0 }, { i: 1 }],
    );
    const on2 = await c.post(`/v0/topics/${t}/diff`, { include_meta: true });
    assert.deepEqual(on2.body.records[1].meta, { i: 1 });
    const off = await c.post(`/v0/topics/${t}/diff`, { include_meta: false });
    for (const r of off.body.records) assert.equal('meta' in r, false);
    assert.deepEqual(
      off.body.records.map((r: any) => r.data),
      [0, 1],
    );
  });
});

describe('long-poll (wait_ms)', () => {
  test('an append from another request wakes the waiting diff early', async () => {
    const t = await seeded(2, 'wake');
    const start = Date.now();
    const pending = c.post(`/v0/topics/${t}/diff`, { from_seq: 2, wait_ms: 8000 });
    await sleep(250);
    const appendedAt = Date.now();
    const a = await c.post(`/v0/topics/${t}`, { records: [{ data: 'late' }] });
    assert.equal(a.status, 200);
    const r = await pending;
    const doneAt = Date.now();
    assertOk(r, 200);
    assert.deepEqual(seqs(r.body), [3]);
    assert.equal(r.body.records[0].data, 'late');
    assert.equal(r.body.next_from_seq, 3);
    assert.equal(r.body.caught_up, true);
    assert.ok(doneAt - appendedAt < 2000, `woke ${doneAt - appendedAt} ms after the append`);
    assert.ok(doneAt - start < 4000, 'well before wait_ms');
  });

  test('returns empty after wait_ms when nothing arrives', async () => {
    const t = await seeded(1, 'idle');
    const start = Date.now();
    const r = await c.post(`/v0/topics/${t}/diff`, { from_seq: 1, wait_ms: 300 });
    const took = Date.now() - start;
    assertOk(r, 200);
    assert.deepEqual(r.body.records, []);
    assert.equal(r.body.next_from_seq, 1);
    assert.equal(r.body.caught_up, true);
    assert.ok(took >= 250, `waited ${took} ms`);
    assert.ok(took < 2500, `returned after ${took} ms`);
  });

  test('does not wait when records are available', async () => {
    const t = await seeded(3, 'avail');
    const start = Date.now();
    const r = await c.post(`/v0/topics/${t}/diff`, { from_seq: 1, wait_ms: 10000 });
    assert.deepEqual(seqs(r.body), [2, 3]);
    assert.ok(Date.now() - start < 2000);
  });

  test('wait_ms above 30000 is clamped, not rejected', async () => {
    const t = await seeded(1, 'clampwait');
    let settled = false;
    const pending = c.post(`/v0/topics/${t}/diff`, { from_seq: 1, wait_ms: 120000 }).finally(() => (settled = true));
    await sleep(200);
    assert.equal(settled, false, 'still waiting (not rejected with 400)');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 'wake' }] });
    const r = await pending;
    assertOk(r, 200);
    assert.deepEqual(seqs(r.body), [2]);
  });

  test('a waiting diff ends with 404 when the topic is deleted', async () => {
    const t = await seeded(1, 'delwait');
    const start = Date.now();
    const pending = c.post(`/v0/topics/${t}/diff`, { from_seq: 1, wait_ms: 8000 });
    await sleep(200);
    await c.del(`/v0/topics/${t}`);
    const r = await pending;
    assertError(r, 404, 'topic_not_found');
    assert.ok(Date.now() - start < 4000, 'ended at once');
  });
});

describe('recreated tombstone (docs/API.md "Diff")', () => {
  test('from_seq above head after delete+recreate: tombstone then the new instance records', async () => {
    const t = await seeded(5, 'recreate');
    await c.del(`/v0/topics/${t}`);
    await c.post(`/v0/topics/${t}`, { records: [{ data: 'n1' }, { data: 'n2' }, { data: 'n3' }] });
    const r = await c.post(`/v0/topics/${t}/diff`, { from_seq: 5 });
    const b = assertOk(r, 200);
    assert.deepEqual(b.tombstone, { gap_from: 1, gap_to: 0, reason: 'recreated', missed_estimate: 0, earliest_seq: 1, head_seq: 3 });
    assert.deepEqual(seqs(b), [1, 2, 3]);
    assert.deepEqual(
      b.records.map((x: any) => x.data),
      ['n1', 'n2', 'n3'],
    );
    assert.equal(b.next_from_seq, 3);
    assert.equal(b.caught_up, true);
    assert.equal(b.head_seq, 3);
    assert.equal(b.earliest_seq, 1);
    const r4 = await c.post(`/v0/topics/${t}/diff`, { from_seq: 4, limit: 2 });
    assert.equal(r4.body.tombstone?.reason, 'recreated');
    assert.deepEqual(seqs(r4.body), [1, 2]);
    assert.equal(r4.body.next_from_seq, 2);
    const atHead = await c.post(`/v0/topics/${t}/diff`, { from_seq: 3 });
    assert.equal(atHead.body.tombstone, null, 'from_seq == head is not stale');
    assert.deepEqual(atHead.body.records, []);
  });

  test('any from_seq above head_seq is treated as a cursor from an earlier instance', async () => {
    const t = await seeded(3, 'stale');
    const b = assertOk(await c.post(`/v0/topics/${t}/diff`, { from_seq: 10 }), 200);
    assert.deepEqual(b.tombstone, { gap_from: 1, gap_to: 0, reason: 'recreated', missed_estimate: 0, earliest_seq: 1, head_seq: 3 });
    assert.deepEqual(seqs(b), [1, 2, 3]);
  });

  test('recreated empty topic: tombstone with empty records', async () => {
    const t = await seeded(4, 'recreate0');
    await c.del(`/v0/topics/${t}`);
    await c.put(`/v0/topics/${t}`);
    const b = assertOk(await c.post(`/v0/topics/${t}/diff`, { from_seq: 4 }), 200);
    assert.deepEqual(b.tombstone, { gap_from: 1, gap_to: 0, reason: 'recreated', missed_estimate: 0, earliest_seq: 1, head_seq: 0 });
    assert.deepEqual(b.records, []);
    assert.equal(b.next_from_seq, 0);
  });
});

describe('validation', () => {
  test('diff bumps recency (docs/API.md "GET /v0/topics/:topic"): effective_priority and last_read_ts', async () => {
    const t = await seeded(1, 'recency');
    const pre = await c.get(`/v0/topics/${t}?touch=false`);
    assert.equal(pre.body.effective_priority, 0);
    assert.equal(pre.body.last_read_ts, null);
    await c.post(`/v0/topics/${t}/diff`, {});
    const post = await c.get(`/v0/topics/${t}?touch=false`);
    assert.ok(post.body.effective_priority >= 490, `after diff: ${post.body.effective_priority}`);
    assert.equal(typeof post.body.last_read_ts, 'number');
  });
});
