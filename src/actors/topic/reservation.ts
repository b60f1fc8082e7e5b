// Seq reservations of a topic instance (docs/ARCHITECTURE.md "Seq reservations"): a durable SEQ_RESERVE ceiling kept ahead of
// assignment for non-fsync classes, so a seq acked before its fsync is never handed out again
// after a crash. Invariant: a non-fsync seq becomes visible only at or under `durable`.
// Pure; effects go through the ActorCtx.
import { encodeSeqReserve } from '../../format/frame.js';
import type { ActorCtx } from '../ctx.js';

/** Largest adaptive block: a crash pads at most this many seq numbers (never records). */
export const RESERVE_BLOCK_MAX = 1 << 20;
export const RESERVE_BLOCK_MIN = 1024;

export class SeqReservation {
  /** Highest ceiling whose SEQ_RESERVE frame is durable. */
  durable = 0;
  /** Highest ceiling submitted. */
  submitted = 0;
  /** Submitted reservations not yet durable, oldest first. */
  /** Reservation frames not durable yet, oldest first; undefined while there are none. */
  private inFlight: { frameNo: number; ceiling: number }[] | undefined = undefined;
  /** Adaptive block (grows when appends outrun the reservation's fsync). */
  block = RESERVE_BLOCK_MIN;
  largestRecentBatch = 0;

  /** A batch of `count` records was assigned: the recent-batch estimate decays towards it. */
  noteBatch(count: number): void {
    this.largestRecentBatch = Math.max(Math.floor(this.largestRecentBatch * 0.9), count);
  }

  /**
   * Blocks of max(1024, 4 × the largest recent batch, the adaptive size); the next one is
   * submitted once `assigned` passes the middle of the current block, so steady-state appends
   * never wait for it. The adaptive size doubles (up to 2^20) whenever a new block is needed while
   * the previous one is still not durable, i.e. when the topic outruns the fsync.
   */
  maybeReserve(assigned: number, topicId: number, ctx: ActorCtx, nextFrameNo: () => number): void {
    const block = Math.max(RESERVE_BLOCK_MIN, 4 * this.largestRecentBatch, this.block);
    if (assigned + block / 2 <= this.submitted) return;
    if (this.inFlight !== undefined) this.block = Math.min(RESERVE_BLOCK_MAX, Math.max(block, this.block) * 2);
    const ceiling = assigned + Math.max(block, this.block);
    const frameNo = nextFrameNo();
    this.submitted = ceiling;
    (this.inFlight ??= []).push({ frameNo, ceiling });
    ctx.submit(frameNo, encodeSeqReserve(topicId, ceiling), true);
  }

  /** Reservations whose frames are now durable raise the ceiling. */
  absorbDurable(durableFrameNo: number): void {
    const q = this.inFlight;
    if (q === undefined) return;
    while (q.length > 0 && q[0]!.frameNo <= durableFrameNo) this.durable = Math.max(this.durable, q.shift()!.ceiling);
    // An idle topic keeps no array.
    if (q.length === 0) this.inFlight = undefined;
  }
}
