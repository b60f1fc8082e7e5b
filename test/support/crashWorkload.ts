// Runs the crash sweep's plan (test/support/crashPlan.ts) against a CrashWorld and keeps the
// History of what was submitted and what was acked before the disk froze, per topic instance.
// A step's operations are issued together (appends to one topic then share group commits) and
// the step ends when all of them replied. Every reply is checked against the model (seqs, counts
// of deleted and acked records), so the model stays exact while the world runs.
// A reply counts as an ack only if it arrives while the disk is not frozen: after the freeze the
// abandoned world runs on inert calls and its replies are no evidence.
import assert from 'node:assert/strict';
import { resolveConfig } from '../../src/protocol/topicConfig.js';
import type { TopicRequest, TopicResult } from '../../src/protocol/messages/rpc.js';
import { replyBody, type CrashWorld } from './crashWorld.js';
import { CLAIM_NODE, WINDOW_MS_DEFAULT, type RecordInput, type TopicSpec, type WorkOp, type Workload } from './crashPlan.js';
import type { SimDisk } from './simDisk.js';

/** What one topic instance (a create, up to its delete) was sent, and which of it was acked. */
export interface Instance {
  /** Submitted records in order: records[i] is expected at seq i + 1. */
  records: RecordInput[];
  createAcked: boolean;
  /** Highest seq of an acked append (0: none). */
  maxAckedSeq: number;
  /** Acked appends: their last seq and the History tick of the ack. */
  appendAcks: { lastSeq: number; tick: number }[];
  /** Record deletes and queue acks (both delete their seqs with one DELETE frame); `tick` of the ack. */
  deletes: { seqs: number[]; acked: boolean; tick: number }[];
  /** Idempotency windows the instance was given (create and config PUTs), in order. */
  windows: { windowMs: number; acked: boolean }[];
  /** The topic delete that ended it, if one was issued. */
  drop?: { acked: boolean };
  /** Queue: jobs leased to CLAIM_NODE by acked claims, seq -> lease id. */
  leases: Map<number, string>;
  /** Queue: seqs an ack was issued for (their leases are spent). */
  ackIssued: Set<number>;
  /** Queue: claims issued, with their `max`, and whether they replied. */
  claims: { max: number; acked: boolean }[];
}

export interface TopicHistory {
  spec: TopicSpec;
  /** Instances in creation order; the last is the one operations reach. */
  instances: Instance[];
}

export interface History {
  topics: Map<string, TopicHistory>;
  /** Operations issued and replies taken as acks. */
  issued: number;
  acked: number;
  /** A logical clock: +1 at every issue and every ack, so "acked before issued" can be told. */
  tick: number;
  /**
   * The latest issue tick of an acked operation whose reply waited for a WAL fdatasync (or, for
   * a checkpoint, for segment fsyncs) begun after its submission: everything written to the WAL
   * before that issue is durable. A `disk` append or delete acked (written) before it survives
   * a power loss.
   */
  syncedTick: number;
}

function newInstance(): Instance {
  return {
    records: [],
    createAcked: false,
    maxAckedSeq: 0,
    appendAcks: [],
    deletes: [],
    windows: [],
    leases: new Map(),
    ackIssued: new Set(),
    claims: [],
  };
}

export function newHistory(workload: Workload): History {
  const topics = new Map<string, TopicHistory>();
  for (const [t, spec] of workload.topics) topics.set(t, { spec, instances: [newInstance()] });
  return { topics, issued: 0, acked: 0, tick: 0, syncedTick: 0 };
}

function configOf(topic: string, spec: TopicSpec, windowMs: number) {
  const r = resolveConfig(topic, {
    durability: spec.durability,
    idempotency_window_ms: windowMs,
    ...(spec.queue ? { type: 'queue', leases_durable: true } : {}),
  });
  assert.ok(r.ok);
  return r.config;
}

