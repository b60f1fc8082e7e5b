// `/work` connections of a queue (docs/API.md "Queues", "Work frames"; docs/ARCHITECTURE.md "Queues"): the actor keeps each connection
// topped up to `max` leased jobs, pushing rendered `job` frames to main; it refills whenever jobs
// or room may have appeared (new visible jobs, acks, nacks, releases, expiry), serving blocking
// claims (waitingClaims.ts) in the same pass, and, when a connection or a claim waits for a
// lease to expire or a delay to elapse, arms one wake-up timer for the earliest such moment
// (never one timer per job). A paused connection (its socket backed up)
// gets no new leases; a closed one gives every lease back at once. Pure.
import type { WorkCloseRequest, WorkFlowRequest, WorkOpenRequest } from '../../protocol/messages/rpc.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import type { LeaseEvent } from '../../format/leasesFrame.js';
import { runPass, wantOf } from './claimPass.js';
import { logLeases, releasedEvent } from './leasesLog.js';
import type { Claimer, QueueState, WorkConn } from './queueState.js';
import { takeWaiting } from './waitingClaims.js';

/** Adds a claimer to the jitter cohort; the first one arms the window's timer. */
export function joinCohort(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, c: Claimer): void {
  if (c.k === 'work' && q.cohort.some((x) => x.k === 'work' && x.conn === c.conn)) return;
  q.cohort.push(c);
  if (q.cohortTimerId === 0) {
    q.cohortTimerId = a.nextTimerId();
    ctx.setTimer(q.cohortTimerId, ctx.now + inst.config.claim_jitter_ms);
  }
}

/** The jitter window closed: the whole cohort is served in one pass. */
export function serveCohort(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState): void {
  const claimers = q.cohort.filter((c) => c.k === 'poll' || q.conns.get(c.conn.connId) === c.conn);
  q.cohort = [];
  q.cohortTimerId = 0;
  runPass(a, ctx, inst, q, claimers);
  armWake(a, ctx, q);
}

/** Tops up every connection that has room and serves waiting claims: jobs or room may have appeared. */
export function refill(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState): void {
  if (q.conns.size === 0 && q.waiting.length === 0) return;
  q.table.sweep(ctx.now);
  // Waiting claims first (they asked before the streams' room appeared); a pass that gives one
  // nothing parks it again, with its timer as it was.
  const needy: Claimer[] = takeWaiting(q);
  for (const conn of q.conns.values()) {
    const c: Claimer = { k: 'work', conn };
    if (wantOf(q, c) > 0) needy.push(c);
  }
  if (needy.length === 0) return armWake(a, ctx, q);
  if (inst.config.claim_jitter_ms > 0) {
    for (const c of needy) joinCohort(a, ctx, inst, q, c);
    return;
  }
  runPass(a, ctx, inst, q, needy);
  armWake(a, ctx, q);
}

/**
 * While streams are open or claims wait, wake up when the next lease expires or delay elapses: a
 * job may become ready for a stream with room or a waiting claim, or a stream's own expired
 * lease may give it room (expiry is otherwise noticed only by the next request).
 */
function armWake(a: ActorCore, ctx: ActorCtx, q: QueueState): void {
  if (q.conns.size === 0 && q.waiting.length === 0) return;
  const due = q.table.nextDueMs();
  if (due === undefined || (q.wakeTimerId !== 0 && q.wakeAtMs <= due)) return;
  if (q.wakeTimerId !== 0) ctx.cancelTimer(q.wakeTimerId);
  q.wakeTimerId = a.nextTimerId();
  q.wakeAtMs = due;
  ctx.setTimer(q.wakeTimerId, due);
}

export function onWake(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState): void {
  q.wakeTimerId = 0;
  refill(a, ctx, inst, q);
}

export function openConn(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: WorkOpenRequest): void {
  const conn: WorkConn = { connId: req.connId, node: req.node, max: req.max, leaseMs: req.leaseMs ?? inst.config.lease_ms, paused: false };
  q.conns.set(conn.connId, conn);
  // Main opens the stream on this reply; jobs pushed meanwhile wait for it there.
  ctx.reply(reqId, okJson(200, `{"topic":${JSON.stringify(inst.name)}`));
  refill(a, ctx, inst, q);
}

/** Every lease delivered on the connection becomes ready at once (`released` events). */
export function closeConn(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, connId: number): void {
  q.conns.delete(connId);
  q.cohort = q.cohort.filter((c) => c.k === 'poll' || c.conn.connId !== connId);
  const events: LeaseEvent[] = [];
  for (const seq of q.table.connLeases(connId)) {
    const lease = q.table.unlease(seq)!;
    q.table.makeReady(seq);
    events.push(releasedEvent(seq, lease, 0));
  }
  q.table.dropConn(connId);
  logLeases(a, ctx, inst, events);
  refill(a, ctx, inst, q);
}

export function workClose(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined, reqId: number, req: WorkCloseRequest): void {
  const q = inst?.queue;
  if (inst && q && q.conns.has(req.connId)) closeConn(a, ctx, inst, q, req.connId);
  ctx.reply(reqId, okJson(200, '{'));
}

export function workFlow(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined, reqId: number, req: WorkFlowRequest): void {
  const q = inst?.queue;
  const conn = q?.conns.get(req.connId);
  if (inst && q && conn && conn.paused !== req.paused) {
    conn.paused = req.paused;
    if (!req.paused) refill(a, ctx, inst, q);
  }
  ctx.reply(reqId, okJson(200, '{'));
}

/** The queue instance is gone (deleted): every stream ends with the terminal 409 frame (docs/API.md "Error frames"). */
export function endConns(ctx: ActorCtx, inst: TopicInstance, q: QueueState): void {
  for (const conn of q.conns.values()) {
    ctx.work({
      k: 'end',
      connId: conn.connId,
      topic: inst.name,
      code: 409,
      error: 'not_a_queue',
      message: `${inst.name} was deleted or is no longer a queue`,
    });
  }
  q.conns.clear();
}
