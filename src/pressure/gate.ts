// PressureGate (main thread, docs/ARCHITECTURE.md "Admission"): the shell around PressureScheduler. A request that
// goes to a worker passes the gate first. Without pressure it runs at once. Under pressure it
// parks; parked requests run best score first (effective_priority plus aging) once a short
// coalescing window has passed (so a burst is ordered as a whole, not first come first
// served), then as running ones finish. A bounded waiter still parked at its bound, or pushed
// out of a full park by better ones, is refused with 429 throttled and detail.retry_after_ms.
import { PressureScheduler, type Waiter } from './scheduler.js';
import type { PressureMonitor } from './monitor.js';

export interface GateOptions {
  parkBoundMs: number;
  maxParked: number;
  inflightMax: number;
  windowMs: number;
  agingPerS: number;
}

/** How a pass through the gate ended. */
export type Admit = { ok: true; waitedMs: number; release: () => void } | { ok: false; retryAfterMs: number };

interface Pending {
  resolve: (a: Admit) => void;
}

export class PressureGate {
  private readonly sched: PressureScheduler<Pending>;
  private windowTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private deadlineAt = Infinity;
  shedTotal = 0;
  parkedTotal = 0;

  constructor(
    private readonly monitor: PressureMonitor,
    private readonly opts: GateOptions,
    private readonly now: () => number,
  ) {
    this.sched = new PressureScheduler({
      agingPerMs: opts.agingPerS / 1000,
      parkBoundMs: opts.parkBoundMs,
      maxParked: opts.maxParked,
      inflightMax: opts.inflightMax,
    });
    monitor.onRelief = () => this.dispatch();
  }

  get parked(): number {
    return this.sched.parked;
  }

  /** Requests past the gate that still hold their slot. */
  get running(): number {
    return this.sched.inflight;
  }

  /** True while an arrival runs at once whatever it asks (no pressure, nothing parked). */
  get runsAtOnce(): boolean {
    return !this.monitor.pressured && this.sched.parked === 0;
  }

  /**
   * The pass of an arrival while `runsAtOnce`: counted as running, like `admit`'s immediate
   * admission; `leave()` once, when its work is done, is the release.
   */
  enterNow(): void {
    this.sched.runNow();
  }

  leave(): void {
    this.sched.done();
    if (!this.windowTimer) this.dispatch();
  }

  /** Passes the gate; `release` must be called once the request's worker work is done. */
  admit(priority: number, bounded: boolean): Promise<Admit> | Admit {
    const t0 = this.now();
    const pending: Pending = { resolve: () => {} };
    const a = this.sched.arrive(priority, bounded, t0, this.monitor.pressured, pending);
    if (a.kind === 'run') return { ok: true, waitedMs: 0, release: this.releaser() };
    if (a.kind === 'refused') return this.refusal();
    this.parkedTotal++;
    const result = new Promise<Admit>((resolve) => (pending.resolve = (x) => resolve(x.ok ? { ...x, waitedMs: this.now() - t0 } : x)));
    if (a.shed) this.shed(a.shed);
    if (!this.windowTimer) this.windowTimer = setTimeout(() => ((this.windowTimer = undefined), this.dispatch()), this.opts.windowMs);
    this.armDeadline();
    return result;
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.leave();
    };
  }

  private refusal(): Admit {
    this.shedTotal++;
    return { ok: false, retryAfterMs: this.opts.parkBoundMs };
  }

  private shed(w: Waiter<Pending>): void {
    w.payload.resolve(this.refusal());
  }

  private dispatch(): void {
    for (const w of this.sched.dispatch(this.monitor.pressured)) w.payload.resolve({ ok: true, waitedMs: 0, release: this.releaser() });
  }

  private armDeadline(): void {
    const next = this.sched.nextDeadlineMs();
    if (next === undefined || next >= this.deadlineAt) return;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineAt = next;
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = undefined;
        this.deadlineAt = Infinity;
        for (const w of this.sched.expire(this.now())) this.shed(w);
        this.armDeadline();
      },
      Math.max(0, next - this.now()),
    );
  }
}
