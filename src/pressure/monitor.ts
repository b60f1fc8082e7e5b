// PressureMonitor (main thread, docs/ARCHITECTURE.md "Admission"): every 100 ms samples the HTTP thread's event loop
// and reads each worker's gauges (utilisation and p99 delay over the last second, WAL queue
// depth). Pressure is on while any of them is at or past its threshold, or always with the
// SERVICE_PRESSURE_FORCE test hook. Reported in /v0/metrics.
import { GAUGE, gauge } from '../core/gauges.js';
import { LoopSampler } from './loopSampler.js';

const SAMPLE_MS = 100;

export interface PressureThresholds {
  elu: number;
  lagMs: number;
  walQueueBytes: number;
  force: boolean;
}

export interface PressureReport {
  pressured: boolean;
  forced: boolean;
  thresholds: { elu: number; lag_ms: number; wal_queue_bytes: number };
  http: { elu: number; lag_p99_ms: number };
  workers: { elu: number; lag_p99_ms: number; wal_queued_bytes: number }[];
}

export class PressureMonitor {
  private timer: NodeJS.Timeout | undefined;
  pressured: boolean;
  /** Called when pressure turns off (parked work may all run). */
  onRelief: (() => void) | undefined;

  constructor(
    private readonly t: PressureThresholds,
    private readonly gauges: Float64Array,
    private readonly workers: number,
    /** This thread's loop; a test passes fixed readings. */
    private readonly loop: Pick<LoopSampler, 'sample' | 'stop' | 'elu' | 'lagP99Ms'> = new LoopSampler(),
  ) {
    this.pressured = t.force;
  }

  start(): void {
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.loop.stop();
  }

  private over(elu: number, lagMs: number): boolean {
    return elu >= this.t.elu || lagMs >= this.t.lagMs;
  }

  sample(): void {
    this.loop.sample();
    let on = this.t.force || this.over(this.loop.elu, this.loop.lagP99Ms);
    let walQueued = 0;
    for (let i = 0; i < this.workers; i++) {
      if (this.over(gauge(this.gauges, i, GAUGE.elu), gauge(this.gauges, i, GAUGE.lagP99Ms))) on = true;
      walQueued += gauge(this.gauges, i, GAUGE.walQueuedBytes);
    }
    if (this.t.walQueueBytes > 0 && walQueued >= this.t.walQueueBytes) on = true;
    const was = this.pressured;
    this.pressured = on;
    if (was && !on) this.onRelief?.();
  }

  report(): PressureReport {
    const r3 = (x: number) => Math.round(x * 1000) / 1000;
    const workers = [];
    for (let i = 0; i < this.workers; i++) {
      workers.push({
        elu: r3(gauge(this.gauges, i, GAUGE.elu)),
        lag_p99_ms: r3(gauge(this.gauges, i, GAUGE.lagP99Ms)),
        wal_queued_bytes: gauge(this.gauges, i, GAUGE.walQueuedBytes),
      });
    }
    return {
      pressured: this.pressured,
      forced: this.t.force,
      thresholds: { elu: this.t.elu, lag_ms: this.t.lagMs, wal_queue_bytes: this.t.walQueueBytes },
      http: { elu: r3(this.loop.elu), lag_p99_ms: r3(this.loop.lagP99Ms) },
      workers,
    };
  }
}
