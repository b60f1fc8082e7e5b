// Dormant topics and lazy recovery (docs/ARCHITECTURE.md "Dormant topics", "Lazy recovery") are invisible: the same random program runs against
// two in-process worlds (real supervisor, workers and WAL writer over a SimDisk, as the crash
// sweep runs them), one where `sleep` steps put every topic that may sleep to sleep (so later
// requests wake them) and restarts recover lazily (topics quiet at the checkpoint stay asleep),
// one where nothing sleeps and restarts load every topic; every answer (perf blocks aside) and
// every list page must be the same in both, across checkpoints and crash restarts. Both worlds also keep the host's books
// (running live-bytes total, one actor per awake live topic, sleeping topics counted apart).
// Seed: fast-check prints it on failure; rerun with DORMANCY_SEED=<seed> (and DORMANCY_PATH=<path>
// for the shrunk case). DORMANCY_RUNS sets the runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FakeClock } from '../../src/core/clock.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import { SimDisk } from '../support/simDisk.js';
import { CrashWorld, replyBody, sweepSettings, SWEEP_DATA_DIR } from '../support/crashWorld.js';
import { topicsDir } from '../../src/format/layout.js';
import path from 'node:path';
import type { Settings } from '../../src/config.js';

const NAMES = ['t.a', 't.b', 't.c', 't.d', 't.e', 't.f'];
const CLASSES = ['memory', 'disk', 'fsync', 'ephemeral'] as const;

type Op =
  | {
      t: 'put';
      topic: string;
      durability: (typeof CLASSES)[number];
      capRecords: number;
      ttlMs: number;
      autoPriority: boolean;
      queue?: boolean;
      leasesDurable?: boolean;
    }
  | { t: 'claim'; topic: string; max: number; leaseMs: number }
  | { t: 'ack'; topic: string; seqs: number[]; nack: boolean; delayMs: number }
  | { t: 'append'; topic: string; sizes: number[]; tag: string | null; node: string | null; key: string | null }
  | { t: 'deleteBefore'; topic: string; beforeSeq: number }
  | { t: 'deleteTag'; topic: string; tag: string }
  | { t: 'drop'; topic: string }
  | { t: 'read'; topic: string; fromSeq: number; touch: boolean; diff: boolean }
  | { t: 'list'; touch: boolean }
  | { t: 'sleep' }
  | { t: 'advance'; ms: number }
  | { t: 'restart'; checkpoint: boolean; kill?: boolean }
  | { t: 'checkpoint' };

const topicArb = fc.constantFrom(...NAMES);
/** The ops of a random program; `ttls`: the ttl_ms a put may set. */
const opArbWith = (ttls: number[], advanceWeight: number, readWeight: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('put' as const),
        topic: topicArb,
        durability: fc.constantFrom(...CLASSES),
        capRecords: fc.constantFrom(0, 0, 0, 4),
        ttlMs: fc.constantFrom(...ttls),
        autoPriority: fc.boolean(),
      }),
    },
    {
      weight: 6,
      arbitrary: fc.record({
        t: fc.constant('append' as const),
        topic: topicArb,
        sizes: fc.array(fc.integer({ min: 0, max: 90 }), { minLength: 1, maxLength: 4 }),
        tag: fc.constantFrom(null, null, 'red', 'blue'),
        node: fc.constantFrom(null, null, 'n1', 'n2'),
        key: fc.constantFrom(null, null, null, 'k1', 'k2'),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ t: fc.constant('deleteBefore' as const), topic: topicArb, beforeSeq: fc.integer({ min: 1, max: 10 }) }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('deleteTag' as const), topic: topicArb, tag: fc.constantFrom('red', 'blue') }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('drop' as const), topic: topicArb }) },
    {
      weight: readWeight,
      arbitrary: fc.record({
        t: fc.constant('read' as const),
        topic: topicArb,
        fromSeq: fc.constantFrom(0, 0, 2, 5),
        touch: fc.boolean(),
        diff: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('list' as const), touch: fc.boolean() }) },
    { weight: 4, arbitrary: fc.constant({ t: 'sleep' as const }) },
    { weight: advanceWeight, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.constantFrom(10, 100, 600, 2000) }) },
    // A restart is a power loss (only fsynced bytes) or a process kill (every write lands: frames
    // written to packs after a checkpoint are there for lazy recovery's scan after the cut).
    { weight: 1, arbitrary: fc.record({ t: fc.constant('restart' as const), checkpoint: fc.boolean(), kill: fc.boolean() }) },
    { weight: 1, arbitrary: fc.constant({ t: 'checkpoint' as const }) },
  );
const opArb = opArbWith([0, 0, 0, 500, 2000, 5000], 1, 4);
/**
 * Programs about TTL: three topics made with TTL first (`fsync` ones are durable at once, so they
 * may sleep after a later append; `disk` ones only with the next fsync of the worker: the sim
 * has no sync timer), then appends spread over time, sleep steps, reads and lists.
 */
