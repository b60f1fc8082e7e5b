// When a topic's batches become visible (docs/ARCHITECTURE.md "The life of an append", "Watermarks"): each class has one ack point, and
// batches pass it strictly in seq order. A visible batch moves the head, may evict under a cap,
// wakes parked long-polls and is published to watch streams (rendered once, docs/ARCHITECTURE.md "Watch streams").
// Invariant: a non-fsync batch is visible only under a durable seq reservation. Pure.
import type { ActorCtx } from '../ctx.js';
import type { ActorCore } from './actorCore.js';
import { none, type PendingBatch, type TopicInstance } from './instance.js';
import { applyCaps } from './retention.js';
import { renderPush } from './watchPush.js';

function ackPointReached(a: ActorCore, b: PendingBatch): boolean {
  switch (b.durability) {
    case 'ephemeral':
    case 'memory':
      return true;
    case 'disk':
      return a.writtenFrameNo >= b.frameNo;
    case 'fsync':
      return a.durableFrameNo >= b.frameNo;
  }
}

/** Moves batches that reached their ack point into view, in seq order. Returns the head before. */
export function revealBatches(
  a: ActorCore,
  ctx: ActorCtx,
  inst: TopicInstance,
): { headBefore: number; durableBefore: number; moved: boolean } {
  inst.reserve.absorbDurable(a.durableFrameNo);
  const headBefore = inst.head;
  const durableBefore = inst.durableHead;
  let moved = false;
  while (inst.pending.length > 0) {
    const b = inst.pending[0]!;
    if (!ackPointReached(a, b)) break;
    if (b.durability !== 'fsync' && inst.reserve.durable < b.lastSeq) break;
    inst.pending.shift();
    // A disk batch is visible once written; it is durable only when its frame is fsynced.
    if (b.durability === 'disk' && b.frameNo > a.durableFrameNo) inst.addUnsynced(b);
    inst.head = b.lastSeq;
    inst.count += b.live;
    inst.bytes += b.bytes;
    inst.pendingCount -= b.live;
    inst.pendingBytes -= b.bytes;
    inst.lastWriteTsMs = b.tsMs;
    moved = true;
  }
  // Cap eviction whenever a batch becomes visible: count and bytes never exceed a cap after
  // a step (docs/ARCHITECTURE.md "Watermarks").
  if (moved && applyCaps(inst) > 0) a.persistFloors(ctx, inst);
  // durableHead: the visible prefix whose frames are fsynced. For memory and ephemeral topics,
  // which are never fsynced, the ack point is the commit point (docs/WATCH.md).
  while (inst.unsynced.length > 0 && inst.unsynced[0]!.frameNo <= a.durableFrameNo) inst.unsynced.shift();
  // Emptied queues go back to the shared empty one: an idle topic keeps no array.
  if (inst.pending.length === 0) inst.pending = none();
  if (inst.unsynced.length === 0) inst.unsynced = none();
  inst.durableHead = inst.unsynced.length > 0 ? inst.unsynced[0]!.firstSeq - 1 : inst.head;
  return { headBefore, durableBefore, moved };
}

/** Tells watch streams what became visible (rendered once, docs/ARCHITECTURE.md "Watch streams") or durable. */
export function publishVisible(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, headBefore: number, moved: boolean): void {
  if (!moved) {
    ctx.publish({ k: 'durable', topic: a.name, instanceId: inst.id, durableHead: inst.durableHead, head: inst.head });
    return;
  }
  // A push to open streams is a watch delivery pass: it counts as a read (docs/API.md "GET /v0/topics/:topic" last_read_ts).
  a.touch(inst, ctx.now);
  const pieces = renderPush(inst, headBefore, inst.head);
  ctx.publish({
    k: 'batch',
    topic: a.name,
    instanceId: inst.id,
    from: headBefore,
    to: inst.head,
    head: inst.head,
    durableHead: inst.durableHead,
    dedupeNode: inst.config.dedupe_node,
    ...pieces,
  });
}
