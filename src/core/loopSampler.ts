// Measures the calling thread's event loop (docs/ARCHITECTURE.md "Admission"): utilisation over the last second
// (`performance.eventLoopUtilization`, a ring of 100 ms snapshots) and the p99 event-loop delay
// over the last second (`monitorEventLoopDelay`). Used by each worker and by the HTTP thread.
// The delay histogram's 10 ms timer wakes the thread 100 times a second, which on an idle server
// was most of its wake-ups; it runs only while the loop does work (docs/PERFORMANCE.md "An idle
// server"). While it is off, each sample's own lateness stands in for it, so a long block that
// starts on an idle loop is still seen.
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';

const WINDOW_TICKS = 10;
/**
 * A tick whose loop worked less than this share of the time (2 ms in 100) ran nothing that
 * could delay a timer by anything the pressure thresholds care about: the histogram goes off.
 */
const IDLE_ELU = 0.02;

export class LoopSampler {
  private readonly ring: EventLoopUtilization[] = [];
  private readonly delay: IntervalHistogram;
  private delayOn = true;
  private lastTick: EventLoopUtilization;
  private lastTickAt = performance.now();
  /** The largest lateness of a sample taken while the histogram was off, this window (ms). */
  private idleLateMs = 0;
  private ticks = 0;
  elu = 0;
  lagP99Ms = 0;

  /** `tickMs`: how often the owner calls sample(). */
  constructor(private readonly tickMs = 100) {
    this.delay = monitorEventLoopDelay({ resolution: 10 });
    this.delay.enable();
    this.lastTick = performance.eventLoopUtilization();
    this.ring.push(this.lastTick);
  }

  /** The delay histogram is running (the loop did work in the last tick). */
  get measuringDelay(): boolean {
    return this.delayOn;
  }

  /** Call every `tickMs`: updates `elu` and `lagP99Ms` over the last second. */
  sample(): void {
    const at = performance.now();
    const now = performance.eventLoopUtilization();
    const oldest = this.ring[0]!;
    this.elu = performance.eventLoopUtilization(now, oldest).utilization;
    this.ring.push(now);
    if (this.ring.length > WINDOW_TICKS) this.ring.shift();
    if (!this.delayOn) this.idleLateMs = Math.max(this.idleLateMs, at - this.lastTickAt - this.tickMs);
    const histP99 = this.delay.count > 0 ? this.delay.percentile(99) / 1e6 : 0;
    this.lagP99Ms = Math.max(histP99, this.idleLateMs);
    if (++this.ticks % WINDOW_TICKS === 0) {
      this.delay.reset();
      this.idleLateMs = 0;
    }
    const busy = performance.eventLoopUtilization(now, this.lastTick).utilization >= IDLE_ELU;
    if (busy !== this.delayOn) {
      if (busy) this.delay.enable();
      else this.delay.disable();
      this.delayOn = busy;
    }
    this.lastTick = now;
    this.lastTickAt = at;
  }

  stop(): void {
    this.delay.disable();
  }
}
