// FlushPacer (main thread): one per process, shared by every SSE stream (watch and work). A
// stream that queued bytes marks itself dirty; the pacer flushes dirty streams in the order they
// became dirty, after the iteration's worker messages and read replies, so all frames a stream
// gets before its turn leave in one write; an idle pacer flushes at the end of the callback that
// queued the first frame (a lone record goes out at once). Invariants: flushing takes at most
// half the main thread (after a slice of d ms the next waits d ms, at most SLICE_MS), so under
// load frames coalesce and requests get their turn; and no slice runs longer than about SLICE_MS.
//
// Slices (docs/PERFORMANCE.md "Watch fan-out"): a flush of every dirty stream used to run to the end
// in one go. At 1000 watchers that was 15-40 ms during which nothing else ran: the worker's next
// watch batch and the writer's appends waited behind it, so a record's delay was up to about
// three flush lengths (the running flush, the wait after it, its stream's place in the next).
// Now the pacer stops after SLICE_MS, lets the event loop take its I/O (new batches queue onto
// streams not yet flushed), and goes on: about two flush lengths at most, and appends are
// answered between slices.
import type { Clock } from '../../core/clock.js';
import { nowMs } from '../../core/stopwatch.js';
import { SharedChunks } from './sharedChunks.js';

/**
 * Something with queued output: written out by the pacer, with the wall time of the flush and
 * the slice's shared chunks (targets that queued the same frames write the same bytes).
 */
export interface PacedFlush {
  flush(nowMs: number, shared: SharedChunks): void;
}

/** A slice ends once it has run this long (checked every SLICE_CHECK_EVERY targets). */
const SLICE_MS = 4;
const SLICE_CHECK_EVERY = 16;
/** The pacer counts as idle once its last slice ended at least this long ago. */
const IDLE_MS = 1;

export class FlushPacer {
  /** Dirty targets in the order they became dirty; `head` is the next to flush. */
  private queue: PacedFlush[] = [];
  private head = 0;
  private scheduled = false;
  /** Earliest measured time (stopwatch ms) of the next slice. */
  private nextFlushAtMs = 0;

  /**
   * `clock` stamps each flush (streams time their heartbeats from it); `monotonicMs` measures
   * slices and idleness (a test passes its own, so preemption cannot change what it sees).
   */
  constructor(
    private readonly clock: Clock,
    private readonly monotonicMs: () => number = nowMs,
  ) {}

  /**
   * Schedules `target` for flushing. Callers mark a target once per flush, when its queue goes
   * from empty to non-empty, so a target is queued at most once; one closed meanwhile ignores
   * the flush.
   */
  markDirty(target: PacedFlush): void {
    this.queue.push(target);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // A slice costs one write per stream it flushes. When the last one was long (a fan-out to
    // many streams), wait as long again before the next, so frames coalesce and requests get
    // their turn; a slice of a few streams takes microseconds and waits for nothing.
    // An idle pacer (no slice for a while, nothing queued before this target) flushes at the end
    // of the current callback: the frames of this worker message go out together, without
    // waiting for the rest of the loop's poll phase (other messages, their replies' writes) and
    // the check phase. A live record to a few watchers leaves right behind its commit.
    const now = this.monotonicMs();
    const waitMs = this.nextFlushAtMs - now;
    if (this.queue.length - this.head === 1 && now - this.nextFlushAtMs >= IDLE_MS) queueMicrotask(this.slice);
    else if (waitMs < 1) setImmediate(this.slice);
    else setTimeout(this.slice, waitMs);
  }

  private readonly slice = (): void => {
    this.scheduled = false;
    const q = this.queue;
    const t0 = this.monotonicMs();
    const wallMs = this.clock.now();
    const shared = new SharedChunks();
    let i = this.head;
    while (i < q.length) {
      q[i++]!.flush(wallMs, shared);
      if (i % SLICE_CHECK_EVERY === 0 && this.monotonicMs() - t0 >= SLICE_MS) break;
    }
    if (i === q.length) {
      this.queue = [];
      this.head = 0;
    } else if (i >= 1024 && i * 2 >= q.length) {
      // Under steady traffic the queue never empties: drop the flushed prefix now and then, so
      // it holds at most about twice the dirty streams (each is queued at most once).
      this.queue = q.slice(i);
      this.head = 0;
    } else {
      this.head = i;
    }
    const t1 = this.monotonicMs();
    // Wait as long as the slice ran, but not longer than a slice's worth of work: a slice that
    // took longer on the clock was preempted (two shared cores), not busier, and waiting out
    // the preemption too would only add it to every record's delay.
    this.nextFlushAtMs = t1 + Math.min(t1 - t0, SLICE_MS);
    if (this.head < this.queue.length) this.schedule();
  };
}
