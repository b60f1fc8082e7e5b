// Retention over HTTP (docs/API.md "PUT /v0/topics/:topic" caps/ttl/discard,
// "GET /v0/topics/:topic" count/bytes, "Diff", "Errors"; docs/ARCHITECTURE.md "Watermarks", "Retention"):
// - cap_records / cap_bytes with discard "old": the oldest live records are evicted so that,
//   once a write has returned, GET state count/bytes never exceed a cap; the write succeeds;
// - discard "reject": 422 topic_full (nothing appended) with detail {topic, cap_records,
//   cap_bytes, head_seq, earliest_seq}; a batch that alone exceeds a cap is 400
//   record_too_large with detail.limit "cap_records" | "cap_bytes";
// - a cap or ttl tightened by PUT applies at once; relaxing never brings records back;
// - ttl_ms: records with now - $ts > ttl_ms are never delivered and not counted (judged at
//   request time);
// - tombstones: a diff whose from_seq + 1 is below the involuntary floor gets exactly one
//   tombstone {gap_from: from_seq+1, gap_to: earliest_seq-1, reason cap|ttl|mixed,
//   missed_estimate, earliest_seq, head_seq} and resumes at earliest_seq; cursors at or above
//   the floor get none; user deletes never move that floor.
// TTL tests use real time; their waits are computed from the server's own $ts values.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk, namer, sleep, JSON_CT, raw } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('ret');
const { srv, c } = httpSuite();

// ---- helpers -------------------------------------------------------------------------------

type Rec = { data: unknown; tag?: string; meta?: Record<string, unknown> };

/** The docs/API.md "GET /v0/topics/:topic" byte measure of a record sent as compact JSON: data text + meta text, UTF-8. */
function sz(r: Rec): number {
  return Buffer.byteLength(JSON.stringify(r.data)) + (r.meta === undefined ? 0 : Buffer.byteLength(JSON.stringify(r.meta)));
}

/** `data` whose stored text is exactly `bytes` bytes (a JSON string of bytes-2 characters). */
function dataOf(bytes: number, ch = 'x'): string {
  assert.ok(bytes >= 2);
  return ch.repeat(bytes - 2);
}

async function mk(config: Record<string, unknown>, label = 't'): Promise<string> {
  const t = name(label);
  const r = await c.put(`/v0/topics/${t}`, config);
  assertOk(r, 201, `PUT ${t} ${JSON.stringify(config)}`);
  return t;
}

async function append(t: string, records: Rec[], extra: Record<string, unknown> = {}): Promise<any> {
  const r = await c.post(`/v0/topics/${t}`, { records, ...extra });
  return assertOk(r, [200, 201], `append ${records.length} to ${t}`);
}

async function appendN(t: string, n: number, mkRec: (i: number) => Rec = (i) => ({ data: i })): Promise<any> {
  return append(
    t,
    Array.from({ length: n }, (_, i) => mkRec(i)),
  );
}

async function state(t: string): Promise<any> {
  return assertOk(await c.get(`/v0/topics/${t}?touch=false`), 200, `GET state ${t}`);
}

async function diff(t: string, body: Record<string, unknown> = {}): Promise<any> {
  return assertOk(await c.post(`/v0/topics/${t}/diff`, body), 200, `diff ${t} ${JSON.stringify(body)}`);
}

const seqs = (b: any): number[] => b.records.map((r: any) => r.$seq);
const range = (a: number, b: number): number[] => (b < a ? [] : Array.from({ length: b - a + 1 }, (_, i) => a + i));

/** Follows next_from_seq from `from` until caught_up; returns every record and every tombstone. */
async function readAll(t: string, from = 0, limit = 1000): Promise<{ records: any[]; tombstones: any[]; last: any }> {
  const records: any[] = [];
  const tombstones: any[] = [];
  let cursor = from;
  let last: any;
  for (let i = 0; i < 10_000; i++) {
    last = await diff(t, { from_seq: cursor, limit, include_tags: true });
    if (last.tombstone !== null) tombstones.push(last.tombstone);
    records.push(...last.records);
    assert.ok(
      last.next_from_seq >= cursor || last.tombstone?.reason === 'recreated',
      `next_from_seq ${last.next_from_seq} went back from ${cursor}`,
    );
    cursor = last.next_from_seq;
    if (last.caught_up) return { records, tombstones, last };
  }
  throw new Error('readAll did not catch up');
}

const TOMB_KEYS = ['earliest_seq', 'gap_from', 'gap_to', 'head_seq', 'missed_estimate', 'reason'];

/**
 * Asserts a tombstone object (docs/API.md "Diff"): exact keys, exact range and watermarks, a reason from
 * the allowed set, and missed_estimate an integer within [0, range size] (it is approximate).
 */