function appendBody(op: Extract<WorkOp, { t: 'append' }>, spec: TopicSpec): Uint8Array {
  const recs = op.records.map((r) => `{"data":${r.data}${r.tag !== undefined ? `,"tag":${JSON.stringify(r.tag)}` : ''}}`).join(',');
  const extra = op.create ? `,"create":true,"config":{"durability":"${spec.durability}"}` : '';
  return new TextEncoder().encode(`{"records":[${recs}]${extra}}`);
}

/** `onReply` gets the reply and the tick of its ack; `syncs`: the ack waits for an fdatasync. */
type Issued = { req: TopicRequest; syncs: boolean; onReply: (r: TopicResult, tick: number) => void } | undefined;
type TopicOp = Exclude<WorkOp, { t: 'checkpoint' } | { t: 'compact' }>;

/** The instance an operation reaches: a create after a drop starts a new one. */
function instanceFor(op: TopicOp, h: TopicHistory): Instance {
  let inst = h.instances.at(-1)!;
  if (op.t === 'put' && inst.drop) h.instances.push((inst = newInstance()));
  return inst;
}

/**
 * Issues one operation: the model is updated at once (what was submitted), and the returned
 * function, given the reply, records the ack and checks the reply against the model. Undefined:
 * nothing to do (an ack with no job held).
 */
function issue(op: TopicOp, h: TopicHistory): Issued {
  const inst = instanceFor(op, h);
  switch (op.t) {
    case 'put': {
      // A PUT identical to the config writes nothing: its 200 proves no new fdatasync.
      const changes = inst.windows.at(-1)?.windowMs !== op.windowMs;
      const w = { windowMs: op.windowMs, acked: false };
      inst.windows.push(w);
      return {
        req: { op: 'put', topic: op.topic, config: configOf(op.topic, h.spec, op.windowMs) },
        syncs: changes, // a control frame is durable before the reply in every class
        onReply: (r) => {
          replyBody(r);
          inst.createAcked = true;
          w.acked = true;
        },
      };
    }
    case 'append':
      return issueAppend(op, h.spec, inst);
    case 'deleteBefore':
    case 'deleteMatch':
      return issueRecordDelete(op, h.spec, inst);
    case 'drop': {
      const drop = { acked: false };
      inst.drop = drop;
      return {
        req: { op: 'deleteTopic', topic: op.topic, ifEmpty: false },
        syncs: true,
        onReply: (r) => {
          assert.equal(replyBody(r).deleted, true, `the model expected ${op.topic} to exist`);
          drop.acked = true;
        },
      };
    }
    case 'claim':
      return issueClaim(op, inst);
    case 'ack':
      return issueAck(op, inst);
  }
}

function issueAppend(op: Extract<WorkOp, { t: 'append' }>, spec: TopicSpec, inst: Instance): Issued {
  const first = inst.records.length + 1;
  inst.records.push(...op.records);
  const last = inst.records.length;
  // A lazy create makes the topic with the default window.
  const created = op.create ? { windowMs: WINDOW_MS_DEFAULT, acked: false } : undefined;
  if (created) inst.windows.push(created);
  return {
    req: { op: 'append', topic: op.topic, body: appendBody(op, spec), returnSeqs: true, headerIdemKey: undefined },
    syncs: spec.durability === 'fsync',
    onReply: (r, tick) => {
      const body = replyBody(r);
      assert.deepEqual([body.first_seq, body.last_seq], [first, last], `the model expected ${op.topic} seqs ${first}..${last}`);
      if (created && body.created === true) {
        inst.createAcked = true;
        created.acked = true;
      }
      inst.maxAckedSeq = Math.max(inst.maxAckedSeq, last);
      inst.appendAcks.push({ lastSeq: last, tick });
    },
  };
}

