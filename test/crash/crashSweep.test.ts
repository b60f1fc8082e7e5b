// The crash sweep (test/support/crashSweep.ts): a whole server hosted in this process on a
// SimDisk, frozen at every fs call of its boot and of a seeded workload (test/support/crashPlan.ts:
// topics of all four durability classes, a queue with durable leases claimed and acked, a topic
// deleted and created again, record deletes, config changes, checkpoints; segments seal and WAL
// files rotate), then crashed ('durable-only': only fsynced bytes survive; 'random': unsynced
// writes land or not, the last one torn) and recovered, and the oracle (test/support/crashOracle.ts)
// checks that nothing acked was lost, nothing appeared, no seq is reused and durable leases hold. A failure prints the case (seed, mode,
// call), which `npm run fuzz -- --storage --case '<json>'` reruns; more seeds:
// `npm run fuzz -- --storage --seed S`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dryRun, runCase, sweepPoints, type CaseResult, type CrashCase } from '../support/crashSweep.js';
import { DEFAULT_SEED } from '../support/crashPlan.js';
import type { CrashMode } from '../support/simDisk.js';

const MODES: CrashMode[] = ['durable-only', 'random'];

/** Fails with the first failing case's full report and one line for each other failure. */
function assertAllPassed(results: CaseResult[]): void {
  const failed = results.filter((r) => r.violations.length > 0);
  if (failed.length === 0) return;
  const others = failed.slice(1).map((r) => `  ${JSON.stringify(r.crashCase)}: ${r.violations[0]!.split('\n')[0]}`);
  assert.fail(`${failed.length} of ${results.length} crash cases failed.\n${failed[0]!.report}${others.length ? `\nother failures:\n${others.join('\n')}` : ''}`);
}

test('crash sweep: a crash at every fs call of boot and workload, durable-only and random, loses nothing acked', async () => {
  const started = performance.now();
  const dry = await dryRun(DEFAULT_SEED);
  const results: CaseResult[] = [];
  for (const mode of MODES) for (const at of sweepPoints(dry)) results.push(await runCase({ seed: DEFAULT_SEED, mode, at }));
  assertAllPassed(results);
  // The sweep has teeth: most cases crash with plenty acked, and random crashes tear WAL tails
  // (some with valid frames after the tear, which are quarantined).
  assert.ok(results.length >= 600, `${results.length} cases`);
  assert.ok(results.filter((r) => r.acked >= 20).length > results.length / 2, 'most crashes come after many acks');
  assert.ok(results.some((r) => r.tornTail) && results.some((r) => r.quarantined), 'random crashes reach torn and quarantined WAL tails');
  process.stdout.write(`# crash sweep: ${results.length} cases (${dry.bootCalls} boot + ${dry.totalCalls - dry.bootCalls} workload calls, 2 modes) in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
});

test('crash sweep: a second crash during the recovery from the first loses nothing acked either', async () => {
  const dry = await dryRun(DEFAULT_SEED);
  const cases: CrashCase[] = [];
  // Every 5th workload call, then a crash at a call spread over the recovery (its length varies
  // with the state it recovers; a point past its end crashes right after it).
  for (let k = 0, at = dry.bootCalls + 3; at <= dry.totalCalls; at += 5, k++) {
    cases.push({ seed: DEFAULT_SEED, mode: MODES[k % 2]!, at, again: { at: 1 + ((k * 37) % dry.recoveryCalls), mode: MODES[(k >> 1) % 2]! } });
  }
  const results: CaseResult[] = [];
  for (const c of cases) results.push(await runCase(c));
  assertAllPassed(results);
  assert.ok(results.length >= 60, `${results.length} cases`);
});
