// Many topics (docs/ARCHITECTURE.md), at the host level: a worker's running total of live bytes (docs/API.md "Limits" max_total_bytes,
// ActorHost.liveBytes) always equals the sum over its topics, and a worker holds an actor only
// for a live topic once every request has been answered (requests on absent names and deleted
// topics leave nothing behind). Random programs of puts (caps, TTL, durability), appends, record
// deletes, topic deletes, reads of absent and present names, clock moves and crash restarts (with
// or without a checkpoint first: recovery from snapshot, segments, packs and WAL) run
// against the in-process world of the crash sweep (real supervisor, workers, WAL writer, SimDisk).
// Seed: fast-check prints it on failure; rerun with HOUSEKEEPING_SEED=<seed> (and
// HOUSEKEEPING_PATH=<path> for the shrunk case). HOUSEKEEPING_RUNS sets the runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FakeClock } from '../../src/core/clock.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, sweepSettings } from '../support/crashWorld.js';

const NAMES = ['t.a', 't.b', 't.c', 't.d', 't.e'];
const CLASSES = ['memory', 'disk', 'fsync', 'ephemeral'] as const;

type Op =
  | { t: 'put'; topic: string; durability: (typeof CLASSES)[number]; capRecords: number; capBytes: number; ttlMs: number }
  | { t: 'append'; topic: string; sizes: number[] }
  | { t: 'deleteBefore'; topic: string; beforeSeq: number }
  | { t: 'drop'; topic: string }
  | { t: 'read'; topic: string; absent: boolean }
  | { t: 'advance'; ms: number }
  | { t: 'restart'; checkpoint: boolean };

const topicArb = fc.constantFrom(...NAMES);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('put' as const),
      topic: topicArb,
      durability: fc.constantFrom(...CLASSES),
      capRecords: fc.constantFrom(0, 0, 3, 8),
      capBytes: fc.constantFrom(0, 0, 200, 1000),
      ttlMs: fc.constantFrom(0, 0, 50, 500),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('append' as const),
      topic: topicArb,
      sizes: fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 5 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('deleteBefore' as const), topic: topicArb, beforeSeq: fc.integer({ min: 1, max: 12 }) }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('drop' as const), topic: topicArb }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('read' as const), topic: topicArb, absent: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.constantFrom(10, 100, 600) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restart' as const), checkpoint: fc.boolean() }) },
);

function requestOf(op: Exclude<Op, { t: 'advance' | 'restart' }>, no: number): TopicRequest[] {
  switch (op.t) {
    case 'put': {
      const r = resolveConfig(op.topic, {
        durability: op.durability,
        cap_records: op.capRecords,
        cap_bytes: op.capBytes,
        ttl_ms: op.ttlMs,
      });
      assert.ok(r.ok);
      return [{ op: 'put', topic: op.topic, config: r.config }];
    }
    case 'append': {
      const recs = op.sizes.map((n) => `{"data":"${'x'.repeat(n)}"}`).join(',');
      return [
        {
          op: 'append',
          topic: op.topic,
          body: new TextEncoder().encode(`{"records":[${recs}]}`),
          returnSeqs: true,
          headerIdemKey: undefined,
        },
      ];
    }
    case 'deleteBefore':
      return [{ op: 'deleteRecords', topic: op.topic, beforeSeq: op.beforeSeq, match: null }];
    case 'drop':
      return [{ op: 'deleteTopic', topic: op.topic, ifEmpty: false }];
    case 'read': {
      const topic = op.absent ? `absent.${no}` : op.topic;
      const diff: TopicRequest = {
        op: 'diff',
        topic,
        fromSeq: 0,
        limit: 100,
        nodes: null,
        includeTags: false,
        includeMeta: false,
        waitMs: 0,
        maxBatchBytes: 0,
      };
      return [diff, { op: 'state', topic, touch: false }];
    }
  }
}

