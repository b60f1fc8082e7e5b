// Entry points of the queue side of a topic actor (docs/ARCHITECTURE.md "Queues"): the queue requests (claim, ack,
// nack, extend, `/work` open/close/flow) and the hooks the topic side calls (jobs became visible,
// a timer fired, segment bytes arrived, a peer answered, the instance is deleted, a sweep before
// stats). Every route needs a live queue instance: absent is 404 topic_not_found, a log topic is
// 409 not_a_queue; queue routes never create a topic. Pure; effects go through the ActorCtx.
import { assertNever, fail } from '../../protocol/errors.js';
import type { QueueRequest, QueueStats, TopicResult } from '../../protocol/messages/rpc.js';
import type { ActorCtx } from '../ctx.js';
import { writeRefusal, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import { SlotState } from '../topic/seqIndex.js';
import { ack, extend, nack } from './ackNackExtend.js';
import { listLeases } from './leaseList.js';
import { dropTerms, onTermCold, onTermReply, term } from './term.js';
import { dropRedrives, onReconcileTimer, onRedriveReply, reconcile, redrive } from './redrive.js';
import { onPassCold, runPass } from './claimPass.js';
import { onDeadLetterReply, onDeadLetterTimer } from './deadLetter.js';
import type { PollClaimer, QueueState } from './queueState.js';
import { cancelClaim, failWaiting, onWaitTimer, releaseWaiting } from './waitingClaims.js';
import { endConns, joinCohort, onWake, openConn, refill, serveCohort, workClose, workFlow } from './workConns.js';

export function queueStep(a: ActorCore, ctx: ActorCtx, reqId: number, req: QueueRequest): void {
  const inst = a.current;
  // Closing or pausing a stream whose queue is gone is not an error: there is nothing left to do.
  if (req.op === 'workClose') return workClose(a, ctx, inst, reqId, req);
  if (req.op === 'workFlow') return workFlow(a, ctx, inst, reqId, req);
  if (!inst) return ctx.reply(reqId, fail('topic_not_found', `topic ${a.name} does not exist`, { topic: a.name }));
  const q = inst.queue;
  if (!q) return ctx.reply(reqId, fail('not_a_queue', `topic ${a.name} is not a queue`, { topic: a.name }));
  a.expire(ctx, inst);
  // A durable leases log cannot log while storage is not OK; other queues go on without
  // logging their leases (their loss is self-healing: the jobs become claimable again).
  if (req.op === 'leases') return listLeases(ctx, inst, q, reqId, req); // read-only
  if (inst.config.leases_durable && req.op !== 'ack' && req.op !== 'term' && req.op !== 'redrive') {
    const refused = writeRefusal(ctx);
    if (refused) return ctx.reply(reqId, refused);
  }
  switch (req.op) {
    case 'claim': {
      const waitUntilMs = (req.waitMs ?? 0) > 0 ? ctx.now + req.waitMs! : 0;
      const c: PollClaimer = {
        k: 'poll',
        reqId,
        node: req.node,
        max: req.max,
        leaseMs: req.leaseMs ?? inst.config.lease_ms,
        waitUntilMs,
        timerId: 0,
        waitId: req.waitId ?? 0,
      };
      if (inst.config.claim_jitter_ms > 0 && !req.now) return joinCohort(a, ctx, inst, q, c);
      runPass(a, ctx, inst, q, [c]);
      return refill(a, ctx, inst, q); // the pass's sweep may have given streams room
    }
    case 'ack':
      return ack(a, ctx, inst, q, reqId, req);
    case 'nack':
      return nack(a, ctx, inst, q, reqId, req);
    case 'extend':
      return extend(a, ctx, inst, q, reqId, req);
    case 'term':
      return term(a, ctx, inst, q, reqId, req);
    case 'redrive':
      return redrive(a, ctx, inst, q, reqId, req);
    case 'workOpen':
      return openConn(a, ctx, inst, q, reqId, req);
    default:
      assertNever(req);
  }
}

/** A claim's client left (`cancelWait`): the claim stops waiting and takes no job. */
export function cancelClaimWait(ctx: ActorCtx, inst: TopicInstance | undefined, waitId: number): void {
  if (inst?.queue) cancelClaim(ctx, inst, inst.queue, waitId);
}

/** Jobs became visible, or leased jobs left the log (a record delete): streams with room refill. */
export function refillStreams(a: ActorCore, ctx: ActorCtx, inst: TopicInstance): void {
  if (inst.queue) refill(a, ctx, inst, inst.queue);
}

/** A timer of the queue side (jitter window, `/work` wake-up, dead-letter retry); false if not ours. */
export function onQueueTimer(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined, timerId: number): boolean {
  const q = inst?.queue;
  if (!inst || !q) return false;
  if (timerId === q.cohortTimerId) {
    serveCohort(a, ctx, inst, q);
    return true;
  }
  if (timerId === q.wakeTimerId) {
    onWake(a, ctx, inst, q);
    return true;
  }
  if (onReconcileTimer(a, ctx, q, timerId)) return true;
  const waited = onWaitTimer(q, timerId);
  if (waited === 'cohort') return true; // answered when the cohort is served
  if (waited) {
    runPass(a, ctx, inst, q, [waited]); // the last pass of its wait: it answers
    return true;
  }
  return onDeadLetterTimer(ctx, inst, q, timerId);
}

/** Segment bytes for a claim pass that met cold jobs; false if the token is not ours. */
export function onQueueCold(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined, token: number, bufs: Buffer[] | string): boolean {
  const q = inst?.queue;
  if (!inst || !q) return false;
  if (onTermCold(a, ctx, inst, q, token, bufs)) return true;
  if (!q.parkedPasses.has(token)) return false;
  onPassCold(a, ctx, inst, q, token, bufs);
  return true;
}

/** Another actor answered a peer request (a dead-letter append, a term's append). */
export function onPeerReply(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined, token: number, result: TopicResult): void {
  const q = inst?.queue;
  if (!inst || !q) return;
  if (onTermReply(a, ctx, inst, q, token, result) || onRedriveReply(a, ctx, inst, q, token, result)) return;
  onDeadLetterReply(a, ctx, inst, q, token, result);
}

/**
 * Recovery is over: dead-letter records this queue holds copies of but may not have seen deleted
 * (a crash between a redrive's append and its delete) are asked to be deleted again.
 */
export function afterQueueRecovery(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined): void {
  if (inst?.queue && inst.queue.redrivePending.size > 0) reconcile(a, ctx, inst.queue, true);
}

/** Shutdown: blocking claims answer now with what they have (no job). */
export function releaseQueueWaits(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined): void {
  const q = inst?.queue;
  if (!inst || !q) return;
  // The jitter window's cohort is served now, not when its timer fires.
  if (q.cohortTimerId !== 0) {
    ctx.cancelTimer(q.cohortTimerId);
    serveCohort(a, ctx, inst, q);
  }
  releaseWaiting(ctx, inst, q);
}

/** Lazy expiry before a state read or stats; streams get room for what expired. */
export function sweepQueue(a: ActorCore, ctx: ActorCtx, inst: TopicInstance): void {
  const q = inst.queue;
  if (!q) return;
  if (q.table.sweep(ctx.now).length > 0) refill(a, ctx, inst, q);
}

/**
 * The instance was deleted: claims waiting for a jitter window or for cold texts answer 404,
 * and the returned function ends the `/work` streams (called when the delete is durable, docs/API.md "Topic lifecycle").
 */
export function dropQueue(a: ActorCore, ctx: ActorCtx, inst: TopicInstance): ((c: ActorCtx) => void) | undefined {
  const q = inst.queue;
  if (!q) return undefined;
  const gone = () => fail('topic_not_found', `topic ${a.name} was deleted`, { topic: a.name });
  for (const c of q.cohort) if (c.k === 'poll') ctx.reply(c.reqId, gone());
  for (const p of q.parkedPasses.values()) for (const c of p.claimers) if (c.k === 'poll') ctx.reply(c.reqId, gone());
  for (const m of q.deadLetters.values()) m.barrier?.abort(ctx, a.name);
  failWaiting(ctx, q, gone());
  dropTerms(ctx, q, a.name);
  dropRedrives(ctx, q, a.name);
  q.cohort = [];
  q.parkedPasses.clear();
  for (const id of [q.cohortTimerId, q.wakeTimerId, ...q.retryTimers.keys(), ...q.waitTimers.keys()]) if (id !== 0) ctx.cancelTimer(id);
  q.retryTimers.clear();
  q.waitTimers.clear();
  return (c) => endConns(c, inst, q);
}

/** Queue counters for metrics (after a sweep step); the oldest ready job is found cheaply or not at all. */
export function queueStats(inst: TopicInstance, q: QueueState, count: number, now: number): QueueStats {
  const oldest = oldestReadySeq(inst, q);
  return {
    ready: q.ready(count),
    in_flight: q.inFlight,
    dead_lettered: q.table.deadLettered,
    oldest_ready_age_ms: oldest === undefined ? null : Math.max(0, now - inst.index.ts(oldest)),
  };
}

/** Slots past the claim cursor looked at for the oldest fresh job (a bound for metrics). */
const FRESH_SCAN_MAX = 1024;

function oldestReadySeq(inst: TopicInstance, q: QueueState): number | undefined {
  const t = q.table;
  const live = (s: number) => s <= inst.head && inst.index.state(s) === SlotState.LIVE;
  let best = t.minReclaimable(live);
  const from = Math.max(t.claimCursor, inst.earliest() - 1) + 1;
  for (let s = from; s <= Math.min(inst.head, from + FRESH_SCAN_MAX); s++) {
    if (best !== undefined && s >= best) break;
    if (live(s) && t.isClaimable(s)) {
      best = s;
      break;
    }
  }
  return best;
}
