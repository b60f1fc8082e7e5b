// FlushPacer (main thread): one per process, shared by every SSE stream (watch and work). A
// stream that queued bytes marks itself dirty; the pacer flushes every dirty stream once per
// event-loop iteration, after the iteration's worker messages and read replies, so all frames a
// stream gets in one iteration leave in one write. Invariant: flushing takes at most half the
// main thread (after a flush of d ms the next waits d ms), so under load frames coalesce and
// requests get their turn.
import type { Clock } from '../core/clock.js';
import { nowMs } from '../core/stopwatch.js';

/** Something with queued output: written out by the pacer, with the wall time of the flush. */
export interface PacedFlush {
  flush(nowMs: number): void;
}

export class FlushPacer {
  private dirty: PacedFlush[] = [];
  /** Earliest measured time (stopwatch ms) of the next flush. */
  private nextFlushAtMs = 0;

  /** `clock` stamps each flush (streams time their heartbeats from it). */
  constructor(private readonly clock: Clock) {}

  /**
   * Schedules `target` for the next flush. Callers mark a target once per flush, when its
   * queue goes from empty to non-empty; a target closed meanwhile ignores the flush.
   */
  markDirty(target: PacedFlush): void {
    if (this.dirty.length === 0) {
      // A flush costs one write per dirty stream. When the last one was long (a fan-out to
      // many streams), wait as long again before the next, so frames coalesce and requests get
      // their turn; a flush of a few streams takes microseconds and waits for nothing.
      const waitMs = this.nextFlushAtMs - nowMs();
      if (waitMs < 1) setImmediate(() => this.flush());
      else setTimeout(() => this.flush(), waitMs);
    }
    this.dirty.push(target);
  }

  private flush(): void {
    const targets = this.dirty;
    this.dirty = [];
    const t0 = nowMs();
    const wallMs = this.clock.now();
    for (const t of targets) t.flush(wallMs);
    const t1 = nowMs();
    this.nextFlushAtMs = t1 + (t1 - t0);
  }
}