const TTL_TOPICS = NAMES.slice(0, 3);
const ttlTopicArb = fc.constantFrom(...TTL_TOPICS);
const ttlOpArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('append' as const),
      topic: ttlTopicArb,
      sizes: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 3 }),
      tag: fc.constantFrom(null, 'red'),
      node: fc.constant(null),
      key: fc.constant(null),
    }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.constantFrom(100, 600, 2000) }) },
  { weight: 3, arbitrary: fc.constant({ t: 'sleep' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('read' as const),
      topic: ttlTopicArb,
      fromSeq: fc.constantFrom(0, 2),
      touch: fc.boolean(),
      diff: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('list' as const), touch: fc.constant(false) }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('deleteBefore' as const), topic: ttlTopicArb, beforeSeq: fc.integer({ min: 1, max: 6 }) }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restart' as const), checkpoint: fc.boolean() }) },
);
const ttlProgramArb = fc
  .tuple(
    fc.array(fc.tuple(fc.constantFrom(2000, 5000), fc.constantFrom('disk' as const, 'fsync' as const)), {
      minLength: TTL_TOPICS.length,
      maxLength: TTL_TOPICS.length,
    }),
    fc.array(ttlOpArb, { minLength: 5, maxLength: 50 }),
  )
  .map(([kinds, ops]): Op[] => [
    ...TTL_TOPICS.map((topic, i): Op => ({
      t: 'put',
      topic,
      durability: kinds[i]![1],
      capRecords: 0,
      ttlMs: kinds[i]![0],
      autoPriority: false,
    })),
    ...ops,
  ]);
/**
 * Programs about queues: three topics made queues first (leases durable or not, in `disk` or
 * `fsync`), then appends, claims, acks and nacks among the usual ops, time passing for leases
 * and nack delays to end, and sleep steps.
 */
const QUEUES = NAMES.slice(0, 3);
const queueArb = fc.constantFrom(...QUEUES);
const queueOpArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('append' as const),
      topic: queueArb,
      sizes: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 4 }),
      tag: fc.constantFrom(null, 'red'),
      node: fc.constant(null),
      key: fc.constant(null),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('claim' as const),
      topic: queueArb,
      max: fc.constantFrom(1, 2, 5),
      leaseMs: fc.constantFrom(100, 1000),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('ack' as const),
      topic: queueArb,
      seqs: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 3 }),
      nack: fc.boolean(),
      delayMs: fc.constantFrom(0, 0, 500),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ t: 'sleep' as const }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.constantFrom(100, 600, 2000) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('read' as const),
      topic: queueArb,
      fromSeq: fc.constantFrom(0, 2),
      touch: fc.boolean(),
      diff: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('list' as const), touch: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('deleteTag' as const), topic: queueArb, tag: fc.constant('red') }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restart' as const), checkpoint: fc.boolean() }) },
);
const QUEUE_KINDS = ['queue', 'queue fsync', 'queue fsync durable-leases'] as const;
const queueProgramArb = fc
  .tuple(
    fc.array(fc.constantFrom(...QUEUE_KINDS), { minLength: QUEUES.length, maxLength: QUEUES.length }),
    fc.array(queueOpArb, { minLength: 5, maxLength: 50 }),
  )
  .map(([kinds, ops]): Op[] => [
    // A queue sleeps once its frames are durable: an ack's delete frame with the next fsync of
    // the worker (the sim has no sync timer), at once in an `fsync` queue.
    ...QUEUES.map((topic, i): Op => {
      const k = kinds[i]!;
      return {
        t: 'put',
        topic,
        durability: k === 'queue' ? 'disk' : 'fsync',
        capRecords: 0,
        ttlMs: 0,
        autoPriority: false,
        queue: true,
        leasesDurable: k.endsWith('durable-leases'),
      };
    }),
    ...ops,
  ]);

/**
 * Programs about topics with own segment files: tiny packs and small segments, so three topics
 * roll from their packed segment to an own file within a few appends, and on to a second one
 * (which keeps them awake until caps, deletes and a checkpoint reclaim the first).
 */
const OWN_SETTINGS: Partial<Settings> = { packBytes: 512, segmentBytes: 4096 };
const OWN_TOPICS = NAMES.slice(0, 3);
const ownTopicArb = fc.constantFrom(...OWN_TOPICS);
const ownOpArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('append' as const),
      topic: ownTopicArb,
      sizes: fc.array(fc.integer({ min: 20, max: 200 }), { minLength: 1, maxLength: 4 }),
      tag: fc.constantFrom(null, 'red'),
      node: fc.constantFrom(null, 'n1'),
      key: fc.constant(null),
    }),
  },
  { weight: 4, arbitrary: fc.constant({ t: 'sleep' as const }) },
  { weight: 2, arbitrary: fc.constant({ t: 'checkpoint' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('read' as const),
      topic: ownTopicArb,
      fromSeq: fc.constantFrom(0, 2, 5),
      touch: fc.boolean(),
      diff: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('list' as const), touch: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('deleteBefore' as const), topic: ownTopicArb, beforeSeq: fc.integer({ min: 1, max: 30 }) }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('deleteTag' as const), topic: ownTopicArb, tag: fc.constant('red') }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restart' as const), checkpoint: fc.boolean() }) },
);
const ownProgramArb = fc
  .tuple(
    fc.array(fc.tuple(fc.constantFrom('disk' as const, 'fsync' as const), fc.constantFrom(0, 0, 8)), {
      minLength: OWN_TOPICS.length,
      maxLength: OWN_TOPICS.length,
    }),
    fc.array(ownOpArb, { minLength: 10, maxLength: 60 }),
  )
  .map(([kinds, ops]): Op[] => [
    ...OWN_TOPICS.map((topic, i): Op => ({
      t: 'put',
      topic,
      durability: kinds[i]![0],
      capRecords: kinds[i]![1],
      ttlMs: 0,
      autoPriority: false,
    })),
    ...ops,
  ]);