function assertTomb(
  tb: any,
  exp: { gap_from: number; gap_to: number; reason: string | string[]; earliest_seq: number; head_seq: number },
  what = '',
): void {
  assert.ok(tb && typeof tb === 'object', `${what}: expected a tombstone, got ${JSON.stringify(tb)}`);
  assert.deepEqual(Object.keys(tb).sort(), TOMB_KEYS, `${what}: tombstone keys ${JSON.stringify(tb)}`);
  assert.equal(tb.gap_from, exp.gap_from, `${what}: gap_from in ${JSON.stringify(tb)}`);
  assert.equal(tb.gap_to, exp.gap_to, `${what}: gap_to in ${JSON.stringify(tb)}`);
  assert.equal(tb.earliest_seq, exp.earliest_seq, `${what}: earliest_seq in ${JSON.stringify(tb)}`);
  assert.equal(tb.head_seq, exp.head_seq, `${what}: head_seq in ${JSON.stringify(tb)}`);
  const reasons = Array.isArray(exp.reason) ? exp.reason : [exp.reason];
  assert.ok(reasons.includes(tb.reason), `${what}: reason ${tb.reason}, expected ${reasons.join('|')}`);
  assert.ok(Number.isInteger(tb.missed_estimate), `${what}: missed_estimate is an integer`);
  const size = Math.max(0, exp.gap_to - exp.gap_from + 1);
  assert.ok(tb.missed_estimate >= 0 && tb.missed_estimate <= size, `${what}: missed_estimate ${tb.missed_estimate} outside [0, ${size}]`);
}

/** Sleeps until the wall clock is more than `ms` past `ts` (+ slack). */
async function sleepPast(ts: number, ms: number, slack = 60): Promise<void> {
  const wait = ts + ms + slack - Date.now();
  if (wait > 0) await sleep(wait);
}

/** Checks the watermarks every response agrees on. */
function assertWatermarks(st: any, exp: { head: number; earliest: number; count: number; bytes?: number }, what = ''): void {
  assert.equal(st.head_seq, exp.head, `${what}: head_seq`);
  assert.equal(st.earliest_seq, exp.earliest, `${what}: earliest_seq`);
  assert.equal(st.count, exp.count, `${what}: count`);
  if (exp.bytes !== undefined) assert.equal(st.bytes, exp.bytes, `${what}: bytes`);
  if ('next_seq' in st) assert.equal(st.next_seq, exp.head + 1, `${what}: next_seq`);
}

// ---- cap_records, discard old ---------------------------------------------------------------

describe('cap_records with discard old', () => {
  test('at the edge all records stay; one more evicts exactly the oldest and the write succeeds', async () => {
    const t = await mk({ cap_records: 5 });
    const recs = range(1, 5).map((i) => ({ data: `r${i}` }));
    await append(t, recs);
    assertWatermarks(await state(t), { head: 5, earliest: 1, count: 5, bytes: recs.reduce((a, r) => a + sz(r), 0) }, 'at the cap');
    const full = await diff(t);
    assert.deepEqual(seqs(full), [1, 2, 3, 4, 5]);
    assert.equal(full.tombstone, null, 'nothing lost at the edge');

    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 'r6' }] });
    assertOk(r, 200, 'the write past the cap succeeds');
    assert.deepEqual(r.body.seqs, [6]);
    const st = await state(t);
    assertWatermarks(
      st,
      { head: 6, earliest: 2, count: 5, bytes: range(2, 6).reduce((a, i) => a + sz({ data: `r${i}` }), 0) },
      'past the cap',
    );
    const d = await diff(t, { from_seq: 0 });
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 1, reason: 'cap', earliest_seq: 2, head_seq: 6 }, 'from 0');
    assert.equal(d.tombstone.missed_estimate, 1, 'one record lost');
    assert.deepEqual(seqs(d), [2, 3, 4, 5, 6]);
    assert.deepEqual(
      d.records.map((x: any) => x.data),
      ['r2', 'r3', 'r4', 'r5', 'r6'],
    );
    assert.equal(d.next_from_seq, 6);
    assert.equal(d.caught_up, true);
    assert.equal(d.earliest_seq, 2);
  });

  test('a batch larger than cap_records keeps only its newest records; the write still succeeds', async () => {
    const t = await mk({ cap_records: 3 });
    const r = await c.post(`/v0/topics/${t}`, { records: range(1, 10).map((i) => ({ data: i })) });
    const b = assertOk(r, 200);
    assert.deepEqual(b.seqs, range(1, 10));
    assert.equal(b.head_seq, 10);
    assertWatermarks(await state(t), { head: 10, earliest: 8, count: 3 }, 'after the big batch');
    const d = await diff(t);
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 7, reason: 'cap', earliest_seq: 8, head_seq: 10 }, 'from 0');
    assert.deepEqual(seqs(d), [8, 9, 10]);
  });

  test('count never exceeds the cap after any write returns; earliest_seq follows', async () => {
    const cap = 17;
    const t = await mk({ cap_records: cap });
    let head = 0;
    const sizes = [1, 5, 11, 3, 16, 17, 18, 2, 40, 1, 1];
    for (const n of sizes) {
      await appendN(t, n);
      head += n;
      const st = await state(t);
      const count = Math.min(head, cap);
      assertWatermarks(st, { head, earliest: head - count + 1, count }, `after +${n}`);
      assert.ok(st.count <= cap);
    }
    // Evicted data never comes back: reading everything gives exactly the last `cap` seqs.
    const all = await readAll(t, 0, 5);
    assert.deepEqual(
      all.records.map((r) => r.$seq),
      range(head - cap + 1, head),
    );
    assert.equal(all.tombstones.length, 1, 'exactly one tombstone on a full read');
    assertTomb(all.tombstones[0], { gap_from: 1, gap_to: head - cap, reason: 'cap', earliest_seq: head - cap + 1, head_seq: head });
  });

  test('concurrent writers: after all writes return the count is exactly the cap', async () => {
    const t = await mk({ cap_records: 30 });
    const rs = await Promise.all(
      range(1, 20).map((w) => c.post(`/v0/topics/${t}`, { records: range(1, 5).map((i) => ({ data: [w, i] })) })),
    );
    for (const r of rs) assertOk(r, 200);
    const st = await state(t);
    assertWatermarks(st, { head: 100, earliest: 71, count: 30 }, 'after 20 concurrent batches');
    const d = await diff(t);
    assert.deepEqual(seqs(d), range(71, 100));
  });

  test('a cap that evicts thousands of records (whole index chunks dropped) keeps reads exact', async () => {
    const t = await mk({ cap_records: 100 });
    for (let k = 0; k < 9; k++) {
      await appendN(t, 1000, (i) => ({ data: k * 1000 + i + 1, ...(i % 10 === 0 ? { tag: 'ten' } : {}) }));
    }
    assertWatermarks(await state(t), { head: 9000, earliest: 8901, count: 100 }, 'after 9000');
    const d0 = await diff(t, { from_seq: 0, limit: 1000 });
    assertTomb(d0.tombstone, { gap_from: 1, gap_to: 8900, reason: 'cap', earliest_seq: 8901, head_seq: 9000 }, 'from 0');
    assert.deepEqual(seqs(d0), range(8901, 9000));
    assert.deepEqual(
      d0.records.map((r: any) => r.data),
      range(8901, 9000),
    );
    const dMid = await diff(t, { from_seq: 4000 });
    assertTomb(dMid.tombstone, { gap_from: 4001, gap_to: 8900, reason: 'cap', earliest_seq: 8901, head_seq: 9000 }, 'from 4000');
    const dEdge = await diff(t, { from_seq: 8899 });
    assertTomb(dEdge.tombstone, { gap_from: 8900, gap_to: 8900, reason: 'cap', earliest_seq: 8901, head_seq: 9000 }, 'from 8899');
    const dFloor = await diff(t, { from_seq: 8900 });
    assert.equal(dFloor.tombstone, null, 'cursor at earliest - 1: no tombstone');
    assert.equal(dFloor.records.length, 100);
    // A tag delete among the retained records still works after the chunks were dropped.
    const del = assertOk(await c.post(`/v0/topics/${t}/delete`, { match: ['tag', 'Eq', 'ten'] }), 200);
    assert.equal(del.deleted, 10, 'only the retained tagged records are deleted');
    assert.equal(del.count, 90);
  });
});

