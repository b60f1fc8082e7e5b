// Blocking claims (docs/QUEUES.md "Requests", `wait_ms`): a claim that a pass gave no job waits,
// like a diff long-poll, until jobs become claimable or its wait ends. Waiting claims are served
// by the same refills that top up `/work` streams (new jobs visible, nacks, releases, lease
// expiry and nack delays through the one wake timer), first come first served, and answer as
// soon as a pass gives them at least one job; at the end of the wait a last pass answers, with
// whatever it finds. One timer per waiting claim (its deadline), never one per job.
// Runs in the queue topic's actor; pure, effects go through the ActorCtx.
import { fail, type ErrorResult } from '../../protocol/errors.js';
import type { ActorCtx } from '../ctx.js';
import type { ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import type { PollClaimer, QueueState } from './queueState.js';
import { renderClaimReply } from './render.js';

/** A claim that got nothing and may still wait: parked, its timer armed once. */
export function park(a: ActorCore, ctx: ActorCtx, q: QueueState, c: PollClaimer): void {
  if (c.timerId === 0) {
    c.timerId = a.nextTimerId();
    q.waitTimers.set(c.timerId, c);
    ctx.setTimer(c.timerId, c.waitUntilMs);
  }
  q.waiting.push(c);
}

/** The claim is answered (or refused): its wait timer goes. */
export function answered(ctx: ActorCtx, q: QueueState, c: PollClaimer): void {
  if (c.timerId === 0) return;
  ctx.cancelTimer(c.timerId);
  q.waitTimers.delete(c.timerId);
  c.timerId = 0;
}

/** Takes the waiting claims (for a pass or the jitter cohort). */
export function takeWaiting(q: QueueState): PollClaimer[] {
  const w = q.waiting;
  q.waiting = [];
  return w;
}

/**
 * A wait timer fired: the claim's wait is over. A parked claim is handed back for a last pass
 * (the caller runs it); one in the jitter cohort answers when the cohort is served.
 */
export function onWaitTimer(q: QueueState, timerId: number): PollClaimer | 'cohort' | undefined {
  const c = q.waitTimers.get(timerId);
  if (!c) return undefined;
  q.waitTimers.delete(timerId);
  c.timerId = 0;
  c.waitUntilMs = 0;
  const i = q.waiting.indexOf(c);
  if (i < 0) return 'cohort';
  q.waiting.splice(i, 1);
  return c;
}

/**
 * The client of a claim left (main's `cancelWait`, docs/QUEUES.md "Requests"): a claim still
 * waiting, parked or in the jitter cohort, leaves with no job and answers with none (to nobody),
 * so no job is leased to it. A claim answered already is not found, and nothing happens.
 */
export function cancelClaim(ctx: ActorCtx, inst: TopicInstance, q: QueueState, waitId: number): void {
  const i = q.waiting.findIndex((c) => c.waitId === waitId);
  const j = i < 0 ? q.cohort.findIndex((c) => c.k === 'poll' && c.waitId === waitId) : -1;
  if (i < 0 && j < 0) return;
  const c = (i >= 0 ? q.waiting.splice(i, 1)[0] : q.cohort.splice(j, 1)[0]) as PollClaimer;
  answered(ctx, q, c);
  ctx.reply(c.reqId, { ok: true, status: 200, json: renderClaimReply(inst, [], q.ready(inst.count)), perf: {} });
}

/** Shutdown: every waiting claim answers now, with no job. */
export function releaseWaiting(ctx: ActorCtx, inst: TopicInstance, q: QueueState): void {
  const ready = q.ready(inst.count);
  for (const c of takeWaiting(q)) {
    answered(ctx, q, c);
    ctx.reply(c.reqId, { ok: true, status: 200, json: renderClaimReply(inst, [], ready), perf: {} });
  }
}

/** The queue is gone (deleted) or refused: every waiting claim gets `result`. */
export function failWaiting(ctx: ActorCtx, q: QueueState, result: ErrorResult): void {
  for (const c of takeWaiting(q)) {
    answered(ctx, q, c);
    ctx.reply(c.reqId, result);
  }
}

export function deletedResult(topic: string): ErrorResult {
  return fail('topic_not_found', `topic ${topic} was deleted`, { topic });
}
