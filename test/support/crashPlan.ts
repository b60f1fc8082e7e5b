// The crash sweep's workload plan (test/support/crashSweep.ts): a seeded list of steps, each a set
// of operations issued together, over topics of every durability class, a queue and a topic that
// is deleted and created again. Pure: the plan follows from the seed alone; what the server
// answers is the business of test/support/crashWorkload.ts, which runs it. The plan keeps the
// oracle (test/support/crashOracle.ts) exact:
// - a topic's seqs follow submission order: the i-th record sent to an instance gets seq i;
// - a record delete, a config change, a topic delete or create is its topic's only operation in
//   its step, so the seqs a delete covers are known when it is issued (every earlier record of
//   the topic is acked), and so is the instance an operation reaches;
// - every request succeeds while the disk is not frozen.
import type { Durability } from '../../src/protocol/topicConfig.js';
import type { Settings } from '../../src/config.js';
import { seededRng, type Rng } from '../../src/core/rng.js';

export interface RecordInput {
  /** The record's data as compact JSON text (stored and read back verbatim). */
  data: string;
  tag?: string;
}

export type WorkOp =
  /** Creates a topic (again, after a drop), or changes its idempotency window (a TOPIC_CONFIG frame). */
  | { t: 'put'; topic: string; windowMs: number }
  /** `create`: the append may create the topic (lazily, with its class in the config). */
  | { t: 'append'; topic: string; records: RecordInput[]; create?: boolean }
  | { t: 'deleteBefore'; topic: string; beforeSeq: number }
  | { t: 'deleteMatch'; topic: string; prefix: string }
  /** Deletes the topic (DELETE /v0/topics/:topic). */
  | { t: 'drop'; topic: string }
  /** Queue: leases up to `max` ready jobs to node CLAIM_NODE. */
  | { t: 'claim'; topic: string; max: number }
  /** Queue: acks up to `max` of the jobs CLAIM_NODE holds (the oldest first; none held: skipped). */
  | { t: 'ack'; topic: string; max: number }
  | { t: 'checkpoint' }
  /** Compacts every sealed segment with a dead record, then checkpoints (the swap). */
  | { t: 'compact' };

export interface TopicSpec {
  durability: Durability;
  queue: boolean;
}

export interface Workload {
  seed: string;
  /** Settings over sweepSettings() (file sizes vary with the seed). */
  settings: Partial<Settings>;
  topics: Map<string, TopicSpec>;
  /** Each step's operations run concurrently. */
  steps: WorkOp[][];
}

/**
 * The sweep's topics. Chosen so that the sweep's two workers each own some (a test asserts it):
 * three `fsync` logs (one created lazily, one deleted and created again), a `disk`, a `memory`
 * and an `ephemeral` log, and an `fsync` queue with durable leases.
 */
export const SWEEP_TOPIC_SPECS: ReadonlyArray<[string, TopicSpec]> = [
  ['orders', { durability: 'fsync', queue: false }],
  ['users', { durability: 'fsync', queue: false }],
  ['audit-log', { durability: 'fsync', queue: false }],
  ['metrics', { durability: 'disk', queue: false }],
  ['sessions', { durability: 'memory', queue: false }],
  ['presence', { durability: 'ephemeral', queue: false }],
  ['jobs', { durability: 'fsync', queue: true }],
];
export const SWEEP_TOPICS = SWEEP_TOPIC_SPECS.map(([t]) => t);

/** The node that claims and acks the queue's jobs in the workload. */
export const CLAIM_NODE = 'worker-1';

export const WINDOW_MS_DEFAULT = 120_000;

/** The seed `npm test` sweeps. */
export const DEFAULT_SEED = 'sweep-1';

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

/** Builds the steps; `heads` tracks each live instance's submitted record count. */
class Planner {
  readonly steps: WorkOp[][] = [];
  private readonly heads = new Map<string, number>();
  private serial = 0;

  constructor(private readonly rng: Rng) {}

  records(topic: string, n: number): RecordInput[] {
    return Array.from({ length: n }, () => {
      const k = ++this.serial;
      const data = JSON.stringify({ k: `${topic}-${k}`, n: k, pad: 'x'.repeat(pick(this.rng, [0, 8, 40, 300])) });
      const tag = pick(this.rng, [undefined, `keep-${k}`, `drop-${k}`]);
      return tag === undefined ? { data } : { data, tag };
    });
  }

  append(topic: string, create = false): WorkOp {
    const recs = this.records(topic, pick(this.rng, [1, 1, 2, 4]));
    this.heads.set(topic, this.head(topic) + recs.length);
    return create ? { t: 'append', topic, records: recs, create } : { t: 'append', topic, records: recs };
  }

  head(topic: string): number {
    return this.heads.get(topic) ?? 0;
  }

  /** The topic's instance is gone: the next one starts at seq 1. */
  dropped(topic: string): void {
    this.heads.set(topic, 0);
  }
}