// ---- no tombstone at or above the floor ------------------------------------------------------

describe('tombstones and cursors', () => {
  test('a cursor at or above earliest_seq - 1 never gets a tombstone; below it gets exactly one', async () => {
    const t = await mk({ cap_records: 4 });
    await appendN(t, 10); // 1..6 evicted, 7..10 live
    for (const from of [6, 7, 8, 9, 10]) {
      const d = await diff(t, { from_seq: from });
      assert.equal(d.tombstone, null, `from_seq ${from}`);
      assert.deepEqual(seqs(d), range(from + 1, 10), `from_seq ${from}`);
      assert.equal(d.next_from_seq, 10);
    }
    for (const from of [0, 1, 3, 5]) {
      const d = await diff(t, { from_seq: from });
      assertTomb(d.tombstone, { gap_from: from + 1, gap_to: 6, reason: 'cap', earliest_seq: 7, head_seq: 10 }, `from_seq ${from}`);
      assert.deepEqual(seqs(d), [7, 8, 9, 10], `records resume at earliest_seq (from ${from})`);
    }
  });

  test('lagging reader: tombstone on the first page only, paging continues from next_from_seq', async () => {
    const t = await mk({ cap_records: 6 });
    await appendN(t, 20); // 15..20 live
    const p1 = await diff(t, { from_seq: 2, limit: 4 });
    assertTomb(p1.tombstone, { gap_from: 3, gap_to: 14, reason: 'cap', earliest_seq: 15, head_seq: 20 }, 'page 1');
    assert.deepEqual(seqs(p1), [15, 16, 17, 18]);
    assert.equal(p1.next_from_seq, 18);
    assert.equal(p1.caught_up, false);
    assert.equal(p1.lag, 2);
    const p2 = await diff(t, { from_seq: p1.next_from_seq, limit: 4 });
    assert.equal(p2.tombstone, null);
    assert.deepEqual(seqs(p2), [19, 20]);
    assert.equal(p2.caught_up, true);
    // The reader keeps falling behind: new evictions give a new tombstone from its cursor.
    await appendN(t, 10); // head 30, live 25..30
    const p3 = await diff(t, { from_seq: p2.next_from_seq, limit: 4 });
    assertTomb(p3.tombstone, { gap_from: 21, gap_to: 24, reason: 'cap', earliest_seq: 25, head_seq: 30 }, 'page 3');
    assert.deepEqual(seqs(p3), [25, 26, 27, 28]);
  });

  test('tombstone reported with limit 1 and with include_tags/include_meta variations', async () => {
    const t = await mk({ cap_records: 2 });
    await append(t, [{ data: 1, tag: 'a', meta: { m: 1 } }, { data: 2 }, { data: 3, tag: 'c' }]);
    const d = await diff(t, { limit: 1, include_tags: true, include_meta: false });
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 1, reason: 'cap', earliest_seq: 2, head_seq: 3 });
    assert.deepEqual(seqs(d), [2]);
    assert.equal(d.next_from_seq, 2);
  });
});

// ---- cap_bytes, discard old -----------------------------------------------------------------

