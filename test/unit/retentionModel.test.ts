// Property test of retention (docs/ARCHITECTURE.md "Watermarks", "Retention", "Invariants"; docs/API.md
// "PUT /v0/topics/:topic", "Diff", "Record delete", "Errors") against a small model, driven through SimActor (an in-process
// TopicActor with a manual clock; `memory` durability, every frame acked after every step).
//
// Random programs of: appends (random tags from a small set, random data sizes, sometimes
// meta), PUT config changes (cap_records / cap_bytes / discard / ttl_ms on the fly), clock
// advances, record deletes (before_seq and/or Eq/Glob match), diffs from random cursors, GET
// state and topic deletes (plain and if_empty). After every step the model is compared with:
// - a full read from from_seq 0, paged;
// - reads from stale cursors around the floors and from random cursors.
// Checked: every seq in 1..head_seq is exactly one of delivered / inside the (single) tombstone
// range / deleted by the user, and every evicted or TTL-expired seq above the cursor is inside
// the tombstone range; no tombstone covers a purely user-deleted range; a tombstone appears
// exactly when from_seq + 1 is below the involuntary floor, with gap_from = from_seq + 1 and
// gap_to = earliest_seq - 1; count equals the number of records a full read delivers;
// earliest_seq <= first delivered seq; count/bytes/earliest/head match the model; caps hold
// after every write; reject appends give topic_full / record_too_large exactly when they must.
//
// Model notes (choices where the spec leaves room, kept to what any implementation must do):
// - TTL is judged when a request arrives; cap eviction and TTL expiry both remove a prefix of
//   the live records, so the order in which an implementation applies them does not change the
//   observed live set. A PUT that changes the config judges the old TTL first: records past it
//   stay expired under a looser one (docs/API.md "PUT /v0/topics/:topic").
// - Tombstone reasons are best-effort (docs/API.md "Diff"): only checked to be cap|ttl|mixed, `cap` when
//   no ttl was ever set on the instance and `ttl` when no cap was ever set.
// - missed_estimate is approximate: checked to be an integer in [0, gap size].
// - A cap tightened by PUT evicts at once whatever `discard` is (docs/API.md "PUT /v0/topics/:topic": "makes existing records
//   eligible for eviction at once").
// Seed: fast-check prints it on failure; rerun with RETENTION_MODEL_SEED=<seed> (and
// RETENTION_MODEL_PATH=<path> to replay the shrunk case). RETENTION_MODEL_RUNS sets the runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SimActor } from '../support/simActor.js';
import { defaultConfig, type TopicConfig } from '../../src/protocol/topicConfig.js';

type Tag = string | undefined;
const TAGS: Tag[] = ['a', 'ab', 'abc', 'b', 'ba', 'c*', undefined, undefined];
const EQ_VALUES = ['a', 'ab', 'b', 'c*', 'c', 'zz'];
const GLOB_PREFIXES = ['', 'a', 'ab', 'b', 'c', 'c*', 'x'];

interface RecSpec {
  len: number;
  ch: string;
  tag: Tag;
  meta: boolean;
}
interface Match {
  op: 'Eq' | 'Glob';
  value: string;
}
type Op =
  | { k: 'append'; recs: RecSpec[] }
  | { k: 'put'; capRecords: number; capBytes: number; discard: 'old' | 'reject'; ttl: number }
  | { k: 'clock'; ms: number }
  | { k: 'delete'; before: number | null; match: Match | null }
  | { k: 'read'; cursor: number; limit: number }
  | { k: 'state' }
  | { k: 'deleteTopic'; ifEmpty: boolean };

// ---- arbitraries -------------------------------------------------------------------------------

