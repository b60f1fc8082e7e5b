// Push projection (docs/ARCHITECTURE.md "Watch streams"): the frames main assembles from a pushed batch's pieces must carry
// exactly the records a diff (and a watch pull) of the same range returns, split by limit and
// byte budget, with a contiguous from_seq/to_seq chain; and the cache shares the bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SimActor } from '../support/simActor.js';
import { defaultConfig, type TopicConfig } from '../../src/protocol/topicConfig.js';
import type { WatchBatch } from '../../src/protocol/messages/events.js';
import { ProjectionCache, projectBatch, projectionKey } from '../../src/streams/watch/projection.js';
import type { WatchOptions } from '../../src/streams/watch/session.js';

interface RecSpec {
  data: unknown;
  pretty: boolean;
  meta?: Record<string, unknown>;
  tag?: string;
  node?: string;
}

const NODES = ['a', 'b', 'c', ''];

const recArb: fc.Arbitrary<RecSpec> = fc.record(
  {
    data: fc.jsonValue({ maxDepth: 2, stringUnit: 'grapheme' }),
    pretty: fc.boolean(),
    meta: fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3, noNullPrototype: true }),
    tag: fc.string({ maxLength: 6, unit: 'grapheme' }),
    node: fc.constantFrom(...NODES),
  },
  { requiredKeys: ['data', 'pretty'] },
);

const bodyArb = fc.record(
  { records: fc.array(recArb, { minLength: 1, maxLength: 6 }), node: fc.option(fc.constantFrom(...NODES), { nil: undefined }) },
  { requiredKeys: ['records'] },
);

const optsArb: fc.Arbitrary<WatchOptions> = fc.record({
  limit: fc.integer({ min: 1, max: 5 }),
  maxBatchBytes: fc.integer({ min: 1, max: 120 }),
  heartbeatMs: fc.constant(15000),
  includeMeta: fc.boolean(),
  includeTags: fc.boolean(),
  includeData: fc.boolean(),
  nodes: fc.option(fc.subarray(NODES), { nil: null }),
  strong: fc.constant(false),
});

/** Append body text; records' data/meta possibly with insignificant whitespace. */
function bodyText(body: { records: RecSpec[]; node?: string }): string {
  const recs = body.records.map((r) => {
    const space = r.pretty ? 1 : undefined;
    let s = `{"data":${JSON.stringify(r.data, null, space)}`;
    if (r.meta !== undefined) s += `,"meta":${JSON.stringify(r.meta, null, space)}`;
    if (r.tag !== undefined) s += `,"tag":${JSON.stringify(r.tag)}`;
    if (r.node !== undefined) s += `,"node":${JSON.stringify(r.node)}`;
    return s + '}';
  });
  return `{"records":[${recs.join(',')}]${body.node !== undefined ? `,"node":${JSON.stringify(body.node)}` : ''}}`;
}

/** Payload bytes of a record (docs/API.md "PUT /v0/topics/:topic" cap_bytes: stored data text plus stored meta text). */
function recordBytes(r: RecSpec): number {
  return Buffer.byteLength(JSON.stringify(r.data)) + (r.meta !== undefined ? Buffer.byteLength(JSON.stringify(r.meta)) : 0);
}

function created(sim: SimActor, extra: Partial<TopicConfig>): void {
  sim.send({ op: 'put', config: { ...defaultConfig(), durability: 'disk', durable: false, ...extra } } as never);
  sim.ackAll();
}

/** The text between `"records":[` and the given suffix key. */
function innerRecords(json: string, topic: string, suffixKey: string): string {
  const prefix = `{"topic":${JSON.stringify(topic)},"records":[`;
  assert.ok(json.startsWith(prefix), json);
  const end = json.lastIndexOf(`],"${suffixKey}":`);
  assert.ok(end >= prefix.length - 1, json);
  return json.slice(prefix.length, end);
}

interface FramePayload {
  topic: string;
  records: { $seq: number; [k: string]: unknown }[];
  from_seq: number;
  to_seq: number;
  head_seq: number;
}