describe('cap_bytes with discard old', () => {
  test('bytes is the docs/API.md "GET /v0/topics/:topic" measure (compact data + meta text, UTF-8) and drives cap_bytes', async () => {
    const t = await mk({});
    // Whitespace outside strings is not stored; é is two UTF-8 bytes.
    const body = '{"records":[ {"data": { "a" : [1, 2] }, "meta": { "k" : "é" } }, {"data" : "é"}, {"data":null,"tag":"tagtext"} ]}';
    const r = await raw(srv.url, 'POST', `/v0/topics/${t}`, { headers: JSON_CT, body });
    assert.equal(r.status, 200, r.text);
    const expected =
      Buffer.byteLength('{"a":[1,2]}') + Buffer.byteLength('{"k":"é"}') + Buffer.byteLength('"é"') + Buffer.byteLength('null');
    assert.equal(expected, 11 + 10 + 4 + 4);
    assertWatermarks(
      await state(t),
      { head: 3, earliest: 1, count: 3, bytes: expected },
      'docs/API.md "GET /v0/topics/:topic" bytes (tag not counted)',
    );

    // The same measure drives cap_bytes: a cap of exactly these bytes keeps all three.
    const t2 = await mk({ cap_bytes: expected });
    assert.equal((await raw(srv.url, 'POST', `/v0/topics/${t2}`, { headers: JSON_CT, body })).status, 200);
    assertWatermarks(await state(t2), { head: 3, earliest: 1, count: 3, bytes: expected }, 'exactly at cap_bytes');
    // One more byte of data evicts the oldest record (21 bytes).
    await append(t2, [{ data: 1 }]);
    assertWatermarks(await state(t2), { head: 4, earliest: 2, count: 3, bytes: 4 + 4 + 1 }, 'one byte over');
    const d = await diff(t2);
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 1, reason: 'cap', earliest_seq: 2, head_seq: 4 });
  });

  test('evicts as many oldest records as needed; the edge is inclusive', async () => {
    const t = await mk({ cap_bytes: 30 });
    await append(t, [{ data: dataOf(10) }, { data: dataOf(10) }, { data: dataOf(10) }]);
    assertWatermarks(await state(t), { head: 3, earliest: 1, count: 3, bytes: 30 }, 'exactly 30 bytes');
    await append(t, [{ data: dataOf(10) }]);
    assertWatermarks(await state(t), { head: 4, earliest: 2, count: 3, bytes: 30 }, 'one record over');
    await append(t, [{ data: dataOf(25) }]);
    assertWatermarks(await state(t), { head: 5, earliest: 5, count: 1, bytes: 25 }, 'a 25-byte record evicts three');
    const d = await diff(t, { from_seq: 0 });
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 4, reason: 'cap', earliest_seq: 5, head_seq: 5 });
    assert.deepEqual(seqs(d), [5]);
    await append(t, [{ data: dataOf(5) }]);
    assertWatermarks(await state(t), { head: 6, earliest: 5, count: 2, bytes: 30 }, '25 + 5');
  });

  test('cap_records and cap_bytes together: whichever is hit first evicts', async () => {
    const t = await mk({ cap_records: 4, cap_bytes: 50 });
    await append(
      t,
      range(1, 4).map(() => ({ data: dataOf(10) })),
    ); // 4 records, 40 bytes
    assertWatermarks(await state(t), { head: 4, earliest: 1, count: 4, bytes: 40 });
    await append(t, [{ data: dataOf(2) }]); // records cap: evicts 1
    assertWatermarks(await state(t), { head: 5, earliest: 2, count: 4, bytes: 32 });
    await append(t, [{ data: dataOf(40) }]); // 72 bytes: bytes cap evicts 2,3,4 -> 2 + 40
    assertWatermarks(await state(t), { head: 6, earliest: 5, count: 2, bytes: 42 });
  });

  test('a single record larger than cap_bytes: the write succeeds and the caps still hold', async () => {
    const t = await mk({ cap_bytes: 20 });
    await append(t, [{ data: dataOf(10) }]);
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: dataOf(50) }] });
    assertOk(r, 200, 'discard old never refuses a write');
    const st = await state(t);
    assert.ok(st.bytes <= 20, `bytes ${st.bytes} exceeds cap_bytes 20`);
    assertWatermarks(st, { head: 2, earliest: 3, count: 0, bytes: 0 }, 'nothing fits');
    const d = await diff(t);
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 2, reason: 'cap', earliest_seq: 3, head_seq: 2 });
    assert.deepEqual(d.records, []);
    assert.equal(d.next_from_seq, 2);
    assert.equal(d.caught_up, true);
  });
});

// ---- discard reject -------------------------------------------------------------------------

