// Redrive (docs/QUEUES.md "Redrive"): move dead-lettered jobs back into their queue, driven by
// the queue's actor, one redrive at a time, in batches (at most 1000 records / 1 MiB each):
//   read    ask the dead-letter topic's actor (a peer request, on this worker or another) for
//           the next records stamped as this queue's, after a cursor;
//   append  append them to this queue as ONE frame (a peer request to itself, through the
//           ordinary append path, caps and ack point included) whose header names the dead-letter
//           instance and seqs they came from: copies and provenance are one checksummed unit,
//           and the seqs become "pending" (the queue holds copies; the originals are still there);
//   delete  once that append is at the queue's ack point, ask the dead-letter topic to delete the
//           originals (its class's ack point); then they stop being pending.
// A crash between append and delete leaves pending seqs, rebuilt from the snapshot and the
// replayed frames: after the restart the queue asks again for their delete (`reconcile`), and a
// later read skips records already pending, so a job is never copied twice nor lost. Deletes
// that fail are retried with backoff. Runs in the queue topic's actor; pure.
import { fail, type ErrorResult } from '../../protocol/errors.js';
import type { RedriveBatch, RedriveRequest, TopicResult } from '../../protocol/messages/rpc.js';
import { allowsName, nameRefusal } from '../../auth/allowlist.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import { counters } from './ackNackExtend.js';
import type { QueueState, RedriveOp } from './queueState.js';

/** Records one read asks for (the dead-letter side also stops at 1 MiB). */
const BATCH_RECORDS_MAX = 1000;
/** Seqs per delete request of the reconcile loop. */
const DELETE_SEQS_MAX = 10_000;
/** Pending records past which a new redrive is refused (429) until deletes catch up. */
export const PENDING_MAX = 100_000;
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 2000;

function pendingCount(q: QueueState): number {
  let n = 0;
  for (const p of q.redrivePending.values()) n += p.seqs.size;
  return n;
}

/** POST …/redrive: checks what only the queue knows, then starts (or queues) the redrive. */
export function redrive(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: RedriveRequest): void {
  const from = req.from ?? inst.config.dead_letter;
  if (from === null)
    return ctx.reply(
      reqId,
      fail('invalid_request', `queue ${inst.name} has no dead_letter topic; name one with "from"`, { field: 'from' }),
    );
  if (from === inst.name) return ctx.reply(reqId, fail('invalid_request', 'from must differ from the queue', { field: 'from' }));
  if (!allowsName(req.prefixes, from)) {
    const r = nameRefusal('topic', from, req.prefixes ?? []);
    return ctx.reply(reqId, fail('forbidden', r.message, r.detail));
  }
  if (pendingCount(q) >= PENDING_MAX) {
    return ctx.reply(
      reqId,
      fail('throttled', 'dead-letter records moved back are still waiting to be deleted', { limit: 'redrive_pending', max: PENDING_MAX }),
    );
  }
  if (q.redriveOp) return void q.redriveWaiting.push({ reqId, req });
  begin(a, ctx, inst, q, reqId, req, from);
}

function begin(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: RedriveRequest, from: string): void {
  q.redriveOp = {
    reqId,
    req,
    from,
    fromId: 0,
    cursor: 0,
    untilSeq: 0,
    moved: 0,
    skipped: [],
    token: 0,
    phase: 'read',
    appendSeqs: [],
    deleteSeqs: [],
    next: 0,
    done: false,
  };
  read(a, ctx, inst, q.redriveOp);
}

function read(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, op: RedriveOp): void {
  op.phase = 'read';
  op.token = a.nextTimerId();
  const maxRecords = Math.min(BATCH_RECORDS_MAX, op.req.max - op.moved);
  ctx.peerRequest(op.token, {
    op: 'redriveRead',
    topic: op.from,
    queue: inst.name,
    afterSeq: op.cursor,
    untilSeq: op.untilSeq,
    seqs: op.req.seqs,
    match: op.req.match,
    maxRecords,
  });
}

