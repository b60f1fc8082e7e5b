// The priority scheduler behind the pressure gate (docs/ARCHITECTURE.md "Admission"). Pure: time comes in as
// arguments, nothing here touches a clock or a timer (the shell is pressure/gate.ts).
//
// Without pressure every request runs at once. Under pressure a request parks, and parked
// requests run highest score first, at most `inflightMax` at a time. The score is
// `priority + agingPerMs × waited`: every waiter ages at the same rate, so the order is the
// order of the static key `priority − agingPerMs × parkedAtMs` (a heap, no re-sorting), and a
// low priority only waits longer, never forever. A bounded waiter still parked at its deadline
// is shed (429); when the park is full the lowest score is shed first (the newcomer itself if
// it is the lowest). Unbounded waiters (disable_backpressure) are never shed for pressure.
import { MinHeap } from '../core/minHeap.js';

export interface SchedulerOptions {
  /** Priority points a waiter gains per ms parked. */
  agingPerMs: number;
  /** How long a bounded waiter may park before it is shed. */
  parkBoundMs: number;
  /** Bounded waiters parked at most (unbounded ones are not counted). */
  maxParked: number;
  /** Requests running at once while under pressure. */
  inflightMax: number;
}

export interface Waiter<T> {
  readonly no: number;
  readonly priority: number;
  readonly parkedAtMs: number;
  /** Infinity for an unbounded waiter. */
  readonly deadlineMs: number;
  readonly key: number;
  readonly payload: T;
  gone: boolean;
}

export type Arrival<T> = { kind: 'run' } | { kind: 'parked'; waiter: Waiter<T>; shed: Waiter<T> | undefined } | { kind: 'refused' };

export class PressureScheduler<T> {
  private readonly best = new MinHeap<Waiter<T>>((a, b) => a.key > b.key || (a.key === b.key && a.no < b.no));
  private readonly worst = new MinHeap<Waiter<T>>((a, b) => a.key < b.key || (a.key === b.key && a.no > b.no));
  private readonly deadlines = new MinHeap<Waiter<T>>((a, b) => a.deadlineMs < b.deadlineMs);
  private nextNo = 1;
  private boundedParked = 0;
  parked = 0;
  inflight = 0;

  constructor(readonly opts: SchedulerOptions) {}

  /** A request arrives: run now (no pressure), park, or be refused (the park is full of better waiters). */
  arrive(priority: number, bounded: boolean, nowMs: number, pressured: boolean, payload: T): Arrival<T> {
    if (!pressured && this.parked === 0) {
      this.inflight++;
      return { kind: 'run' };
    }
    const key = priority - this.opts.agingPerMs * nowMs;
    let shed: Waiter<T> | undefined;
    if (bounded && this.boundedParked >= this.opts.maxParked) {
      const w = this.peekLive(this.worst, (x) => x.deadlineMs !== Infinity);
      if (!w || w.key >= key) return { kind: 'refused' };
      this.remove(w);
      shed = w;
    }
    const waiter: Waiter<T> = {
      no: this.nextNo++,
      priority,
      parkedAtMs: nowMs,
      deadlineMs: bounded ? nowMs + this.opts.parkBoundMs : Infinity,
      key,
      payload,
      gone: false,
    };
    this.best.push(waiter);
    if (bounded) {
      this.worst.push(waiter);
      this.deadlines.push(waiter);
      this.boundedParked++;
    }
    this.parked++;
    return { kind: 'parked', waiter, shed };
  }

  /** An arrival while nothing is parked and there is no pressure: running at once. */
  runNow(): void {
    this.inflight++;
  }

  /** A running request finished. */
  done(): void {
    if (this.inflight > 0) this.inflight--;
  }

  /** The waiters to run now, best first, up to the inflight bound (none while pressured is false? all). */
  dispatch(pressured: boolean): Waiter<T>[] {
    const out: Waiter<T>[] = [];
    while (this.parked > 0 && (!pressured || this.inflight < this.opts.inflightMax)) {
      const w = this.peekLive(this.best, () => true);
      if (!w) break;
      this.remove(w);
      this.inflight++;
      out.push(w);
    }
    return out;
  }

  /** Bounded waiters whose deadline has come: shed them (429). */
  expire(nowMs: number): Waiter<T>[] {
    const out: Waiter<T>[] = [];
    for (;;) {
      const w = this.deadlines.peek();
      if (!w || (!w.gone && w.deadlineMs > nowMs)) break;
      this.deadlines.pop();
      if (w.gone) continue;
      this.remove(w);
      out.push(w);
    }
    return out;
  }

  /** The earliest deadline of a parked bounded waiter. */
  nextDeadlineMs(): number | undefined {
    for (;;) {
      const w = this.deadlines.peek();
      if (!w) return undefined;
      if (!w.gone) return w.deadlineMs;
      this.deadlines.pop();
    }
  }

  private remove(w: Waiter<T>): void {
    w.gone = true;
    this.parked--;
    if (w.deadlineMs !== Infinity) this.boundedParked--;
    // Removal is lazy (a gone entry leaves a heap when it reaches the top), so the worst and
    // deadline heaps kept every waiter of past pressure episodes, with its reply closures
    // (~7000 of them on main after one 100k-topic run). With nothing parked, every entry left
    // is gone: drop them all.
    if (this.parked === 0) {
      this.best.clear();
      this.worst.clear();
      this.deadlines.clear();
    }
  }

  /** Heap entries held, live or gone (tests: nothing is kept once nothing is parked). */
  get heldEntries(): number {
    return this.best.size + this.worst.size + this.deadlines.size;
  }

  /** The top live entry of a heap (stale entries popped) that passes `ok`, without removing it. */
  private peekLive(h: MinHeap<Waiter<T>>, ok: (w: Waiter<T>) => boolean): Waiter<T> | undefined {
    for (;;) {
      const w = h.peek();
      if (!w) return undefined;
      if (!w.gone && ok(w)) return w;
      h.pop();
    }
  }
}