describe('discard reject', () => {
  test('cap_records: fill to the edge, then 422 topic_full with nothing appended', async () => {
    const t = await mk({ cap_records: 3, discard: 'reject' });
    await appendN(t, 2);
    const edge = await c.post(`/v0/topics/${t}`, { records: [{ data: 'third' }] });
    assertOk(edge, 200, 'exactly filling the cap is allowed');
    assert.deepEqual(edge.body.seqs, [3]);
    const full = await c.post(`/v0/topics/${t}`, { records: [{ data: 'fourth' }] });
    const detail = assertError(full, 422, 'topic_full');
    assert.deepEqual(detail, { topic: t, cap_records: 3, cap_bytes: 0, head_seq: 3, earliest_seq: 1 });
    // A batch that would fit alone is refused too; nothing at all is appended.
    const two = await c.post(`/v0/topics/${t}`, { records: [{ data: 'a' }, { data: 'b' }] });
    assertError(two, 422, 'topic_full');
    assertWatermarks(await state(t), { head: 3, earliest: 1, count: 3 }, 'after refusals');
    const d = await diff(t);
    assert.deepEqual(seqs(d), [1, 2, 3]);
    assert.equal(d.tombstone, null, 'reject never evicts');
  });

  test('a batch that alone exceeds cap_records is 400 record_too_large (limit cap_records)', async () => {
    const t = await mk({ cap_records: 3, discard: 'reject' });
    const r = await c.post(`/v0/topics/${t}`, { records: range(1, 4).map((i) => ({ data: i })) });
    const detail = assertError(r, 400, 'record_too_large');
    assert.equal(detail?.limit, 'cap_records');
    assertWatermarks(await state(t), { head: 0, earliest: 1, count: 0 }, 'nothing appended');
    const ok = await c.post(`/v0/topics/${t}`, { records: range(1, 3).map((i) => ({ data: i })) });
    assertOk(ok, 200, 'a batch of exactly cap_records fits an empty topic');
    // Even on a full topic an oversized batch is the permanent 400, not the retryable 422.
    const again = await c.post(`/v0/topics/${t}`, { records: range(1, 4).map((i) => ({ data: i })) });
    assert.equal(assertError(again, 400, 'record_too_large')?.limit, 'cap_records');
  });

  test('cap_bytes: edge fits, one byte more is 422, a batch alone too big is 400 (limit cap_bytes)', async () => {
    const t = await mk({ cap_bytes: 30, discard: 'reject' });
    const big = await c.post(`/v0/topics/${t}`, { records: [{ data: dataOf(20) }, { data: dataOf(11) }] });
    assert.equal(assertError(big, 400, 'record_too_large')?.limit, 'cap_bytes');
    assertWatermarks(await state(t), { head: 0, earliest: 1, count: 0, bytes: 0 }, 'nothing appended');
    await append(t, [{ data: dataOf(20) }]);
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: dataOf(10) }] }), 200, 'exactly 30 bytes');
    const over = await c.post(`/v0/topics/${t}`, { records: [{ data: dataOf(2) }] });
    const detail = assertError(over, 422, 'topic_full');
    assert.deepEqual(detail, { topic: t, cap_records: 0, cap_bytes: 30, head_seq: 2, earliest_seq: 1 });
    // Meta counts toward the bytes too.
    const t2 = await mk({ cap_bytes: 12, discard: 'reject' });
    const withMeta = await c.post(`/v0/topics/${t2}`, { records: [{ data: dataOf(5), meta: { k: 1 } }] }); // 5 + 7
    assertOk(withMeta, 200);
    assertError(await c.post(`/v0/topics/${t2}`, { records: [{ data: 1 }] }), 422, 'topic_full');
    const tooBig = await c.post(`/v0/topics/${t2}`, { records: [{ data: dataOf(6), meta: { k: 1 } }] }); // 13 alone
    assert.equal(assertError(tooBig, 400, 'record_too_large')?.limit, 'cap_bytes');
  });

  test('room freed by a record delete is usable; seqs continue at head + 1', async () => {
    const t = await mk({ cap_records: 3, discard: 'reject' });
    await appendN(t, 3);
    assertError(await c.post(`/v0/topics/${t}`, { records: [{ data: 'x' }] }), 422, 'topic_full');
    const del = assertOk(await c.post(`/v0/topics/${t}/delete`, { before_seq: 2 }), 200);
    assert.equal(del.deleted, 1);
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 'x' }] });
    assertOk(r, 200, 'a delete made room');
    assert.deepEqual(r.body.seqs, [4]);
    assertError(await c.post(`/v0/topics/${t}`, { records: [{ data: 'y' }] }), 422, 'topic_full');
    const detail = (await c.post(`/v0/topics/${t}`, { records: [{ data: 'y' }] })).body.error.detail;
    assert.deepEqual(detail, { topic: t, cap_records: 3, cap_bytes: 0, head_seq: 4, earliest_seq: 2 });
  });

  test('room freed by TTL expiry is usable (expiry judged at request time)', async () => {
    const ttl = 400;
    const t = await mk({ cap_records: 2, discard: 'reject', ttl_ms: ttl });
    await appendN(t, 2);
    const [r1] = (await diff(t)).records;
    const early = await c.post(`/v0/topics/${t}`, { records: [{ data: 'x' }] });
    if (Date.now() - r1.$ts < ttl - 50) assertError(early, 422, 'topic_full');
    await sleepPast(r1.$ts, ttl);
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 'late' }] });
    assertOk(r, 200, 'expired records no longer count toward the cap');
    assert.equal(r.body.first_seq, early.status === 200 ? 4 : 3);
  });

  test('concurrent appends never overfill: pending batches count toward the cap', async () => {
    const t = await mk({ cap_records: 5, discard: 'reject', durability: 'fsync' });
    const rs = await Promise.all(range(1, 12).map((i) => c.post(`/v0/topics/${t}`, { records: [{ data: i }] })));
    const ok = rs.filter((r) => r.status === 200);
    const full = rs.filter((r) => r.status === 422);
    assert.equal(ok.length, 5, `statuses ${rs.map((r) => r.status).join(',')}`);
    assert.equal(full.length, 7);
    for (const r of full) assertError(r, 422, 'topic_full');
    assert.deepEqual(
      ok.map((r) => r.body.first_seq).sort((a, b) => a - b),
      [1, 2, 3, 4, 5],
    );
    assertWatermarks(await state(t), { head: 5, earliest: 1, count: 5 }, 'after the race');
  });

  test('an idempotent retry on a full topic returns the original seqs (deduped), not 422', async () => {
    const t = await mk({ cap_records: 2, discard: 'reject' });
    const first = assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }], idempotency_key: 'k1' }), 200);
    const again = assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }], idempotency_key: 'k1' }), 200);
    assert.equal(again.deduped, true);
    assert.deepEqual(again.seqs, first.seqs);
  });
});

