// Record delete over HTTP (docs/API.md "Record delete", "GET /v0/topics/:topic", "Diff", "Watch frames",
// "Conventions", "Which error wins", "Topic lifecycle"): POST /v0/topics/:topic/delete with before_seq and/or match.
// - before_seq deletes seq < before_seq; match is ["tag","Eq",x], ["tag","Glob","p*"] (literal
//   prefix + one trailing *), or a bare string (= Eq); both given are ANDed; neither is 400;
// - point-in-time: only records at or below the head at call time; later appends survive;
// - records without a tag never match;
// - permanent, immediate for every reader, silent: no tombstone, cursors move past the gap;
// - response {topic, deleted, earliest_seq, head_seq (unchanged), count, bytes, performance};
// - errors: 400 invalid_request for a missing selector, malformed tuple, op outside Eq/Glob,
//   Glob without a single trailing *; 404 topic_not_found for an unknown topic (never creates);
// - DELETE ?if_empty=true succeeds once every record is deleted; a recreated topic restarts at 1.
// The errors run in the fast tier: test/inject/recordDeleteRules.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk, namer } from './util.js';
import { httpSuite } from '../support/httpSuite.js';
import { configuredTopicSeeder, tagged, type SeededRecord as Rec } from '../support/seed.js';

const name = namer('rdel');
const { c } = httpSuite();

// ---- helpers -------------------------------------------------------------------------------

const sz = (r: Rec) => Buffer.byteLength(JSON.stringify(r.data)) + (r.meta === undefined ? 0 : Buffer.byteLength(JSON.stringify(r.meta)));
const range = (a: number, b: number): number[] => (b < a ? [] : Array.from({ length: b - a + 1 }, (_, i) => a + i));
const seqs = (b: any): number[] => b.records.map((r: any) => r.$seq);

const DELETE_KEYS = ['bytes', 'count', 'deleted', 'earliest_seq', 'head_seq', 'performance', 'topic'];

const seeded = configuredTopicSeeder(c, name);

async function del(t: string, body: unknown): Promise<any> {
  const r = await c.post(`/v0/topics/${t}/delete`, body);
  const b = assertOk(r, 200, `delete ${JSON.stringify(body)}`);
  assert.deepEqual(Object.keys(b).sort(), DELETE_KEYS, 'delete response fields');
  assert.equal(b.topic, t);
  for (const k of ['deleted', 'earliest_seq', 'head_seq', 'count', 'bytes'])
    assert.ok(Number.isInteger(b[k]) && b[k] >= 0, `${k} is a non-negative integer`);
  return b;
}

async function state(t: string): Promise<any> {
  return assertOk(await c.get(`/v0/topics/${t}?touch=false`), 200);
}

async function diff(t: string, body: Record<string, unknown> = {}): Promise<any> {
  return assertOk(await c.post(`/v0/topics/${t}/diff`, { limit: 1000, include_tags: true, ...body }), 200);
}

/** Live seqs via a full read from 0 (asserting the read is silent: no tombstone anywhere). */
async function liveSeqs(t: string): Promise<number[]> {
  const out: number[] = [];
  let from = 0;
  for (let i = 0; i < 1000; i++) {
    const d = await diff(t, { from_seq: from });
    assert.equal(d.tombstone, null, `deletes are silent (from ${from})`);
    out.push(...seqs(d));
    from = d.next_from_seq;
    if (d.caught_up) return out;
  }
  throw new Error('not caught up');
}

