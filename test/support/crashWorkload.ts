// The crash sweep's workload (test/support/crashSweep.ts): a seeded plan of steps against a
// CrashWorld, and the History of what was submitted and what was acked before the disk froze.
// A step's operations are issued together (appends to one topic then share group commits) and
// the step ends when all of them replied. The plan keeps the oracle exact:
// - three topics are `fsync` class, so an ack means durable; one is `disk` class (acked on the
//   write, durable only with a later sync), for what must hold even so (its seqs are never
//   reused, thanks to its durable reservations); every request succeeds;
// - a topic's seqs follow submission order: records[i] of a topic gets seq i + 1;
// - a record delete or a config change is its topic's only operation in its step, so the seqs a
//   delete covers are known when it is issued (every earlier record of the topic is acked).
// A reply counts as an ack only if it arrives while the disk is not frozen: after the freeze the
// abandoned world runs on inert calls and its replies are no evidence.
import assert from 'node:assert/strict';
import { resolveConfig, type Durability } from '../../src/actors/topic/config.js';
import type { Settings } from '../../src/config.js';
import type { TopicRequest, TopicResult } from '../../src/core/messages/rpc.js';
import { seededRng, type Rng } from '../../src/core/rng.js';
import { replyBody, type CrashWorld } from './crashWorld.js';
import type { SimDisk } from './simDisk.js';

export interface RecordInput {
  /** The record's data as compact JSON text (stored and read back verbatim). */
  data: string;
  tag?: string;
}

export type WorkOp =
  /** Creates a topic, or changes its idempotency window (a TOPIC_CONFIG frame). */
  | { t: 'put'; topic: string; windowMs: number }
  /** `create`: the append may create the topic (lazily, with its class in the config). */
  | { t: 'append'; topic: string; records: RecordInput[]; create?: boolean }
  | { t: 'deleteBefore'; topic: string; beforeSeq: number }
  | { t: 'deleteMatch'; topic: string; prefix: string }
  | { t: 'checkpoint' };

export interface Workload {
  seed: string;
  /** Settings over sweepSettings() (file sizes vary with the seed). */
  settings: Partial<Settings>;
  /** Topic names and their durability class. */
  topics: Map<string, Durability>;
  /** Each step's operations run concurrently. */
  steps: WorkOp[][];
}

/** What one topic was sent, and which of it was acked. */
export interface TopicHistory {
  durability: Durability;
  /** Submitted records in order: records[i] is expected at seq i + 1. */
  records: RecordInput[];
  createAcked: boolean;
  /** Highest seq of an acked append (0: none). */
  maxAckedSeq: number;
  deletes: { seqs: number[]; acked: boolean }[];
  /** Idempotency windows the topic was given (create and config PUTs), in order, each acked or not. */
  windows: { windowMs: number; acked: boolean }[];
}

export interface History {
  topics: Map<string, TopicHistory>;
  /** Operations issued and replies taken as acks. */
  issued: number;
  acked: number;
}

/** Topic names: chosen so the sweep's two workers each own some (test asserts it). */
export const SWEEP_TOPICS = ['orders', 'users', 'audit-log', 'metrics'];

const WINDOW_MS_DEFAULT = 120_000;

/** The seed `npm test` sweeps. */
export const DEFAULT_SEED = 'sweep-1';

function configOf(topic: string, durability: Durability, windowMs: number) {
  const r = resolveConfig(topic, { durability, idempotency_window_ms: windowMs });
  assert.ok(r.ok);
  return r.config;
}

// ---- the plan ----------------------------------------------------------------------------------

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[Math.floor(rng.next() * xs.length)]!;
}

function shuffled<T>(rng: Rng, xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function int(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng.next() * (hi - lo + 1));
}

/**
 * A plan of `rounds` rounds and a few more steps: three topics created by PUT (one of them
 * `disk` class), the fourth lazily by an append; appends of 1–4 records (some 300-odd bytes, so 2 KiB segments seal
 * often); prefix deletes, tag deletes, config changes and checkpoints alongside other topics'
 * appends.
 */