// ---- caps changed by PUT ---------------------------------------------------------------------

describe('caps tightened and relaxed by PUT', () => {
  test('a tightened cap_records applies at once to state and reads', async () => {
    const t = await mk({});
    const recs = range(1, 10).map((i) => ({ data: `v${i}` }));
    await append(t, recs);
    const put = assertOk(await c.put(`/v0/topics/${t}`, { cap_records: 4 }), 200);
    assert.equal(put.config.cap_records, 4);
    assertWatermarks(
      await state(t),
      { head: 10, earliest: 7, count: 4, bytes: recs.slice(6).reduce((a, r) => a + sz(r), 0) },
      'right after the PUT',
    );
    const d0 = await diff(t);
    assertTomb(d0.tombstone, { gap_from: 1, gap_to: 6, reason: 'cap', earliest_seq: 7, head_seq: 10 }, 'from 0');
    assert.deepEqual(seqs(d0), [7, 8, 9, 10]);
    const lag = await diff(t, { from_seq: 3 });
    assertTomb(lag.tombstone, { gap_from: 4, gap_to: 6, reason: 'cap', earliest_seq: 7, head_seq: 10 }, 'lagging from 3');
    assert.equal((await diff(t, { from_seq: 6 })).tombstone, null);
  });

  test('a tightened cap_bytes applies at once', async () => {
    const t = await mk({ durability: 'memory' });
    await append(
      t,
      range(1, 6).map(() => ({ data: dataOf(10) })),
    );
    assertOk(await c.put(`/v0/topics/${t}`, { durability: 'memory', cap_bytes: 25 }), 200);
    assertWatermarks(await state(t), { head: 6, earliest: 5, count: 2, bytes: 20 }, 'after PUT cap_bytes 25');
    assertTomb((await diff(t)).tombstone, { gap_from: 1, gap_to: 4, reason: 'cap', earliest_seq: 5, head_seq: 6 });
  });

  test('relaxing a cap never brings evicted records back', async () => {
    const t = await mk({ cap_records: 3 });
    await appendN(t, 8);
    assertOk(await c.put(`/v0/topics/${t}`, {}), 200, 'PUT {} removes the cap');
    assertWatermarks(await state(t), { head: 8, earliest: 6, count: 3 }, 'after relaxing');
    const d = await diff(t);
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 5, reason: 'cap', earliest_seq: 6, head_seq: 8 });
    await appendN(t, 5);
    assertWatermarks(await state(t), { head: 13, earliest: 6, count: 8 }, 'uncapped again');
  });

  test('switching discard old -> reject on a full topic refuses the next write', async () => {
    const t = await mk({ cap_records: 2 });
    await appendN(t, 5);
    assertOk(await c.put(`/v0/topics/${t}`, { cap_records: 2, discard: 'reject' }), 200);
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    assert.deepEqual(assertError(r, 422, 'topic_full'), { topic: t, cap_records: 2, cap_bytes: 0, head_seq: 5, earliest_seq: 4 });
  });
});

// ---- ttl_ms ----------------------------------------------------------------------------------