/** Checks the delete response against GET state and the expected live set. */
async function expectLive(t: string, resp: any, recs: Rec[], live: number[], head: number): Promise<void> {
  const bytes = live.reduce((a, s) => a + sz(recs[s - 1]!), 0);
  const earliest = live.length ? live[0]! : head + 1;
  assert.equal(resp.head_seq, head, 'head_seq unchanged by a delete');
  assert.equal(resp.count, live.length, 'response count');
  assert.equal(resp.bytes, bytes, 'response bytes');
  assert.equal(resp.earliest_seq, earliest, 'response earliest_seq');
  const st = await state(t);
  assert.equal(st.head_seq, head);
  assert.equal(st.count, live.length, 'GET state count');
  assert.equal(st.bytes, bytes, 'GET state bytes');
  assert.equal(st.earliest_seq, earliest, 'GET state earliest_seq');
  assert.deepEqual(await liveSeqs(t), live, 'records delivered by diff');
}

// ---- before_seq --------------------------------------------------------------------------------

describe('before_seq', () => {
  test('deletes every record with seq < before_seq; response and state agree', async () => {
    const recs = range(1, 10).map((i) => ({ data: `v${i}`, ...(i % 2 ? { meta: { i } } : {}) }));
    const t = await seeded(recs);
    const r = await del(t, { before_seq: 4 });
    assert.equal(r.deleted, 3);
    await expectLive(t, r, recs, range(4, 10), 10);
    // The same delete again removes nothing more.
    const again = await del(t, { before_seq: 4 });
    assert.equal(again.deleted, 0);
    assert.equal(again.earliest_seq, 4);
    const d = await diff(t, { from_seq: 0 });
    assert.equal(d.tombstone, null, 'a deleted prefix is silent (docs/API.md "Diff")');
    assert.deepEqual(seqs(d), range(4, 10));
    assert.equal(d.earliest_seq, 4);
    const mid = await diff(t, { from_seq: 2 });
    assert.equal(mid.tombstone, null, 'cursor inside the deleted prefix');
    assert.deepEqual(seqs(mid), range(4, 10));
  });

  test('before_seq 0 and 1 delete nothing', async () => {
    const recs = tagged([undefined, undefined, undefined]);
    const t = await seeded(recs);
    for (const b of [0, 1]) {
      const r = await del(t, { before_seq: b });
      assert.equal(r.deleted, 0, `before_seq ${b}`);
      await expectLive(t, r, recs, [1, 2, 3], 3);
    }
  });

  test('before_seq beyond the head deletes everything; later appends survive (point-in-time)', async () => {
    const recs = tagged([undefined, 'a', undefined, 'b', undefined]);
    const t = await seeded(recs);
    const r = await del(t, { before_seq: 1000 });
    assert.equal(r.deleted, 5);
    await expectLive(t, r, recs, [], 5);
    const d = await diff(t, { from_seq: 0 });
    assert.deepEqual(d.records, []);
    assert.equal(d.next_from_seq, 5, 'the cursor moves past the deleted records');
    assert.equal(d.caught_up, true);
    assert.equal(d.tombstone, null);
    assert.equal(d.earliest_seq, 6, 'earliest_seq = head_seq + 1 when nothing is live');
    const a = assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 6 }, { data: 7, tag: 'a' }] }), 200);
    assert.deepEqual(a.seqs, [6, 7], 'seqs are never reused');
    assert.deepEqual(await liveSeqs(t), [6, 7], 'records appended after the delete are not deleted (6 < 1000)');
    const st = await state(t);
    assert.equal(st.count, 2);
    assert.equal(st.earliest_seq, 6);
  });

  test('on an empty topic', async () => {
    const t = await seeded([]);
    const r = await del(t, { before_seq: 5 });
    assert.deepEqual(
      { ...r, performance: undefined },
      { topic: t, deleted: 0, earliest_seq: 1, head_seq: 0, count: 0, bytes: 0, performance: undefined },
    );
  });
});

// ---- match -------------------------------------------------------------------------------------