function requestsOf(op: Extract<Op, { topic: string }>): TopicRequest[] {
  switch (op.t) {
    case 'claim':
      return [{ op: 'claim', topic: op.topic, node: 'w1', max: op.max, leaseMs: op.leaseMs }];
    case 'ack':
      return [
        op.nack
          ? { op: 'nack', topic: op.topic, node: 'w1', seqs: op.seqs, leaseIds: null, delayMs: op.delayMs }
          : { op: 'ack', topic: op.topic, node: 'w1', seqs: op.seqs, leaseIds: null },
      ];
    case 'put': {
      const r = resolveConfig(op.topic, {
        durability: op.durability,
        cap_records: op.capRecords,
        ttl_ms: op.ttlMs,
        auto_priority: op.autoPriority,
        idempotency_window_ms: 60_000,
        ...(op.queue ? { type: 'queue', leases_durable: op.leasesDurable ?? false } : {}),
      });
      assert.ok(r.ok);
      return [{ op: 'put', topic: op.topic, config: r.config }];
    }
    case 'append': {
      const extra = `${op.tag ? `,"tag":"${op.tag}"` : ''}${op.node ? `,"node":"${op.node}"` : ''}`;
      const recs = op.sizes.map((n) => `{"data":"${'x'.repeat(n)}"${extra}}`).join(',');
      return [
        {
          op: 'append',
          topic: op.topic,
          body: new TextEncoder().encode(`{"records":[${recs}]}`),
          returnSeqs: true,
          headerIdemKey: op.key ?? undefined,
        },
      ];
    }
    case 'deleteBefore':
      return [{ op: 'deleteRecords', topic: op.topic, beforeSeq: op.beforeSeq, match: null }];
    case 'deleteTag':
      return [{ op: 'deleteRecords', topic: op.topic, beforeSeq: null, match: { op: 'Eq', value: op.tag } }];
    case 'drop':
      return [{ op: 'deleteTopic', topic: op.topic, ifEmpty: false }];
    case 'read': {
      // A state read alone shows last_read_ts as the topic kept it (a diff would set it anew).
      const state: TopicRequest = { op: 'state', topic: op.topic, touch: op.touch };
      if (!op.diff) return [state];
      return [
        {
          op: 'diff',
          topic: op.topic,
          fromSeq: op.fromSeq,
          limit: 100,
          nodes: op.fromSeq === 2 ? ['n1'] : null,
          includeTags: true,
          includeMeta: true,
          waitMs: 0,
          maxBatchBytes: 0,
        },
        state,
      ];
    }
  }
}

/**
 * What a client sees of a result: status and body, or the error (perf blocks differ by design).
 * Lease ids are unique either way (a woken queue's counter goes on), but the random part of a
 * woken queue's ids restarts its sequence: they are masked.
 */
function seen(r: TopicResult): string {
  if (!r.ok) return `${r.status} ${r.code} ${r.message} ${JSON.stringify(r.detail ?? null)}`;
  const body = Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength)
    .toString('utf8')
    .replace(/lease_[0-9a-f]+/g, 'lease_…');
  return `${r.status} ${body} ${JSON.stringify(r.watch ?? null)}`;
}

class Side {
  world!: CrashWorld;
  readonly disk = new SimDisk();
  readonly clock = new FakeClock();
  slept = 0;
  /** Topics with own segment files found asleep after a sleep step (summed over the steps). */
  ownAsleep = 0;
  /** Sleeping TTL topics woken ahead of their first record's expiry. */
  ttlWoke = 0;
  /** Every lease id a claim handed out since the last restart (unique per boot, sleeps or not). */
  leaseIds = new Set<string>();
  constructor(
    readonly sleeps: boolean,
    readonly over: Partial<Settings> = {},
  ) {}

  async boot(): Promise<void> {
    // The reference side never sleeps and recovers the old way (every topic loaded, every pack
    // scanned); the other sleeps on `sleep` steps and recovers lazily (quiet topics stay asleep).
    // WAL files larger than a program writes in one boot: a rotation fsyncs the file it leaves,
    // and the sleeping side's WAL may hold frames the other's does not (a sleep step's TTL sweep
    // writes a FLOORS frame the reference side writes at the topic's next request, or never), so
    // its rotations, and with them what unsynced `disk` appends a power loss keeps, would come
    // at other appends than the reference side's.
    this.world = new CrashWorld(
      this.disk,
      sweepSettings({ segmentCacheBytes: 1 << 20, packBytes: 4096, walFileBytes: 256 * 1024, lazyRecovery: this.sleeps, ...this.over }),
      this.clock,
    );
    await this.world.boot();
  }

