// Term: fail jobs for good (docs/QUEUES.md "Term"), as nats.js `term` or BullMQ's
// UnrecoverableError. The seqs the request may act on (fenced exactly as an ack: leased to
// `node`, `lease_ids` matching) go to the dead-letter topic at once, whatever their delivery
// count: one append of all of them (atomic) to the dead-letter topic's actor, with the three
// `$dead_letter_*` stamps (and `$dead_letter_reason`), then one DELETE frame of the queue's class
// naming them, as a move of a claim pass does. The reply waits for both ack points, so an
// answered term survives a crash as the queue's class and the dead-letter topic's class promise.
// While the append is out the jobs are in transit (neither ready nor in flight); a refusal
// gives the holder its leases back (unless they expired or their stream closed: then the jobs
// are ready) and answers the refusal, with nothing applied. With no dead-letter topic the jobs
// are released, as the spec treats a job out of retries there: redelivered, never lost.
// Runs in the queue topic's actor; pure, effects go through the ActorCtx.
import { fail, walBehind } from '../../protocol/errors.js';
import type { TermRequest, TopicResult } from '../../protocol/messages/rpc.js';
import { encodeJsonFrame } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { LeaseEvent } from '../../format/leasesFrame.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, writeRefusal, type ActorCore } from '../topic/actorCore.js';
import { coldRanges, installCold, readBackSet } from '../topic/coldRead.js';
import type { TopicInstance } from '../topic/instance.js';
import { deleteSeqs } from '../topic/retention.js';
import { SlotState } from '../topic/seqIndex.js';
import { counters, held } from './ackNackExtend.js';
import { deadLetterAppend, deadLetterRecord, send } from './deadLetter.js';
import type { Lease } from './leaseTable.js';
import { logLeases, releasedEvent } from './leasesLog.js';
import type { QueueState, TermOp } from './queueState.js';
import { refill } from './workConns.js';

/** What one term may copy at once (payload bytes): one append frame, well below the frame cap. */
export const TERM_BYTES_MAX = 16 * 1024 * 1024;

function replyBody(inst: TopicInstance, q: QueueState, terminated: number, released: number, skipped: readonly number[]): string {
  const dl = inst.config.dead_letter === null ? 'null' : JSON.stringify(inst.config.dead_letter);
  return `{"topic":${JSON.stringify(inst.name)},"terminated":${terminated},"released":${released},"skipped":[${skipped.join(',')}],"dead_letter":${dl},${counters(inst, q)}`;
}

export function term(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: TermRequest): void {
  // A term writes (a DELETE frame, or a LEASES frame): refused with nothing applied, as an ack.
  if (inst.logClass !== 'ephemeral') {
    const refused = writeRefusal(ctx) ?? (ctx.walCreditExhausted() ? walBehind() : undefined);
    if (refused) return ctx.reply(reqId, refused);
  }
  q.table.sweep(ctx.now);
  const seqs: number[] = [];
  const leases: Lease[] = [];
  const skipped: number[] = [];
  let bytes = 0;
  req.seqs.forEach((seq, i) => {
    const lease = held(q, req, i);
    // A seq named twice is acted on once, as in ack.
    if (!lease || seqs.includes(seq)) return void skipped.push(seq);
    seqs.push(seq);
    leases.push(lease);
    bytes += inst.index.bytes(seq);
  });
  if (bytes > TERM_BYTES_MAX) {
    return ctx.reply(
      reqId,
      fail('batch_too_large', `these jobs hold ${bytes} bytes; one term moves at most ${TERM_BYTES_MAX}`, { bytes, max: TERM_BYTES_MAX }),
    );
  }
  if (inst.config.dead_letter === null) return release(a, ctx, inst, q, reqId, seqs, skipped);
  if (seqs.length === 0) return ctx.reply(reqId, okJson(200, replyBody(inst, q, 0, 0, skipped)));
  for (const seq of seqs) {
    q.table.unlease(seq);
    q.table.inTransit.add(seq);
  }
  refill(a, ctx, inst, q); // a `/work` stream whose job is on its way has room for the next
  const op: TermOp = { reqId, seqs, leases, skipped, reason: req.reason ?? undefined };
  const cold = seqs.filter((s) => !inst.index.hasText(s));
  if (cold.length === 0) return sendTerm(a, ctx, inst, q, op);
  parkForTexts(a, ctx, inst, q, op, cold);
}

/**
 * Parks `op` until the texts of `cold`, and of every seq it read back before, are in memory: a
 * small cache may evict one job's text while another's is read, and a seq joins the set once.
 */
function parkForTexts(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, op: TermOp, cold: number[]): void {
  op.readBack = readBackSet(op.readBack, cold);
  const token = a.nextTimerId();
  q.terms.set(token, op);
  ctx.readCold(token, inst.id, coldRanges(inst, op.readBack));
}

