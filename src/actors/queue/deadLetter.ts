// Dead-letter moves (docs/QUEUES.md "Dead-lettering"): a job due for its (max_deliveries + 1)-th
// delivery is copied to the `dead_letter` topic's actor (a peer request, on this worker or
// another) with three `$dead_letter_*` stamps in its meta, and only once that append reached the
// dead-letter topic's ack point is the job deleted from the queue and counted. Until then it is
// in transit: neither ready nor in flight. A refused append is retried with backoff, never
// dropped, so a crash in between may dead-letter a job twice but never lose it. The claims of
// the pass that started the moves wait (a MoveBarrier) until each move got its first answer, so
// a claim's reply is never ahead of the state it caused. Pure.
import type { TopicResult } from '../../protocol/messages/rpc.js';
import { encodeJsonFrame } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { ActorCtx } from '../ctx.js';
import type { ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import type { RecordText } from '../topic/recordText.js';
import { deleteSeqs } from '../topic/retention.js';
import { SlotState } from '../topic/seqIndex.js';
import type { DeadLetterMove, MoveWaiters, QueueState } from './queueState.js';

const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 2000;

/**
 * One record of an append body for the dead-letter topic: data, tag and node as stored, meta
 * stamped (a term's `reason` adds `$dead_letter_reason`). The stamps go last, so where the job's
 * own meta already has such keys (a dead letter put back into a queue, or a spoof), the usual
 * last-key-wins JSON readers see this move's values.
 */
export function deadLetterRecord(queue: string, seq: number, deliveries: number, t: RecordText, reason?: string): Buffer[] {
  const why = reason === undefined ? '' : `,"$dead_letter_reason":${JSON.stringify(reason)}`;
  const stamps = `"$dead_letter_from":${JSON.stringify(queue)},"$dead_letter_deliveries":${deliveries},"$dead_letter_src_seq":${seq}${why}}`;
  const parts: Buffer[] = [Buffer.from('{"data":', 'latin1'), t.buf.subarray(t.dataOff, t.dataOff + t.dataLen)];
  // The stored meta is compact: `{}` holds nothing, `{"k":…}` keeps `{"k":…` before the stamps.
  if (t.metaLen > 2)
    parts.push(Buffer.from(',"meta":'), t.buf.subarray(t.metaOff, t.metaOff + t.metaLen - 1), Buffer.from(`,${stamps}`, 'utf8'));
  else parts.push(Buffer.from(`,"meta":{${stamps}`, 'utf8'));
  if (t.tagLen > 0) parts.push(Buffer.from(',"tag":'), t.buf.subarray(t.tagOff, t.tagOff + t.tagLen));
  if (t.nodeLen > 0) parts.push(Buffer.from(',"node":'), t.buf.subarray(t.nodeOff, t.nodeOff + t.nodeLen));
  parts.push(Buffer.from('}'));
  return parts;
}

/** An append body of dead-letter records (creating the topic if absent). */
export function deadLetterAppend(records: readonly Buffer[][]): Buffer {
  const parts: Buffer[] = [Buffer.from('{"records":[')];
  records.forEach((r, i) => {
    if (i > 0) parts.push(Buffer.from(','));
    parts.push(...r);
  });
  parts.push(Buffer.from('],"create":true}'));
  return Buffer.concat(parts);
}

/** The append body of one job's move. */
export function deadLetterBody(queue: string, seq: number, deliveries: number, t: RecordText): Buffer {
  return deadLetterAppend([deadLetterRecord(queue, seq, deliveries, t)]);
}

export function send(ctx: ActorCtx, deadLetterTopic: string, token: number, body: Buffer): void {
  ctx.peerRequest(token, { op: 'append', topic: deadLetterTopic, body, returnSeqs: false, headerIdemKey: undefined, stamped: true });
}

/** The job's text is in memory (the claim pass saw to it); `barrier` hears of its first answer. */
export function startDeadLetter(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, seq: number, barrier?: MoveWaiters): void {
  const text = inst.index.text(seq);
  const target = inst.config.dead_letter;
  if (text === undefined || target === null || inst.index.state(seq) !== SlotState.LIVE) {
    // Gone meanwhile (deleted, evicted) or no longer configured: nothing to move.
    q.table.inTransit.delete(seq);
    if (inst.index.state(seq) === SlotState.LIVE) q.table.makeReady(seq);
    barrier?.settle(ctx, 0);
    return;
  }
  const body = deadLetterBody(inst.name, seq, q.table.deliveries.get(seq) ?? 0, text);
  const token = a.nextTimerId();
  q.deadLetters.set(token, { seq, body, attempts: 0, retryTimerId: 0, barrier });
  send(ctx, target, token, body);
}

/** The move's first answer came (a refusal, or the job moved with DELETE frame `frameNo`). */
function settleFirst(ctx: ActorCtx, m: DeadLetterMove, frameNo: number): void {
  const b = m.barrier;
  m.barrier = undefined;
  b?.settle(ctx, frameNo);
}

/** The dead-letter topic answered: delete the job (a DELETE frame of the queue's class), or retry. */
export function onDeadLetterReply(
  a: ActorCore,
  ctx: ActorCtx,
  inst: TopicInstance,
  q: QueueState,
  token: number,
  result: TopicResult,
): boolean {
  const m = q.deadLetters.get(token);
  if (!m) return false;
  if (!result.ok) {
    settleFirst(ctx, m, 0);
    m.attempts++;
    m.retryTimerId = a.nextTimerId();
    q.retryTimers.set(m.retryTimerId, token);
    ctx.setTimer(m.retryTimerId, ctx.now + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (m.attempts - 1)));
    return true;
  }
  q.deadLetters.delete(token);
  q.table.inTransit.delete(m.seq);
  const deadLettered = ++q.table.deadLettered;
  deleteSeqs(inst, [m.seq]);
  const cls = inst.logClass;
  // The counter rides in the frame as an absolute value, so replaying it is idempotent.
  let frameNo = 0;
  if (cls !== 'ephemeral') {
    frameNo = a.nextFrame();
    ctx.submit(
      frameNo,
      encodeJsonFrame(FrameType.DELETE, inst.id, { seqs: [m.seq], reason: 'dead_letter', dead_lettered: deadLettered }),
      cls === 'fsync',
    );
  }
  settleFirst(ctx, m, frameNo);
  return true;
}

/** A retry timer fired: send again (or give up if the job or the setting is gone). */
export function onDeadLetterTimer(ctx: ActorCtx, inst: TopicInstance, q: QueueState, timerId: number): boolean {
  const token = q.retryTimers.get(timerId);
  if (token === undefined) return false;
  q.retryTimers.delete(timerId);
  const m = q.deadLetters.get(token)!;
  m.retryTimerId = 0;
  const target = inst.config.dead_letter;
  const live = inst.index.state(m.seq) === SlotState.LIVE;
  if (target === null || !live) {
    q.deadLetters.delete(token);
    q.table.inTransit.delete(m.seq);
    if (live) q.table.makeReady(m.seq);
    return true;
  }
  send(ctx, target, token, m.body);
  return true;
}