export function makeWorkload(seed: string, rounds = 12): Workload {
  const rng = seededRng(`workload/${seed}`);
  const [a, b, c, d] = SWEEP_TOPICS as [string, string, string, string];
  const topics = new Map<string, Durability>([[a, 'fsync'], [b, 'fsync'], [c, 'fsync'], [d, 'disk']]);
  const heads = new Map([...topics.keys()].map((t) => [t, 0]));
  let serial = 0;
  const records = (topic: string, n: number): RecordInput[] =>
    Array.from({ length: n }, () => {
      const k = ++serial;
      const data = JSON.stringify({ k: `${topic}-${k}`, n: k, pad: 'x'.repeat(pick(rng, [0, 8, 40, 300])) });
      const tag = pick(rng, [undefined, `keep-${k}`, `drop-${k}`]);
      return tag === undefined ? { data } : { data, tag };
    });
  const append = (topic: string, create = false): WorkOp => {
    const recs = records(topic, pick(rng, [1, 1, 2, 4]));
    heads.set(topic, heads.get(topic)! + recs.length);
    return create ? { t: 'append', topic, records: recs, create } : { t: 'append', topic, records: recs };
  };
  const steps: WorkOp[][] = [[a, b, d].map((topic): WorkOp => ({ t: 'put', topic, windowMs: WINDOW_MS_DEFAULT }))];
  const live = [a, b, d];
  // From the third round on, one topic gets a special operation while the others append: each
  // kind in turn, in an order drawn from the seed, so every plan has each kind at least twice.
  const kinds = shuffled(rng, ['deleteBefore', 'deleteMatch', 'put', 'checkpoint'] as const);
  for (let round = 0; round < rounds; round++) {
    if (round === 1) {
      steps.push([append(c, true), append(a)]);
      live.push(c);
    }
    const special = round >= 2 ? kinds[(round - 2) % kinds.length] : undefined;
    const target = special && special !== 'checkpoint' ? pick(rng, live) : undefined;
    const step: WorkOp[] = [];
    if (special === 'checkpoint') step.push({ t: 'checkpoint' });
    if (special === 'deleteBefore') step.push({ t: 'deleteBefore', topic: target!, beforeSeq: 1 + Math.floor(heads.get(target!)! * (0.3 + 0.5 * rng.next())) });
    if (special === 'deleteMatch') step.push({ t: 'deleteMatch', topic: target!, prefix: 'drop-' });
    if (special === 'put') step.push({ t: 'put', topic: target!, windowMs: int(rng, 1, 600) * 1000 });
    for (const topic of live) {
      if (topic === target) continue;
      for (let k = int(rng, 1, 3); k > 0; k--) step.push(append(topic));
    }
    steps.push(step);
    // Appends to the disk topic alone: acked on the write, with no fsync behind them until a
    // later step's, so a crash in between loses acked records whose seqs must stay used.
    if (round % 2 === 1) steps.push(Array.from({ length: int(rng, 1, 2) }, () => append(d)));
  }
  steps.push([{ t: 'checkpoint' }, append(a), append(b), append(d)]);
  for (let k = 0; k < 3; k++) steps.push(live.map((t) => append(t)));
  // The default seed keeps the sweep's standard sizes; others vary how often files roll over.
  const settings = seed === DEFAULT_SEED ? {} : { segmentBytes: pick(rng, [1024, 2048, 4096]), walFileBytes: pick(rng, [4096, 8192, 16384]), walPreallocate: rng.next() < 0.7 };
  return { seed, settings, topics, steps };
}

// ---- running it -------------------------------------------------------------------------------

export function newHistory(workload: Workload): History {
  const topics = new Map<string, TopicHistory>();
  for (const [t, durability] of workload.topics) topics.set(t, { durability, records: [], createAcked: false, maxAckedSeq: 0, deletes: [], windows: [] });
  return { topics, issued: 0, acked: 0 };
}

function appendBody(op: Extract<WorkOp, { t: 'append' }>, durability: Durability): Uint8Array {
  const recs = op.records.map((r) => `{"data":${r.data}${r.tag !== undefined ? `,"tag":${JSON.stringify(r.tag)}` : ''}}`).join(',');
  const extra = op.create ? `,"create":true,"config":{"durability":"${durability}"}` : '';
  return new TextEncoder().encode(`{"records":[${recs}]${extra}}`);
}