const recSpecArb: fc.Arbitrary<RecSpec> = fc.record({
  len: fc.integer({ min: 0, max: 40 }),
  ch: fc.constantFrom('x', 'é'),
  tag: fc.constantFrom(...TAGS),
  meta: fc.boolean(),
});
const matchArb: fc.Arbitrary<Match> = fc.oneof(
  fc.record({ op: fc.constant<'Eq'>('Eq'), value: fc.constantFrom(...EQ_VALUES) }),
  fc.record({ op: fc.constant<'Glob'>('Glob'), value: fc.constantFrom(...GLOB_PREFIXES) }),
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ k: fc.constant<'append'>('append'), recs: fc.array(recSpecArb, { minLength: 1, maxLength: 6 }) }), weight: 8 },
  {
    arbitrary: fc.record({
      k: fc.constant<'put'>('put'),
      capRecords: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 15 })),
      capBytes: fc.oneof(fc.constant(0), fc.integer({ min: 10, max: 300 })),
      discard: fc.constantFrom<'old' | 'reject'>('old', 'reject'),
      ttl: fc.oneof(fc.constant(0), fc.integer({ min: 50, max: 3000 })),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ k: fc.constant<'clock'>('clock'), ms: fc.integer({ min: 0, max: 1500 }) }), weight: 3 },
  {
    arbitrary: fc
      .record({
        k: fc.constant<'delete'>('delete'),
        before: fc.option(fc.nat(1000), { nil: null }),
        match: fc.option(matchArb, { nil: null }),
      })
      .filter((o) => o.before !== null || o.match !== null),
    weight: 2,
  },
  { arbitrary: fc.record({ k: fc.constant<'read'>('read'), cursor: fc.nat(100_000), limit: fc.integer({ min: 1, max: 20 }) }), weight: 3 },
  { arbitrary: fc.constant<Op>({ k: 'state' }), weight: 1 },
  { arbitrary: fc.record({ k: fc.constant<'deleteTopic'>('deleteTopic'), ifEmpty: fc.boolean() }), weight: 1 },
);

// ---- the model ---------------------------------------------------------------------------------

type Fate = 'live' | 'deleted' | 'cap' | 'ttl';
interface MRec {
  seq: number;
  ts: number;
  tag: Tag;
  data: string;
  meta: { m: string } | undefined;
  bytes: number;
  fate: Fate;
}

function memoryConfig(over: Partial<TopicConfig> = {}): TopicConfig {
  return { ...defaultConfig(), durability: 'memory', durable: false, ...over };
}

class Model {
  exists = false;
  config: TopicConfig = memoryConfig();
  recs: MRec[] = [];
  evictFloor = 1;
  lastTs = 0;
  everTtl = false;
  everCap = false;
  /** Highest head of any instance so far (cursors from old instances). */
  maxHead = 0;

  create(config: TopicConfig): void {
    this.exists = true;
    this.config = config;
    this.recs = [];
    this.evictFloor = 1;
    this.lastTs = 0;
    this.everTtl = config.ttl_ms > 0;
    this.everCap = config.cap_records > 0 || config.cap_bytes > 0;
  }

  get head(): number {
    return this.recs.length;
  }
  live(): MRec[] {
    return this.recs.filter((r) => r.fate === 'live');
  }
  count(): number {
    return this.live().length;
  }
  bytes(): number {
    return this.live().reduce((a, r) => a + r.bytes, 0);
  }
  earliest(): number {
    return this.recs.find((r) => r.fate === 'live')?.seq ?? this.head + 1;
  }
  private evict(r: MRec, why: 'cap' | 'ttl'): void {
    bump(`evicted by ${why}`);
    r.fate = why;
    if (r.seq + 1 > this.evictFloor) this.evictFloor = r.seq + 1;
  }
  applyTtl(now: number): void {
    const ttl = this.config.ttl_ms;
    if (ttl === 0) return;
    for (const r of this.recs) {
      if (r.fate !== 'live') continue;
      if (!(now - r.ts > ttl)) break;
      this.evict(r, 'ttl');
    }
  }
  applyCaps(): void {
    const { cap_records: cr, cap_bytes: cb } = this.config;
    if (cr === 0 && cb === 0) return;
    let count = this.count();
    let bytes = this.bytes();
    for (const r of this.recs) {
      if (!((cr > 0 && count > cr) || (cb > 0 && bytes > cb))) break;
      if (r.fate !== 'live') continue;
      this.evict(r, 'cap');
      count--;
      bytes -= r.bytes;
    }
  }
  setConfig(c: TopicConfig): void {
    this.config = c;
    if (c.ttl_ms > 0) this.everTtl = true;
    if (c.cap_records > 0 || c.cap_bytes > 0) this.everCap = true;
  }
}

function recOf(spec: RecSpec, i: number): { body: Record<string, unknown>; data: string; meta: { m: string } | undefined; bytes: number } {
  const data = `${i}:${spec.ch.repeat(spec.len)}`;
  const meta = spec.meta ? { m: 'y'.repeat(spec.len % 5) } : undefined;
  const body: Record<string, unknown> = { data };
  if (spec.tag !== undefined) body.tag = spec.tag;
  if (meta) body.meta = meta;
  const bytes = Buffer.byteLength(JSON.stringify(data)) + (meta ? Buffer.byteLength(JSON.stringify(meta)) : 0);
  return { body, data, meta, bytes };
}