  async step(op: Op, what: string): Promise<string[]> {
    const w = this.world;
    switch (op.t) {
      case 'advance':
        this.clock.advance(op.ms);
        // Time passes as the sweep's timer sees it (every 100 ms): sleeping TTL topics wake ahead of
        // their first record's expiry, awake ones whose records all expired may sleep again.
        if (this.sleeps) for (const wk of w.sup.workers) this.ttlWoke += await wk.wakeDueTopics();
        return [];
      case 'sleep':
        if (this.sleeps) {
          for (const wk of w.sup.workers) {
            this.slept += await wk.sleepQuietTopics();
            this.ownAsleep += (await wk.audit()).sleepingOwnFiles;
          }
        }
        return [];
      case 'checkpoint':
        await w.checkpoint();
        return [];
      case 'restart':
        if (op.checkpoint) await w.checkpoint();
        w.halt();
        this.disk.crash(op.kill ? 'process' : 'durable-only');
        await this.boot();
        this.leaseIds.clear(); // a new boot epoch
        return [];
      case 'list': {
        const pages = await Promise.all(w.sup.workers.map((wk) => (op.touch ? wk.touch(NAMES) : wk.list('', '', 1000))));
        return pages.map((p) => JSON.stringify(p));
      }
      default: {
        const out: string[] = [];
        for (const req of requestsOf(op)) {
          const r = await w.request(req);
          assert.ok(r.ok || r.status < 500, `${what}: ${seen(r)}`);
          if (req.op === 'claim' && r.ok) {
            for (const id of Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength)
              .toString('utf8')
              .match(/lease_[0-9a-f]+/g) ?? []) {
              assert.ok(!this.leaseIds.has(id), `${what}: lease id ${id} handed out twice in one boot`);
              this.leaseIds.add(id);
            }
          }
          out.push(seen(r));
        }
        return out;
      }
    }
  }

  async audit(what: string): Promise<void> {
    for (const [i, wk] of this.world.sup.workers.entries()) {
      const a = await wk.audit();
      assert.equal(a.liveBytes, a.liveBytesSummed, `${what}: worker ${i}'s running total of live bytes`);
      assert.equal(
        a.actors,
        a.live + a.leaseKept,
        `${what}: worker ${i} holds an actor only for an awake live topic (or a deleted queue's lease counter)`,
      );
      assert.equal(
        a.staleKeptLines,
        0,
        `${what}: worker ${i}'s kept checkpoint lines of unchanged blocks are what its sleeping rows encode to now`,
      );
    }
  }
}

async function run(ops: Op[], over: Partial<Settings> = {}): Promise<{ slept: number; ttlWoke: number; ownAsleep: number }> {
  const asleep = new Side(true, over);
  const awake = new Side(false, over);
  await asleep.boot();
  await awake.boot();
  try {
    for (const [no, op] of ops.entries()) {
      const what = `op ${no} ${JSON.stringify(op)}`;
      const a = await asleep.step(op, what);
      const b = await awake.step(op, what);
      assert.deepEqual(a, b, `${what}: answers differ with topics put to sleep (left) and kept awake (right)`);
      await asleep.audit(what);
      await awake.audit(what);
    }
    return { slept: asleep.slept, ttlWoke: asleep.ttlWoke, ownAsleep: asleep.ownAsleep };
  } finally {
    asleep.world.halt();
    awake.world.halt();
  }
}

/** Runs the property over `programs`; returns the sleeps and TTL wakes it saw. */
async function property(
  programs: fc.Arbitrary<Op[]>,
  runs: number,
  over: Partial<Settings> = {},
): Promise<{ numRuns: number; slept: number; ttlWoke: number; ownAsleep: number }> {
  const numRuns = Number(process.env.DORMANCY_RUNS ?? runs);
  const seed = process.env.DORMANCY_SEED !== undefined ? Number(process.env.DORMANCY_SEED) : undefined;
  const path = process.env.DORMANCY_PATH;
  let slept = 0;
  let ttlWoke = 0;
  let ownAsleep = 0;
  await fc.assert(
    fc.asyncProperty(programs, async (ops) => {
      const r = await run(ops, over);
      slept += r.slept;
      ttlWoke += r.ttlWoke;
      ownAsleep += r.ownAsleep;
    }),
    { numRuns, includeErrorInReport: true, ...(seed !== undefined ? { seed } : {}), ...(path ? { path } : {}) },
  );
  return { numRuns, slept, ttlWoke, ownAsleep };
}

test('topics put to sleep answer every request as if they had stayed awake', async () => {
  const { numRuns, slept } = await property(fc.array(opArb, { minLength: 5, maxLength: 50 }), 60);
  // The property is only as strong as the sleeps it saw.
  assert.ok(slept > numRuns, `only ${slept} topics went to sleep over ${numRuns} runs`);
});

test('TTL topics put to sleep (and woken ahead of their expiry) answer as if they had stayed awake', async () => {
  // Wakes ahead of expiry need a topic asleep with records of two $ts and time passing untouched:
  // about one program in fifty; the fixed TTL program below always has one.
  const { numRuns, slept } = await property(ttlProgramArb, 100);
  assert.ok(slept > numRuns, `only ${slept} topics went to sleep over ${numRuns} runs`);
});

test('queues put to sleep (no lease or delay under way) answer claims, acks and nacks as if they had stayed awake', async () => {
  const { numRuns, slept } = await property(queueProgramArb, 80);
  assert.ok(slept > numRuns, `only ${slept} topics went to sleep over ${numRuns} runs`);
});

