// Writes this worker's row of the shared gauges every 100 ms (core/gauges.ts): event-loop
// utilisation and p99 delay (docs/ARCHITECTURE.md "Admission"), bytes queued for the WAL (docs/ARCHITECTURE.md "Admission"), and, when the
// max_total_bytes cap is on, the live bytes of its topics (docs/API.md "Limits"). Runs on the worker thread.
import { GAUGE, setGauge } from '../core/gauges.js';
import { LoopSampler } from '../pressure/loopSampler.js';

const SAMPLE_MS = 100;

export function startGaugeSampler(
  gauges: Float64Array,
  worker: number,
  read: { liveBytes: (() => number) | undefined; walQueuedBytes: () => number },
): () => void {
  const loop = new LoopSampler();
  const tick = () => {
    loop.sample();
    setGauge(gauges, worker, GAUGE.elu, loop.elu);
    setGauge(gauges, worker, GAUGE.lagP99Ms, loop.lagP99Ms);
    setGauge(gauges, worker, GAUGE.walQueuedBytes, read.walQueuedBytes());
    if (read.liveBytes) setGauge(gauges, worker, GAUGE.liveBytes, read.liveBytes());
  };
  const timer = setInterval(tick, SAMPLE_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    loop.stop();
  };
}
