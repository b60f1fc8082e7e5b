// The forwarder (docs/ARCHITECTURE.md "Routers", source side): runs in the source topic's actor, one per router,
// asynchronously and never on the source's ack path. It copies the visible records after its
// cursor to the dest's actor as one append per batch (a peer request, on this worker or over a
// peer port; the copies as a record section in the APPEND frame's layout, copySection.ts), at most one batch in flight per router, and moves its cursor only when the dest
// acknowledged. After a restart it first probes the dest, which says how far it durably holds
// this router's copies, and resumes exactly there. A refusal is backpressure: the cursor stays
// and the batch is retried after a backoff (50 ms doubling to 2 s), never dropped.
// Pure; effects go through the ActorCtx, time is ctx.now.
import type { TopicResult } from '../../protocol/messages/rpc.js';
import type { ForwardInfo, OriginRun, RouterDef } from '../../protocol/messages/router.js';
import { copyHeadroom } from '../topic/appendOp.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import { SlotState } from '../topic/seqIndex.js';
import { coldRanges, installCold } from '../topic/coldRead.js';
import { CopySection } from './copySection.js';
import { passesFilter } from './filter.js';
import { RoutingState, type Forwarder } from './routingState.js';
import { settleDrains } from './drain.js';
import { ROUTER_HOPS_MAX } from '../../protocol/limits.js';

export const FORWARD_RECORDS_MAX = 1000;
export const FORWARD_BYTES_MAX = 1024 * 1024;
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 2000;
/** Texts read back from segments at a time for a lagging forwarder. */
const COLD_SEQS_MAX = 1000;

export function routingOf(inst: TopicInstance): RoutingState {
  return (inst.routing ??= new RoutingState());
}

/** Installs a router (start: its cursor after a restart; null: a new router starts at the head). */
export function installRouter(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, def: RouterDef, start: number | null): number {
  const r = routingOf(inst);
  const had = r.forwarders.get(def.name);
  if (had && had.def.id === def.id) {
    had.def = def; // preserve_*, filter, allow_cycle and guarantee apply from the next batch
    return had.cursor;
  }
  if (had) dropForwarder(ctx, inst, def.name);
  const f: Forwarder = {
    def,
    cursor: start ?? inst.head,
    known: false,
    destId: 0,
    inflight: null,
    retryTimerId: 0,
    attempts: 0,
    coldToken: 0,
    total: 0,
    lastError: null,
    batchMax: FORWARD_RECORDS_MAX,
  };
  r.forwarders.set(def.name, f);
  pump(a, ctx, inst, f);
  return f.cursor;
}

/**
 * routerRemove: the forwarder goes at once and sends nothing more. A copy batch it still has out
 * may yet land in the dest, so the remove is answered once the dest has answered that batch
 * (`a.routerLeaving`, onRouterReply): DELETE /v0/routers returns after the last copy the router
 * makes, and a read of the dest after it sees everything the router will ever forward.
 */
export function removeRouter(a: ActorCore, ctx: ActorCtx, reqId: number, inst: TopicInstance | undefined, name: string): void {
  const f = inst && dropForwarder(ctx, inst, name);
  if (f?.inflight?.kind !== 'forward') return ctx.reply(reqId, okJson(200, `{"removed":${f !== undefined}`));
  (a.routerLeaving ??= new Map()).set(f.inflight.token, reqId);
}

/** Stops a forwarder and forgets it; returns it (undefined when the topic has none of the name). */
function dropForwarder(ctx: ActorCtx, inst: TopicInstance, name: string): Forwarder | undefined {
  const r = inst.routing;
  const f = r?.forwarders.get(name);
  if (!r || !f) return undefined;
  if (f.retryTimerId) ctx.cancelTimer(f.retryTimerId);
  r.forwarders.delete(name);
  settleDrains(ctx, inst);
  return f;
}

/**
 * The drain (docs/ARCHITECTURE.md "Startup and shutdown" step 4): every forwarder of the topic
 * stops for good. A batch or probe already out still gets its answer (the cursor moves as
 * usual), nothing more is sent, backoffs are cancelled, and waiting drains answer. Returns how
 * many requests are still out.
 */
export function stopRouting(ctx: ActorCtx, inst: TopicInstance): number {
  const r = inst.routing;
  if (!r) return 0;
  r.stopped = true;
  for (const f of r.forwarders.values()) {
    if (!f.retryTimerId) continue;
    ctx.cancelTimer(f.retryTimerId);
    f.retryTimerId = 0;
  }
  settleDrains(ctx, inst);
  return forwardsOut(inst);
}

/**
 * A reader of a dest asked for what is pending (a drain that waits): each named forwarder backing
 * off after a refusal tries again now rather than at its timer, since the dest may have room
 * since (a delete, a raised cap). Refused again, it backs off again, and the drain answers.
 */
