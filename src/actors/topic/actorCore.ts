// What the operation modules of a topic actor (lifecycle, append, record delete, visibility, and
// the queue operations) see of the actor: its live instance, frame numbering, WAL watermarks and
// reply gates. TopicActor implements it; the modules import only this interface, never the class.
import type { ActorCtx } from '../ctx.js';
import type { OkResult } from '../../protocol/messages/rpc.js';
import type { TopicInstance, Gate, GateCondition } from './instance.js';
import type { TopicReads } from './reads.js';
import { diskFull, storageFailed, type ErrorResult } from '../../protocol/errors.js';
import { StorageState } from '../../storage/storageState.js';

export interface ActorOptions {
  maxLimit: number;
  segmentBytes: number;
  maxTopics: number;
  /** A topic's first segment is packed up to this size (SERVICE_PACK_BYTES); 0 or absent: no packs. */
  packBytes?: number;
  /** Past packFramesFromBytes, up to packFramesMax frames (appendOp.ts; recorded in traces); absent: no bound. */
  packFramesMax?: number;
  packFramesFromBytes?: number;
  /**
   * This run's WAL file size (src/wal/walSizing.ts): a frame larger than a file's room runs past
   * the pre-allocated end, and is taken only when the volume has room for it (appendStep.ts);
   * absent: no such check (traces recorded before it).
   */
  walFileBytes?: number;
}

export interface ActorCore {
  readonly name: string;
  readonly opts: ActorOptions;
  /** The live instance, or undefined while the topic is absent. */
  current: TopicInstance | undefined;
  readonly reads: TopicReads;
  /** This actor's frames up to here are written (page cache) / fsynced. */
  readonly writtenFrameNo: number;
  readonly durableFrameNo: number;
  /** The next frame number (per actor, strictly increasing). */
  nextFrame(): number;
  /** A fresh id for a timer, a cold-read or a peer-request token (never reused within the actor). */
  nextTimerId(): number;
  /** The lease counter of lease ids (per actor, so a recreated queue never repeats one). */
  nextLeaseNo(): number;
  /**
   * Router removes waiting for a copy batch their forwarder still had out (token → the remove's
   * request id), else undefined: forwarder.ts removeRouter. The actor is not idle meanwhile.
   */
  routerLeaving: Map<number, number> | undefined;
  /** Holds `send` until the head and the named frames allow it; runs it at once if they do. */
  gate(ctx: ActorCtx, inst: TopicInstance, cond: GateCondition, send: (c: ActorCtx) => void): void;
  /** A deleted instance whose frames are still in flight: its gates drain as acks arrive. */
  retire(inst: TopicInstance, done: Gate): void;
  /** Moves batches that reached their ack point into view, then runs the instance's gates. */
  advance(ctx: ActorCtx, inst: TopicInstance): void;
  /** TTL is judged when a request arrives, never by a timer. */
  expire(ctx: ActorCtx, inst: TopicInstance): void;
  /** A FLOORS frame when retention moved a floor (never gates a reply). */
  persistFloors(ctx: ActorCtx, inst: TopicInstance): void;
  /** A read (diff, watch pass, state with touch): sets last_read_ts and the consumption clock. */
  touch(inst: TopicInstance, now: number): void;
}

/**
 * The refusal for a request that would write to the WAL while storage is not OK (checked before
 * anything is applied): 429 disk_space while the disk is full, 500 after a failed write.
 */
export function writeRefusal(ctx: ActorCtx): ErrorResult | undefined {
  const s = ctx.storageState();
  if (s === StorageState.OK) return undefined;
  return s === StorageState.FULL ? diskFull() : storageFailed();
}

/**
 * The refusal for a frame that gives space back (a topic or record delete): as writeRefusal,
 * except that on a full disk it goes through while the WAL has room for its `frameBytes`
 * without new space (docs/ARCHITECTURE.md "Deleting on a full disk").
 */
export function spaceBackRefusal(ctx: ActorCtx, frameBytes: number): ErrorResult | undefined {
  const s = ctx.storageState();
  if (s === StorageState.OK) return undefined;
  if (s === StorageState.FULL) return ctx.walRoomFor(frameBytes) ? undefined : diskFull();
  return storageFailed();
}

/** A JSON object without its closing brace (main appends the performance block). */
export function jsonOpen(obj: object): string {
  return JSON.stringify(obj).slice(0, -1);
}

export function okJson(status: 200 | 201, text: string): OkResult {
  return { ok: true, status, json: Buffer.from(text, 'utf8'), perf: {} };
}