describe('match', () => {
  const TAGS = ['a', 'b', 'a', undefined, 'ab', 'ba', 'A', 'a', undefined, 'abc'];

  test('["tag","Eq",x] deletes exactly the records tagged x; untagged and other tags stay', async () => {
    const recs = tagged(TAGS);
    const t = await seeded(recs);
    const r = await del(t, { match: ['tag', 'Eq', 'a'] });
    assert.equal(r.deleted, 3);
    await expectLive(t, r, recs, [2, 4, 5, 6, 7, 9, 10], 10);
    const d = await diff(t);
    assert.ok(d.records.every((x: any) => x.$tag !== 'a'));
    assert.deepEqual(
      d.records.filter((x: any) => x.$tag === undefined).map((x: any) => x.$seq),
      [4, 9],
      'untagged records never match',
    );
  });

  test('a bare string is shorthand for Eq (a * in it is literal)', async () => {
    const recs = tagged(['p*', 'p', 'pq', 'p*', undefined]);
    const t = await seeded(recs);
    const r = await del(t, { match: 'p*' });
    assert.equal(r.deleted, 2, 'only the literal tag "p*"');
    await expectLive(t, r, recs, [2, 3, 5], 5);
    const r2 = await del(t, { match: 'p' });
    assert.equal(r2.deleted, 1);
    await expectLive(t, r2, recs, [3, 5], 5);
  });

  test('Eq with a * in the value is literal too', async () => {
    const recs = tagged(['x*', 'xy', 'x']);
    const t = await seeded(recs);
    const r = await del(t, { match: ['tag', 'Eq', 'x*'] });
    assert.equal(r.deleted, 1);
    await expectLive(t, r, recs, [2, 3], 3);
  });

  test('["tag","Glob","p*"] deletes every tag with that literal prefix (case-sensitive)', async () => {
    const recs = tagged(TAGS);
    const t = await seeded(recs);
    const r = await del(t, { match: ['tag', 'Glob', 'a*'] });
    assert.equal(r.deleted, 5, 'a, a, ab, a, abc');
    await expectLive(t, r, recs, [2, 4, 6, 7, 9], 10);
    const r2 = await del(t, { match: ['tag', 'Glob', 'ba*'] });
    assert.equal(r2.deleted, 1);
    await expectLive(t, r2, recs, [2, 4, 7, 9], 10);
  });

  test('Glob prefix characters are literal (no regex or wildcard meaning besides the trailing *)', async () => {
    const recs = tagged(['a.b', 'axb', 'a.bc', 'a?', 'ab', 'a[1]', 'a1', '.*x']);
    const t = await seeded(recs);
    const r = await del(t, { match: ['tag', 'Glob', 'a.b*'] });
    assert.equal(r.deleted, 2);
    await expectLive(t, r, recs, [2, 4, 5, 6, 7, 8], 8);
    const r2 = await del(t, { match: ['tag', 'Glob', 'a?*'] });
    assert.equal(r2.deleted, 1);
    const r3 = await del(t, { match: ['tag', 'Glob', 'a[*'] });
    assert.equal(r3.deleted, 1);
    const r4 = await del(t, { match: ['tag', 'Glob', '.*'] });
    assert.equal(r4.deleted, 1, '"." is a literal dot');
    await expectLive(t, r4, recs, [2, 5, 7], 8);
  });

  test('Glob "*" (empty prefix) deletes every tagged record and never an untagged one', async () => {
    const recs = tagged(TAGS);
    const t = await seeded(recs);
    const r = await del(t, { match: ['tag', 'Glob', '*'] });
    assert.equal(r.deleted, 8);
    await expectLive(t, r, recs, [4, 9], 10);
  });

  test('a match nothing carries deletes nothing', async () => {
    const recs = tagged(TAGS);
    const t = await seeded(recs);
    for (const m of [['tag', 'Eq', 'zzz'], ['tag', 'Glob', 'zz*'], 'c', ['tag', 'Eq', 'ab ']]) {
      const r = await del(t, { match: m });
      assert.equal(r.deleted, 0, JSON.stringify(m));
      await expectLive(t, r, recs, range(1, 10), 10);
    }
  });

  test('non-ASCII tags match byte-exactly', async () => {
    const recs = tagged(['é', 'e', 'éa', 'ü']);
    const t = await seeded(recs);
    const r = await del(t, { match: ['tag', 'Glob', 'é*'] });
    assert.equal(r.deleted, 2);
    await expectLive(t, r, recs, [2, 4], 4);
    const r2 = await del(t, { match: 'ü' });
    assert.equal(r2.deleted, 1);
  });

  test('before_seq and match together are ANDed', async () => {
    const recs = tagged(['a', 'b', 'a', 'a', undefined, 'a', 'ab', 'a']);
    const t = await seeded(recs);
    const r = await del(t, { before_seq: 6, match: ['tag', 'Eq', 'a'] });
    assert.equal(r.deleted, 3, 'seqs 1, 3, 4: tagged a and below 6');
    await expectLive(t, r, recs, [2, 5, 6, 7, 8], 8);
    const r2 = await del(t, { before_seq: 8, match: ['tag', 'Glob', 'a*'] });
    assert.equal(r2.deleted, 2, 'seqs 6 and 7');
    await expectLive(t, r2, recs, [2, 5, 8], 8);
    const r3 = await del(t, { before_seq: 2, match: 'b' });
    assert.equal(r3.deleted, 0, 'b is at seq 2, not below 2');
  });

  test('point-in-time: records appended after the delete with a matching tag survive', async () => {
    const recs: Rec[] = tagged(['v', undefined, 'v']);
    const t = await seeded(recs);
    const r = await del(t, { match: ['tag', 'Eq', 'v'] });
    assert.equal(r.deleted, 2);
    assert.equal(r.head_seq, 3);
    const a = assertOk(
      await c.post(`/v0/topics/${t}`, {
        records: [
          { data: 4, tag: 'v' },
          { data: 5, tag: 'vv' },
        ],
      }),
      200,
    );
    assert.deepEqual(a.seqs, [4, 5]);
    recs.push({ data: 4, tag: 'v' }, { data: 5, tag: 'vv' });
    const live = await liveSeqs(t);
    assert.deepEqual(live, [2, 4, 5], 'the later v record survives');
    const d = await diff(t, { from_seq: 3 });
    assert.equal(d.records[0].$tag, 'v');
    // A new delete call with the same match deletes it (its own point in time).
    const r2 = await del(t, { match: ['tag', 'Glob', 'v*'] });
    assert.equal(r2.deleted, 2);
    await expectLive(t, r2, recs, [2], 5);
  });

  test('concurrent appends and a match delete: the delete judges exactly the records up to its head, later ones survive', async () => {
    const t = await seeded([]);
    const writes = range(1, 20).map((i) => c.post(`/v0/topics/${t}`, { records: [{ data: i, tag: 'c' }] }));
    const delP = c.post(`/v0/topics/${t}/delete`, { match: 'c' });
    const [resps, dr] = await Promise.all([Promise.all(writes), delP]);
    for (const w of resps) assertOk(w, 200);
    const d = assertOk(dr, 200);
    const st = await state(t);
    assert.equal(st.head_seq, 20);
    // Every record is tagged c and seqs are contiguous, so a point-in-time delete removed exactly
    // 1..bound (bound = the head when it ran) and every later record survives.
    assert.deepEqual(await liveSeqs(t), range(d.deleted + 1, 20), `deleted ${d.deleted}`);
    assert.equal(st.count, 20 - d.deleted);
  });

  test('the delete response describes its own point in time (head_seq = the head it was bounded by)', async () => {
    // docs/API.md "Record delete": head_seq is "unchanged" by the delete, count/bytes are what the delete retained.
    // Appends that land while an fsync delete waits for its fsync must not leak into them.
    const t = await seeded(tagged(['c', 'c', 'c', 'c', 'c']), { durability: 'fsync' });
    const delP = c.post(`/v0/topics/${t}/delete`, { match: 'c' });
    await new Promise((r) => setImmediate(r));
    const writes = range(6, 10).map((i) => c.post(`/v0/topics/${t}`, { records: [{ data: i, tag: 'c' }] }));
    const [dr, resps] = await Promise.all([delP, Promise.all(writes)]);
    for (const w of resps) assertOk(w, 200);
    const d = assertOk(dr, 200);
    assert.ok(d.deleted >= 5, `deleted ${d.deleted}`);
    assert.deepEqual(await liveSeqs(t), range(d.deleted + 1, 10), 'point-in-time');
    // All records up to the bound were live and tagged c, so bound = deleted.
    assert.deepEqual(
      { head_seq: d.head_seq, earliest_seq: d.earliest_seq, count: d.count, bytes: d.bytes },
      { head_seq: d.deleted, earliest_seq: d.deleted + 1, count: 0, bytes: 0 },
      'the response must not mix in records appended after the delete ran',
    );
  });
});