test('topics with own segment files put to sleep (one file at most) answer as if they had stayed awake', async () => {
  const { numRuns, ownAsleep } = await property(ownProgramArb, 60, OWN_SETTINGS);
  assert.ok(ownAsleep > numRuns, `only ${ownAsleep} topics with own segment files were seen asleep over ${numRuns} runs`);
});

test('a topic that took records while ephemeral does not sleep: they live only in memory', async () => {
  await run([
    { t: 'put', topic: 't.a', durability: 'ephemeral', capRecords: 0, ttlMs: 0, autoPriority: false },
    { t: 'append', topic: 't.a', sizes: [3], tag: null, node: null, key: null },
    { t: 'put', topic: 't.a', durability: 'memory', capRecords: 0, ttlMs: 0, autoPriority: false },
    { t: 'append', topic: 't.a', sizes: [4], tag: null, node: null, key: null },
    { t: 'sleep' },
    { t: 'read', topic: 't.a', fromSeq: 0, touch: false, diff: true },
    { t: 'restart', checkpoint: true },
    { t: 'read', topic: 't.a', fromSeq: 0, touch: false, diff: true },
  ]);
});

test('a fixed program: sleep, wake by append, read, delete records, sleep again, restart', async () => {
  const slept = await run([
    { t: 'put', topic: 't.a', durability: 'fsync', capRecords: 4, ttlMs: 0, autoPriority: true },
    { t: 'append', topic: 't.a', sizes: [10, 20, 30], tag: 'red', node: 'n1', key: 'k1' },
    { t: 'append', topic: 't.b', sizes: [5], tag: null, node: null, key: null },
    { t: 'sleep' },
    { t: 'read', topic: 't.a', fromSeq: 0, touch: true, diff: true },
    { t: 'sleep' },
    { t: 'read', topic: 't.a', fromSeq: 0, touch: false, diff: false },
    { t: 'sleep' },
    { t: 'append', topic: 't.a', sizes: [40, 50], tag: 'blue', node: 'n2', key: 'k1' },
    { t: 'sleep' },
    { t: 'deleteTag', topic: 't.a', tag: 'red' },
    { t: 'sleep' },
    { t: 'list', touch: true },
    { t: 'read', topic: 't.a', fromSeq: 2, touch: false, diff: true },
    { t: 'restart', checkpoint: true },
    { t: 'sleep' },
    { t: 'read', topic: 't.b', fromSeq: 0, touch: false, diff: true },
    { t: 'drop', topic: 't.b' },
    { t: 'list', touch: false },
  ]);
  assert.ok(slept.slept >= 4, `only ${slept.slept} topics went to sleep`);
});

test('appends after a checkpoint to sleeping topics, then a process kill: plain ones come back asleep with the records in their rows', async () => {
  // Lazy recovery's scan after the cut takes a plain append into the row of a topic restored
  // asleep (Dormancy.absorbAppend); a capped topic, or one with a record delete, wakes instead.
  // The answers after the kill match the reference side's, and t.a and t.b are asleep then.
  const asleepAfterKill: number[] = [];
  const ops: Op[] = [
    { t: 'put', topic: 't.a', durability: 'fsync', capRecords: 0, ttlMs: 0, autoPriority: true },
    { t: 'put', topic: 't.c', durability: 'fsync', capRecords: 4, ttlMs: 0, autoPriority: true },
    { t: 'append', topic: 't.a', sizes: [10, 20], tag: 'red', node: 'n1', key: 'k1' },
    { t: 'append', topic: 't.b', sizes: [5], tag: null, node: null, key: null },
    { t: 'append', topic: 't.c', sizes: [7, 8], tag: null, node: null, key: null },
    { t: 'append', topic: 't.d', sizes: [9], tag: null, node: null, key: null },
    { t: 'sleep' },
    { t: 'checkpoint' },
    { t: 'append', topic: 't.a', sizes: [30], tag: 'blue', node: 'n2', key: 'k2' },
    { t: 'append', topic: 't.a', sizes: [40, 50], tag: null, node: null, key: null },
    { t: 'append', topic: 't.b', sizes: [0, 60], tag: null, node: null, key: null },
    { t: 'append', topic: 't.c', sizes: [70], tag: null, node: null, key: null },
    { t: 'deleteBefore', topic: 't.d', beforeSeq: 2 },
    { t: 'restart', checkpoint: false, kill: true },
  ];
  const asleep = new Side(true);
  const awake = new Side(false);
  await asleep.boot();
  await awake.boot();
  try {
    const reads: Op[] = ['t.a', 't.b', 't.c', 't.d'].map((topic): Op => ({ t: 'read', topic, fromSeq: 0, touch: false, diff: true }));
    const after: Op[] = [
      { t: 'list', touch: false },
      ...reads,
      // Again, t.b (not fsync) from a head padded to its ceiling: its next append needs a new
      // reservation, whose replayed SEQ_RESERVE the row takes (Dormancy.reserveAsleep) as a
      // loaded topic pads to it.
      { t: 'sleep' },
      { t: 'checkpoint' },
      { t: 'append', topic: 't.a', sizes: [11], tag: null, node: null, key: null },
      { t: 'append', topic: 't.b', sizes: [3], tag: null, node: null, key: null },
      { t: 'restart', checkpoint: false, kill: true },
      { t: 'list', touch: false },
      ...reads,
    ];
    for (const [no, op] of [...ops, ...after].entries()) {
      const what = `op ${no} ${JSON.stringify(op)}`;
      assert.deepEqual(await asleep.step(op, what), await awake.step(op, what), `${what}: answers differ`);
      await asleep.audit(what);
      if (no === ops.length - 1) for (const wk of asleep.world.sup.workers) asleepAfterKill.push((await wk.audit()).sleeping);
    }
  } finally {
    asleep.world.halt();
    awake.world.halt();
  }
  assert.equal(
    asleepAfterKill.reduce((a, b) => a + b, 0),
    2,
    't.a and t.b stay asleep through recovery; t.c (capped) and t.d (a record delete) wake',
  );
});

