// Unit tests of the `/work` refill path (docs/QUEUES.md "`GET /v0/topics/:q/work`"; docs/API.md
// "Work frames"; docs/PERFORMANCE.md "Queues: claim, ack and `/work`"):
// - on the real queue actor in a SimHost, a refill of N jobs reaches main as ONE work event for the connection (one buffer, so one
//   socket write there), its frames in ascending $seq, each the stored record with the lease the
//   lease table holds (lease_id, deadline), its $ts and deliveries; an ack of k of them brings one
//   more event of k frames, the next seqs;
// - renderJobFrames (src/actors/queue/render.ts): the frames parse to the same members, in the
//   same order, as JSON.stringify of the expected job, for numbers at digit-count edges, ms
//   timestamps with zeros inside, lease id parts at their widest (the lease id is leaseIdOf's),
//   and the record's $node, $tag and meta present or absent (a pin for any faster renderer).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderJobFrames, type LeasedJob } from '../../src/actors/queue/render.js';
import { leaseIdOf } from '../../src/actors/queue/leaseId.js';
import type { Lease } from '../../src/actors/queue/leaseTable.js';
import type { TopicInstance } from '../../src/actors/topic/instance.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import type { TopicResult } from '../../src/protocol/messages/rpc.js';
import type { WorkEvent } from '../../src/protocol/messages/events.js';
import { SimHost } from '../support/simHost.js';

function okBody(r: TopicResult | undefined, what: string): any {
  assert.ok(r, `${what}: no reply`);
  assert.ok(r.ok, `${what}: ${JSON.stringify(r)}`);
  return JSON.parse(Buffer.from(r.json).toString('utf8') + '}');
}

function request(sim: SimHost, req: Parameters<SimHost['request']>[0], what: string): any {
  const id = sim.request(req);
  sim.flushAll();
  return okBody(sim.replies.get(id), what);
}

interface ParsedFrame {
  id: number;
  event: string;
  job: Record<string, any>;
  /** The `data:` line as sent (field order is part of the format). */
  raw: string;
}

/** Splits a buffer of `job` frames into frames (each `id:`, `event:`, one `data:` line, blank line). */
function parseFrames(buf: Uint8Array): ParsedFrame[] {
  const text = Buffer.from(buf).toString('utf8');
  assert.ok(text.endsWith('\n\n'), 'frames end with a blank line');
  return text
    .slice(0, -2)
    .split('\n\n')
    .map((block) => {
      const lines = block.split('\n');
      assert.equal(lines.length, 3, `three lines per frame: ${JSON.stringify(block)}`);
      assert.match(lines[0]!, /^id: \d+$/);
      assert.match(lines[2]!, /^data: /);
      const raw = lines[2]!.slice('data: '.length);
      return { id: Number(lines[0]!.slice(4)), event: lines[1]!.replace(/^event: /, ''), job: JSON.parse(raw), raw };
    });
}

const RECORDS = [
  { data: { task: 'resize', id: 17 }, tag: 'img', node: 'producer-1', meta: { trace: 't-1' } },
  { data: 'bare' },
  { data: null },
  { data: [1, 2, 3], meta: {} },
  { data: { deep: { a: 'é ✓' } }, tag: 't' },
];

