// The crash sweep (test/support/crashSweep.ts): a whole server hosted in this process on a
// SimDisk, frozen at every fs call of its boot and of a seeded workload (test/support/crashPlan.ts:
// topics of all four durability classes, a queue with durable leases claimed and acked, a topic
// deleted and created again, record deletes, config changes, checkpoints; segments seal and WAL
// files rotate), then crashed ('durable-only': only fsynced bytes and names survive; 'random':
// unsynced writes land or not, the last one torn; 'random-dirs': and unsynced names land or not)
// and recovered (the workload ends with a compaction: copies, then their swap at a checkpoint),
// and the oracle (test/support/crashOracle.ts) checks that nothing acked was lost,
// nothing appeared, no seq is reused and durable leases hold. A failure prints the case (seed,
// mode, call), which `npm run fuzz -- --storage --case '<json>'` reruns; more seeds and every
// mode at every call: `npm run fuzz -- --storage --seed S`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dryRun, runCase, sweepPoints, type CaseResult, type CrashCase } from '../support/crashSweep.js';
import { DEFAULT_SEED } from '../support/crashPlan.js';
import type { CrashMode } from '../support/simDisk.js';

const MODES: CrashMode[] = ['durable-only', 'random', 'random-dirs'];

/** Fails with the first failing case's full report and one line for each other failure. */
function assertAllPassed(results: CaseResult[]): void {
  const failed = results.filter((r) => r.violations.length > 0);
  if (failed.length === 0) return;
  const others = failed.slice(1).map((r) => `  ${JSON.stringify(r.crashCase)}: ${r.violations[0]!.split('\n')[0]}`);
  assert.fail(
    `${failed.length} of ${results.length} crash cases failed.\n${failed[0]!.report}${others.length ? `\nother failures:\n${others.join('\n')}` : ''}`,
  );
}

/** Runs the cases of `modeAt(call)` at every call of the default seed's boot and workload. */
async function sweepEveryCall(label: string, modeAt: (at: number) => CrashMode): Promise<CaseResult[]> {
  const started = performance.now();
  const dry = await dryRun(DEFAULT_SEED);
  const results: CaseResult[] = [];
  for (const at of sweepPoints(dry)) results.push(await runCase({ seed: DEFAULT_SEED, mode: modeAt(at), at }));
  assertAllPassed(results);
  // The sweep has teeth: it crashes at hundreds of points, most of them with plenty acked.
  assert.ok(results.length >= 500, `${results.length} cases`);
  assert.ok(results.filter((r) => r.acked >= 20).length > results.length / 2, 'most crashes come after many acks');
  process.stdout.write(
    `# crash sweep (${label}): ${results.length} cases (${dry.bootCalls} boot + ${dry.totalCalls - dry.bootCalls} workload calls) in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
  return results;
}

test('crash sweep (durable-only): a crash at every fs call of boot and workload loses nothing acked', async () => {
  await sweepEveryCall('durable-only', () => 'durable-only');
});

test('crash sweep (random, random-dirs): a torn crash at every fs call of boot and workload loses nothing acked', async () => {
  // Every call once, the two random modes in turn (both at every call would double the time).
  const results = await sweepEveryCall('random / random-dirs', (at) => (at % 2 ? 'random' : 'random-dirs'));
  for (const mode of ['random', 'random-dirs']) {
    const of = results.filter((r) => r.crashCase.mode === mode);
    assert.ok(of.some((r) => r.tornTail) && of.some((r) => r.quarantined), `${mode} crashes reach torn and quarantined WAL tails`);
  }
});

test('crash sweep: a second crash during the recovery from the first loses nothing acked either', async () => {
  const dry = await dryRun(DEFAULT_SEED);
  const cases: CrashCase[] = [];
  // Every 5th workload call, then a crash at a call spread over the recovery (its length varies
  // with the state it recovers; a point past its end crashes right after it).
  for (let k = 0, at = dry.bootCalls + 3; at <= dry.totalCalls; at += 5, k++) {
    cases.push({
      seed: DEFAULT_SEED,
      mode: MODES[k % 3]!,
      at,
      again: { at: 1 + ((k * 37) % dry.recoveryCalls), mode: MODES[(k >> 1) % 3]! },
    });
  }
  const results: CaseResult[] = [];
  for (const c of cases) results.push(await runCase(c));
  assertAllPassed(results);
  assert.ok(results.length >= 60, `${results.length} cases`);
});