test('a TTL topic sleeps until its first record is about to expire, wakes ahead of it, and sleeps again once all expired', async () => {
  const wait = (n: number): Op[] => Array.from({ length: n }, () => ({ t: 'advance' as const, ms: 600 }));
  const r = await run([
    { t: 'put', topic: 't.a', durability: 'disk', capRecords: 0, ttlMs: 5000, autoPriority: false },
    { t: 'append', topic: 't.a', sizes: [10, 20], tag: 'red', node: null, key: null },
    ...wait(3),
    { t: 'append', topic: 't.a', sizes: [30], tag: null, node: null, key: null },
    { t: 'put', topic: 't.b', durability: 'fsync', capRecords: 0, ttlMs: 5000, autoPriority: false },
    { t: 'append', topic: 't.b', sizes: [5], tag: null, node: null, key: null },
    { t: 'sleep' }, // both sleep: nothing expires within TTL_WAKE_AHEAD_MS
    { t: 'list', touch: false },
    { t: 'restart', checkpoint: true }, // restored asleep, first_ts_ms from the snapshot
    { t: 'list', touch: false },
    ...wait(4), // t.a's first records expire within a second: it wakes
    { t: 'list', touch: false },
    ...wait(2), // its first two records expired, its last not yet: it stays awake
    { t: 'sleep' },
    { t: 'list', touch: false },
    { t: 'read', topic: 't.b', fromSeq: 0, touch: false, diff: false },
    ...wait(4), // every record expired: the sweep expires them (a step whose FLOORS frame must be durable first)
    { t: 'sleep' },
    { t: 'checkpoint' }, // fsyncs the WAL: both may sleep now, and count none
    { t: 'sleep' },
    { t: 'list', touch: false },
    { t: 'restart', checkpoint: false },
    { t: 'list', touch: false },
    { t: 'read', topic: 't.a', fromSeq: 0, touch: false, diff: true },
    { t: 'append', topic: 't.a', sizes: [7], tag: null, node: null, key: null },
    { t: 'sleep' },
    { t: 'list', touch: false },
  ]);
  assert.ok(r.slept >= 4, `only ${r.slept} topics went to sleep`);
  assert.ok(r.ttlWoke >= 1, 'the sleeping TTL topic woke ahead of its expiry');
});

test('a TTL topic restored asleep whose expiry began while the server was down loads at recovery', async () => {
  // t.a sleeps with records of two $ts, and the first restart's checkpoint keeps it asleep. A
  // wake ahead of its expiry follows (it writes nothing), then its first record expires and
  // the server loses power: recovery from that checkpoint used to restore it asleep with a
  // record that counts no expiry (dormantFigures) until the sweep's timer woke it, so a list
  // made before that counted the expired record.
  const r = await run([
    { t: 'put', topic: 't.a', durability: 'fsync', capRecords: 0, ttlMs: 5000, autoPriority: false },
    { t: 'append', topic: 't.a', sizes: [1], tag: null, node: null, key: null },
    { t: 'advance', ms: 2000 },
    { t: 'append', topic: 't.a', sizes: [2], tag: null, node: null, key: null },
    { t: 'sleep' }, // its first record expires in 3 s: it sleeps, to wake at 4 s
    { t: 'restart', checkpoint: true }, // restored asleep; the boot's checkpoint keeps it so
    { t: 'advance', ms: 2000 }, // woken ahead of its expiry
    { t: 'advance', ms: 2000 }, // its first record expired, its last not
    { t: 'restart', checkpoint: false },
    { t: 'list', touch: false },
    { t: 'read', topic: 't.a', fromSeq: 0, touch: false, diff: true },
  ]);
  assert.ok(r.slept >= 1 && r.ttlWoke >= 1, `slept ${r.slept}, woke ahead of expiry ${r.ttlWoke}`);
});