/** The special operation of a round, on `target` (one of the live logs). */
function special(p: Planner, rng: Rng, kind: 'deleteBefore' | 'deleteMatch' | 'put', target: string): WorkOp {
  if (kind === 'deleteBefore')
    return { t: 'deleteBefore', topic: target, beforeSeq: 1 + Math.floor(p.head(target) * (0.3 + 0.5 * rng.next())) };
  if (kind === 'deleteMatch') return { t: 'deleteMatch', topic: target, prefix: 'drop-' };
  return { t: 'put', topic: target, windowMs: int(rng, 1, 600) * 1000 };
}

/**
 * A plan of `rounds` rounds and a few more steps. Every topic but one is created by PUT in the
 * first step; `audit-log` lazily by an append in the second. Each round appends 1–3 batches of
 * 1–4 records (some 300-odd bytes, so small segments seal often) to every live topic, claims
 * from or acks on the queue, and from the third round on gives one log a special operation
 * (prefix delete, tag delete, config change) or runs a checkpoint: each kind in turn, in an
 * order drawn from the seed, so every plan has each at least twice. `users` is deleted in round
 * 5 and created again in round 7. Odd rounds are followed by two or three steps of appends to
 * the `disk` and `memory` topics alone (acked before a sync, synced only by a later step's).
 */
export function makeWorkload(seed: string, rounds = 10): Workload {
  const rng = seededRng(`workload/${seed}`);
  const p = new Planner(rng);
  const topics = new Map(SWEEP_TOPIC_SPECS);
  const lazy = 'audit-log';
  const dropRound = 5;
  const recreateRound = 7;
  const logs = ['orders', 'users', 'metrics', 'sessions'];
  const all = [...logs, 'presence', 'jobs'];
  const live = new Set(all);
  p.steps.push(all.map((topic): WorkOp => ({ t: 'put', topic, windowMs: WINDOW_MS_DEFAULT })));
  const kinds = shuffled(rng, ['deleteBefore', 'deleteMatch', 'put', 'checkpoint'] as const);
  for (let round = 0; round < rounds; round++) {
    if (round === 1) {
      p.steps.push([p.append(lazy, true), p.append('orders')]);
      live.add(lazy);
      logs.push(lazy);
    }
    const step: WorkOp[] = [];
    const busy = new Set<string>();
    if (round === dropRound) {
      step.push({ t: 'drop', topic: 'users' });
      live.delete('users');
      busy.add('users');
      p.dropped('users');
    }
    if (round === recreateRound) {
      step.push({ t: 'put', topic: 'users', windowMs: WINDOW_MS_DEFAULT });
      busy.add('users');
    }
    const kind = round >= 2 ? kinds[(round - 2) % kinds.length]! : undefined;
    if (kind === 'checkpoint') step.push({ t: 'checkpoint' });
    else if (kind !== undefined) {
      const target = pick(
        rng,
        logs.filter((t) => live.has(t) && !busy.has(t)),
      );
      step.push(special(p, rng, kind, target));
      busy.add(target);
    }
    // The queue: claims in even rounds, acks of what was claimed in odd ones (from round 2).
    if (round >= 2) step.push({ t: round % 2 === 0 ? 'claim' : 'ack', topic: 'jobs', max: int(rng, 1, 3) });
    for (const topic of live) {
      if (busy.has(topic)) continue;
      for (let k = int(rng, 1, 3); k > 0; k--) step.push(p.append(topic));
    }
    p.steps.push(step);
    if (round === recreateRound) live.add('users');
    // Steps of appends to the disk and memory topics alone: acked before any fsync, each step
    // its own WAL write, with no fsync behind them until a later step's. A crash in between
    // loses acked records whose seqs must stay used, and tears the WAL anywhere in those writes
    // (with valid frames after a lost one: a quarantined tail).
    if (round % 2 === 1)
      for (let k = int(rng, 2, 3); k > 0; k--) p.steps.push(k === 2 ? [p.append('metrics'), p.append('sessions')] : [p.append('metrics')]);
  }
  p.steps.push([{ t: 'checkpoint' }, p.append('orders'), p.append('metrics'), p.append('jobs')]);
  // Compaction of the segments the deletes and acks left mostly dead: copies, then the swap at
  // the checkpoint it runs (a crash anywhere in it must lose nothing).
  p.steps.push([{ t: 'compact' }]);
  // The checkpoint after it: a packed segment moved into its topic's own file leaves the
  // snapshot's runs, and a pack nothing else lives in is unlinked (recovery meets the own file
  // with the pack still there before it, and without it after).
  for (let k = 0; k < 3; k++) p.steps.push([...(k === 1 ? [{ t: 'checkpoint' } as WorkOp] : []), ...[...live].map((t) => p.append(t))]);
  // The default seed keeps the sweep's standard sizes; others vary how often files roll over.
  const settings =
    seed === DEFAULT_SEED
      ? {}
      : {
          segmentBytes: pick(rng, [1024, 2048, 4096]),
          walFileBytes: pick(rng, [4096, 8192, 16384]),
          walPreallocate: rng.next() < 0.7,
          // 0: no packs (every topic has its own files, the layout before packs).
          packBytes: pick(rng, [0, 256, 512, 4096]),
          packFileBytes: pick(rng, [1024, 2048, 8192]),
        };
  return { seed, settings, topics, steps: p.steps };
}
