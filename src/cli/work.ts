// `spool work <queue> -- <command> [args...]`: a queue worker that runs a command per job. The job's
// data (verbatim JSON text plus a newline) is the command's stdin; its seq, lease id, deliveries
// and tag are in SPOOL_JOB_* environment variables; its stdout and stderr are ours. Exit status 0
// acks the job, --term-exit-code's status fails it for good (termed: to the dead-letter topic at
// once), anything else nacks it with backoff. The lease is extended while the command runs;
// if it is lost anyway (the job goes to another worker) the command gets SIGTERM. The first
// SIGINT/SIGTERM stops taking jobs and waits for running commands; a second one terminates them.
// It also stops after --max-jobs jobs finished or, with --until-empty, once the queue is empty
// (workLimits.ts); a command that cannot be started fails before any job is taken.
import { Command, InvalidArgumentError } from 'commander';
import { spawn } from 'node:child_process';
import {
  EXIT,
  clientFor,
  note,
  nodeOption,
  onStopSignal,
  parseCount,
  parsePositive,
  printJson,
  usageError,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';
import { JobBudget, commandProblem, untilEmpty } from './workLimits.js';
import { UnrecoverableError, type JobContext } from '../client/worker.js';
import type { RawJob } from '../client/types.js';

interface WorkOpts extends ClientOpts {
  node: string;
  concurrency: number;
  leaseMs?: number;
  poll?: boolean;
  maxJobs?: number;
  untilEmpty?: boolean;
  termExitCode?: number;
  verbose?: boolean;
}

class CommandMissing extends Error {}

/** An exit status a command can give (1..255; 0 is success). */
function parseExitStatus(v: string): number {
  const n = parsePositive(v);
  if (n > 255) throw new InvalidArgumentError('expected an exit status from 1 to 255');
  return n;
}

/**
 * Runs the command for one job; resolves on exit 0, rejects otherwise: with an
 * UnrecoverableError (the job is termed) on exit status `termExitCode`.
 */
function runCommand(argv: string[], queue: string, job: RawJob<bigint>, ctx: JobContext, termExitCode: number | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      SPOOL_QUEUE: queue,
      SPOOL_NODE: ctx.node,
      SPOOL_JOB_SEQ: String(job.$seq),
      SPOOL_JOB_LEASE_ID: job.lease_id,
      SPOOL_JOB_DELIVERIES: String(job.deliveries),
      SPOOL_JOB_TAG: job.$tag,
    };
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'inherit', 'inherit'], env });
    const kill = () => child.kill('SIGTERM');
    ctx.signal.addEventListener('abort', kill, { once: true });
    child.stdin!.on('error', () => undefined); // a command that ignores its stdin may close it early
    child.stdin!.end(`${job.data}\n`);
    child.once('error', (e: NodeJS.ErrnoException) => {
      ctx.signal.removeEventListener('abort', kill);
      reject(
        e.code === 'ENOENT' || e.code === 'EACCES'
          ? new CommandMissing(`cannot run ${argv[0]}: ${e.code === 'ENOENT' ? 'command not found' : 'permission denied'}`)
          : e,
      );
    });
    child.once('close', (code, signal) => {
      ctx.signal.removeEventListener('abort', kill);
      if (code === 0) resolve();
      else if (code !== null && code === termExitCode)
        reject(new UnrecoverableError(`${argv[0]} exited with status ${code} (--term-exit-code)`));
      else reject(new Error(signal ? `${argv[0]} was killed by ${signal}` : `${argv[0]} exited with status ${code}`));
    });
  });
}

/** A job the --max-jobs budget had no room for: given back unrun (nacked at once). */
class NotRun extends Error {}

type StopReason = 'max-jobs' | 'empty' | 'signal';

interface Counts {
  /** Commands started. */
  runs: number;
  /** Jobs nacked unrun (NotRun). */
  givenBack: number;
}

/**
 * The worker's handler: admits the job against the budget, runs the command, and counts the job
 * finished when it exited 0 or failed on its last delivery.
 */
function jobHandler(
  argv: string[],
  queue: string,
  o: WorkOpts,
  budget: JobBudget,
  counts: Counts,
  lastDelivery: (deliveries: number) => boolean,
  onSpent: () => void,
) {
  return async (job: RawJob<bigint>, ctx: JobContext): Promise<void> => {
    if (!(await budget.admit())) {
      counts.givenBack++;
      throw new NotRun();
    }
    let finished = false;
    try {
      counts.runs++;
      if (o.verbose) note(`spool work: job ${job.$seq} (delivery ${job.deliveries}) started`);
      await runCommand(argv, queue, job, ctx, o.termExitCode);
      finished = true;
      if (o.verbose) note(`spool work: job ${job.$seq} done`);
    } catch (e) {
      finished = e instanceof UnrecoverableError || (!(e instanceof CommandMissing) && lastDelivery(job.deliveries));
      throw e;
    } finally {
      budget.end(finished);
      if (budget.spent) onSpent();
    }
  };
}

function printSummary(
  sum: {
    queue: string;
    node: string;
    started: number;
    finished: number;
    acked: number;
    nacked: number;
    terminated: number;
    lost: number;
    stopped: StopReason;
  },
  json: boolean | undefined,
): void {
  const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  if (json) printJson(sum);
  else
    note(
      `spool work: stopped (${sum.stopped}): ${plural(sum.finished, 'job')} finished in ${plural(sum.started, 'run')}: ${sum.acked} acked, ${sum.nacked} nacked, ${sum.terminated} terminated, ${sum.lost} lost`,
    );
}