test('counterexample of the TTL property, seed 943540994: restored asleep after a power loss with its expiry under way', async () => {
  // Shrunk by fast-check (run 4225 of 20000 of that seed). No sleep step: t.b, written at 0 and
  // 0.6 s, is quiet at a checkpoint of the restart at 2.6 s, which records its watermarks; its
  // first record expires at 5 s, and the power loss at 5.2 s brought it back asleep from that
  // checkpoint, listed with 2 records where 1 is live (the timer's wake would have come later).
  const none = { tag: null, node: null, key: null };
  await run([
    { t: 'put', topic: 't.a', durability: 'disk', capRecords: 0, ttlMs: 2000, autoPriority: false },
    { t: 'put', topic: 't.b', durability: 'disk', capRecords: 0, ttlMs: 5000, autoPriority: false },
    { t: 'put', topic: 't.c', durability: 'disk', capRecords: 0, ttlMs: 2000, autoPriority: false },
    { t: 'append', topic: 't.b', sizes: [0], ...none },
    { t: 'advance', ms: 600 },
    { t: 'append', topic: 't.b', sizes: [0], ...none },
    { t: 'advance', ms: 2000 },
    { t: 'restart', checkpoint: true },
    { t: 'advance', ms: 2000 },
    { t: 'advance', ms: 600 },
    { t: 'restart', checkpoint: false },
    { t: 'list', touch: false },
    { t: 'append', topic: 't.a', sizes: [0], ...none },
    { t: 'advance', ms: 100 },
    { t: 'list', touch: false },
  ]);
});

test('a TTL sweep on one side only does not move the WAL rotation that decides what a power loss keeps', async () => {
  // The sleep step's sweep expires t.a and writes a FLOORS frame the reference side does not
  // write. With 8 KiB WAL files the sleeping side rotated (and so fsynced) one append of t.b
  // earlier, and kept 87 of t.b's unsynced `disk` records through the power loss where the
  // reference side kept 54: an artefact of the comparison, not of sleeping (Side.boot).
  const app = (topic: string): Op => ({ t: 'append', topic, sizes: [40, 40, 40], tag: null, node: null, key: null });
  const put = (topic: string, ttlMs: number): Op => ({ t: 'put', topic, durability: 'disk', capRecords: 0, ttlMs, autoPriority: false });
  await run([
    put('t.a', 2000),
    put('t.b', 5000),
    put('t.c', 5000),
    app('t.a'),
    { t: 'advance', ms: 2000 },
    { t: 'advance', ms: 100 },
    { t: 'append', topic: 't.c', sizes: [0], tag: null, node: null, key: null },
    { t: 'sleep' },
    ...Array.from({ length: 30 }, () => app('t.b')),
    { t: 'restart', checkpoint: false },
    { t: 'read', topic: 't.b', fromSeq: 0, touch: false, diff: false },
    { t: 'read', topic: 't.c', fromSeq: 0, touch: false, diff: false },
    { t: 'read', topic: 't.a', fromSeq: 0, touch: false, diff: true },
  ]);
});

test('a queue sleeps once its leases and delays are over, keeps its delivery counts asleep and across restarts', async () => {
  const q = 't.a';
  const r = await run([
    { t: 'put', topic: q, durability: 'fsync', capRecords: 0, ttlMs: 0, autoPriority: false, queue: true, leasesDurable: true },
    { t: 'append', topic: q, sizes: [1, 2, 3], tag: null, node: null, key: null },
    { t: 'claim', topic: q, max: 2, leaseMs: 100 },
    { t: 'sleep' }, // leases held: stays awake
    { t: 'ack', topic: q, seqs: [1], nack: false, delayMs: 0 },
    { t: 'advance', ms: 600 }, // the lease on seq 2 expires (lazily: the sleep step sweeps it)
    { t: 'sleep' },
    { t: 'sleep' },
    { t: 'list', touch: false },
    { t: 'claim', topic: q, max: 5, leaseMs: 100 }, // wakes: seq 2 again (2nd delivery), then 3
    { t: 'ack', topic: q, seqs: [2], nack: true, delayMs: 500 },
    { t: 'ack', topic: q, seqs: [3], nack: false, delayMs: 0 },
    { t: 'sleep' }, // a nack delay under way: stays awake
    { t: 'advance', ms: 600 },
    { t: 'sleep' },
    { t: 'sleep' },
    { t: 'restart', checkpoint: true }, // restored asleep, its delivery counts from the snapshot
    { t: 'claim', topic: q, max: 1, leaseMs: 100 }, // seq 2, 3rd delivery
    { t: 'advance', ms: 600 },
    { t: 'sleep' },
    { t: 'sleep' },
    { t: 'restart', checkpoint: false },
    { t: 'claim', topic: q, max: 1, leaseMs: 100 },
    { t: 'read', topic: q, fromSeq: 0, touch: false, diff: true },
  ]);
  assert.ok(r.slept >= 3, `only ${r.slept} times did the queue go to sleep`);
});