function tagMatches(tag: Tag, m: Match): boolean {
  if (tag === undefined) return false;
  return m.op === 'Eq' ? tag === m.value : tag.startsWith(m.value);
}

// ---- the runner --------------------------------------------------------------------------------

/** What the random programs exercised (reported as a test diagnostic). */
const stats: Record<string, number> = {};
const bump = (k: string) => void (stats[k] = (stats[k] ?? 0) + 1);

interface Ctx {
  sim: SimActor;
  m: Model;
  step: number;
  what: string;
}

function call(x: Ctx, req: Record<string, unknown>): any {
  const id = x.sim.send(req as never);
  x.sim.ackAll();
  const r = x.sim.reply(id);
  assert.ok(r !== undefined, `${x.what}: no reply to ${JSON.stringify(req).slice(0, 200)} after every frame was acked`);
  return r;
}

function appendCall(x: Ctx, body: unknown): any {
  const id = x.sim.append(body);
  x.sim.ackAll();
  const r = x.sim.reply(id);
  assert.ok(r !== undefined, `${x.what}: no reply to the append after every frame was acked`);
  return r;
}

function expectError(x: Ctx, r: any, code: string, status: number): any {
  assert.ok(r.error, `${x.what}: expected ${code}, got ${JSON.stringify(r).slice(0, 300)}`);
  assert.equal(r.error.code, code, `${x.what}: error code (${JSON.stringify(r.error)})`);
  assert.equal(r.error.status, status, `${x.what}: status`);
  return r.error.detail;
}

function expectOk(x: Ctx, r: any, status: number | number[]): any {
  assert.ok(!r.error, `${x.what}: expected success, got ${JSON.stringify(r.error)}`);
  const ok = Array.isArray(status) ? status : [status];
  assert.ok(ok.includes(r.status), `${x.what}: status ${r.status}, expected ${ok.join('/')}`);
  return r.body;
}

function diffReq(fromSeq: number, limit: number) {
  return { op: 'diff', fromSeq, limit, nodes: null, includeTags: true, includeMeta: true, waitMs: 0, maxBatchBytes: 0 };
}

