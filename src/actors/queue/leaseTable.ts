// LeaseTable: the live lease projection of one queue instance (docs/ARCHITECTURE.md "Queues"; docs/QUEUES.md "Job states"), next to its
// jobs log (the topic's SeqIndex). It holds the active leases, the reclaim freelist (expired
// leases and elapsed nack delays, served in seq order before fresh jobs), nack delays, delivery
// counts, jobs on their way to the dead-letter topic and the fresh-job claim cursor.
// Invariants: `active`, `delayed` and `inTransit` are disjoint and hold only LIVE seqs (a job that
// leaves the log is forgotten at once); a job has at most one active lease. Expiry is lazy:
// `sweep(now)` finds what passed its deadline; there are no per-job timers. Pure.
import assert from 'node:assert/strict';
import { MinHeap } from '../../core/minHeap.js';
import { SeqMap } from '../../core/columns/seqMap.js';
import { TimeHeap } from '../../core/columns/timeHeap.js';
import type { LeaseIdParts } from './leaseId.js';

export interface Lease extends LeaseIdParts {
  /** `lease_…`, rendered once. */
  id: string;
  node: string;
  deadlineMs: number;
  /** The `/work` connection the job was pushed on, or 0 for a claim. */
  connId: number;
}

/**
 * Stale heap entries (extended, released or forgotten leases and delays) leave only when they
 * reach the top, which for long leases may be days away: a heap holding more than twice its
 * live entries plus this slack is rebuilt from its map, so it stays bounded.
 */
const HEAP_SLACK = 1024;

export class LeaseTable {
  readonly active = new SeqMap<Lease>();
  /**
   * Leases held per open `/work` connection; an entry stays at 0 until `dropConn` (a Map entry
   * made and deleted as a stream's leases come and go was a visible cost of every refill).
   */
  private readonly heldCounts = new Map<number, number>();
  /** Nack delays not yet elapsed: seq → ready-at ms. */
  readonly delayed = new SeqMap<number>();
  readonly deliveries = new SeqMap<number>();
  /** Jobs being copied to the dead-letter topic: neither ready nor in flight. */
  readonly inTransit = new Set<number>();
  /** Highest seq ever considered as a fresh job; everything above it is fresh. */
  claimCursor = 0;
  deadLettered = 0;
  /** (deadline, seq) of leases; an entry is live while the job's lease still has that deadline. */
  private readonly deadlines = new TimeHeap();
  /** (ready-at, seq) of nack delays; live while `delayed` still maps the seq to that time. */
  private readonly delays = new TimeHeap();
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
    this.pushDeadline(lease.deadlineMs, seq);
    if (lease.connId !== 0) this.heldCounts.set(lease.connId, (this.heldCounts.get(lease.connId) ?? 0) + 1);
  }

  /** Removes a job's lease (ack, nack, close, expiry); returns it. */
  unlease(seq: number): Lease | undefined {
    const lease = this.active.get(seq);
    if (!lease) return undefined;
    this.active.delete(seq);
    if (lease.connId !== 0) {
      const held = this.heldCounts.get(lease.connId);
      if (held !== undefined) this.heldCounts.set(lease.connId, held - 1);
    }
    return lease;
  }

  extend(seq: number, lease: Lease, deadlineMs: number): void {
    lease.deadlineMs = deadlineMs;
    this.pushDeadline(deadlineMs, seq);
  }

  private pushDeadline(at: number, seq: number): void {
    this.deadlines.push(at, seq);
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
    this.delays.push(readyAtMs, seq);
    if (this.delays.size > 2 * this.delayed.size + HEAP_SLACK) this.rebuildHeaps();
  }

  heldBy(connId: number): number {
    return this.heldCounts.get(connId) ?? 0;
  }

  /** The seqs leased on `/work` connection `connId`, ascending (a walk over every lease: for a close). */
  connLeases(connId: number): number[] {
    const seqs: number[] = [];
    for (const [seq, lease] of this.active.entries()) if (lease.connId === connId) seqs.push(seq);
    return seqs.sort((x, y) => x - y);
  }

  /** The connection closed and gave its leases back: its count goes. */
  dropConn(connId: number): void {
    this.heldCounts.delete(connId);
  }

  /** Connections with a lease count kept (for tests and the queue model). */
  connsCounted(): number[] {
    return [...this.heldCounts.keys()];
  }

  /**
   * Lazy expiry: leases with `now > deadline` and delays with `readyAt <= now` go onto the
   * reclaim freelist. Returns the expired leases (their `/work` connections have room again).
   */
  sweep(nowMs: number): { seq: number; lease: Lease }[] {
    const expired: { seq: number; lease: Lease }[] = [];
    for (let at = this.deadlines.peekAt(); at !== undefined && at < nowMs; at = this.deadlines.peekAt()) {
      const seq = this.deadlines.peekSeq();
      this.deadlines.pop();
      const lease = this.active.get(seq);
      if (lease === undefined || lease.deadlineMs !== at) continue; // stale
      this.unlease(seq);
      this.reclaim.push(seq);
      expired.push({ seq, lease });
    }
    for (let at = this.delays.peekAt(); at !== undefined && at <= nowMs; at = this.delays.peekAt()) {
      const seq = this.delays.peekSeq();
      this.delays.pop();
      if (this.delayed.get(seq) !== at) continue; // stale
      this.delayed.delete(seq);
      this.reclaim.push(seq);
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
    for (let at = this.deadlines.peekAt(); at !== undefined; at = this.deadlines.peekAt()) {
      if (this.active.get(this.deadlines.peekSeq())?.deadlineMs === at) {
        due = at + 1; // expired means now > deadline
        break;
      }
      this.deadlines.pop();
    }
    for (let at = this.delays.peekAt(); at !== undefined; at = this.delays.peekAt()) {
      if (this.delayed.get(this.delays.peekSeq()) === at) {
        due = due === undefined ? at : Math.min(due, at);
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
    for (const [seq, lease] of this.active.entries()) this.deadlines.push(lease.deadlineMs, seq);
    for (const [seq, at] of this.delayed.entries()) this.delays.push(at, seq);
  }
}