export function workCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('work'))
    .description('run a command per job: the job data on its stdin, ack on exit 0, nack otherwise')
    .usage('[options] <queue> -- <command> [args...]')
    .argument('<queue>')
    .argument('<command...>', 'the command and its arguments (after --)')
    .addOption(nodeOption())
    .option('-c, --concurrency <n>', 'commands running at once', parsePositive, 1)
    .option('--lease-ms <ms>', "lease per job, extended while the command runs (default: the queue's lease_ms)", parsePositive)
    .option('--poll', 'claim jobs by polling instead of a /work push stream')
    .option(
      '--max-jobs <n>',
      'stop after this many jobs finished (exit 0, or failed on their last delivery); retries do not count',
      parseCount,
    )
    .option('--until-empty', 'stop once the queue holds no job (none ready, leased or delayed) and none runs here')
    .option(
      '--term-exit-code <status>',
      'a command exiting with this status fails its job for good: termed, to the dead-letter topic at once',
      parseExitStatus,
    )
    .option('-v, --verbose', 'a line on stderr for every job')
    .action((queue: string, argv: string[], o: WorkOpts) => runWork(queue, argv, o, outcome));
}

/**
 * A job given back unrun comes back after this: the worker is stopping, and its `/work` stream,
 * open until the give-backs are answered, would otherwise be leased the job again (a second
 * delivery spent on a job never run, which can dead-letter a healthy one).
 */
const GIVE_BACK_DELAY_MS = 1000;

/**
 * The delay before a failed job is delivered again: GIVE_BACK_DELAY_MS for a job not run; none
 * for a command that cannot start (not the job's fault) or a failure on the job's last delivery
 * (the server dead-letters it at once); else 1 s doubling per delivery, at most a minute.
 */
function retryDelayMs(deliveries: number, err: unknown, lastDelivery: (deliveries: number) => boolean): number {
  if (err instanceof NotRun) return GIVE_BACK_DELAY_MS;
  if (err instanceof CommandMissing || lastDelivery(deliveries)) return 0;
  return Math.min(60_000, 1000 * 2 ** Math.max(0, deliveries - 1));
}

/** `spool work`: runs the worker until it stops (max jobs, empty queue, a signal), then prints the summary. */
async function runWork(queue: string, argv: string[], o: WorkOpts, outcome: Outcome): Promise<void> {
  if (argv.length === 0 || argv[0] === '') throw usageError('no command to run (spool work <queue> -- <command> [args...])');
  const problem = commandProblem(argv[0]!);
  if (problem) throw usageError(`cannot run ${argv[0]}: ${problem}`);
  const spool = clientFor(o);
  const config = (await spool.getTopic(queue, { touch: false })).config;
  // A failure on this delivery is final: the server dead-letters the job instead of delivering it again.
  const lastDelivery = (deliveries: number) =>
    config.max_deliveries > 0 && config.dead_letter !== null && deliveries >= config.max_deliveries;
  const budget = new JobBudget(o.maxJobs ?? Infinity);
  const counts: Counts = { runs: 0, givenBack: 0 };
  let stopped: StopReason | undefined;
  let missing: CommandMissing | undefined;
  const stopFor = (why: StopReason) => {
    stopped ??= why;
    budget.close();
    return worker.stop();
  };
  const worker = spool.worker(
    queue,
    jobHandler(argv, queue, o, budget, counts, lastDelivery, () => void stopFor('max-jobs')),
    {
      node: o.node,
      // Never more at once than --max-jobs: the budget would not run them, and each job pushed
      // beyond it would be leased, given back unrun and leased again (two deliveries spent).
      concurrency: Math.min(o.concurrency, o.maxJobs ?? Infinity),
      leaseMs: o.leaseMs ?? config.lease_ms,
      mode: o.poll ? 'poll' : 'push',
      raw: true,
      nackDelayMs: (deliveries, err) => retryDelayMs(deliveries, err, lastDelivery),
      onError: (err, job) => {
        if (err instanceof NotRun) return;
        if (err instanceof CommandMissing) {
          missing = err;
          budget.close();
          void worker.stop();
          return;
        }
        note(`spool work: ${job ? `job ${String(job.seq)}: ` : ''}${(err as Error).message}`);
      },
    },
  );
  if (budget.spent) void stopFor('max-jobs');
  const emptyCheck = new AbortController();
  if (o.untilEmpty)
    untilEmpty(spool, queue, () => budget.idle, emptyCheck.signal).then(
      () => stopFor('empty'),
      () => undefined,
    );
  const stop = onStopSignal();
  void stop.promise.then(() => {
    note('spool work: stopping; waiting for running jobs (signal again to terminate them)');
    const again = onStopSignal();
    void again.promise.then(() => worker.stop({ timeoutMs: 0 }));
    void worker.done.finally(() => again.dispose());
    return stopFor('signal');
  });
  try {
    await worker.done;
  } finally {
    stop.dispose();
    emptyCheck.abort();
  }
  if (missing) throw usageError(missing.message);
  const s = worker.stats;
  printSummary(
    {
      queue,
      node: worker.node,
      started: counts.runs,
      finished: budget.finished,
      acked: s.acked,
      nacked: Math.max(0, s.nacked - counts.givenBack),
      terminated: s.terminated,
      lost: s.lost,
      stopped: stopped ?? 'signal',
    },
    o.json,
  );
  outcome.code = EXIT.ok;
}
