// Measures the calling thread's event loop (docs/ARCHITECTURE.md "Admission"): utilisation over the last second
// (`performance.eventLoopUtilization`, a ring of 100 ms snapshots) and the p99 event-loop delay
// over the last second (`monitorEventLoopDelay`). Used by each worker and by the HTTP thread.
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';

const WINDOW_TICKS = 10;

export class LoopSampler {
  private readonly ring: EventLoopUtilization[] = [];
  private readonly delay: IntervalHistogram;
  private ticks = 0;
  elu = 0;
  lagP99Ms = 0;

  constructor() {
    this.delay = monitorEventLoopDelay({ resolution: 10 });
    this.delay.enable();
    this.ring.push(performance.eventLoopUtilization());
  }

  /** Call every ~100 ms: updates `elu` and `lagP99Ms` over the last second. */
  sample(): void {
    const now = performance.eventLoopUtilization();
    const oldest = this.ring[0]!;
    this.elu = performance.eventLoopUtilization(now, oldest).utilization;
    this.ring.push(now);
    if (this.ring.length > WINDOW_TICKS) this.ring.shift();
    this.lagP99Ms = this.delay.count > 0 ? this.delay.percentile(99) / 1e6 : 0;
    if (++this.ticks % WINDOW_TICKS === 0) this.delay.reset();
  }

  stop(): void {
    this.delay.disable();
  }
}