/** A peer answered a redrive's request or a pending delete; false if the token is neither. */
export function onRedriveReply(
  a: ActorCore,
  ctx: ActorCtx,
  inst: TopicInstance,
  q: QueueState,
  token: number,
  result: TopicResult,
): boolean {
  if (onDeleteReply(a, ctx, q, token, result)) return true;
  const op = q.redriveOp;
  if (!op || op.token !== token) return false;
  op.token = 0;
  if (!result.ok) return stop(a, ctx, inst, q, op, result);
  switch (op.phase) {
    case 'read':
      return onRead(a, ctx, inst, q, op, result.redrive!);
    case 'append':
      op.moved += op.appendSeqs.length;
      return deleteOriginals(a, ctx, op);
    case 'delete': {
      forgetPending(q, op.fromId, op.deleteSeqs);
      return advance(a, ctx, inst, q, op);
    }
  }
}

function onRead(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, op: RedriveOp, b: RedriveBatch): boolean {
  if (op.fromId === 0) {
    op.fromId = b.instanceId;
    op.untilSeq = b.untilSeq;
  } else if (op.fromId !== b.instanceId) {
    // The dead-letter topic was deleted and recreated meanwhile: what it holds now is not what
    // this redrive set out to move.
    op.done = true;
    return finish(a, ctx, inst, q, op);
  }
  op.skipped.push(...b.skipped);
  op.next = b.next;
  op.done = b.done;
  // Records already pending (copied by an earlier redrive whose delete did not get through) are
  // not copied again: only their delete is asked for.
  const pending = q.redrivePending.get(op.fromId)?.seqs;
  const records: Uint8Array[] = [];
  op.appendSeqs = [];
  op.deleteSeqs = [];
  b.seqs.forEach((s, i) => {
    op.deleteSeqs.push(s);
    if (pending?.has(s)) return;
    op.appendSeqs.push(s);
    records.push(b.records[i]!);
  });
  if (records.length > 0) {
    op.phase = 'append';
    op.token = a.nextTimerId();
    const body = Buffer.concat([Buffer.from('{"records":['), ...joinWithCommas(records), Buffer.from('],"create":false}')]);
    ctx.peerRequest(op.token, {
      op: 'append',
      topic: inst.name,
      body,
      returnSeqs: false,
      headerIdemKey: undefined,
      redrive: { queueId: inst.id, fromId: op.fromId, from: op.from, fromSeqs: op.appendSeqs },
    });
    return true;
  }
  if (op.deleteSeqs.length > 0) return deleteOriginals(a, ctx, op);
  return advance(a, ctx, inst, q, op);
}

function joinWithCommas(parts: readonly Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  const comma = Buffer.from(',');
  parts.forEach((p, i) => {
    if (i > 0) out.push(comma);
    out.push(p);
  });
  return out;
}

function deleteOriginals(a: ActorCore, ctx: ActorCtx, op: RedriveOp): boolean {
  op.phase = 'delete';
  op.token = a.nextTimerId();
  ctx.peerRequest(op.token, { op: 'redriveDelete', topic: op.from, instanceId: op.fromId, seqs: op.deleteSeqs, reissue: false });
  return true;
}

function advance(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, op: RedriveOp): boolean {
  op.cursor = op.next;
  if (op.done || op.moved >= op.req.max) return finish(a, ctx, inst, q, op);
  read(a, ctx, inst, op);
  return true;
}

/**
 * A refusal (of the read, the append or the delete): the error when nothing moved yet, else what
 * moved, with `more` (a later call goes on, or gets the error). A refused delete leaves its
 * records pending: the reconcile loop asks again.
 */
function stop(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, op: RedriveOp, err: ErrorResult): boolean {
  op.done = false;
  if (op.moved > 0) return finish(a, ctx, inst, q, op);
  q.redriveOp = undefined;
  ctx.reply(op.reqId, err);
  next(a, ctx, inst, q);
  return true;
}