export function retryBlocked(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, names: readonly string[]): void {
  const r = inst.routing;
  if (!r || r.stopped) return;
  let retried = false;
  for (const name of names) {
    const f = r.forwarders.get(name);
    if (!f || f.retryTimerId === 0 || f.cursor >= inst.head) continue;
    ctx.cancelTimer(f.retryTimerId);
    f.retryTimerId = 0;
    retried = true;
  }
  if (retried) pumpAll(a, ctx, inst);
}

/** Requests (copy batches, probes) the topic's forwarders have out now. */
export function forwardsOut(inst: TopicInstance): number {
  let n = 0;
  for (const f of inst.routing?.forwarders.values() ?? []) if (f.inflight) n++;
  return n;
}

/** New records became visible (or a reply, timer or cold read came in): forward what is due. */
export function pumpAll(a: ActorCore, ctx: ActorCtx, inst: TopicInstance): void {
  if (!inst.routing) return;
  for (const f of inst.routing.forwarders.values()) pump(a, ctx, inst, f);
}

function pump(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, f: Forwarder): void {
  if (inst.routing?.stopped) return settleDrains(ctx, inst);
  if (f.inflight || f.retryTimerId || f.coldToken) return;
  if (!f.known) {
    const token = a.nextTimerId();
    f.inflight = { token, kind: 'probe', srcLast: 0, count: 0 };
    ctx.peerRequest(token, { op: 'routerProbe', topic: f.def.dest, routerId: f.def.id });
    return;
  }
  while (f.cursor < inst.head && !f.inflight && !f.coldToken) {
    if (!sendBatch(a, ctx, inst, f)) break;
  }
  settleDrains(ctx, inst);
}

/** Texts the next window needs that are not in memory: read them back first. */
function coldNeeded(inst: TopicInstance, from: number): number[] {
  const out: number[] = [];
  const last = Math.min(inst.head, from + FORWARD_RECORDS_MAX - 1);
  for (let s = from; s <= last && out.length < COLD_SEQS_MAX; s++) {
    if (inst.index.state(s) === SlotState.LIVE && !inst.index.hasText(s)) out.push(s);
  }
  return out;
}

/**
 * Builds and sends the batch after the cursor; returns true when the loop may go on (the
 * window held nothing to copy, so the cursor moved on without a request). A batch is either
 * copies or one trim notice: a run of source records lost before they were forwarded (evicted,
 * or behind a trim marker this topic got from upstream) becomes a `source_trim` marker in the dest.
 */
function sendBatch(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, f: Forwarder): boolean {
  const from = f.cursor + 1;
  const cold = coldNeeded(inst, from);
  if (cold.length > 0) {
    f.coldToken = a.nextTimerId();
    ctx.readCold(f.coldToken, inst.id, coldRanges(inst, cold));
    return false;
  }
  const body = new CopySection(f.def, inst.id);
  const runs: OriginRun[] = [];
  let lost = 0;
  let last = f.cursor;
  // The same window coldNeeded checked: every live text in it is in memory.
  const windowEnd = Math.min(inst.head, from + FORWARD_RECORDS_MAX - 1);
  for (let s = from; s <= windowEnd && body.count < f.batchMax && body.bytes < FORWARD_BYTES_MAX; s++) {
    const st = inst.index.state(s);
    // A marker's slot is MARKER, or a hole once its frame was compacted away and the topic restarted.
    const marker = st !== SlotState.LIVE ? inst.provenance?.lostAt(s) : undefined;
    const missed = st === SlotState.EVICTED ? 1 : (marker ?? 0);
    if (missed > 0) {
      if (body.count > 0) break; // the copies go first; the notice starts the next batch
      lost += missed;
      last = s;
      continue;
    }
    if (st !== SlotState.LIVE) {
      last = s; // deletes never propagate; padding is nothing
      continue;
    }
    const t = inst.index.text(s)!;
    const prov = inst.provenance?.of(s);
    const origin = prov?.origin ?? inst.name;
    const hops = (prov?.hops ?? 0) + 1;
    // The tag is decoded only for a filter to judge (no string per copied record otherwise).
    const tag =
      f.def.filter !== null && t.tagLen > 0 ? inst.nodes.tagOfLiteral(t.buf.toString('latin1', t.tagOff, t.tagOff + t.tagLen)) : undefined;
    // Never back to its origin, never past the hop limit, only what the filter passes.
    if (origin === f.def.dest || hops > ROUTER_HOPS_MAX || !passesFilter(f.def.filter, tag)) {
      last = s;
      continue;
    }
    if (lost > 0) break; // the notice goes alone
    body.add(s, t);
    last = s;
    const run = runs[runs.length - 1];
    if (run && run[1] === origin && run[2] === hops) run[0]++;
    else runs.push([1, origin, hops]);
  }
  if (body.count === 0 && lost === 0) {
    // Nothing to copy in this window: progress only, which need not be durable (re-checking
    // the range after a crash is harmless).
    f.cursor = last;
    return true;
  }
  const token = a.nextTimerId();
  f.inflight = { token, kind: 'forward', srcLast: last, count: body.count };
  const fwd: ForwardInfo = { router: f.def.name, routerId: f.def.id, destId: f.destId, srcFirst: f.cursor + 1, srcLast: last, runs };
  let bytes: Buffer;
  if (lost > 0) {
    fwd.lost = lost;
    bytes = Buffer.from('{"create":false,"records":[{"data":null}]}');
  } else {
    // Copies travel as a record section the dest frames where it lies.
    const sent = body.finish(copyHeadroom(fwd));
    bytes = sent.body;
    fwd.copies = sent.layout;
  }
  ctx.peerRequest(token, { op: 'append', topic: f.def.dest, body: bytes, returnSeqs: false, headerIdemKey: undefined, forward: fwd });
  return false;
}

