// The crash sweep: "SIGKILL (or power loss) at any instant loses nothing acked". A case boots a
// fresh in-process world (test/support/crashWorld.ts) on a SimDisk that freezes at one chosen fs
// call, during the boot or during the seeded workload (test/support/crashPlan.ts, run by
// crashWorkload.ts); the world is abandoned, the disk crashes ('durable-only': only what was
// fsynced survives; 'random': unsynced writes land or not, the last one torn), and a new world
// recovers on it (optionally crashing once more during that recovery). The oracle (test/support/crashOracle.ts) then checks
// the recovered world against what was acked. Cases are deterministic: a CrashCase (seed, mode,
// call) reproduces one exactly (`npm run fuzz -- --storage --case '<json>'`).
import path from 'node:path';
import type { Settings } from '../../src/config.js';
import { SimDisk, type CrashMode, type FreezeInfo } from './simDisk.js';
import { CrashWorld, sweepSettings } from './crashWorld.js';
import { makeWorkload, type Workload } from './crashPlan.js';
import { newHistory, runWorkload, type History } from './crashWorkload.js';
import { checkRecovered } from './crashOracle.js';

export interface CrashCase {
  /** Workload seed: the plan, and with it every fs call, follow from it. */
  seed: string;
  mode: CrashMode;
  /** The disk freezes after this fs call, counted from the first boot's first call. */
  at: number;
  /** A second crash during the recovery boot: after its `at`-th call, in `mode`. */
  again?: { at: number; mode: CrashMode };
}

export interface CaseResult {
  crashCase: CrashCase;
  violations: string[];
  /** Everything needed to see what happened, filled only when there are violations. */
  report: string;
  /** Operations acked before the crash (to see that the sweep checks something). */
  acked: number;
  /** The final recovery cut a torn WAL tail, and quarantined bytes of it (from its log). */
  tornTail: boolean;
  quarantined: boolean;
}

/** The call counts of one undisturbed run of a seed's boot and workload. */
export interface DryRun {
  seed: string;
  /** Calls of the first boot (crash points 1..bootCalls hit the boot). */
  bootCalls: number;
  /** Calls of boot and workload together. */
  totalCalls: number;
  /** Calls of a recovery boot after a crash at the end of the workload. */
  recoveryCalls: number;
  /** The call log of the run, to compare two runs (determinism). */
  callLog: string;
}

/** A recovery that has not finished by then is hung (it takes a few ms). */
const RECOVERY_TIMEOUT_MS = 10_000;

export function settingsFor(workload: Workload): Settings {
  return sweepSettings(workload.settings);
}

function diskFor(c: CrashCase): SimDisk {
  return new SimDisk({ seed: `${c.seed}/${c.mode}/${c.at}${c.again ? `/${c.again.mode}/${c.again.at}` : ''}` });
}

/** Boots `world`, or stops when the disk freezes first; a boot that throws before that is an error. */
async function bootUnlessFrozen(world: CrashWorld, disk: SimDisk): Promise<boolean> {
  const booted = world.boot().then(() => true);
  booted.catch(() => undefined); // once frozen, nothing the old world does matters
  return Promise.race([booted, disk.frozen.then(() => false)]);
}

export async function dryRun(seed: string): Promise<DryRun> {
  const workload = makeWorkload(seed);
  const disk = new SimDisk({ seed: `${seed}/dry` });
  const world = new CrashWorld(disk, settingsFor(workload));
  await world.boot();
  const bootCalls = disk.calls;
  await runWorkload(world, disk, workload);
  const totalCalls = disk.calls;
  const callLog = disk.formatCallLog(1000);
  world.halt();
  disk.crash('durable-only');
  const again = new CrashWorld(disk, settingsFor(workload));
  await again.boot();
  const recoveryCalls = disk.calls - totalCalls;
  again.halt();
  return { seed, bootCalls, totalCalls, recoveryCalls, callLog };
}

/** What a case saw, for its checks and its failure report. */
interface CaseLog {
  violations: string[];
  notes: string[];
  worlds: CrashWorld[];
  froze?: FreezeInfo;
  callLogAtFreeze?: string;
  afterCrash?: string;
}

/** Runs one case; violations are returned, never thrown. */
export async function runCase(c: CrashCase): Promise<CaseResult> {
  const workload = makeWorkload(c.seed);
  const settings = settingsFor(workload);
  const disk = diskFor(c);
  const history = newHistory(workload);
  const log: CaseLog = { violations: [], notes: [], worlds: [] };
  await runUntilCrash(disk, settings, workload, history, c, log);
  if (c.again) await crashDuringRecovery(disk, settings, c.again, log);
  const last = await recoverAndCheck(disk, settings, history, log);
  const recoveryLog = last.logs.join('\n');
  return {
    crashCase: c,
    violations: log.violations,
    report: log.violations.length === 0 ? '' : describeFailure(c, history, log),
    acked: history.acked,
    tornTail: /torn tail/.test(recoveryLog),
    quarantined: /quarantined/.test(recoveryLog),
  };
}