describe('ttl_ms', () => {
  test('expired records are neither delivered nor counted; the reader gets a ttl tombstone', async () => {
    const ttl = 400;
    const t = await mk({ ttl_ms: ttl });
    await appendN(t, 3);
    const fresh = await diff(t);
    const ts = fresh.records[0].$ts as number;
    assert.equal(typeof ts, 'number');
    if (Date.now() - ts < ttl - 50) assert.deepEqual(seqs(fresh), [1, 2, 3], 'fresh records are delivered');
    await sleepPast(ts, ttl);
    // First request after expiry: GET state judges TTL at request time.
    assertWatermarks(await state(t), { head: 3, earliest: 4, count: 0, bytes: 0 }, 'after expiry');
    const d = await diff(t, { from_seq: 0 });
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 3, reason: 'ttl', earliest_seq: 4, head_seq: 3 }, 'from 0');
    assert.deepEqual(d.records, []);
    assert.equal(d.next_from_seq, 3);
    assert.equal(d.caught_up, true);
    assert.equal(d.lag, 0);
    const at = await diff(t, { from_seq: 3 });
    assert.equal(at.tombstone, null, 'a caught-up cursor sees no tombstone');
    // New records after expiry read normally.
    await appendN(t, 1);
    const after4 = await diff(t, { from_seq: 3 });
    assert.equal(after4.tombstone, null);
    assert.deepEqual(seqs(after4), [4]);
  });

  test('diff as the first request after expiry (no GET before) applies TTL itself', async () => {
    const ttl = 300;
    const t = await mk({ ttl_ms: ttl });
    const a = await appendN(t, 2);
    assert.deepEqual(a.seqs, [1, 2]);
    const st0 = await state(t);
    const ts = st0.last_write_ts as number;
    assert.equal(typeof ts, 'number');
    await sleepPast(ts, ttl);
    const d = await diff(t, { from_seq: 0 });
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 2, reason: 'ttl', earliest_seq: 3, head_seq: 2 }, 'first read after expiry');
    assert.equal(d.earliest_seq, 3);
  });

  test('only the records older than ttl_ms expire; newer ones stay', async (tc) => {
    const ttl = 1000;
    const t = await mk({ ttl_ms: ttl });
    await appendN(t, 2);
    const tsA = (await diff(t)).records[0].$ts as number;
    await sleep(600);
    await appendN(t, 2);
    const recsB = (await diff(t, { from_seq: 2 })).records;
    const tsB = recsB[0].$ts as number;
    assert.ok(tsB >= tsA + 500, 'B is newer');
    await sleepPast(tsA, ttl);
    const st = await state(t);
    const d = await diff(t, { from_seq: 0 });
    const d1 = await diff(t, { from_seq: 1 });
    if (Date.now() - tsB >= ttl - 30) {
      tc.diagnostic('machine too slow: batch B expired before it could be checked; skipping the rest');
      return;
    }
    assertWatermarks(st, { head: 4, earliest: 3, count: 2 }, 'A expired, B live');
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 2, reason: 'ttl', earliest_seq: 3, head_seq: 4 }, 'from 0');
    assert.deepEqual(seqs(d), [3, 4]);
    assertTomb(d1.tombstone, { gap_from: 2, gap_to: 2, reason: 'ttl', earliest_seq: 3, head_seq: 4 }, 'from 1');
    assert.equal((await diff(t, { from_seq: 2 })).tombstone, null);
  });

  test('a ttl tightened by PUT applies at once; relaxing it never brings records back', async () => {
    const t = await mk({});
    await appendN(t, 4);
    await sleep(30);
    assertOk(await c.put(`/v0/topics/${t}`, { ttl_ms: 1 }), 200);
    assertWatermarks(await state(t), { head: 4, earliest: 5, count: 0, bytes: 0 }, 'after PUT ttl_ms 1');
    assertTomb((await diff(t)).tombstone, { gap_from: 1, gap_to: 4, reason: 'ttl', earliest_seq: 5, head_seq: 4 });
    assertOk(await c.put(`/v0/topics/${t}`, {}), 200, 'TTL off again');
    assertWatermarks(await state(t), { head: 4, earliest: 5, count: 0, bytes: 0 }, 'after relaxing the ttl');
    const d = await diff(t);
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 4, reason: 'ttl', earliest_seq: 5, head_seq: 4 }, 'still gone');
    assert.deepEqual(d.records, []);
  });

  test('a PUT loosening the ttl as the first request after expiry brings nothing back', async () => {
    const ttl = 200;
    const t = await mk({ ttl_ms: ttl });
    await appendN(t, 2);
    const ts = (await state(t)).last_write_ts as number;
    await sleepPast(ts, ttl);
    // No read in between: the PUT itself judges the old TTL before it takes the new one.
    assertOk(await c.put(`/v0/topics/${t}`, { ttl_ms: 600_000 }), 200);
    assertWatermarks(await state(t), { head: 2, earliest: 3, count: 0, bytes: 0 }, 'after loosening the ttl');
    assertTomb((await diff(t)).tombstone, { gap_from: 1, gap_to: 2, reason: 'ttl', earliest_seq: 3, head_seq: 2 });
  });

  test('topic list summaries exclude expired records too (docs/API.md "GET /v0/topics")', async () => {
    const ttl = 300;
    const prefix = name('list');
    const t = `${prefix}.x`;
    assertOk(await c.put(`/v0/topics/${t}`, { ttl_ms: ttl }), 201);
    await appendN(t, 3);
    const ts = (await state(t)).last_write_ts as number;
    await sleepPast(ts, ttl);
    const l = assertOk(await c.get(`/v0/topics?prefix=${encodeURIComponent(prefix)}`), 200);
    assert.equal(l.topics.length, 1);
    assert.equal(l.topics[0].count, 0);
    assert.equal(l.topics[0].bytes, 0);
    assert.equal(l.topics[0].earliest_seq, 4);
  });

  test('DELETE ?if_empty=true deletes a topic whose records all expired (no read in between)', async () => {
    const ttl = 300;
    const t = await mk({ ttl_ms: ttl });
    const a = await appendN(t, 3);
    assert.equal(a.head_seq, 3);
    // Wait on the client clock (no request to the topic, so nothing has applied TTL yet).
    await sleep(ttl + 150);
    const r = await c.del(`/v0/topics/${t}?if_empty=true`);
    const b = assertOk(r, 200, 'live count is 0 once TTL is applied (docs/API.md "DELETE /v0/topics/:topic")');
    assert.equal(b.deleted, true);
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
  });

  test('DELETE ?if_empty=true with live records is 409 topic_not_empty {topic, count}', async () => {
    const t = await mk({ ttl_ms: 60_000, cap_records: 3 });
    await appendN(t, 5);
    const detail = assertError(await c.del(`/v0/topics/${t}?if_empty=true`), 409, 'topic_not_empty');
    assert.deepEqual(detail, { topic: t, count: 3 });
    assertWatermarks(await state(t), { head: 5, earliest: 3, count: 3 }, 'nothing removed');
  });
});

// ---- mixed reasons and the two floors --------------------------------------------------------

