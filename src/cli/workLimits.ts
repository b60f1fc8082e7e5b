// When `spool work` stops and whether it can start (docs/CLI.md "work"); runs on the CLI's main
// thread beside the client's Worker:
// - JobBudget: --max-jobs counts jobs finished, not commands run, and never lets more than that
//   many finish: a job is run only while finished + running stays under the limit; one beyond
//   it waits for a running job to fail (which frees its slot) and is given back unrun once the
//   limit is reached (as a stop gives back the jobs pushed meanwhile).
// - untilEmpty: --until-empty's check that the queue holds no job while none runs here.
// - commandProblem: why the job command cannot be started, looked up as spawn will, so a
//   missing handler fails at once instead of when the first job arrives.
import fs from 'node:fs';
import path from 'node:path';
import { sleep } from '../client/backoff.js';
import type { Spool } from '../client/spool.js';

/** How often --until-empty looks at the queue while no job runs here. */
const EMPTY_CHECK_MS = 250;

export class JobBudget {
  private finishedJobs = 0;
  private runningJobs = 0;
  private closed = false;
  private waiters: (() => void)[] = [];

  /** `maxFinished`: Infinity without --max-jobs. */
  constructor(private readonly maxFinished: number) {}

  get finished(): number {
    return this.finishedJobs;
  }

  /** --max-jobs jobs have finished. */
  get spent(): boolean {
    return this.finishedJobs >= this.maxFinished;
  }

  /** No job is running or waiting to run here. */
  get idle(): boolean {
    return this.runningJobs === 0 && this.waiters.length === 0;
  }

  /** Resolves true when the job may run now, false when it is to be given back unrun. */
  async admit(): Promise<boolean> {
    while (!this.closed && this.finishedJobs + this.runningJobs >= this.maxFinished) {
      if (this.spent) return false;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    if (this.closed) return false;
    this.runningJobs++;
    return true;
  }

  /** A job admitted earlier is over; `finished` when it will not run again (done, or failed for good). */
  end(finished: boolean): void {
    this.runningJobs--;
    if (finished) this.finishedJobs++;
    this.wake();
  }

  /** The worker is stopping: no job is admitted any more, the waiting ones are given back. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r();
  }
}

/**
 * Resolves once the queue holds no job at all (its live count is 0: none ready, leased or
 * delayed) while `idle()`; looks every EMPTY_CHECK_MS. A failed look counts as not empty (the
 * worker itself reports a queue that is gone). Rejects when `signal` aborts.
 */
export async function untilEmpty(spool: Spool<'bigint'>, queue: string, idle: () => boolean, signal: AbortSignal): Promise<void> {
  for (;;) {
    if (idle()) {
      const count = await spool.getTopic(queue, { touch: false, signal }).then(
        (s) => s.count,
        () => -1,
      );
      if (count === 0 && idle()) return;
    }
    await sleep(EMPTY_CHECK_MS, signal);
  }
}

/**
 * Why `command` cannot be started, or undefined when it can: found as spawn finds it (a path as
 * given, else the first executable file of that name on `PATH`). Windows (PATHEXT) and an unset
 * PATH are left to spawn, whose failure on the first job stops the worker too.
 */
export function commandProblem(command: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (process.platform === 'win32') return undefined;
  const hasDir = command.includes('/');
  if (!hasDir && env.PATH === undefined) return undefined;
  const candidates = hasDir ? [command] : env.PATH!.split(':').map((dir) => path.join(dir || '.', command));
  let denied = false;
  for (const file of candidates) {
    try {
      if (!fs.statSync(file).isFile()) {
        denied = true; // a directory of that name: spawn fails with EACCES
        continue;
      }
      fs.accessSync(file, fs.constants.X_OK);
      return undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EACCES') denied = true;
    }
  }
  return denied ? 'permission denied' : 'command not found';
}