/** Boot and workload until call `c.at`, then the crash. */
async function runUntilCrash(
  disk: SimDisk,
  settings: Settings,
  workload: Workload,
  history: History,
  c: CrashCase,
  log: CaseLog,
): Promise<void> {
  disk.freezeAt(c.at);
  const world = new CrashWorld(disk, settings);
  log.worlds.push(world);
  try {
    if (await bootUnlessFrozen(world, disk)) await runWorkload(world, disk, workload, history);
  } catch (err) {
    log.violations.push(`before the crash: ${(err as Error).stack ?? String(err)}`);
  }
  if (!disk.isFrozen) {
    log.notes.push(`the run ended after ${disk.calls} calls, before call ${c.at}: crashed at its end`);
    disk.freeze();
  }
  log.froze = await disk.frozen;
  log.callLogAtFreeze = disk.formatCallLog(40);
  world.halt();
  disk.crash(c.mode);
  log.afterCrash = disk.describe();
}

/** A recovery that crashes after its `again.at`-th call. */
async function crashDuringRecovery(disk: SimDisk, settings: Settings, again: NonNullable<CrashCase['again']>, log: CaseLog): Promise<void> {
  const base = disk.calls;
  disk.freezeAt(base + again.at);
  const world = new CrashWorld(disk, settings);
  log.worlds.push(world);
  try {
    if (await bootUnlessFrozen(world, disk))
      log.notes.push(`the recovery finished after ${disk.calls - base} calls, before call ${again.at}`);
  } catch (err) {
    log.violations.push(`the first recovery threw: ${(err as Error).stack ?? String(err)}`);
  }
  if (!disk.isFrozen) disk.freeze();
  world.halt();
  disk.crash(again.mode);
}

/** The recovery that must succeed, and the oracle on what it recovered; returns the world. */
async function recoverAndCheck(disk: SimDisk, settings: Settings, history: History, log: CaseLog): Promise<CrashWorld> {
  const world = new CrashWorld(disk, settings);
  log.worlds.push(world);
  let timer: NodeJS.Timeout | undefined;
  let recovered = false;
  try {
    const hung = new Promise<never>(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error(`recovery did not finish in ${RECOVERY_TIMEOUT_MS} ms`)), RECOVERY_TIMEOUT_MS)),
    );
    await Promise.race([world.boot(), hung]);
    recovered = true;
    log.violations.push(...(await checkRecovered(world, history)));
    // A topic delete renames the directory to `<dir>.deleted` before removing it: a crash
    // between the two leaves it, and the recovery removes it (it is no topic's directory).
    const topics = path.join(settings.dataDir, 'topics');
    const fsx = disk.fs();
    const left = fsx.existsSync(topics) ? fsx.readdirSync(topics).filter((n) => n.endsWith('.deleted')) : [];
    if (left.length > 0) log.violations.push(`a deleted topic's directory is left after the recovery: ${left.join(', ')}`);
  } catch (err) {
    log.violations.push(
      `${recovered ? 'the recovered server failed a request' : 'recovery threw'}: ${(err as Error).stack ?? String(err)}`,
    );
  } finally {
    clearTimeout(timer);
    world.halt();
  }
  return world;
}

function describeFailure(c: CrashCase, history: History, log: CaseLog): string {
  return [
    `crash sweep case failed: seed=${c.seed} mode=${c.mode} at call ${c.at}${c.again ? `, again at recovery call ${c.again.at} (${c.again.mode})` : ''}`,
    `reproduce: npm run fuzz -- --storage --case '${JSON.stringify(c)}'`,
    'violations:',
    ...log.violations.map((v) => `  - ${v}`),
    ...log.notes.map((n) => `note: ${n}`),
    `froze after call #${log.froze?.call} ${log.froze?.op} ${log.froze?.path ?? ''}; ${history.issued} operations issued, ${history.acked} acked`,
    'last calls before the freeze:',
    log.callLogAtFreeze ?? '',
    'the disk right after the crash:',
    log.afterCrash ?? '',
    ...log.worlds.map((w, i) => `world ${i + 1} logged:\n${w.logs.map((l) => `  ${l}`).join('\n')}`),
  ].join('\n');
}

/** The crash points of a sweep: every call of the boot and the workload, or every `stride`-th. */
export function sweepPoints(dry: DryRun, stride = 1): number[] {
  const out: number[] = [];
  for (let at = 1; at <= dry.totalCalls; at += stride) out.push(at);
  return out;
}