describe('mixed reasons and the two floors', () => {
  test('cap eviction followed by TTL expiry of the following records: reason mixed', async () => {
    const ttl = 500;
    const t = await mk({ cap_records: 3, ttl_ms: ttl });
    await appendN(t, 6); // 1..3 evicted by cap at once
    const d0 = await diff(t);
    const ts = d0.records.length ? (d0.records[0].$ts as number) : Date.now();
    if (d0.records.length === 3) {
      assertTomb(d0.tombstone, { gap_from: 1, gap_to: 3, reason: 'cap', earliest_seq: 4, head_seq: 6 }, 'cap only so far');
    }
    await sleepPast(ts, ttl);
    assertWatermarks(await state(t), { head: 6, earliest: 7, count: 0, bytes: 0 }, 'all gone');
    const all = await diff(t, { from_seq: 0 });
    assertTomb(all.tombstone, { gap_from: 1, gap_to: 6, reason: 'mixed', earliest_seq: 7, head_seq: 6 }, 'from 0: cap + ttl');
    assert.ok(all.tombstone.missed_estimate >= 1);
    assertTomb(
      (await diff(t, { from_seq: 2 })).tombstone,
      { gap_from: 3, gap_to: 6, reason: 'mixed', earliest_seq: 7, head_seq: 6 },
      'from 2',
    );
    assertTomb(
      (await diff(t, { from_seq: 3 })).tombstone,
      { gap_from: 4, gap_to: 6, reason: 'ttl', earliest_seq: 7, head_seq: 6 },
      'from 3: ttl only',
    );
    assert.equal((await diff(t, { from_seq: 6 })).tombstone, null);
  });

  test('a delete never moves the involuntary floor: a deleted gap above it reads silently', async () => {
    const t = await mk({ cap_records: 5 });
    await appendN(t, 10); // 1..5 evicted: floor 6; live 6..10
    const del = assertOk(await c.post(`/v0/topics/${t}/delete`, { before_seq: 9 }), 200);
    assert.equal(del.deleted, 3);
    assert.equal(del.earliest_seq, 9);
    assertWatermarks(await state(t), { head: 10, earliest: 9, count: 2 }, 'after the delete');
    for (const from of [5, 6, 7, 8]) {
      const d = await diff(t, { from_seq: from });
      assert.equal(d.tombstone, null, `from ${from}: purely deleted gap is silent`);
      assert.deepEqual(seqs(d), [9, 10], `from ${from}`);
      assert.equal(d.earliest_seq, 9);
    }
    const below = await diff(t, { from_seq: 4 });
    assertTomb(below.tombstone, { gap_from: 5, gap_to: 8, reason: 'cap', earliest_seq: 9, head_seq: 10 }, 'from 4: below the evict floor');
    assert.deepEqual(seqs(below), [9, 10]);
    const zero = await diff(t, { from_seq: 0 });
    assertTomb(zero.tombstone, { gap_from: 1, gap_to: 8, reason: 'cap', earliest_seq: 9, head_seq: 10 }, 'from 0');
  });

  test('deleted records below later evictions: the tombstone covers the range, reason cap', async () => {
    const t = await mk({});
    await appendN(t, 10);
    assertOk(await c.post(`/v0/topics/${t}/delete`, { before_seq: 4 }), 200); // 1..3 deleted
    assert.equal((await diff(t, { from_seq: 0 })).tombstone, null, 'a pure delete is silent');
    assertOk(await c.put(`/v0/topics/${t}`, { cap_records: 5 }), 200); // evicts 4, 5
    assertWatermarks(await state(t), { head: 10, earliest: 6, count: 5 });
    const d = await diff(t, { from_seq: 0 });
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 5, reason: 'cap', earliest_seq: 6, head_seq: 10 });
    assert.deepEqual(seqs(d), [6, 7, 8, 9, 10]);
    assertTomb((await diff(t, { from_seq: 3 })).tombstone, { gap_from: 4, gap_to: 5, reason: 'cap', earliest_seq: 6, head_seq: 10 });
    assert.equal((await diff(t, { from_seq: 5 })).tombstone, null);
  });

  test('a tag delete in the middle never creates a tombstone, even next to evicted records', async () => {
    const t = await mk({ cap_records: 6 });
    await appendN(t, 10, (i) => ({ data: i + 1, ...(i + 1 >= 6 && i + 1 <= 8 ? { tag: 'mid' } : {}) })); // live 5..10
    assertOk(await c.post(`/v0/topics/${t}/delete`, { match: 'mid' }), 200);
    const d = await diff(t, { from_seq: 4 });
    assert.equal(d.tombstone, null);
    assert.deepEqual(seqs(d), [5, 9, 10]);
    const from5 = await diff(t, { from_seq: 5, limit: 1 });
    assert.equal(from5.tombstone, null);
    assert.deepEqual(seqs(from5), [9]);
    assert.equal(from5.next_from_seq, 9, 'deleted records advance the cursor silently');
  });
});

// ---- recreated topics ------------------------------------------------------------------------

describe('delete and recreate', () => {
  test('a recreated topic starts at seq 1; an old cursor gets a recreated tombstone', async () => {
    const t = await mk({});
    await appendN(t, 20);
    assertOk(await c.del(`/v0/topics/${t}`), 200);
    const cr = assertOk(await c.put(`/v0/topics/${t}`, { cap_records: 2 }), 201);
    assert.equal(cr.created, true);
    const a = await appendN(t, 3);
    assert.deepEqual(a.seqs, [1, 2, 3], 'seqs restart at 1');
    assertWatermarks(await state(t), { head: 3, earliest: 2, count: 2 });
    const d = await diff(t, { from_seq: 20 });
    assertTomb(d.tombstone, { gap_from: 1, gap_to: 1, reason: 'recreated', earliest_seq: 2, head_seq: 3 }, 'old cursor');
    assert.equal(d.tombstone.missed_estimate, 1);
    assert.deepEqual(seqs(d), [2, 3]);
  });
});