/** Retries after `ms` (no retry once the forwarders are stopped); waiting drains see it blocked. */
function backOff(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, f: Forwarder, ms: number): void {
  if (!inst.routing?.stopped) {
    f.retryTimerId = a.nextTimerId();
    ctx.setTimer(f.retryTimerId, ctx.now + ms);
  }
  settleDrains(ctx, inst);
}

function byToken(inst: TopicInstance, token: number): Forwarder | undefined {
  for (const f of inst.routing?.forwarders.values() ?? []) if (f.inflight?.token === token) return f;
  return undefined;
}

/** The dest answered a probe or a forward. Returns false when the token is not a router's. */
export function onRouterReply(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined, token: number, result: TopicResult): boolean {
  const removing = a.routerLeaving?.get(token);
  if (removing !== undefined) {
    a.routerLeaving!.delete(token);
    if (a.routerLeaving!.size === 0) a.routerLeaving = undefined;
    ctx.reply(removing, okJson(200, '{"removed":true'));
    return true;
  }
  const f = inst && byToken(inst, token);
  if (!inst || !f) return false;
  const sent = f.inflight!;
  f.inflight = null;
  if (!result.ok || !result.forward) {
    f.lastError = result.ok ? 'internal' : result.code;
    // A batch larger than a `discard: reject` dest's cap can never fit whole, and one larger than
    // the room a full one has left does not fit now: send less at once, down to one record, which
    // then waits with backoff for room (the records that fit go on meanwhile, so a source's own
    // cap does not evict them first).
    if (!result.ok && (result.code === 'record_too_large' || result.code === 'topic_full') && sent.count > 1) {
      f.batchMax = Math.max(1, Math.floor(sent.count / 2));
      pump(a, ctx, inst, f);
      return true;
    }
    f.attempts++;
    backOff(a, ctx, inst, f, Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (f.attempts - 1)));
    return true;
  }
  const ack = result.forward;
  f.known = true;
  f.destId = ack.destId;
  // The dest's word is the durable truth: resume after what it holds, never behind the cursor.
  if (ack.applied > f.cursor) f.cursor = Math.min(ack.applied, inst.head);
  f.total = ack.total;
  f.attempts = 0;
  f.lastError = null;
  if (f.batchMax < FORWARD_RECORDS_MAX) f.batchMax = Math.min(FORWARD_RECORDS_MAX, f.batchMax * 2);
  pump(a, ctx, inst, f);
  return true;
}

export function onRouterTimer(a: ActorCore, ctx: ActorCtx, inst: TopicInstance | undefined, timerId: number): boolean {
  if (!inst?.routing) return false;
  for (const f of inst.routing.forwarders.values()) {
    if (f.retryTimerId !== timerId) continue;
    f.retryTimerId = 0;
    pump(a, ctx, inst, f);
    return true;
  }
  return false;
}

export function onRouterCold(
  a: ActorCore,
  ctx: ActorCtx,
  inst: TopicInstance | undefined,
  token: number,
  bufs: Buffer[] | string,
): boolean {
  if (!inst?.routing) return false;
  for (const f of inst.routing.forwarders.values()) {
    if (f.coldToken !== token) continue;
    f.coldToken = 0;
    // A failed read, or damage met in a segment frame: retried later, never skipped.
    if (installCold(ctx, inst, bufs) !== undefined) {
      f.lastError = 'internal';
      f.attempts++;
      backOff(a, ctx, inst, f, RETRY_MAX_MS);
      return true;
    }
    pump(a, ctx, inst, f);
    return true;
  }
  return false;
}