// ---- reads after deletes -----------------------------------------------------------------------

describe('reads after deletes: silent gaps', () => {
  test('a deleted run in the middle is skipped silently; next_from_seq advances past it', async () => {
    const recs = tagged([undefined, undefined, 'x', 'x', 'x', 'x', 'x', undefined, undefined, undefined]);
    const t = await seeded(recs);
    await del(t, { match: ['tag', 'Eq', 'x'] });
    const p1 = await diff(t, { from_seq: 0, limit: 3 });
    assert.equal(p1.tombstone, null);
    assert.deepEqual(seqs(p1), [1, 2, 8]);
    assert.equal(p1.next_from_seq, 8);
    assert.equal(p1.caught_up, false);
    const p2 = await diff(t, { from_seq: 2, limit: 1 });
    assert.equal(p2.tombstone, null);
    assert.deepEqual(seqs(p2), [8]);
    assert.equal(p2.next_from_seq, 8, 'the deleted records advanced the cursor');
    for (const from of [3, 5, 7]) {
      const d = await diff(t, { from_seq: from });
      assert.equal(d.tombstone, null, `cursor ${from} inside the deleted run`);
      assert.deepEqual(seqs(d), [8, 9, 10]);
    }
    // A deleted tail: records [] but the cursor moves to the head.
    await del(t, { before_seq: 11, match: ['tag', 'Glob', '*'] }); // nothing tagged remains: no-op
    await del(t, { before_seq: 11 });
    const tail = await diff(t, { from_seq: 2 });
    assert.deepEqual(tail.records, []);
    assert.equal(tail.next_from_seq, 10);
    assert.equal(tail.caught_up, true);
    assert.equal(tail.lag, 0);
    assert.equal(tail.tombstone, null);
  });

  test('deleted records disappear at once for every reader and every read path', async () => {
    const prefix = name('all');
    const t = `${prefix}.x`;
    const recs = tagged(['k', 'd', 'k', 'd', 'k']);
    assertOk(await c.put(`/v0/topics/${t}`, {}), 201);
    assertOk(await c.post(`/v0/topics/${t}`, { records: recs }), 200);
    const r = await del(t, { match: 'd' });
    const readers = await Promise.all([0, 1, 2, 3].map((from) => diff(t, { from_seq: from })));
    for (const d of readers) {
      assert.ok(!seqs(d).includes(2) && !seqs(d).includes(4), 'deleted seqs never delivered');
      assert.equal(d.tombstone, null);
    }
    const list = assertOk(await c.get(`/v0/topics?prefix=${encodeURIComponent(prefix)}`), 200);
    assert.equal(list.topics[0].count, 3, 'list summary count excludes deleted records');
    assert.equal(list.topics[0].bytes, r.bytes);
    await expectLive(t, r, recs, [1, 3, 5], 5);
  });

  test('deleting records at the front moves earliest_seq; a later one does not', async () => {
    const recs = tagged(['f', 'f', undefined, 'm', undefined]);
    const t = await seeded(recs);
    const r1 = await del(t, { match: 'm' });
    assert.equal(r1.earliest_seq, 1);
    const r2 = await del(t, { match: 'f' });
    assert.equal(r2.earliest_seq, 3);
    await expectLive(t, r2, recs, [3, 5], 5);
  });

  test('bytes drop by exactly the deleted records (docs/API.md "GET /v0/topics/:topic" measure, meta included)', async () => {
    const recs: Rec[] = [
      { data: { a: 1 }, meta: { k: 'v' }, tag: 't1' },
      { data: 'é', tag: 't2' },
      { data: [1, 2, 3], meta: { x: [true] }, tag: 't1' },
      { data: null },
    ];
    const t = await seeded(recs);
    const st0 = await state(t);
    assert.equal(
      st0.bytes,
      recs.reduce((a, r) => a + sz(r), 0),
    );
    const r = await del(t, { match: 't1' });
    assert.equal(r.deleted, 2);
    assert.equal(r.bytes, sz(recs[1]!) + sz(recs[3]!));
    await expectLive(t, r, recs, [2, 4], 4);
  });

  test('deletes work the same on every durability class', async () => {
    for (const durability of ['ephemeral', 'memory', 'disk', 'fsync']) {
      const recs = tagged(['a', 'b', 'a', undefined, 'b']);
      const t = await seeded(recs, { durability }, durability);
      const r = await del(t, { before_seq: 4, match: 'a' });
      assert.equal(r.deleted, 2, durability);
      await expectLive(t, r, recs, [2, 4, 5], 5);
      const r2 = await del(t, { before_seq: 3 });
      assert.equal(r2.deleted, 1, durability);
      await expectLive(t, r2, recs, [4, 5], 5);
    }
  });
});

