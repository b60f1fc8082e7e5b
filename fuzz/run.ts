// Long fuzz sessions (`npm run fuzz -- <target> [--seed S] [--runs N]`). Every session prints its
// seed first; a failure prints the seed and what reproduces it exactly.
//   --queue    the queue/lease model (fuzz/queueModel.ts) on the real queue actor; a failure
//              prints the shrunk counterexample path (the same seed also reruns in
//              test/unit/queueModel.test.ts via QUEUE_MODEL_SEED); with --tools the mix
//              includes term, redrive, the lease list and blocking claims (QUEUE_TOOLS_SEED)
//   --router   the router forwarding model (fuzz/routerModel.ts) on the real source and dest
//              actors; reruns in test/unit/routerModel.test.ts via ROUTER_MODEL_SEED
//   --storage  the crash sweep (fuzz/storageSweep.ts): a whole in-process server crashed at fs
//              calls of seeded workloads on a simulated disk; `--runs` seeds (default 4),
//              `--points N` per run (default: every call, every mode), `--case '<json>'` reruns
//              one printed failure
import fc from 'fast-check';
import { queueProperty } from './queueModel.js';
import { storageCase, storageSweep } from './storageSweep.js';
import { routerProperty } from './routerModel.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const out = (line: string) => void process.stdout.write(`${line}\n`);

const targets: Record<string, (seed: number, runs: number | undefined, path: string | undefined) => void | Promise<void>> = {
  '--queue': (seed, runs, path) =>
    fc.assert(queueProperty(Number(arg('--commands') ?? 120), process.argv.includes('--tools')), {
      seed,
      numRuns: runs ?? 2000,
      ...(path ? { path } : {}),
      includeErrorInReport: true,
    }),
  '--router': (seed, runs, path) =>
    fc.assert(routerProperty(Number(arg('--commands') ?? 120)), {
      seed,
      numRuns: runs ?? 1000,
      ...(path ? { path } : {}),
      includeErrorInReport: true,
    }),
  '--storage': async (seed, runs) => {
    const points = arg('--points');
    const failed = await storageSweep({
      seed: arg('--seed') ?? String(seed),
      runs: runs ?? 4,
      points: points === undefined ? undefined : Number(points),
      out,
    });
    if (failed > 0) throw new Error(`${failed} crash case(s) failed (each printed above with its --case)`);
  },
};

async function main(): Promise<void> {
  const target = process.argv.slice(2).find((a) => a in targets);
  if (!target) {
    out(
      `usage: npm run fuzz -- ${Object.keys(targets).join(' | ')} [--seed S] [--runs N] [--path P] [--commands C] [--points N] [--case JSON]`,
    );
    process.exit(2);
  }
  const one = arg('--case');
  if (target === '--storage' && one !== undefined) process.exit((await storageCase(one, out)) ? 0 : 1);
  const seed = arg('--seed') !== undefined ? Number(arg('--seed')) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  const runs = arg('--runs') !== undefined ? Number(arg('--runs')) : undefined;
  // The same arguments with the seed rerun the same session.
  const rest: string[] = [];
  for (let i = 2; i < process.argv.length; i++) {
    if (process.argv[i] === '--seed') i++;
    else rest.push(process.argv[i]!);
  }
  out(
    `fuzz ${target.slice(2)}: seed=${arg('--seed') ?? seed}${runs !== undefined ? ` runs=${runs}` : ''} (reproduce: npm run fuzz -- ${rest.join(' ')} --seed ${arg('--seed') ?? seed})`,
  );
  const started = Date.now();
  try {
    await targets[target]!(seed, runs, arg('--path'));
    out(`ok in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (err) {
    out((err as Error).message);
    out(`FAILED with seed ${arg('--seed') ?? seed}`);
    process.exit(1);
  }
}

void main();