test('property: projected push frames == diff of the same range; limit, budget and cursor chain hold', () => {
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.array(recArb, { maxLength: 3 }),
      fc.array(bodyArb, { minLength: 1, maxLength: 3 }),
      optsArb,
      (dedupeNode, warm, bodies, o) => {
        const sim = new SimActor();
        created(sim, { dedupe_node: dedupeNode });
        if (warm.length > 0) {
          sim.send({ op: 'append', body: Buffer.from(bodyText({ records: warm })), returnSeqs: false } as never);
          sim.ackAll(true);
        }
        sim.watched = true;
        const n0 = sim.published.length;
        for (const b of bodies) sim.send({ op: 'append', body: Buffer.from(bodyText(b)), returnSeqs: false } as never);
        sim.ackAll(true);
        const evs = sim.published.slice(n0);
        assert.equal(evs.length, 1, 'one batch for one ack');
        const b = evs[0] as WatchBatch;
        const total = bodies.reduce((a, x) => a + x.records.length, 0);
        assert.equal(b.k, 'batch');
        assert.deepEqual(
          [b.from, b.to, b.head, b.stale, b.dedupeNode],
          [warm.length, warm.length + total, warm.length + total, false, dedupeNode],
        );
        const specs = bodies.flatMap((x) => x.records);
        const sizeOf = (seq: number) => recordBytes(specs[seq - b.from - 1]!);

        const { payloads, tos } = projectBatch(b, o);
        assert.equal(tos.length, payloads.length);
        const texts = payloads.map((p) => p.toString('utf8'));
        const frames = texts.map((t) => JSON.parse(t) as FramePayload);

        // Cursor chain, limit and budget.
        let from = b.from;
        frames.forEach((f, i) => {
          assert.equal(f.topic, 't');
          assert.equal(f.head_seq, b.head);
          assert.equal(f.from_seq, from, `frame ${i} from_seq chains`);
          assert.equal(f.to_seq, tos[i]);
          assert.ok(f.to_seq > f.from_seq);
          assert.ok(f.records.length >= 1 && f.records.length <= o.limit, `frame ${i}: ${f.records.length} records, limit ${o.limit}`);
          const bytes = f.records.reduce((a, r) => a + sizeOf(r.$seq), 0);
          if (f.records.length > 1) assert.ok(bytes <= o.maxBatchBytes, `frame ${i}: ${bytes} bytes > ${o.maxBatchBytes}`);
          for (const r of f.records) assert.ok(r.$seq > f.from_seq && r.$seq <= f.to_seq);
          if (i < frames.length - 1) {
            assert.equal(f.to_seq, f.records.at(-1)!.$seq, 'a split frame ends at its last record');
            const next = frames[i + 1]!.records[0]!;
            assert.ok(f.records.length === o.limit || bytes + sizeOf(next.$seq) > o.maxBatchBytes, `frame ${i} was cut early`);
          }
          from = f.to_seq;
        });
        if (frames.length > 0) assert.equal(from, b.to, 'the last frame runs to the batch end');

        // The oracle: diff of the same range with the same flags and node filter.
        const d = sim.send({
          op: 'diff',
          fromSeq: b.from,
          limit: 1000,
          nodes: o.nodes,
          includeTags: o.includeTags,
          includeMeta: o.includeMeta,
          waitMs: 0,
          maxBatchBytes: 0,
        } as never);
        const diff = sim.replies.get(d);
        assert.ok(diff && diff.ok);
        const diffText = Buffer.from(diff.json).toString('utf8');
        const diffBody = JSON.parse(diffText + '}');
        assert.equal(diffBody.next_from_seq, b.to);
        const want = (diffBody.records as Record<string, unknown>[]).map((r) => {
          if (!o.includeData) delete r.data;
          return r;
        });
        const got = frames.flatMap((f) => f.records);
        assert.deepEqual(got, want);

        // Raw texts: verbatim the same bytes as a watch pull with the same projection (and diff).
        const joined = texts.map((t) => innerRecords(t, 't', 'from_seq')).join(',');
        const w = sim.send({
          op: 'watchRead',
          fromSeq: b.from,
          limit: 1000,
          maxBatchBytes: 0,
          nodes: o.nodes,
          includeTags: o.includeTags,
          includeMeta: o.includeMeta,
          includeData: o.includeData,
          strong: false,
          first: false,
        } as never);
        const wr = sim.replies.get(w);
        assert.ok(wr && wr.ok && wr.watch);
        assert.equal(wr.watch.count, want.length);
        const wrText = Buffer.from(wr.json).toString('utf8');
        assert.equal(joined, want.length === 0 ? '' : innerRecords(wrText, 't', 'from_seq'));
        if (o.includeData) assert.equal(joined, innerRecords(diffText, 't', 'next_from_seq'));
        if (frames.length === 0) assert.equal(want.length, 0);
      },
    ),
    { numRuns: 250 },
  );
});

