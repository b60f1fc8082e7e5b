// LeaseTable: the live lease projection of one queue instance (docs/ARCHITECTURE.md "Queues"; docs/QUEUES.md "Job states"), next to its
// jobs log (the topic's SeqIndex). It holds the active leases, the reclaim freelist (expired
// leases and elapsed nack delays, served in seq order before fresh jobs), nack delays, delivery
// counts, jobs on their way to the dead-letter topic and the fresh-job claim cursor.
// Invariants: `active`, `delayed` and `inTransit` are disjoint and hold only LIVE seqs (a job that
// leaves the log is forgotten at once); a job has at most one active lease. Expiry is lazy:
// `sweep(now)` finds what passed its deadline; there are no per-job timers. Pure.
import assert from 'node:assert/strict';
import { MinHeap } from '../../core/minHeap.js';
import type { LeaseIdParts } from './leaseId.js';

export interface Lease extends LeaseIdParts {
  /** `lease_…`, rendered once. */
  id: string;
  node: string;
  deadlineMs: number;
  /** The `/work` connection the job was pushed on, or 0 for a claim. */
  connId: number;
}

interface DeadlineEntry {
  at: number;
  seq: number;
  lease: Lease;
}

interface DelayEntry {
  at: number;
  seq: number;
}

const byTime = (a: { at: number; seq: number }, b: { at: number; seq: number }) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/**
 * Stale heap entries (extended, released or forgotten leases and delays) leave only when they
 * reach the top, which for long leases may be days away: a heap holding more than twice its
 * live entries plus this slack is rebuilt from its map, so it stays bounded.
 */
const HEAP_SLACK = 1024;

export class LeaseTable {
  readonly active = new Map<number, Lease>();
  /** Seqs leased per `/work` connection. */
  readonly byConn = new Map<number, Set<number>>();
  /** Nack delays not yet elapsed: seq → ready-at ms. */
  readonly delayed = new Map<number, number>();
  readonly deliveries = new Map<number, number>();
  /** Jobs being copied to the dead-letter topic: neither ready nor in flight. */
  readonly inTransit = new Set<number>();
  /** Highest seq ever considered as a fresh job; everything above it is fresh. */
  claimCursor = 0;
  deadLettered = 0;
  private readonly deadlines = new MinHeap<DeadlineEntry>(byTime);
  private readonly delays = new MinHeap<DelayEntry>(byTime);
  private readonly reclaim = new MinHeap<number>((a, b) => a < b);

  /** Leases or nack delays are held: a sweep may find some expired (a quiet queue has none). */
  holdsDeadlines(): boolean {
    return this.active.size > 0 || this.delayed.size > 0;
  }

  isClaimable(seq: number): boolean {
    return !this.active.has(seq) && !this.delayed.has(seq) && !this.inTransit.has(seq);
  }

  lease(seq: number, lease: Lease): void {
    // One live lease per job (docs/ARCHITECTURE.md "Invariants"): callers unlease or only lease claimable jobs.
    // The message is built only on failure (a template argument costs a string per lease).
    if (this.active.has(seq)) assert.fail(`job ${seq} leased twice`);
    this.active.set(seq, lease);
    this.pushDeadline({ at: lease.deadlineMs, seq, lease });
    if (lease.connId !== 0) {
      let set = this.byConn.get(lease.connId);
      if (!set) this.byConn.set(lease.connId, (set = new Set()));
      set.add(seq);
    }
  }

  /** Removes a job's lease (ack, nack, close, expiry); returns it. */
  unlease(seq: number): Lease | undefined {
    const lease = this.active.get(seq);
    if (!lease) return undefined;
    this.active.delete(seq);
    if (lease.connId !== 0) {
      const set = this.byConn.get(lease.connId);
      set?.delete(seq);
      if (set && set.size === 0) this.byConn.delete(lease.connId);
    }
    return lease;
  }

  extend(seq: number, lease: Lease, deadlineMs: number): void {
    lease.deadlineMs = deadlineMs;
    this.pushDeadline({ at: deadlineMs, seq, lease });
  }

