// `npm run fuzz -- --storage`: the crash sweep (test/support/crashSweep.ts) on more workloads than
// `npm test` runs. Each run is one seed (S, S+1, …; 4 runs unless `--runs`): its workload plan,
// file sizes and crash points follow from it. With `--points N` a run crashes at N calls drawn from its boot and
// workload (modes in turn, every fourth with a second crash during recovery); without, at
// every call in all three modes. A failure prints its case, and `--case '<json>'` reruns exactly that.
import { seededRng } from '../src/core/rng.js';
import { dryRun, runCase, sweepPoints, type CrashCase } from '../test/support/crashSweep.js';
import type { CrashMode } from '../test/support/simDisk.js';

export interface StorageSweepOptions {
  seed: string;
  runs: number;
  /** Crash points per run; undefined: every call, every mode. */
  points: number | undefined;
  out: (line: string) => void;
}

const MODES: CrashMode[] = ['durable-only', 'random', 'random-dirs'];

async function casesOf(seed: string, points: number | undefined): Promise<CrashCase[]> {
  const dry = await dryRun(seed);
  if (points === undefined) return MODES.flatMap((mode) => sweepPoints(dry).map((at) => ({ seed, mode, at })));
  const rng = seededRng(`points/${seed}`);
  return Array.from({ length: points }, (_, k): CrashCase => {
    const at = 1 + Math.floor(rng.next() * dry.totalCalls);
    const mode = MODES[k % 3]!;
    return k % 4 === 3
      ? { seed, mode, at, again: { at: 1 + Math.floor(rng.next() * dry.recoveryCalls), mode: MODES[(k >> 2) % 3]! } }
      : { seed, mode, at };
  });
}

/** Runs the sweep; returns the number of failed cases (each reported in full). */
export async function storageSweep(o: StorageSweepOptions): Promise<number> {
  let failedTotal = 0;
  const base = Number(o.seed);
  for (let run = 0; run < o.runs; run++) {
    const seed = Number.isSafeInteger(base) ? String(base + run) : run === 0 ? o.seed : `${o.seed}+${run}`;
    const started = Date.now();
    const cases = await casesOf(seed, o.points);
    let failed = 0;
    for (const c of cases) {
      const r = await runCase(c);
      if (r.violations.length === 0) continue;
      failed++;
      o.out(r.report);
    }
    o.out(`seed ${seed}: ${cases.length} crash cases, ${failed} failed, ${((Date.now() - started) / 1000).toFixed(1)} s`);
    failedTotal += failed;
  }
  return failedTotal;
}

/** Reruns one case (a failure's printed JSON); returns whether it passed. */
export async function storageCase(json: string, out: (line: string) => void): Promise<boolean> {
  const r = await runCase(JSON.parse(json) as CrashCase);
  out(r.violations.length === 0 ? `ok: ${json} (${r.acked} operations acked before the crash)` : r.report);
  return r.violations.length === 0;
}