test('a restart keeps a topic with an own file asleep only while its file is as it was at the cut', async () => {
  // After a power loss a segment may keep a frame whose WAL copy is gone (a segment write is
  // not on the WAL's durability path): that topic must load, its extra record with it.
  const disk = new SimDisk();
  const clock = new FakeClock();
  const settings = sweepSettings({ segmentCacheBytes: 1 << 20, packBytes: 512, segmentBytes: 1 << 20, lazyRecovery: true });
  let w = new CrashWorld(disk, settings, clock);
  try {
    await w.boot();
    await ownFileRestarts();
  } finally {
    w.halt(); // also when an assertion failed: the world's timers would keep the test alive
  }
  async function ownFileRestarts(): Promise<void> {
    const append = async (topic: string, n: number) => {
      const [req] = requestsOf({ t: 'append', topic, sizes: new Array(n).fill(100), tag: null, node: null, key: null });
      const r = await w.request(req!);
      assert.ok(r.ok, seen(r));
    };
    /** A power loss: only what is durable stays, and the server starts again on it. */
    const restart = async () => {
      w.halt();
      disk.crash('durable-only');
      w = new CrashWorld(disk, settings, clock);
      await w.boot();
    };
    const count = async (topic: string) => {
      const r = await w.request({ op: 'state', topic, touch: false });
      assert.ok(r.ok, seen(r));
      return replyBody(r).count;
    };
    const [put] = requestsOf({ t: 'put', topic: 't.a', durability: 'disk', capRecords: 0, ttlMs: 0, autoPriority: false });
    assert.ok((await w.request(put!)).ok);
    for (let i = 0; i < 8; i++) await append('t.a', 3); // past 512 B: an own file
    await append('t.b', 1); // a default (fsync) topic: its fsync makes t.a's frames durable too
    const topicDirs = disk.fs().readdirSync(topicsDir(SWEEP_DATA_DIR));
    assert.equal(topicDirs.length, 1, 't.a has a directory of its own');
    const dir = path.join(topicsDir(SWEEP_DATA_DIR), topicDirs[0]!);
    const file = path.join(dir, disk.fs().readdirSync(dir)[0]!);
    await w.checkpoint(); // t.a quiet at the cut: its part has watermarks and its file
    const atCut = disk.peek(file)!.length;
    await append('t.a', 1); // in the WAL (not synced: a `disk` topic) and then in its file
    for (let i = 0; i < 100 && disk.peek(file)!.length === atCut; i++) await new Promise((r) => setTimeout(r, 2));
    assert.ok(disk.peek(file)!.length > atCut, 'the segment write landed');
    const fh = await disk.fs().open(file, 'r');
    await fh.sync(); // the file's write-back got out, the WAL's did not
    await fh.close();
    await restart();
    assert.equal((await w.sup.workers[0]!.audit()).sleepingOwnFiles, 0, 'a file grown since the cut: t.a loads');
    assert.equal(await count('t.a'), 25, 'its record that only the file kept is there');
    assert.equal(await count('t.b'), 1);
    // Quiet and checkpointed again, with its file as it is: asleep after the next restart.
    await w.sup.workers[0]!.sleepQuietTopics();
    await w.checkpoint();
    await restart();
    assert.equal((await w.sup.workers[0]!.audit()).sleepingOwnFiles, 1, 'restored asleep');
    assert.equal(await count('t.a'), 25);
    await append('t.a', 1);
    assert.equal(await count('t.a'), 26);
  }
});

test('a checkpoint that failed hands its dead segments to the next one, which unlinks them', async () => {
  // A checkpoint marks sealed segments below the first live seq as reclaimed when it starts and
  // unlinks them once its snapshot is durable; when the snapshot write fails they must not be
  // forgotten (they were, until the next restart), nor keep the topic from sleeping.
  const disk = new SimDisk();
  const settings = sweepSettings({ segmentCacheBytes: 1 << 20, packBytes: 512, segmentBytes: 1024, lazyRecovery: true });
  const w = new CrashWorld(disk, settings, new FakeClock());
  try {
    await w.boot();
    const [put] = requestsOf({ t: 'put', topic: 't.a', durability: 'fsync', capRecords: 4, ttlMs: 0, autoPriority: false });
    assert.ok((await w.request(put!)).ok);
    for (let i = 0; i < 12; i++) {
      const [req] = requestsOf({ t: 'append', topic: 't.a', sizes: [100, 100], tag: null, node: null, key: null });
      assert.ok((await w.request(req!)).ok);
    }
    const dir = path.join(topicsDir(SWEEP_DATA_DIR), disk.fs().readdirSync(topicsDir(SWEEP_DATA_DIR))[0]!);
    const files = () => disk.fs().readdirSync(dir).length;
    assert.ok(files() > 2, `sealed segments below the cap (${files()} files)`);
    disk.failWhen((c) => c.op === 'open' && (c.path ?? '').endsWith('.snap.tmp'), 'ENOSPC');
    await assert.rejects(w.checkpoint());
    disk.clearFaults();
    // An fsync of another topic makes t.a's last floors frame durable too (the sim has no sync timer).
    const fsyncOther = async () => {
      const [other] = requestsOf({ t: 'append', topic: 't.b', sizes: [1], tag: null, node: null, key: null });
      assert.ok((await w.request(other!)).ok);
    };
    // Quiet and written, but its dead segments still wait for their unlink: a wake would read them.
    await fsyncOther();
    await w.sup.workers[0]!.sleepQuietTopics();
    assert.equal((await w.sup.workers[0]!.audit()).sleepingOwnFiles, 0, 'an unlink is pending: it stays awake');
    await w.checkpoint();
    assert.equal(files(), 1, 'only the active segment is left');
    await fsyncOther();
    await w.sup.workers[0]!.sleepQuietTopics();
    assert.equal((await w.sup.workers[0]!.audit()).sleepingOwnFiles, 1, 'no unlink left pending: it may sleep');
  } finally {
    w.halt();
  }
});