  private pushDeadline(e: DeadlineEntry): void {
    this.deadlines.push(e);
    if (this.deadlines.size > 2 * this.active.size + HEAP_SLACK) this.rebuildHeaps();
  }

  /** The job is ready again (reclaim freelist, served before fresh jobs). */
  makeReady(seq: number): void {
    this.reclaim.push(seq);
  }

  /** Entries in the heaps, live and stale (for tests of the bound). */
  get heapSizes(): { deadlines: number; delays: number; reclaim: number } {
    return { deadlines: this.deadlines.size, delays: this.delays.size, reclaim: this.reclaim.size };
  }

  delay(seq: number, readyAtMs: number): void {
    this.delayed.set(seq, readyAtMs);
    this.delays.push({ at: readyAtMs, seq });
    if (this.delays.size > 2 * this.delayed.size + HEAP_SLACK) this.rebuildHeaps();
  }

  heldBy(connId: number): number {
    return this.byConn.get(connId)?.size ?? 0;
  }

  /**
   * Lazy expiry: leases with `now > deadline` and delays with `readyAt <= now` go onto the
   * reclaim freelist. Returns the expired leases (their `/work` connections have room again).
   */
  sweep(nowMs: number): { seq: number; lease: Lease }[] {
    const expired: { seq: number; lease: Lease }[] = [];
    for (let e = this.deadlines.peek(); e !== undefined && e.at < nowMs; e = this.deadlines.peek()) {
      this.deadlines.pop();
      if (this.active.get(e.seq) !== e.lease || e.lease.deadlineMs !== e.at) continue; // stale
      this.unlease(e.seq);
      this.reclaim.push(e.seq);
      expired.push({ seq: e.seq, lease: e.lease });
    }
    for (let e = this.delays.peek(); e !== undefined && e.at <= nowMs; e = this.delays.peek()) {
      this.delays.pop();
      if (this.delayed.get(e.seq) !== e.at) continue; // stale
      this.delayed.delete(e.seq);
      this.reclaim.push(e.seq);
    }
    return expired;
  }

  /** Next seq from the reclaim freelist that `ok` accepts (invalid entries are dropped). */
  popReclaim(ok: (seq: number) => boolean): number | undefined {
    for (let s = this.reclaim.pop(); s !== undefined; s = this.reclaim.pop()) if (ok(s) && this.isClaimable(s)) return s;
    return undefined;
  }

  /** The smallest claimable seq on the freelist that `ok` accepts; changes nothing (metrics). */
  minReclaimable(ok: (seq: number) => boolean): number | undefined {
    let best: number | undefined;
    for (const s of this.reclaim.values()) if ((best === undefined || s < best) && ok(s) && this.isClaimable(s)) best = s;
    return best;
  }

  /** When the next lease expires or delay elapses (for a `/work` connection waiting for jobs). */
  nextDueMs(): number | undefined {
    let due: number | undefined;
    for (let e = this.deadlines.peek(); e !== undefined; e = this.deadlines.peek()) {
      if (this.active.get(e.seq) === e.lease && e.lease.deadlineMs === e.at) {
        due = e.at + 1; // expired means now > deadline
        break;
      }
      this.deadlines.pop();
    }
    for (let e = this.delays.peek(); e !== undefined; e = this.delays.peek()) {
      if (this.delayed.get(e.seq) === e.at) {
        due = due === undefined ? e.at : Math.min(due, e.at);
        break;
      }
      this.delays.pop();
    }
    return due;
  }

  /** The job left the log (ack, dead-letter, retention, record delete): forget everything about it. */
  forget(seq: number): void {
    this.unlease(seq);
    this.delayed.delete(seq);
    this.deliveries.delete(seq);
    this.inTransit.delete(seq);
  }

  /** Rebuilds the deadline and delay heaps from the maps (recovery, and when stale entries pile up). */
  rebuildHeaps(): void {
    this.deadlines.clear();
    this.delays.clear();
    for (const [seq, lease] of this.active) this.deadlines.push({ at: lease.deadlineMs, seq, lease });
    for (const [seq, at] of this.delayed) this.delays.push({ at, seq });
  }
}