function issueRecordDelete(op: Extract<WorkOp, { t: 'deleteBefore' | 'deleteMatch' }>, spec: TopicSpec, inst: Instance): Issued {
  // Every earlier record of the topic is acked (the plan gives a delete its own step).
  const seqs: number[] = [];
  inst.records.forEach((rec, i) => {
    const seq = i + 1;
    if (op.t === 'deleteBefore' ? seq < op.beforeSeq : rec.tag?.startsWith(op.prefix)) seqs.push(seq);
  });
  const gone = new Set(inst.deletes.flatMap((d) => d.seqs));
  const deleted = seqs.filter((s) => !gone.has(s)).length;
  const del = { seqs, acked: false, tick: 0 };
  inst.deletes.push(del);
  const req: TopicRequest =
    op.t === 'deleteBefore'
      ? { op: 'deleteRecords', topic: op.topic, beforeSeq: op.beforeSeq, match: null }
      : { op: 'deleteRecords', topic: op.topic, beforeSeq: null, match: { op: 'Glob', value: op.prefix } };
  return {
    req,
    syncs: spec.durability === 'fsync',
    onReply: (r, tick) => {
      assert.equal(replyBody(r).deleted, deleted, `the model expected ${deleted} records deleted from ${op.topic}`);
      del.acked = true;
      del.tick = tick;
    },
  };
}

function issueClaim(op: Extract<WorkOp, { t: 'claim' }>, inst: Instance): Issued {
  const claim = { max: op.max, acked: false };
  inst.claims.push(claim);
  return {
    req: { op: 'claim', topic: op.topic, node: CLAIM_NODE, max: op.max, leaseMs: null },
    syncs: true, // leases_durable: the LEASES frame is fsynced before the reply
    onReply: (r) => {
      const body = replyBody(r) as { claimed: { $seq: number; lease_id: string }[] };
      assert.ok(body.claimed.length <= op.max, `a claim of at most ${op.max} leased ${body.claimed.length} jobs`);
      for (const job of body.claimed) {
        assert.ok(
          job.$seq <= inst.records.length && !inst.leases.has(job.$seq),
          `${op.topic}: claimed seq ${job.$seq}, unknown or leased already`,
        );
        inst.leases.set(job.$seq, job.lease_id);
      }
      claim.acked = true;
    },
  };
}

function issueAck(op: Extract<WorkOp, { t: 'ack' }>, inst: Instance): Issued {
  const seqs = [...inst.leases.keys()].filter((s) => !inst.ackIssued.has(s)).slice(0, op.max);
  if (seqs.length === 0) return undefined;
  for (const s of seqs) inst.ackIssued.add(s);
  const del = { seqs, acked: false, tick: 0 };
  inst.deletes.push(del);
  return {
    req: { op: 'ack', topic: op.topic, node: CLAIM_NODE, seqs, leaseIds: seqs.map((s) => inst.leases.get(s)!) },
    syncs: true, // the queue is fsync class: its acks are fsynced
    onReply: (r, tick) => {
      const body = replyBody(r) as { acked: number; skipped: number[] };
      assert.deepEqual([body.acked, body.skipped], [seqs.length, []], `${op.topic}: an ack of the held jobs ${seqs.join(',')}`);
      del.acked = true;
      del.tick = tick;
    },
  };
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
      if (op.t === 'checkpoint' || op.t === 'compact') {
        history.issued++;
        // Everything written before the checkpoint began is in segments it fsynced.
        const at = ++history.tick;
        return (op.t === 'compact' ? world.compact() : world.checkpoint()).then(() => {
          if (disk.isFrozen) return;
          history.acked++;
          history.tick++;
          history.syncedTick = Math.max(history.syncedTick, at);
        });
      }
      const issued = issue(op, history.topics.get(op.topic)!);
      if (!issued) return Promise.resolve();
      history.issued++;
      const at = ++history.tick;
      return world.request(issued.req).then((r) => {
        if (disk.isFrozen) return;
        issued.onReply(r, ++history.tick);
        history.acked++;
        if (issued.syncs) history.syncedTick = Math.max(history.syncedTick, at);
      });
    });
    const all = Promise.all(replies);
    all.catch(() => undefined); // a failure after the freeze is no evidence (and must not go unhandled)
    if ((await Promise.race([all, froze])) === FROZE) break;
  }
  return history;
}
