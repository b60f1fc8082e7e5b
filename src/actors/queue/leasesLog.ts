// The leases log of a queue (docs/FORMAT.md "LEASES body"; docs/ARCHITECTURE.md "Queues"): lifecycle events become one LEASES frame
// per pass (durable iff `leases_durable`), and recovery rebuilds the lease projection from the
// snapshot's queue part plus the replayed frames. Leases delivered on `/work` streams are not
// restored (their sockets are gone), so those jobs are ready at once after a restart.
// Pure; effects go through the ActorCtx.
import type { ActorCtx } from '../ctx.js';
import type { ActorCore } from '../topic/actorCore.js';
import type { TopicInstance } from '../topic/instance.js';
import { SlotState } from '../topic/seqIndex.js';
import { LeaseEventKind } from '../../format/constants.js';
import { StorageState } from '../../storage/storageState.js';
import { encodeLeases, type LeaseEvent } from '../../format/leasesFrame.js';
import { leaseIdOf } from './leaseId.js';
import type { Lease, LeaseTable } from './leaseTable.js';
import type { QueueState } from './queueState.js';
import { loadRedrivePending, redrivePendingPart } from './redriveHeader.js';
import { InvariantError } from '../../core/invariant.js';
import type { QueuePart } from '../../format/topicPart.js';

export function claimedEvent(seq: number, lease: Lease, deliveries: number): LeaseEvent {
  return {
    kind: LeaseEventKind.CLAIMED,
    seq,
    atMs: lease.deadlineMs,
    deliveries,
    epoch: lease.epoch,
    no: lease.no,
    rand: lease.rand,
    viaWork: lease.connId !== 0,
    node: lease.node,
  };
}

export function extendedEvent(seq: number, lease: Lease): LeaseEvent {
  return {
    kind: LeaseEventKind.EXTENDED,
    seq,
    atMs: lease.deadlineMs,
    deliveries: 0,
    epoch: lease.epoch,
    no: lease.no,
    rand: lease.rand,
    viaWork: lease.connId !== 0,
    node: '',
  };
}

/** `readyAtMs` 0: ready at once; otherwise a nack delay. */
export function releasedEvent(seq: number, lease: Lease, readyAtMs: number): LeaseEvent {
  return {
    kind: LeaseEventKind.RELEASED,
    seq,
    atMs: readyAtMs,
    deliveries: 0,
    epoch: lease.epoch,
    no: lease.no,
    rand: lease.rand,
    viaWork: lease.connId !== 0,
    node: '',
  };
}

/** Writes the events as one LEASES frame; returns its frame number (0: nothing written). */
export function logLeases(a: ActorCore, ctx: ActorCtx, inst: TopicInstance, events: readonly LeaseEvent[]): number {
  if (events.length === 0 || inst.config.durability === 'ephemeral') return 0;
  // Storage not OK (only non-durable leases logs get here): the events are not logged.
  if (ctx.storageState() !== StorageState.OK) return 0;
  const frameNo = a.nextFrame();
  // Without leases_durable nothing waits for the frame (docs/QUEUES.md "Durability and restarts"):
  // it rides with the worker's next WAL write, so a claim alone does not wake the WAL thread.
  const frame = encodeLeases(inst.id, events);
  if (inst.config.leases_durable) ctx.submit(frameNo, frame, true);
  else ctx.submitLazy(frameNo, frame);
  return frameNo;
}

function sameLease(l: Lease | undefined, e: LeaseEvent): l is Lease {
  return l !== undefined && l.epoch === e.epoch && l.no === e.no && l.rand === e.rand;
}

/** Recovery: applies one LEASES frame's events, in order (idempotent over the snapshot). */
export function replayLeases(table: LeaseTable, events: readonly LeaseEvent[]): void {
  for (const e of events) {
    switch (e.kind) {
      case LeaseEventKind.CLAIMED: {
        table.deliveries.set(e.seq, Math.max(table.deliveries.get(e.seq) ?? 0, e.deliveries));
        table.unlease(e.seq); // a newer claim supersedes whatever the snapshot held
        table.delayed.delete(e.seq);
        if (e.viaWork) break; // released with its socket
        table.lease(e.seq, {
          epoch: e.epoch,
          no: e.no,
          rand: e.rand,
          id: leaseIdOf(e.epoch, e.no, e.rand),
          node: e.node,
          deadlineMs: e.atMs,
          connId: 0,
        });
        break;
      }
      case LeaseEventKind.EXTENDED: {
        const l = table.active.get(e.seq);
        if (sameLease(l, e)) table.extend(e.seq, l, e.atMs);
        break;
      }
      case LeaseEventKind.RELEASED: {
        if (sameLease(table.active.get(e.seq), e)) table.unlease(e.seq);
        if (e.atMs > 0 && !table.active.has(e.seq)) table.delay(e.seq, e.atMs);
        break;
      }
      default:
        throw new InvariantError(`unknown lease event kind ${e.kind}`);
    }
  }
}

export function queuePart(q: QueueState): QueuePart {
  const table = q.table;
  const leases: QueuePart['leases'] = [];
  for (const [seq, l] of table.active.entries()) if (l.connId === 0) leases.push([seq, l.epoch, l.no, l.rand, l.node, l.deadlineMs]);
  const part: QueuePart = {
    leases,
    delayed: table.delayed.entries(),
    deliveries: table.deliveries.entries(),
    dead_lettered: table.deadLettered,
  };
  const pending = redrivePendingPart(q);
  if (pending) part.redrive_pending = pending;
  return part;
}

export function loadQueuePart(q: QueueState, part: QueuePart): void {
  const table = q.table;
  for (const [seq, epoch, no, rand, node, deadlineMs] of part.leases)
    table.lease(seq, { epoch, no, rand, id: leaseIdOf(epoch, no, rand), node, deadlineMs, connId: 0 });
  for (const [seq, at] of part.delayed) table.delay(seq, at);
  for (const [seq, n] of part.deliveries) table.deliveries.set(seq, n);
  table.deadLettered = part.dead_lettered;
  if (part.redrive_pending) loadRedrivePending(q, part.redrive_pending);
}

/**
 * End of recovery: jobs that left the log (acked, deleted, evicted) are forgotten, the heaps are
 * rebuilt, and fresh claiming restarts at the first live job (leased ones are skipped).
 */
export function finishQueueRecovery(inst: TopicInstance, table: LeaseTable): void {
  const gone = (seq: number) => seq > inst.head || inst.index.state(seq) !== SlotState.LIVE;
  for (const seq of [...table.active.keys(), ...table.delayed.keys(), ...table.deliveries.keys()]) if (gone(seq)) table.forget(seq);
  table.rebuildHeaps();
  table.claimCursor = inst.earliest() - 1;
}
