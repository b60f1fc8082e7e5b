// Per-worker gauges shared with the main thread (docs/API.md "Limits" max_total_bytes, docs/ARCHITECTURE.md "Admission" pressure):
// one Float64 row per worker in a SharedArrayBuffer, written by that worker's sampler only and
// read by main without locks (each value is a whole sample; a torn read across fields is harmless
// for a threshold check).

export const GAUGE = {
  /** Live bytes over the worker's topics (only sampled when SERVICE_MAX_TOTAL_BYTES is set). */
  liveBytes: 0,
  /** Event-loop utilisation over the last second, 0..1. */
  elu: 1,
  /** p99 event-loop delay over the last second, ms. */
  lagP99Ms: 2,
  /** Bytes queued in front of the WAL writer and not yet written. */
  walQueuedBytes: 3,
} as const;

export const GAUGE_STRIDE = 4;

export function newGauges(workers: number): Float64Array {
  return new Float64Array(new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT * GAUGE_STRIDE * workers));
}

export function gauge(g: Float64Array, worker: number, field: number): number {
  return g[worker * GAUGE_STRIDE + field]!;
}

export function setGauge(g: Float64Array, worker: number, field: number, v: number): void {
  g[worker * GAUGE_STRIDE + field] = v;
}

/** Live bytes over every worker's topics, as last sampled (at most ~100 ms old). */
export function totalLiveBytes(g: Float64Array, workers: number): number {
  let n = 0;
  for (let i = 0; i < workers; i++) n += gauge(g, i, GAUGE.liveBytes);
  return n;
}