function finish(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, op: RedriveOp): boolean {
  q.redriveOp = undefined;
  q.table.sweep(ctx.now); // the counts judge expiry first, as every queue reply's do
  const skipped = [...new Set(op.skipped)].sort((x, y) => x - y);
  const body = `{"topic":${JSON.stringify(inst.name)},"from":${JSON.stringify(op.from)},"redriven":${op.moved},"skipped":[${skipped.join(',')}],"more":${!op.done},${counters(inst, q)}`;
  ctx.reply(op.reqId, okJson(200, body));
  next(a, ctx, inst, q);
  return true;
}

/** The next waiting redrive starts; with none, pending deletes that failed are tried again. */
function next(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState): void {
  const w = q.redriveWaiting.shift();
  if (w) return redrive(a, ctx, inst, q, w.reqId, w.req);
  reconcile(a, ctx, q, false);
}

// ---- pending records ---------------------------------------------------------------------------

function forgetPending(q: QueueState, fromId: number, seqs: readonly number[]): void {
  const p = q.redrivePending.get(fromId);
  if (!p) return;
  for (const s of seqs) p.seqs.delete(s);
  if (p.seqs.size === 0) q.redrivePending.delete(fromId);
}

/**
 * Asks the dead-letter topics to delete every pending record no delete is in flight for
 * (`reissue`: after a restart). While a redrive runs it owns its batch's delete.
 */
export function reconcile(a: ActorCore, ctx: ActorCtx, q: QueueState, reissue: boolean): void {
  if (q.redriveOp || q.reconcileTimerId !== 0) return;
  const inFlight = new Set<string>();
  for (const d of q.redriveDeletes.values()) for (const s of d.seqs) inFlight.add(`${d.fromId}:${s}`);
  for (const [fromId, p] of q.redrivePending) {
    const seqs = [...p.seqs].filter((s) => !inFlight.has(`${fromId}:${s}`)).sort((x, y) => x - y);
    for (let i = 0; i < seqs.length; i += DELETE_SEQS_MAX) {
      const chunk = seqs.slice(i, i + DELETE_SEQS_MAX);
      const token = a.nextTimerId();
      q.redriveDeletes.set(token, { fromId, seqs: chunk });
      ctx.peerRequest(token, { op: 'redriveDelete', topic: p.topic, instanceId: fromId, seqs: chunk, reissue });
    }
  }
}

function onDeleteReply(a: ActorCore, ctx: ActorCtx, q: QueueState, token: number, result: TopicResult): boolean {
  const d = q.redriveDeletes.get(token);
  if (!d) return false;
  q.redriveDeletes.delete(token);
  if (result.ok) {
    q.reconcileFailures = 0;
    forgetPending(q, d.fromId, d.seqs);
    return true;
  }
  // Refused (a full disk, WAL pressure): asked again after a backoff, never dropped.
  if (q.reconcileTimerId === 0) {
    q.reconcileTimerId = a.nextTimerId();
    ctx.setTimer(q.reconcileTimerId, ctx.now + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** q.reconcileFailures++));
  }
  return true;
}

/** The reconcile retry timer; false if not ours. */
export function onReconcileTimer(a: ActorCore, ctx: ActorCtx, q: QueueState, timerId: number): boolean {
  if (timerId === 0 || timerId !== q.reconcileTimerId) return false;
  q.reconcileTimerId = 0;
  reconcile(a, ctx, q, false);
  return true;
}

/** The queue was deleted: its redrives answer 404; what it held copies of stays dead-lettered. */
export function dropRedrives(ctx: ActorCtx, q: QueueState, topic: string): void {
  const gone = fail('topic_not_found', `topic ${topic} was deleted`, { topic });
  if (q.redriveOp) ctx.reply(q.redriveOp.reqId, gone);
  for (const w of q.redriveWaiting) ctx.reply(w.reqId, gone);
  q.redriveOp = undefined;
  q.redriveWaiting = [];
  if (q.reconcileTimerId !== 0) ctx.cancelTimer(q.reconcileTimerId);
  q.reconcileTimerId = 0;
  q.redrivePending.clear();
  q.redriveDeletes.clear();
}
