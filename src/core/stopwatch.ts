// Measured time for the performance block and metrics. State logic never reads it.
import { performance } from 'node:perf_hooks';

export function nowMs(): number {
  return performance.now();
}

export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