/** One diff, checked against the model (which judges TTL at the same instant first). */
function checkedDiff(x: Ctx, cursor: number, limit: number): any {
  const { m } = x;
  const r = call(x, diffReq(cursor, limit));
  if (!m.exists) {
    expectError(x, r, 'topic_not_found', 404);
    return undefined;
  }
  m.applyTtl(x.sim.now);
  const b = expectOk(x, r, 200);
  const head = m.head;
  const earliest = m.earliest();
  const w = `${x.what}: diff from ${cursor} limit ${limit} (head ${head}, earliest ${earliest}, evict floor ${m.evictFloor})`;
  assert.equal(b.head_seq, head, `${w}: head_seq`);
  assert.equal(b.earliest_seq, earliest, `${w}: earliest_seq`);

  // Expected tombstone and starting point.
  let start = cursor;
  let tomb: { gap_from: number; gap_to: number; recreated: boolean } | null = null;
  if (cursor > head) {
    tomb = { gap_from: 1, gap_to: earliest - 1, recreated: true };
    start = earliest - 1;
  } else if (cursor + 1 < m.evictFloor) {
    tomb = { gap_from: cursor + 1, gap_to: earliest - 1, recreated: false };
    start = earliest - 1;
  } else if (cursor + 1 < earliest) {
    start = earliest - 1;
    bump('silent deleted gap');
  }
  if (tomb === null) {
    assert.equal(b.tombstone, null, `${w}: no tombstone expected, got ${JSON.stringify(b.tombstone)}`);
  } else {
    const tb = b.tombstone;
    assert.ok(tb, `${w}: expected a tombstone ${JSON.stringify(tomb)}`);
    assert.deepEqual(
      Object.keys(tb).sort(),
      ['earliest_seq', 'gap_from', 'gap_to', 'head_seq', 'missed_estimate', 'reason'],
      `${w}: tombstone keys`,
    );
    assert.equal(tb.gap_from, tomb.gap_from, `${w}: gap_from in ${JSON.stringify(tb)}`);
    assert.equal(tb.gap_to, tomb.gap_to, `${w}: gap_to in ${JSON.stringify(tb)}`);
    assert.equal(tb.earliest_seq, earliest, `${w}: tombstone earliest_seq`);
    assert.equal(tb.head_seq, head, `${w}: tombstone head_seq`);
    assert.ok(Number.isInteger(tb.missed_estimate), `${w}: missed_estimate integer`);
    const size = Math.max(0, tomb.gap_to - tomb.gap_from + 1);
    bump(`tombstone ${tb.reason}`);
    if (tomb.recreated) {
      assert.equal(tb.reason, 'recreated', `${w}: reason`);
      assert.equal(tb.missed_estimate, size, `${w}: recreated missed_estimate (docs/API.md "Diff")`);
    } else {
      assert.ok(['cap', 'ttl', 'mixed'].includes(tb.reason), `${w}: reason ${tb.reason}`);
      if (!m.everTtl) assert.equal(tb.reason, 'cap', `${w}: only caps ever removed records`);
      if (!m.everCap) assert.equal(tb.reason, 'ttl', `${w}: only ttl ever removed records`);
      assert.ok(tb.missed_estimate >= 0 && tb.missed_estimate <= size, `${w}: missed_estimate ${tb.missed_estimate} outside [0, ${size}]`);
    }
  }

  // Records: the first `limit` live records after `start`.
  const avail = m.live().filter((r) => r.seq > start);
  const exp = avail.slice(0, limit);
  assert.deepEqual(
    b.records.map((r: any) => r.$seq),
    exp.map((r) => r.seq),
    `${w}: delivered seqs`,
  );
  b.records.forEach((r: any, i: number) => {
    const e = exp[i]!;
    assert.equal(r.data, e.data, `${w}: data of ${e.seq}`);
    assert.equal(r.$ts, e.ts, `${w}: $ts of ${e.seq}`);
    assert.equal(r.$tag, e.tag, `${w}: $tag of ${e.seq}`);
    assert.deepEqual(r.meta, e.meta, `${w}: meta of ${e.seq}`);
  });
  // next_from_seq: at the head when fewer than `limit` came back; else at or past the last
  // delivered record and before the next live one.
  const next = b.next_from_seq;
  if (exp.length < limit) assert.equal(next, head, `${w}: next_from_seq must reach the head`);
  else {
    const last = exp[exp.length - 1]!.seq;
    const following = avail[limit]?.seq ?? head + 1;
    assert.ok(
      next >= last && next < following && next <= head,
      `${w}: next_from_seq ${next} outside [${last}, ${Math.min(following - 1, head)}]`,
    );
  }
  assert.equal(b.caught_up, next === head, `${w}: caught_up`);
  assert.equal(b.lag, head - next, `${w}: lag`);
  checkPartition(x, cursor, [b], w);
  return b;
}

/**
 * The invariants of docs/ARCHITECTURE.md "Invariants" on the pages of one read from `cursor`, independent of the
 * exact-model comparison above: every seq in (cursor, last next_from_seq] is delivered, inside
 * the tombstone range or user-deleted; evicted/expired seqs there are inside the tombstone
 * range; a tombstone is never purely over user-deleted seqs; earliest_seq <= first delivered.
 */
function checkPartition(x: Ctx, cursor: number, pages: any[], w: string): void {
  const { m } = x;
  const delivered = new Map<number, number>();
  const tombs = pages.map((p) => p.tombstone).filter((t) => t !== null);
  assert.ok(tombs.length <= 1, `${w}: at most one tombstone per read (${JSON.stringify(tombs)})`);
  const tb = tombs[0];
  for (const p of pages) for (const r of p.records) delivered.set(r.$seq, (delivered.get(r.$seq) ?? 0) + 1);
  for (const [s, n] of delivered) assert.equal(n, 1, `${w}: seq ${s} delivered ${n} times`);
  const end = pages[pages.length - 1].next_from_seq as number;
  const from = cursor > m.head ? 1 : cursor + 1;
  const inTomb = (s: number) => tb !== undefined && s >= tb.gap_from && s <= tb.gap_to;
  for (let s = from; s <= end; s++) {
    const fate = m.recs[s - 1]?.fate;
    if (delivered.has(s)) {
      assert.equal(fate, 'live', `${w}: delivered seq ${s} is ${fate} in the model`);
      assert.ok(!inTomb(s), `${w}: delivered seq ${s} is inside the tombstone`);
    } else {
      assert.ok(inTomb(s) || fate === 'deleted', `${w}: seq ${s} (${fate}) neither delivered, nor in a tombstone, nor deleted by the user`);
      if (fate === 'cap' || fate === 'ttl')
        assert.ok(inTomb(s), `${w}: ${fate}-removed seq ${s} above the cursor is not covered by a tombstone`);
    }
  }
  if (tb && tb.reason !== 'recreated') {
    let involuntary = false;
    for (let s = tb.gap_from; s <= tb.gap_to; s++) if (m.recs[s - 1]?.fate === 'cap' || m.recs[s - 1]?.fate === 'ttl') involuntary = true;
    assert.ok(involuntary, `${w}: tombstone ${JSON.stringify(tb)} covers only user-deleted seqs`);
  }
  const first = pages.find((p) => p.records.length > 0)?.records[0];
  if (first) assert.ok(pages[0].earliest_seq <= first.$seq, `${w}: earliest_seq ${pages[0].earliest_seq} > first delivered ${first.$seq}`);
}

