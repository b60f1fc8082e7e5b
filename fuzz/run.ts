// Long fuzz sessions (`npm run fuzz -- <target> [--seed S] [--runs N]`). Every session prints its
// seed first; a failure prints the seed and the shrunk counterexample path, which reproduce it
// exactly (the same seed also reruns in test/unit/queueModel.test.ts via QUEUE_MODEL_SEED).
//   --queue   the queue/lease model (fuzz/queueModel.ts) on the real queue actor
import fc from 'fast-check';
import { queueProperty } from './queueModel.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const targets: Record<string, (seed: number, runs: number, path: string | undefined) => void> = {
  '--queue': (seed, runs, path) => fc.assert(queueProperty(Number(arg('--commands') ?? 120)), { seed, numRuns: runs, ...(path ? { path } : {}), includeErrorInReport: true }),
};

const target = process.argv.slice(2).find((a) => a in targets);
if (!target) {
  process.stderr.write(`usage: npm run fuzz -- ${Object.keys(targets).join(' | ')} [--seed S] [--runs N] [--path P] [--commands C]\n`);
  process.exit(2);
}
const seed = arg('--seed') !== undefined ? Number(arg('--seed')) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
const runs = Number(arg('--runs') ?? 2000);
process.stdout.write(`fuzz ${target.slice(2)}: seed=${seed} runs=${runs} (reproduce: npm run fuzz -- ${target} --seed ${seed})\n`);
const started = Date.now();
try {
  targets[target]!(seed, runs, arg('--path'));
  process.stdout.write(`ok: ${runs} runs in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
} catch (err) {
  process.stdout.write(`${(err as Error).message}\n`);
  process.stdout.write(`FAILED with seed ${seed}\n`);
  process.exit(1);
}