/**
 * Issues one operation: the model is updated at once (what was submitted), and the returned
 * function, given the reply, records the ack and checks the reply against the model.
 */
function issue(op: Exclude<WorkOp, { t: 'checkpoint' }>, h: TopicHistory): { req: TopicRequest; onReply: (r: TopicResult) => void } {
  switch (op.t) {
    case 'put': {
      h.windows.push({ windowMs: op.windowMs, acked: false });
      const w = h.windows.at(-1)!;
      return {
        req: { op: 'put', topic: op.topic, config: configOf(op.topic, h.durability, op.windowMs) },
        onReply: (r) => {
          replyBody(r);
          h.createAcked = true;
          w.acked = true;
        },
      };
    }
    case 'append': {
      const first = h.records.length + 1;
      h.records.push(...op.records);
      const last = h.records.length;
      // A lazy create makes the topic with the default window.
      const created = op.create ? { windowMs: WINDOW_MS_DEFAULT, acked: false } : undefined;
      if (created) h.windows.push(created);
      return {
        req: { op: 'append', topic: op.topic, body: appendBody(op, h.durability), returnSeqs: true, headerIdemKey: undefined },
        onReply: (r) => {
          const body = replyBody(r);
          assert.deepEqual([body.first_seq, body.last_seq], [first, last], `the model expected ${op.topic} seqs ${first}..${last}`);
          if (created && body.created === true) {
            h.createAcked = true;
            created.acked = true;
          }
          h.maxAckedSeq = Math.max(h.maxAckedSeq, last);
        },
      };
    }
    case 'deleteBefore':
    case 'deleteMatch': {
      // Every earlier record of the topic is acked (the plan gives a delete its own step).
      const seqs: number[] = [];
      h.records.forEach((rec, i) => {
        const seq = i + 1;
        if (op.t === 'deleteBefore' ? seq < op.beforeSeq : rec.tag?.startsWith(op.prefix)) seqs.push(seq);
      });
      const gone = new Set(h.deletes.flatMap((d) => d.seqs));
      const deleted = seqs.filter((s) => !gone.has(s)).length;
      const del = { seqs, acked: false };
      h.deletes.push(del);
      const req: TopicRequest =
        op.t === 'deleteBefore'
          ? { op: 'deleteRecords', topic: op.topic, beforeSeq: op.beforeSeq, match: null }
          : { op: 'deleteRecords', topic: op.topic, beforeSeq: null, match: { op: 'Glob', value: op.prefix } };
      return {
        req,
        onReply: (r) => {
          assert.equal(replyBody(r).deleted, deleted, `the model expected ${deleted} records deleted from ${op.topic}`);
          del.acked = true;
        },
      };
    }
  }
}

/** Marks the end of a workload cut short by the freeze. */
const FROZE = Symbol('froze');

/**
 * Runs the plan until it ends or the disk freezes; returns what was submitted and acked. A reply
 * that is not a success before the freeze fails the run (the plan only makes valid requests).
 */
export async function runWorkload(world: CrashWorld, disk: SimDisk, workload: Workload, history = newHistory(workload)): Promise<History> {
  const froze = disk.frozen.then(() => FROZE);
  for (const step of workload.steps) {
    if (disk.isFrozen) break;
    const replies = step.map((op) => {
      history.issued++;
      if (op.t === 'checkpoint') {
        return world.checkpoint().then(() => {
          if (!disk.isFrozen) history.acked++;
        });
      }
      const { req, onReply } = issue(op, history.topics.get(op.topic)!);
      return world.request(req).then((r) => {
        if (disk.isFrozen) return;
        onReply(r);
        history.acked++;
      });
    });
    const all = Promise.all(replies);
    all.catch(() => undefined); // a failure after the freeze is no evidence (and must not go unhandled)
    if ((await Promise.race([all, froze])) === FROZE) break;
  }
  return history;
}