async function audit(world: CrashWorld, what: string): Promise<void> {
  for (const [i, w] of world.sup.workers.entries()) {
    const a = await w.audit();
    assert.equal(a.liveBytes, a.liveBytesSummed, `${what}: worker ${i}'s running total of live bytes`);
    assert.equal(a.actors, a.live, `${what}: worker ${i} holds an actor only for a live topic`);
  }
}

async function run(ops: Op[]): Promise<void> {
  const disk = new SimDisk();
  const clock = new FakeClock();
  const settings = sweepSettings({ segmentCacheBytes: 1 << 20 });
  let world = new CrashWorld(disk, settings, clock);
  await world.boot();
  try {
    for (const [no, op] of ops.entries()) {
      const what = `op ${no} ${JSON.stringify(op)}`;
      if (op.t === 'advance') clock.advance(op.ms);
      else if (op.t === 'restart') {
        if (op.checkpoint) await world.checkpoint();
        world.halt();
        disk.crash('durable-only');
        world = new CrashWorld(disk, settings, clock);
        await world.boot();
      } else {
        for (const req of requestOf(op, no)) {
          const r: TopicResult = await world.request(req);
          assert.ok(r.ok || r.status < 500, `${what}: ${r.ok ? r.status : `${r.status} ${r.code} ${r.message}`}`);
        }
      }
      await audit(world, what);
    }
  } finally {
    world.halt();
  }
}

test('the running total of live bytes equals the sum over topics, and no actor outlives its topic', async () => {
  const numRuns = Number(process.env.HOUSEKEEPING_RUNS ?? 100);
  const seed = process.env.HOUSEKEEPING_SEED !== undefined ? Number(process.env.HOUSEKEEPING_SEED) : undefined;
  const path = process.env.HOUSEKEEPING_PATH;
  await fc.assert(fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 60 }), run), {
    numRuns,
    includeErrorInReport: true,
    ...(seed !== undefined ? { seed } : {}),
    ...(path ? { path } : {}),
  });
});

test('a topic whose class changes from ephemeral to memory keeps appending (found by this property)', async () => {
  // Ephemeral batches used to take place in the segment although no frame is ever written: the
  // next memory frame was placed past a gap, the pack refused it and writes stopped (500).
  await run([
    { t: 'put', topic: 't.a', durability: 'ephemeral', capRecords: 0, capBytes: 0, ttlMs: 0 },
    { t: 'append', topic: 't.a', sizes: [0] },
    { t: 'put', topic: 't.a', durability: 'memory', capRecords: 0, capBytes: 0, ttlMs: 0 },
    { t: 'append', topic: 't.a', sizes: [0] },
    { t: 'append', topic: 't.a', sizes: [5, 6] },
    { t: 'deleteBefore', topic: 't.a', beforeSeq: 1 },
    { t: 'restart', checkpoint: true },
    { t: 'append', topic: 't.a', sizes: [7] },
    { t: 'read', topic: 't.a', absent: false },
  ]);
});

test('a fixed program: create, fill past caps, expire, delete records, delete and recreate, restart', async () => {
  await run([
    { t: 'read', topic: 't.a', absent: true },
    { t: 'put', topic: 't.a', durability: 'disk', capRecords: 3, capBytes: 0, ttlMs: 500 },
    { t: 'append', topic: 't.a', sizes: [10, 20, 30, 40, 50] },
    { t: 'append', topic: 't.b', sizes: [100] },
    { t: 'deleteBefore', topic: 't.b', beforeSeq: 2 },
    { t: 'advance', ms: 600 },
    { t: 'read', topic: 't.a', absent: false },
    { t: 'drop', topic: 't.a' },
    { t: 'read', topic: 't.a', absent: false },
    { t: 'append', topic: 't.a', sizes: [7] },
    { t: 'restart', checkpoint: false },
    { t: 'append', topic: 't.c', sizes: [1, 2] },
    { t: 'drop', topic: 't.b' },
    { t: 'restart', checkpoint: true },
    { t: 'read', topic: 't.b', absent: false },
  ]);
});
