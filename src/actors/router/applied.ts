// The dest side of routers (docs/ARCHITECTURE.md "Routers"): per router id, the highest source seq this topic holds
// copies of (`srcLast`) and the router's forwarded total. Both ride in the forward header of
// the copy batch's APPEND frame, so recovery re-derives them from the frames it replays (and
// the snapshot), and a forwarder resuming after a crash continues exactly there: dedupe on
// (router, source seq). Owned by one TopicInstance; pure.
import type { ForwardAck, ForwardInfo, OriginRun } from '../../protocol/messages/router.js';
import { fail } from '../../protocol/errors.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import { Provenance } from './provenance.js';
import { SlotState } from '../topic/seqIndex.js';
import { AppliedTable } from './appliedTable.js';

/** The forward header as written in the frame (docs/FORMAT.md). */
interface ForwardHeader {
  r: number;
  n: string;
  s: number;
  t: number;
  o: OriginRun[];
  /** Trim notice: the batch's one record is a marker for this many lost source records. */
  l?: number;
}

export function appliedOf(inst: TopicInstance): AppliedTable {
  return (inst.applied ??= new AppliedTable());
}

export function provenanceOf(inst: TopicInstance): Provenance {
  return (inst.provenance ??= new Provenance());
}

export function ackOf(inst: TopicInstance, routerId: number): ForwardAck {
  const a = inst.applied?.get(routerId) ?? { srcLast: 0, total: 0 };
  return { applied: a.srcLast, total: a.total, destId: inst.id };
}

function ackReply(inst: TopicInstance, routerId: number, extra: string) {
  const r = okJson(200, `{"topic":${JSON.stringify(inst.name)}${extra}`);
  r.forward = ackOf(inst, routerId);
  return r;
}

/**
 * Before a copy batch is appended: answers it here (returns true) when the dest is gone or was
 * recreated since the forwarder's probe, or when it holds the batch's first source seq already
 * (a duplicate, or an overlap the forwarder re-sends from the acknowledged point).
 */
export function answeredBeforeAppend(a: ActorCore, ctx: ActorCtx, reqId: number, fwd: ForwardInfo): boolean {
  const inst = a.current;
  if (!inst || (fwd.destId !== 0 && inst.id !== fwd.destId)) {
    ctx.reply(reqId, fail('topic_not_found', `router dest ${a.name} does not exist`, { topic: a.name }));
    return true;
  }
  if (fwd.srcFirst > appliedOf(inst).get(fwd.routerId).srcLast) return false;
  ctx.reply(reqId, ackReply(inst, fwd.routerId, ',"deduped":true'));
  return true;
}

/** The forward header bytes of a copy batch of `count` records, noting it as applied. */
export function applyForward(inst: TopicInstance, fwd: ForwardInfo, firstSeq: number, count: number): Buffer {
  const table = appliedOf(inst);
  const total = table.get(fwd.routerId).total + (fwd.lost ? 0 : count);
  table.note(fwd.routerId, fwd.srcLast, total);
  const prov = provenanceOf(inst);
  prov.dropBelow(inst.earliest()); // runs of records gone from the topic
  prov.add(firstSeq, fwd.runs);
  if (fwd.lost) prov.markLost(firstSeq, fwd.lost); // its slot becomes MARKER once indexed (encodeBatch)
  const h: ForwardHeader = { r: fwd.routerId, n: fwd.router, s: fwd.srcLast, t: total, o: fwd.runs, ...(fwd.lost ? { l: fwd.lost } : {}) };
  return Buffer.from(JSON.stringify(h), 'utf8');
}

/**
 * The most bytes `applyForward` can make of a copy batch's header: its total is not known before
 * the dest applies it, so it counts as the largest safe integer.
 */
export function forwardHeaderMaxBytes(fwd: ForwardInfo): number {
  const h: ForwardHeader = { r: fwd.routerId, n: fwd.router, s: fwd.srcLast, t: Number.MAX_SAFE_INTEGER, o: fwd.runs };
  return Buffer.byteLength(JSON.stringify(h), 'utf8');
}

/** An ephemeral dest's progress frame body (its copies are never in the WAL). */
export function progressBody(inst: TopicInstance, routerId: number): { r: number; s: number; t: number } {
  const a = appliedOf(inst).get(routerId);
  return { r: routerId, s: a.srcLast, t: a.total };
}

/** Recovery: a ROUTER_PROGRESS frame of an ephemeral dest. */
export function replayProgress(inst: TopicInstance, body: { r: number; s: number; t: number }): void {
  appliedOf(inst).note(body.r, body.s, body.t);
}

/** Recovery: a replayed or segment-indexed copy batch's forward header. */
export function replayForward(inst: TopicInstance, fwd: Buffer, firstSeq: number): void {
  const h = JSON.parse(fwd.toString('utf8')) as ForwardHeader;
  appliedOf(inst).note(h.r, h.s, h.t);
  provenanceOf(inst).add(firstSeq, h.o);
  if (h.l) {
    provenanceOf(inst).markLost(firstSeq, h.l);
    inst.index.setState(firstSeq, SlotState.MARKER);
  }
}

/** `routerProbe`: how far this topic holds a router's copies (404 when absent). */
export function probeStep(a: ActorCore, ctx: ActorCtx, reqId: number, routerId: number): void {
  const inst = a.current;
  if (!inst) return ctx.reply(reqId, fail('topic_not_found', `router dest ${a.name} does not exist`, { topic: a.name }));
  ctx.reply(reqId, ackReply(inst, routerId, ''));
}

/** The acknowledgement a successful copy batch's reply carries. */
export function ackAfterAppend(inst: TopicInstance, fwd: ForwardInfo): ForwardAck {
  return ackOf(inst, fwd.routerId);
}
