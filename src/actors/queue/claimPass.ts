// One claim pass (docs/ARCHITECTURE.md "Queues"): for one claimer or a whole jitter cohort, in one step.
// 1. lazy expiry (sweep); 2. the available jobs: the reclaim freelist first, then fresh jobs by
// the claim cursor; a job due for its (max_deliveries + 1)-th delivery goes to the dead-letter
// topic instead; 3. the jobs are dealt round-robin in proportion to each claimer's want;
// 4. each gets a new lease, one more delivery, and one LEASES frame logs the pass; 5. replies
// and `/work` pushes go out (after that frame is durable when `leases_durable`), once the jobs'
// texts are in memory (cold ones are read back from segments first).
// Pure; effects go through the ActorCtx.
import { fail } from '../../protocol/errors.js';
import type { ActorCtx } from '../ctx.js';
import { writeRefusal, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import { SlotState } from '../topic/seqIndex.js';
import { coldRanges, installCold, readBackSet } from '../topic/coldRead.js';
import type { LeaseEvent } from '../../format/leasesFrame.js';
import { leaseIdOf } from './leaseId.js';
import type { Lease } from './leaseTable.js';
import { claimedEvent, logLeases, releasedEvent } from './leasesLog.js';
import type { Claimer, ParkedPass, PollClaimer, QueueState } from './queueState.js';
import { renderClaimReply, renderJobFrames, type LeasedJob } from './render.js';
import { startDeadLetter } from './deadLetter.js';
import { MoveBarrier } from './moveBarrier.js';
import { answered, park } from './waitingClaims.js';

/** How many jobs a claimer wants in this pass. */
export function wantOf(q: QueueState, c: Claimer): number {
  if (c.k === 'poll') return c.max;
  return c.conn.paused ? 0 : Math.max(0, c.conn.max - q.table.heldBy(c.conn.connId));
}

/**
 * Shares of `n` jobs for claimers wanting `wants`: everyone's want when there are enough,
 * otherwise proportional to the wants (largest remainder, ties to the earlier claimer).
 */
export function shares(wants: readonly number[], n: number): number[] {
  const total = wants.reduce((s, w) => s + w, 0);
  if (n >= total) return wants.slice();
  // Integer arithmetic (n·w < 2^53 here: n ≤ total ≤ 1000 claimers × 1000), so equal remainders
  // compare equal and ties really go to the earlier claimer.
  const rem = wants.map((w) => (n * w) % total);
  const out = wants.map((w, i) => (n * w - rem[i]!) / total);
  let left = n - out.reduce((s, v) => s + v, 0);
  const order = wants.map((_, i) => i).sort((a, b) => rem[b]! - rem[a]! || a - b);
  for (const i of order) {
    if (left === 0) break;
    if (out[i]! < wants[i]!) {
      out[i]!++;
      left--;
    }
  }
  return out;
}

/** Deals `jobs` (ascending) one at a time round-robin over the claimers with share left. */
function deal(jobs: readonly number[], share: readonly number[]): number[][] {
  const given = share.map(() => [] as number[]);
  const left = share.slice();
  let i = 0;
  for (const seq of jobs) {
    while (left[i % left.length] === 0) i++;
    given[i % left.length]!.push(seq);
    left[i % left.length]!--;
    i++;
  }
  // Replies list jobs ascending by $seq (docs/API.md "Queues"), reclaimed and fresh ones alike.
  for (const g of given) g.sort((x, y) => x - y);
  return given;
}

function isLive(inst: TopicInstance, seq: number): boolean {
  return seq <= inst.head && inst.index.state(seq) === SlotState.LIVE;
}

/**
 * Up to `total` claimable jobs for a pass, and the jobs due for the dead-letter topic met on the
 * way (marked in transit): the reclaim freelist first, then fresh jobs past the claim cursor.
 * After a restart the claim cursor starts below jobs that are also on the freelist, and the
 * freelist may name a job twice: a job is taken once per pass, whichever way it is found first.
 * Fresh jobs come in ascending order and the freelist, once empty, stays so for the pass: only a
 * pass that took from the freelist keeps a set of what it took.
 */
function takeJobs(inst: TopicInstance, q: QueueState, total: number): { jobs: number[]; deadLetter: number[] } {
  const t = q.table;
  const jobs: number[] = [];
  const deadLetter: number[] = [];
  const take = (seq: number): void => {
    if (!dueForDeadLetter(inst, q, seq)) return void jobs.push(seq);
    t.inTransit.add(seq);
    deadLetter.push(seq);
  };
  let taken: Set<number> | undefined;
  const live = (s: number) => isLive(inst, s);
  while (jobs.length < total) {
    const seq = t.popReclaim(live);
    if (seq === undefined) break;
    taken ??= new Set();
    if (taken.has(seq)) continue;
    taken.add(seq);
    take(seq);
  }
  // Everything below the first live job is gone: no need to step over it slot by slot.
  t.claimCursor = Math.max(t.claimCursor, inst.earliest() - 1);
  while (jobs.length < total && t.claimCursor < inst.head) {
    const s = ++t.claimCursor;
    if (inst.index.state(s) === SlotState.LIVE && t.isClaimable(s) && !taken?.has(s)) take(s);
  }
  return { jobs, deadLetter };
}

function dueForDeadLetter(inst: TopicInstance, q: QueueState, seq: number): boolean {
  const c = inst.config;
  return c.max_deliveries > 0 && c.dead_letter !== null && (q.table.deliveries.get(seq) ?? 0) >= c.max_deliveries;
}

export function newLease(a: ActorCore, ctx: ActorCtx, epoch: number, node: string, leaseMs: number, connId: number): Lease {
  // One literal of a fixed shape: the profile of the claim+ack bench showed an object spread
  // here as 4.7% of the worker's time.
  const no = a.nextLeaseNo();
  const rand = ctx.rng.u32();
  return { epoch, no, rand, id: leaseIdOf(epoch, no, rand), node, deadlineMs: ctx.now + leaseMs, connId };
}

function leaseMsOf(c: Claimer): number {
  return c.k === 'poll' ? c.leaseMs : c.conn.leaseMs;
}

function nodeOf(c: Claimer): string {
  return c.k === 'poll' ? c.node : c.conn.node;
}

export function runPass(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, claimers: Claimer[]): void {
  if (inst.config.leases_durable) {
    // No lease of a durable leases log may be handed out unlogged (a cohort or a refill may
    // run after storage turned FULL or FAILED).
    const refused = writeRefusal(ctx);
    if (refused) {
      for (const c of claimers) {
        if (c.k !== 'poll') continue;
        answered(ctx, q, c);
        ctx.reply(c.reqId, refused);
      }
      return;
    }
  }
  q.table.sweep(ctx.now); // lazy expiry: what passed its deadline is ready again
  const wants = claimers.map((c) => wantOf(q, c));
  const total = wants.reduce((s, w) => s + w, 0);
  const { jobs, deadLetter } = takeJobs(inst, q, total);
  const dealt = deal(jobs, shares(wants, jobs.length));
  // A blocking claim that got nothing waits for jobs instead of answering (waitingClaims.ts).
  const waits = (c: Claimer, i: number) => c.k === 'poll' && c.waitUntilMs > ctx.now && dealt[i]!.length === 0;
  let given = dealt;
  if (claimers.some(waits)) {
    claimers.forEach((c, i) => {
      if (waits(c, i)) park(a, ctx, q, c as PollClaimer);
    });
    given = dealt.filter((_, i) => !waits(claimers[i]!, i));
    claimers = claimers.filter((c, i) => !waits(c, i));
  }
  const events: LeaseEvent[] = [];
  const epoch = jobs.length > 0 ? ctx.bootEpoch() : 0;
  for (let i = 0; i < claimers.length; i++) {
    const c = claimers[i]!;
    const node = nodeOf(c);
    const leaseMs = leaseMsOf(c);
    const connId = c.k === 'work' ? c.conn.connId : 0;
    for (const seq of given[i]!) {
      const lease = newLease(a, ctx, epoch, node, leaseMs, connId);
      const deliveries = (q.table.deliveries.get(seq) ?? 0) + 1;
      q.table.deliveries.set(seq, deliveries);
      q.table.lease(seq, lease);
      events.push(claimedEvent(seq, lease, deliveries));
    }
  }
  const pass: ParkedPass = { claimers, given, deadLetter, leasesFrameNo: logLeases(a, ctx, inst, events) };
  const isCold = (s: number) => !inst.index.hasText(s);
  if (jobs.some(isCold) || deadLetter.some(isCold)) return parkForTexts(a, ctx, inst, q, pass, [...jobs, ...deadLetter].filter(isCold));
  finishPass(a, ctx, inst, q, pass);
}

/** Parks `pass` until the texts of `cold` (and of every seq it read back before) are in memory. */
function parkForTexts(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, pass: ParkedPass, cold: number[]): void {
  const seqs = readBackSet(pass.readBack, cold);
  pass.readBack = seqs;
  const token = a.nextTimerId();
  q.parkedPasses.set(token, pass);
  ctx.readCold(token, inst.id, coldRanges(inst, seqs));
}

/**
 * Jobs of the pass, still leased to it and live, whose texts left memory while it waited for
 * others (a small cache evicts what it holds in turn). Each is read back once more, with every
 * seq read before, so the pass ends: a seq joins the read-back set at most once.
 */
function textsLost(inst: TopicInstance, q: QueueState, pass: ParkedPass): number[] {
  const lost: number[] = [];
  const held = (s: number) => isLive(inst, s) && !inst.index.hasText(s);
  for (const seqs of pass.given) for (const s of seqs) if (q.table.active.has(s) && held(s)) lost.push(s);
  for (const s of pass.deadLetter) if (held(s)) lost.push(s);
  return lost;
}

/** Segment bytes for a parked pass: install the texts and finish it, or undo it on failure. */
export function onPassCold(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, token: number, bufs: Buffer[] | string): void {
  const pass = q.parkedPasses.get(token)!;
  q.parkedPasses.delete(token);
  const failure = installCold(ctx, inst, bufs);
  if (failure === undefined) {
    const lost = textsLost(inst, q, pass);
    if (lost.length > 0 && lost.some((s) => !pass.readBack!.includes(s))) return parkForTexts(a, ctx, inst, q, pass, lost);
    return finishPass(a, ctx, inst, q, pass);
  }
  // The jobs cannot be delivered: their leases are given back and the claimers told.
  const events: LeaseEvent[] = [];
  for (const seqs of pass.given) {
    for (const seq of seqs) {
      const lease = q.table.unlease(seq);
      if (!lease) continue;
      q.table.makeReady(seq);
      events.push(releasedEvent(seq, lease, 0));
    }
  }
  for (const seq of pass.deadLetter) {
    q.table.inTransit.delete(seq);
    q.table.makeReady(seq);
  }
  logLeases(a, ctx, inst, events);
  for (const c of pass.claimers) {
    if (c.k !== 'poll') continue;
    answered(ctx, q, c);
    ctx.reply(c.reqId, fail('internal', `segment read failed: ${failure}`));
  }
}

/**
 * Replies and pushes of a pass whose texts are in memory; jobs that left meanwhile are dropped.
 * Claims of a pass that moves jobs to the dead-letter topic answer once those moves settled.
 */
function finishPass(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, pass: ParkedPass): void {
  const needDurable = inst.config.leases_durable ? pass.leasesFrameNo : 0;
  const ready = q.ready(inst.count);
  const polls = pass.claimers.some((c) => c.k === 'poll');
  const barrier = polls && pass.deadLetter.length > 0 ? new MoveBarrier(a, inst, pass.deadLetter.length) : undefined;
  pass.claimers.forEach((c, i) => {
    const jobs: LeasedJob[] = [];
    for (const seq of pass.given[i]!) {
      const lease = q.table.active.get(seq);
      if (!lease || !isLive(inst, seq) || !inst.index.hasText(seq)) continue;
      jobs.push({ seq, lease, deliveries: q.table.deliveries.get(seq) ?? 1 });
    }
    if (c.k === 'poll') {
      answered(ctx, q, c);
      const body = renderClaimReply(inst, jobs, ready);
      const cond = { reqId: c.reqId, needDurableFrame: needDurable };
      const send = (g: ActorCtx) => g.reply(c.reqId, { ok: true, status: 200, json: body, perf: {} });
      if (barrier) barrier.hold(c.reqId, cond, send);
      else a.gate(ctx, inst, cond, send);
    } else if (jobs.length > 0 && q.conns.get(c.conn.connId) === c.conn) {
      const frames = renderJobFrames(inst, jobs);
      a.gate(ctx, inst, { needDurableFrame: needDurable }, (g) => g.work({ k: 'jobs', connId: c.conn.connId, topic: inst.name, frames }));
    }
  });
  // Every reply is held before the first move starts: a move may settle at once.
  for (const seq of pass.deadLetter) startDeadLetter(a, ctx, inst, q, seq, barrier);
}