function checkState(x: Ctx): any {
  const { m } = x;
  const r = call(x, { op: 'state', touch: false });
  if (!m.exists) {
    expectError(x, r, 'topic_not_found', 404);
    return undefined;
  }
  m.applyTtl(x.sim.now);
  const b = expectOk(x, r, 200);
  const w = `${x.what}: state`;
  assert.equal(b.head_seq, m.head, `${w}: head_seq`);
  assert.equal(b.next_seq, m.head + 1, `${w}: next_seq`);
  assert.equal(b.earliest_seq, m.earliest(), `${w}: earliest_seq`);
  assert.equal(b.count, m.count(), `${w}: count`);
  assert.equal(b.bytes, m.bytes(), `${w}: bytes`);
  assert.deepEqual(b.config, m.config, `${w}: config`);
  const { cap_records: cr, cap_bytes: cb } = m.config;
  if (cr > 0) assert.ok(b.count <= cr, `${w}: count ${b.count} above cap_records ${cr}`);
  if (cb > 0) assert.ok(b.bytes <= cb, `${w}: bytes ${b.bytes} above cap_bytes ${cb}`);
  return b;
}

/** Full read from 0 with paging; count must equal what it delivers. */
function checkFullRead(x: Ctx, limit: number): void {
  const { m } = x;
  if (!m.exists) return;
  const st = checkState(x);
  const pages: any[] = [];
  let cursor = 0;
  for (let i = 0; i <= m.head + 2; i++) {
    const p = checkedDiff(x, cursor, limit);
    pages.push(p);
    if (i > 0) assert.equal(p.tombstone, null, `${x.what}: full read page ${i + 1} has a tombstone`);
    cursor = p.next_from_seq;
    if (p.caught_up) break;
  }
  const last = pages[pages.length - 1];
  assert.equal(last.caught_up, true, `${x.what}: full read did not catch up`);
  checkPartition(x, 0, pages, `${x.what}: full read (limit ${limit})`);
  const delivered = pages.reduce((a, p) => a + p.records.length, 0);
  assert.equal(st.count, delivered, `${x.what}: count ${st.count} != records delivered by a full read ${delivered}`);
}