test('a refill of N jobs is one work event: ascending $seq, the leases of the table; an ack of k brings one event of k', () => {
  const sim = new SimHost({ seed: 'work-refill', maxLimit: 1000, segmentBytes: 64 * 1024 * 1024, maxTopics: 0 });
  const cfg = resolveConfig('q', { type: 'queue', durability: 'disk', lease_ms: 60_000 });
  assert.ok(cfg.ok);
  request(sim, { op: 'put', topic: 'q', config: cfg.config }, 'put');
  const records = Array.from({ length: 25 }, (_, i) => RECORDS[i % RECORDS.length]!);
  request(
    sim,
    { op: 'append', topic: 'q', body: Buffer.from(JSON.stringify({ records })), returnSeqs: true, headerIdemKey: undefined },
    'append',
  );
  request(sim, { op: 'workOpen', topic: 'q', connId: 7, node: 'w-a', max: 10, leaseMs: null }, 'workOpen');

  const inst = sim.actor('q').current!;
  const table = inst.queue!.table;
  const check = (events: WorkEvent[], seqs: number[]): ParsedFrame[] => {
    assert.equal(events.length, 1, 'one work event per refill');
    const ev = events[0]!;
    assert.ok(ev.k === 'jobs' && ev.connId === 7 && ev.topic === 'q', JSON.stringify(ev));
    const frames = parseFrames(ev.frames);
    assert.deepEqual(
      frames.map((f) => f.id),
      seqs,
      'frames in ascending $seq',
    );
    for (const f of frames) {
      const lease = table.active.get(f.id)!;
      const rec = records[f.id - 1]!;
      assert.equal(f.event, 'job');
      assert.equal(f.job.$seq, f.id);
      assert.equal(f.job.topic, 'q');
      assert.equal(f.job.lease_id, lease.id, `seq ${f.id}: the lease id the table holds`);
      assert.equal(f.job.deadline, lease.deadlineMs);
      assert.equal(f.job.$ts, inst.index.ts(f.id));
      assert.equal(f.job.deliveries, 1);
      assert.deepEqual(f.job.data, rec.data);
      assert.deepEqual(f.job.meta, 'meta' in rec ? rec.meta : undefined);
      assert.equal(f.job.$tag, 'tag' in rec ? rec.tag : undefined);
      assert.equal(f.job.$node, 'node' in rec ? rec.node : undefined);
    }
    return frames;
  };

  const first = check(sim.work.splice(0), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const acked = first.slice(2, 6);
  const a = request(
    sim,
    { op: 'ack', topic: 'q', node: 'w-a', seqs: acked.map((f) => f.id), leaseIds: acked.map((f) => f.job.lease_id) },
    'ack',
  );
  assert.deepEqual([a.acked, a.skipped], [4, []]);
  check(sim.work.splice(0), [11, 12, 13, 14]);
  assert.equal(table.heldBy(7), 10);
});

/** A stand-in for the instance: the stored texts and $ts renderJobFrames reads. */
function fakeInstance(name: string, texts: Map<number, { json: string; ts: number }>): TopicInstance {
  const parts = new Map<number, object>();
  for (const [seq, { json }] of texts) {
    // The stored text layout the index hands out: offsets of data, node, tag, meta in one buffer.
    const r = JSON.parse(json) as Record<string, unknown>;
    const pieces: [string, string | undefined][] = [
      ['node', r.node === undefined ? undefined : JSON.stringify(r.node)],
      ['tag', r.tag === undefined ? undefined : JSON.stringify(r.tag)],
      ['data', JSON.stringify(r.data)],
      ['meta', r.meta === undefined ? undefined : JSON.stringify(r.meta)],
    ];
    const bufs: Buffer[] = [];
    const t: Record<string, unknown> = { nodeLen: 0, tagLen: 0, metaLen: -1, nodeOff: 0, tagOff: 0, metaOff: 0 };
    let off = 0;
    for (const [k, v] of pieces) {
      if (v === undefined) continue;
      const b = Buffer.from(v, 'utf8');
      t[`${k}Off`] = off;
      t[`${k}Len`] = b.length;
      bufs.push(b);
      off += b.length;
    }
    t.buf = Buffer.concat(bufs);
    parts.set(seq, t);
  }
  return { name, index: { text: (s: number) => parts.get(s), ts: (s: number) => texts.get(s)!.ts } } as unknown as TopicInstance;
}

test('renderJobFrames: digit-count edges, zeros inside ms timestamps, wide lease id parts, optional members', () => {
  const seqs = [1, 9, 10, 99, 100, 99_999_999, 100_000_000, 100_000_001, 2 ** 31, 2 ** 32 + 5, 2 ** 53 - 1];
  const deadlines = [
    0,
    7,
    1_700_000_000_000,
    1_764_400_000_005,
    1_000_000_000_000,
    2 ** 53 - 1,
    123_456_789,
    100_000_000,
    99_999_999,
    10,
    1,
  ];
  const texts = new Map<number, { json: string; ts: number }>();
  const jobs: LeasedJob[] = seqs.map((seq, i) => {
    const rec = RECORDS[i % RECORDS.length]!;
    texts.set(seq, { json: JSON.stringify(rec), ts: deadlines[(i + 3) % deadlines.length]! });
    const epoch = [0, 1, 0xffffff, 0x1234567, 2 ** 31 + 9][i % 5]!;
    const no = [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 77, 2 ** 45 + 2 ** 33 + 3][i % 6]!;
    const rand = [0, 0xffffffff, 0x80000000, 0x0a0b0c0d][i % 4]!;
    const lease: Lease = { epoch, no, rand, id: leaseIdOf(epoch, no, rand), node: 'w', deadlineMs: deadlines[i]!, connId: 1 };
    return { seq, lease, deliveries: [1, 9, 10, 1234][i % 4]! };
  });
  const frames = parseFrames(renderJobFrames(fakeInstance('jobs.high-prio', texts), jobs));
  assert.equal(frames.length, jobs.length);
  frames.forEach((f, i) => {
    const j = jobs[i]!;
    const rec = RECORDS[i % RECORDS.length]!;
    assert.equal(f.id, j.seq);
    assert.equal(f.event, 'job');
    const want: Record<string, unknown> = { topic: 'jobs.high-prio', $seq: j.seq, lease_id: j.lease.id, deadline: j.lease.deadlineMs };
    want.$ts = texts.get(j.seq)!.ts;
    if ('node' in rec) want.$node = rec.node;
    if ('tag' in rec) want.$tag = rec.tag;
    want.deliveries = j.deliveries;
    want.data = rec.data;
    if ('meta' in rec) want.meta = rec.meta;
    // The same members in the same order, byte for byte as JSON.stringify writes them.
    assert.equal(f.raw, JSON.stringify(want), `seq ${j.seq}`);
  });
});