function oneBatch(): WatchBatch {
  const sim = new SimActor();
  created(sim, {});
  sim.watched = true;
  sim.append({ records: [{ data: 'aaaa' }, { data: 'bbbb', meta: { m: 1 } }, { data: 'cccc', tag: 'x' }] });
  sim.ackAll(true);
  assert.equal(sim.published.length, 1);
  return sim.published[0] as WatchBatch;
}

const BASE: WatchOptions = {
  limit: 2,
  maxBatchBytes: 262144,
  heartbeatMs: 15000,
  includeMeta: true,
  includeTags: false,
  includeData: true,
  nodes: null,
  strong: false,
};

test('ProjectionCache: the same (batchNo, key) returns the identical Buffers', () => {
  const b = oneBatch();
  const cache = new ProjectionCache();
  const key = projectionKey(BASE);
  const f1 = cache.frames(1, b, BASE, key);
  assert.equal(f1.payloads.length, 2);
  assert.deepEqual(f1.tos, [2, 3]);
  const f2 = cache.frames(1, b, { ...BASE }, key);
  assert.equal(f2, f1);
  f1.payloads.forEach((p, i) => assert.equal(f2.payloads[i], p, `payload ${i} is the same Buffer`));
  // Another batch number renders anew (equal bytes, distinct objects).
  const f3 = cache.frames(2, b, BASE, key);
  assert.notEqual(f3, f1);
  assert.notEqual(f3.payloads[0], f1.payloads[0]);
  assert.deepEqual(f3.payloads.map(String), f1.payloads.map(String));
  // Another projection of the same batch differs.
  const other = { ...BASE, includeTags: true, limit: 3 };
  const f4 = cache.frames(1, b, other, projectionKey(other));
  assert.notEqual(f4, f1);
  assert.equal(f4.payloads.length, 1);
  assert.match(f4.payloads[0]!.toString(), /"\$tag":"x"/);
  assert.equal(cache.frames(1, b, BASE, key), f1, 'still cached');
});

test('projectionKey: differs for anything that changes frames, not for heartbeat or consistency', () => {
  const k = projectionKey(BASE);
  assert.equal(projectionKey({ ...BASE, heartbeatMs: 1000, strong: true }), k);
  const variants: Partial<WatchOptions>[] = [
    { limit: 3 },
    { maxBatchBytes: 1 },
    { includeMeta: false },
    { includeTags: true },
    { includeData: false },
    { nodes: ['a'] },
    { nodes: ['a', 'b'] },
  ];
  const keys = variants.map((v) => projectionKey({ ...BASE, ...v }));
  assert.equal(new Set([k, ...keys]).size, variants.length + 1, keys.join(' '));
});

test('projectBatch: the byte budget counts data + meta texts and allows exactly max_batch_bytes', () => {
  const b = oneBatch(); // data "aaaa" (6 bytes); "bbbb" + {"m":1} (6 + 7); "cccc" (6)
  const seqsPerFrame = (maxBatchBytes: number) =>
    projectBatch(b, { ...BASE, limit: 10, maxBatchBytes }).payloads.map((p) =>
      JSON.parse(p.toString()).records.map((r: { $seq: number }) => r.$seq),
    );
  assert.deepEqual(seqsPerFrame(19), [[1, 2], [3]]);
  assert.deepEqual(seqsPerFrame(25), [[1, 2, 3]]);
  assert.deepEqual(seqsPerFrame(24), [[1, 2], [3]]);
  assert.deepEqual(seqsPerFrame(18), [[1], [2], [3]]);
  assert.deepEqual(seqsPerFrame(1), [[1], [2], [3]], 'at least one record per frame');
  const tos = projectBatch(b, { ...BASE, limit: 10, maxBatchBytes: 18 }).tos;
  assert.deepEqual(tos, [1, 2, 3]);
  // include_meta:false does not change the budget (it counts stored bytes, as diff does).
  assert.deepEqual(
    projectBatch(b, { ...BASE, limit: 10, maxBatchBytes: 18, includeMeta: false }).payloads.map(
      (p) => JSON.parse(p.toString()).records.length,
    ),
    [1, 1, 1],
  );
});