function runOp(x: Ctx, op: Op): void {
  const { sim, m } = x;
  switch (op.k) {
    case 'clock':
      sim.now += op.ms;
      return;
    case 'state':
      checkState(x);
      return;
    case 'read': {
      const top = Math.max(m.head, m.maxHead) + 3;
      checkedDiff(x, op.cursor % top, op.limit);
      return;
    }
    case 'append': {
      const built = op.recs.map((s, i) => recOf(s, m.head + i + 1));
      const r = appendCall(x, { records: built.map((b) => b.body), config: { durability: 'memory' } });
      const n = built.length;
      const batchBytes = built.reduce((a, b) => a + b.bytes, 0);
      let created = false;
      if (!m.exists) {
        m.create(memoryConfig());
        created = true;
      }
      const c = m.config;
      if (c.discard === 'reject' && (c.cap_records > 0 || c.cap_bytes > 0)) {
        const overR = c.cap_records > 0 && n > c.cap_records;
        const overB = c.cap_bytes > 0 && batchBytes > c.cap_bytes;
        if (overR || overB) {
          bump('record_too_large');
          const d = expectError(x, r, 'record_too_large', 400);
          const allowed = [...(overR ? ['cap_records'] : []), ...(overB ? ['cap_bytes'] : [])];
          assert.ok(allowed.includes(d?.limit), `${x.what}: record_too_large detail.limit ${d?.limit}, expected ${allowed.join('|')}`);
          return;
        }
        m.applyTtl(sim.now);
        if ((c.cap_records > 0 && m.count() + n > c.cap_records) || (c.cap_bytes > 0 && m.bytes() + batchBytes > c.cap_bytes)) {
          bump('topic_full');
          const d = expectError(x, r, 'topic_full', 422);
          assert.deepEqual(
            d,
            { topic: 't', cap_records: c.cap_records, cap_bytes: c.cap_bytes, head_seq: m.head, earliest_seq: m.earliest() },
            `${x.what}: topic_full detail`,
          );
          return;
        }
      }
      const b = expectOk(x, r, created ? 201 : 200);
      const first = m.head + 1;
      const ts = Math.max(sim.now, m.lastTs);
      m.lastTs = ts;
      built.forEach((bb, i) =>
        m.recs.push({ seq: first + i, ts, tag: op.recs[i]!.tag, data: bb.data, meta: bb.meta, bytes: bb.bytes, fate: 'live' }),
      );
      assert.equal(b.first_seq, first, `${x.what}: first_seq`);
      assert.equal(b.last_seq, first + n - 1, `${x.what}: last_seq`);
      assert.deepEqual(
        b.seqs,
        Array.from({ length: n }, (_, i) => first + i),
        `${x.what}: seqs`,
      );
      assert.equal(b.head_seq, m.head, `${x.what}: head_seq`);
      assert.equal(b.created, created, `${x.what}: created`);
      m.applyCaps();
      m.maxHead = Math.max(m.maxHead, m.head);
      return;
    }
    case 'put': {
      const config = memoryConfig({ cap_records: op.capRecords, cap_bytes: op.capBytes, discard: op.discard, ttl_ms: op.ttl });
      const r = call(x, { op: 'put', config });
      if (!m.exists) {
        const b = expectOk(x, r, 201);
        assert.equal(b.created, true);
        m.create(config);
      } else {
        const b = expectOk(x, r, 200);
        assert.equal(b.created, false);
        if (JSON.stringify(config) !== JSON.stringify(m.config)) {
          m.applyTtl(sim.now); // what the old TTL expired stays expired under the new one
          m.setConfig(config);
          m.applyTtl(sim.now);
          m.applyCaps();
        }
      }
      assert.deepEqual(r.body.config, config, `${x.what}: PUT echoes the stored config`);
      return;
    }
    case 'delete': {
      const before = op.before === null ? null : op.before % (m.head + 3);
      const r = call(x, { op: 'deleteRecords', beforeSeq: before, match: op.match });
      if (!m.exists) {
        expectError(x, r, 'topic_not_found', 404);
        return;
      }
      m.applyTtl(sim.now);
      const bound = m.head;
      let deleted = 0;
      for (const rec of m.recs) {
        if (rec.fate !== 'live' || rec.seq > bound) continue;
        if (before !== null && !(rec.seq < before)) continue;
        if (op.match !== null && !tagMatches(rec.tag, op.match)) continue;
        rec.fate = 'deleted';
        deleted++;
      }
      const b = expectOk(x, r, 200);
      bump(deleted > 0 ? 'record delete (some)' : 'record delete (none)');
      assert.deepEqual(
        b,
        { topic: 't', deleted, earliest_seq: m.earliest(), head_seq: m.head, count: m.count(), bytes: m.bytes() },
        `${x.what}: delete response (before_seq ${before}, match ${JSON.stringify(op.match)})`,
      );
      return;
    }
    case 'deleteTopic': {
      const r = call(x, { op: 'deleteTopic', ifEmpty: op.ifEmpty });
      if (!m.exists) {
        const b = expectOk(x, r, 200);
        assert.equal(b.deleted, false);
        return;
      }
      if (op.ifEmpty) {
        m.applyTtl(sim.now); // docs/API.md "DELETE /v0/topics/:topic": TTL expiry and eviction apply first
        if (m.count() > 0) {
          bump('topic_not_empty');
          const d = expectError(x, r, 'topic_not_empty', 409);
          assert.deepEqual(d, { topic: 't', count: m.count() }, `${x.what}: topic_not_empty detail`);
          return;
        }
      }
      const b = expectOk(x, r, 200);
      assert.equal(b.deleted, true, `${x.what}: deleted`);
      bump('topic deleted');
      m.maxHead = Math.max(m.maxHead, m.head);
      m.exists = false;
      return;
    }
  }
}