// ---- topic delete and recreate -----------------------------------------------------------------

describe('topic delete and recreate', () => {
  test('after deleting every record, DELETE ?if_empty=true deletes the topic', async () => {
    const recs = tagged(['a', undefined, 'b']);
    const t = await seeded(recs);
    await del(t, { match: ['tag', 'Glob', '*'] });
    const busy = assertError(await c.del(`/v0/topics/${t}?if_empty=true`), 409, 'topic_not_empty', 'the untagged record is still live');
    assert.deepEqual(busy, { topic: t, count: 1 });
    await del(t, { before_seq: 4 });
    const r = assertOk(await c.del(`/v0/topics/${t}?if_empty=true`), 200);
    assert.equal(r.deleted, true);
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
    assertError(await c.post(`/v0/topics/${t}/delete`, { before_seq: 1 }), 404, 'topic_not_found', 'record delete on a deleted topic');
  });

  test('a recreated topic starts at seq 1, holds none of the old records, and old cursors get recreated', async () => {
    const t = await seeded(tagged(['old', 'old', 'old', 'old', 'old']));
    await del(t, { before_seq: 3 });
    assertOk(await c.del(`/v0/topics/${t}`), 200);
    const a = assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 'n1', tag: 'new' }, { data: 'n2' }] }), 201);
    assert.deepEqual(a.seqs, [1, 2]);
    const st = await state(t);
    assert.equal(st.head_seq, 2);
    assert.equal(st.earliest_seq, 1, "the old instance's deletes do not carry over");
    assert.equal(st.count, 2);
    const d = await diff(t, { from_seq: 5 });
    assert.deepEqual(d.tombstone, { gap_from: 1, gap_to: 0, reason: 'recreated', missed_estimate: 0, earliest_seq: 1, head_seq: 2 });
    assert.deepEqual(seqs(d), [1, 2]);
    assert.deepEqual(
      d.records.map((r: any) => r.data),
      ['n1', 'n2'],
    );
    // The tag index of the old instance is gone: deleting "old" deletes nothing.
    const r = await del(t, { match: 'old' });
    assert.equal(r.deleted, 0);
    const r2 = await del(t, { match: 'new' });
    assert.equal(r2.deleted, 1);
    assert.equal(r2.earliest_seq, 2);
  });
});
