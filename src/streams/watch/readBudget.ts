// ReadBudget (main thread): the pulls one watch stream may have in flight (docs/WATCH.md "Slow
// consumers"). A read is counted at `readBytes` (a record frame holds about max_batch_bytes) from
// the moment it starts until its frame is queued on the connection. A read starts when what the
// connection holds plus the reads in flight, this one included, stay within `highWaterBytes`, or,
// when none is in flight, as long as the connection holds no more than that; and never more than
// `readsMax` run at once (a read brings at least one record, which may be larger than a small
// max_batch_bytes). So a stream holds at most its high water plus about one read, whatever the
// number of its topics. Reads that cannot start wait their turn in arrival order: a topic that
// reads again goes behind its stream's other topics.
// Invariants: `readsInFlight` counts turns taken and not yet given back, at most `readsMax`;
// each waiter is answered once, true when its turn starts, false when the stream closed first.
import { invariant } from '../../core/invariant.js';

export interface ReadBudgetOptions {
  /** The connection's high water (it pauses once it holds more). */
  highWaterBytes: number;
  /** What one read is counted at while in flight. */
  readBytes: number;
  /** Reads in flight at most, whatever their size. */
  readsMax: number;
  /** Bytes the connection holds now (queued for the flush or in user space); Infinity while paused. */
  heldBytes(): number;
}

export class ReadBudget {
  private readsInFlight = 0;
  /** Reads waiting for a turn, oldest first; at most one per topic of the stream. */
  private readonly waiting: ((started: boolean) => void)[] = [];
  private isClosed = false;

  constructor(private readonly opts: ReadBudgetOptions) {}

  get inFlight(): number {
    return this.readsInFlight;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  /**
   * A turn to read: at once when there is room and nobody waits, else after the reads waiting
   * already. Resolves false when the stream closes first (the caller then holds no turn).
   */
  take(): Promise<boolean> {
    if (this.isClosed) return Promise.resolve(false);
    if (this.waiting.length === 0 && this.hasRoom()) {
      this.readsInFlight++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** A turn ends: its frame is queued on the connection (or the read brought nothing to send). */
  done(): void {
    invariant(this.readsInFlight > 0, 'a read turn given back that was never taken');
    this.readsInFlight--;
    this.startWaiting();
  }

  /** Room may have opened (a flush left the connection, or it resumed): waiting reads start, in turn. */
  startWaiting(): void {
    while (this.waiting.length > 0 && this.hasRoom()) {
      this.readsInFlight++;
      this.waiting.shift()!(true);
    }
  }

  /** The stream closed: every waiting read is told so; none starts again. */
  close(): void {
    this.isClosed = true;
    for (const resolve of this.waiting.splice(0)) resolve(false);
  }

  private hasRoom(): boolean {
    if (this.readsInFlight >= this.opts.readsMax) return false;
    const held = this.opts.heldBytes();
    if (this.readsInFlight === 0) return held <= this.opts.highWaterBytes;
    return held + (this.readsInFlight + 1) * this.opts.readBytes <= this.opts.highWaterBytes;
  }
}
