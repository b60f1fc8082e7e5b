// ack, nack and extend (docs/QUEUES.md "Job states"; docs/API.md "Queues"): each acts on a seq only if it is leased
// to the request's node and, when a non-empty `lease_ids` entry is given, only if that is the
// current lease id (fencing: a stale worker can never act on a newer delivery); every other
// seq is reported in `skipped`. Expiry is judged first (lazily), so an expired lease is no
// longer held. Acks delete through the permanent delete path and answer at the topic's ack
// point; nack and extend log a LEASES frame and answer once it is durable when leases_durable.
// Pure; effects go through the ActorCtx.
import type { AckRequest, ExtendRequest, NackRequest, TermRequest } from '../../protocol/messages/rpc.js';
import { walBehind } from '../../protocol/errors.js';
import { encodeJsonTextFrame } from '../../format/frame.js';
import { FrameType } from '../../format/constants.js';
import type { LeaseEvent } from '../../format/leasesFrame.js';
import type { ActorCtx } from '../ctx.js';
import { okJson, writeRefusal, type ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import { deleteSeqs } from '../topic/retention.js';
import type { Lease } from './leaseTable.js';
import { extendedEvent, logLeases, releasedEvent } from './leasesLog.js';
import type { QueueState } from './queueState.js';
import { refill } from './workConns.js';

type Fenced = AckRequest | NackRequest | ExtendRequest | TermRequest;

/** The lease of `req.seqs[i]` if the request may act on it, else undefined. */
export function held(q: QueueState, req: Fenced, i: number): Lease | undefined {
  const lease = q.table.active.get(req.seqs[i]!);
  if (!lease || lease.node !== req.node) return undefined;
  const token = req.leaseIds?.[i];
  if (token !== undefined && token !== '' && token !== lease.id) return undefined;
  return lease;
}

export function counters(inst: TopicInstance, q: QueueState): string {
  return `"ready":${q.ready(inst.count)},"in_flight":${q.inFlight}`;
}

export function ack(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: AckRequest): void {
  // An ack writes a DELETE frame: refused on a full disk or past the WAL credit (docs/ARCHITECTURE.md
  // "Other decisions"), with nothing applied (the leases stay; the worker retries).
  if (inst.logClass !== 'ephemeral') {
    const refused = writeRefusal(ctx) ?? (ctx.walCreditExhausted() ? walBehind() : undefined);
    if (refused) return ctx.reply(reqId, refused);
  }
  q.table.sweep(ctx.now);
  const acked: number[] = [];
  const skipped: number[] = [];
  for (let i = 0; i < req.seqs.length; i++) {
    const seq = req.seqs[i]!;
    if (held(q, req, i) === undefined) skipped.push(seq);
    else {
      q.table.unlease(seq);
      acked.push(seq);
    }
  }
  deleteSeqs(inst, acked);
  const cls = inst.logClass;
  let frameNo = 0;
  if (acked.length > 0 && cls !== 'ephemeral') {
    frameNo = a.nextFrame();
    // The text JSON.stringify gives for {seqs, reason: 'ack'}, written without building the object.
    ctx.submit(frameNo, encodeJsonTextFrame(FrameType.DELETE, inst.id, `{"seqs":[${acked.join(',')}],"reason":"ack"}`), cls === 'fsync');
  }
  const body = okJson(
    200,
    `{"topic":${JSON.stringify(inst.name)},"acked":${acked.length},"skipped":[${skipped.join(',')}],${counters(inst, q)}`,
  );
  // The reply waits for the delete's ack point: a durable queue's ack is fsynced (docs/QUEUES.md "Job states").
  a.gate(ctx, inst, { reqId, needDurableFrame: cls === 'fsync' ? frameNo : 0, needWrittenFrame: cls === 'disk' ? frameNo : 0 }, (c) =>
    c.reply(reqId, body, frameNo || undefined),
  );
  refill(a, ctx, inst, q);
}

export function nack(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: NackRequest): void {
  q.table.sweep(ctx.now);
  const events: LeaseEvent[] = [];
  const skipped: number[] = [];
  const readyAt = req.delayMs > 0 ? ctx.now + req.delayMs : 0;
  req.seqs.forEach((seq, i) => {
    const lease = held(q, req, i);
    if (!lease) return void skipped.push(seq);
    q.table.unlease(seq);
    if (readyAt > 0) q.table.delay(seq, readyAt);
    else q.table.makeReady(seq);
    events.push(releasedEvent(seq, lease, readyAt));
  });
  const frameNo = logLeases(a, ctx, inst, events);
  const body = okJson(
    200,
    `{"topic":${JSON.stringify(inst.name)},"nacked":${events.length},"skipped":[${skipped.join(',')}],${counters(inst, q)}`,
  );
  a.gate(ctx, inst, { reqId, needDurableFrame: inst.config.leases_durable ? frameNo : 0 }, (c) => c.reply(reqId, body));
  refill(a, ctx, inst, q);
}

export function extend(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, q: QueueState, reqId: number, req: ExtendRequest): void {
  q.table.sweep(ctx.now);
  const events: LeaseEvent[] = [];
  const skipped: number[] = [];
  const deadlines = new Map<number, number>();
  const deadlineMs = ctx.now + req.leaseMs; // sets, not adds (docs/QUEUES.md "Job states")
  req.seqs.forEach((seq, i) => {
    const lease = held(q, req, i);
    // A seq named twice is acted on once, as in ack and nack.
    if (!lease || deadlines.has(seq)) return void skipped.push(seq);
    q.table.extend(seq, lease, deadlineMs);
    deadlines.set(seq, deadlineMs);
    events.push(extendedEvent(seq, lease));
  });
  const frameNo = logLeases(a, ctx, inst, events);
  const map = [...deadlines].map(([s, d]) => `"${s}":${d}`).join(',');
  const body = okJson(
    200,
    `{"topic":${JSON.stringify(inst.name)},"extended":${events.length},"skipped":[${skipped.join(',')}],"deadlines":{${map}}`,
  );
  a.gate(ctx, inst, { reqId, needDurableFrame: inst.config.leases_durable ? frameNo : 0 }, (c) => c.reply(reqId, body));
}