/** No dead-letter topic: the held jobs are ready again at once (`released` events). */
function release(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, seqs: number[], skipped: number[]): void {
  const events: LeaseEvent[] = [];
  for (const seq of seqs) {
    const lease = q.table.unlease(seq)!;
    q.table.makeReady(seq);
    events.push(releasedEvent(seq, lease, 0));
  }
  const frameNo = logLeases(a, ctx, inst, events);
  const body = okJson(200, replyBody(inst, q, 0, seqs.length, skipped));
  a.gate(ctx, inst, { reqId, needDurableFrame: inst.config.leases_durable ? frameNo : 0 }, (c) => c.reply(reqId, body));
  refill(a, ctx, inst, q);
}

function sendTerm(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, op: TermOp): void {
  const records = op.seqs.map((seq) =>
    deadLetterRecord(inst.name, seq, q.table.deliveries.get(seq) ?? 0, inst.index.text(seq)!, op.reason),
  );
  const token = a.nextTimerId();
  q.terms.set(token, op);
  send(ctx, inst.config.dead_letter!, token, deadLetterAppend(records));
}

/** Segment bytes for a term that met cold jobs; false if the token is not a term's. */
export function onTermCold(
  a: ActorCore,
  ctx: ActorCtx,
  inst: TopicInstance,
  q: QueueState,
  token: number,
  bufs: Buffer[] | string,
): boolean {
  const op = q.terms.get(token);
  if (!op) return false;
  q.terms.delete(token);
  let failure = installCold(ctx, inst, bufs);
  // A job deleted meanwhile left transit: it is not copied.
  const seqs: number[] = [];
  const leases: Lease[] = [];
  op.seqs.forEach((s, i) => {
    if (!q.table.inTransit.has(s)) return;
    seqs.push(s);
    leases.push(op.leases[i]!);
  });
  op.seqs = seqs;
  op.leases = leases;
  const lost = failure === undefined ? seqs.filter((s) => !inst.index.hasText(s)) : [];
  if (lost.some((s) => !op.readBack!.includes(s))) {
    parkForTexts(a, ctx, inst, q, op, lost);
    return true;
  }
  if (lost.length > 0) failure = `job ${lost[0]} could not be read back`;
  if (failure !== undefined || inst.config.dead_letter === null) {
    giveBack(a, ctx, inst, q, op);
    ctx.reply(op.reqId, fail('internal', `segment read failed: ${failure ?? 'the queue has no dead_letter topic any more'}`));
    return true;
  }
  if (op.seqs.length === 0) {
    ctx.reply(op.reqId, okJson(200, replyBody(inst, q, 0, 0, op.skipped)));
    return true;
  }
  sendTerm(a, ctx, inst, q, op);
  return true;
}

/** The dead-letter topic answered a term's append; false if the token is not a term's. */
export function onTermReply(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, token: number, result: TopicResult): boolean {
  const op = q.terms.get(token);
  if (!op) return false;
  q.terms.delete(token);
  if (!result.ok) {
    giveBack(a, ctx, inst, q, op);
    ctx.reply(op.reqId, result);
    return true;
  }
  // Every job of the op is in the dead-letter topic now; those still live leave the queue.
  const live: number[] = [];
  for (const seq of op.seqs) {
    if (q.table.inTransit.delete(seq) && inst.index.state(seq) === SlotState.LIVE) live.push(seq);
  }
  deleteSeqs(inst, live);
  q.table.deadLettered += op.seqs.length;
  const cls = inst.logClass;
  let frameNo = 0;
  if (cls !== 'ephemeral') {
    frameNo = a.nextFrame();
    // The counter rides as an absolute value, so replaying the frame is idempotent.
    ctx.submit(
      frameNo,
      encodeJsonFrame(FrameType.DELETE, inst.id, { seqs: live, reason: 'dead_letter', dead_lettered: q.table.deadLettered }),
      cls === 'fsync',
    );
  }
  const body = okJson(200, replyBody(inst, q, op.seqs.length, 0, op.skipped));
  a.gate(
    ctx,
    inst,
    { reqId: op.reqId, needDurableFrame: cls === 'fsync' ? frameNo : 0, needWrittenFrame: cls === 'disk' ? frameNo : 0 },
    (c) => c.reply(op.reqId, body, frameNo || undefined),
  );
  return true;
}

/**
 * The move did not happen: each job still in transit goes back to its holder (its lease was
 * never logged as released), or is ready when that lease expired or its stream closed meanwhile.
 */
function giveBack(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, op: TermOp): void {
  op.seqs.forEach((seq, i) => {
    if (!q.table.inTransit.delete(seq)) return; // left the log meanwhile
    const lease = op.leases[i]!;
    if (lease.deadlineMs >= ctx.now && (lease.connId === 0 || q.conns.has(lease.connId))) q.table.lease(seq, lease);
    else q.table.makeReady(seq);
  });
  refill(a, ctx, inst, q);
}

/** The queue was deleted: terms under way answer 404. */
export function dropTerms(ctx: ActorCtx, q: QueueState, topic: string): void {
  for (const op of q.terms.values()) ctx.reply(op.reqId, fail('topic_not_found', `topic ${topic} was deleted`, { topic }));
  q.terms.clear();
}