function runProgram(ops: Op[]): void {
  const sim = new SimActor();
  const m = new Model();
  const x: Ctx = { sim, m, step: 0, what: 'create' };
  // Start with a plain memory topic.
  const r = call(x, { op: 'put', config: memoryConfig() });
  expectOk(x, r, 201);
  m.create(memoryConfig());
  for (const [i, op] of ops.entries()) {
    x.step = i + 1;
    x.what = `step ${i + 1} ${JSON.stringify(op)}`;
    runOp(x, op);
    if (op.k === 'clock' || op.k === 'read') continue;
    // After every mutating step: a full read with a varying page size, then stale cursors around
    // the floors (the edges where tombstones start and stop).
    x.what = `after step ${i + 1} ${JSON.stringify(op)}`;
    checkFullRead(x, [1000, 3, 17][i % 3]!);
    if (m.exists) {
      m.applyTtl(sim.now);
      const cursors = new Set([0, m.evictFloor - 2, m.evictFloor - 1, m.earliest() - 2, m.earliest() - 1, m.head, m.maxHead + 1]);
      for (const cur of cursors) if (cur >= 0) checkedDiff(x, cur, 1 + (i % 4));
    }
  }
}

test('retention model: random appends, config changes, clock, deletes and reads (fast-check)', (t) => {
  const numRuns = Number(process.env.RETENTION_MODEL_RUNS ?? 200);
  const seed = process.env.RETENTION_MODEL_SEED !== undefined ? Number(process.env.RETENTION_MODEL_SEED) : undefined;
  const path = process.env.RETENTION_MODEL_PATH;
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 80, size: 'max' }), (ops) => runProgram(ops)),
    { numRuns, includeErrorInReport: true, ...(seed !== undefined ? { seed } : {}), ...(path ? { path } : {}) },
  );
  t.diagnostic(`exercised: ${JSON.stringify(stats)}`);
});

// A few fixed programs, so the basic shapes are covered whatever the random seed.
test('retention model: fixed programs', () => {
  const A = (n: number, tag?: string): Op => ({
    k: 'append',
    recs: Array.from({ length: n }, () => ({ len: 3, ch: 'x', tag, meta: false })),
  });
  const put = (capRecords: number, capBytes: number, discard: 'old' | 'reject', ttl: number): Op => ({
    k: 'put',
    capRecords,
    capBytes,
    discard,
    ttl,
  });
  const programs: Op[][] = [
    // cap eviction, then a delete above the floor (silent), then a read from below the floor
    [A(10), put(5, 0, 'old', 0), { k: 'delete', before: 9, match: null }, { k: 'read', cursor: 3, limit: 10 }],
    // cap eviction then TTL expiry of the rest: mixed
    [put(3, 0, 'old', 100), A(6), { k: 'clock', ms: 200 }, { k: 'read', cursor: 0, limit: 10 }],
    // reject: fill, refuse, free by delete, fill again; a batch alone too big
    [put(3, 0, 'reject', 0), A(2), A(1), A(1), { k: 'delete', before: 2, match: null }, A(1), A(4)],
    // tags: Glob and Eq, point-in-time
    [
      A(3, 'ab'),
      A(2, 'b'),
      { k: 'delete', before: null, match: { op: 'Glob', value: 'a' } },
      A(2, 'ab'),
      { k: 'delete', before: null, match: { op: 'Eq', value: 'b' } },
    ],
    // everything deleted, if_empty delete, recreate by append, read with an old cursor
    [A(4), { k: 'delete', before: 100, match: null }, { k: 'deleteTopic', ifEmpty: true }, A(2), { k: 'read', cursor: 3, limit: 5 }],
    // TTL-expired topic deleted with if_empty (no read in between)
    [put(0, 0, 'old', 100), A(3), { k: 'clock', ms: 500 }, { k: 'deleteTopic', ifEmpty: true }],
    // bytes cap with meta
    [
      put(0, 40, 'old', 0),
      {
        k: 'append',
        recs: [
          { len: 10, ch: 'é', tag: 'a', meta: true },
          { len: 2, ch: 'x', tag: undefined, meta: true },
        ],
      },
      A(3),
    ],
  ];
  for (const p of programs) runProgram(p);
});
