// `spool work <queue> -- <command> [args...]`: a queue worker that runs a command per job. The job's
// data (verbatim JSON text plus a newline) is the command's stdin; its seq, lease id, deliveries
// and tag are in SPOOL_JOB_* environment variables; its stdout and stderr are ours. Exit status 0
// acks the job, anything else nacks it with backoff. The lease is extended while the command runs;
// if it is lost anyway (the job goes to another worker) the command gets SIGTERM. The first
// SIGINT/SIGTERM stops taking jobs and waits for running commands; a second one terminates them.
import { Command } from 'commander';
import { spawn } from 'node:child_process';
import { EXIT, clientFor, note, nodeOption, onStopSignal, parseCount, parsePositive, printJson, usageError, withClientOptions, type ClientOpts, type Outcome } from './common.js';
import type { JobContext } from '../client/worker.js';
import type { RawJob } from '../client/types.js';

interface WorkOpts extends ClientOpts {
  node: string;
  concurrency: number;
  leaseMs?: number;
  poll?: boolean;
  maxJobs?: number;
  verbose?: boolean;
}

class CommandMissing extends Error {}

/** Runs the command for one job; resolves on exit 0, rejects otherwise. */
function runCommand(argv: string[], queue: string, job: RawJob<bigint>, ctx: JobContext): Promise<void> {
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
      reject(e.code === 'ENOENT' || e.code === 'EACCES' ? new CommandMissing(`cannot run ${argv[0]}: ${e.code === 'ENOENT' ? 'command not found' : 'permission denied'}`) : e);
    });
    child.once('close', (code, signal) => {
      ctx.signal.removeEventListener('abort', kill);
      if (code === 0) resolve();
      else reject(new Error(signal ? `${argv[0]} was killed by ${signal}` : `${argv[0]} exited with status ${code}`));
    });
  });
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
    .option('--max-jobs <n>', 'stop after starting this many jobs', parseCount)
    .option('-v, --verbose', 'a line on stderr for every job')
    .action(async (queue: string, argv: string[], o: WorkOpts) => {
      if (argv.length === 0 || argv[0] === '') throw usageError('no command to run (spool work <queue> -- <command> [args...])');
      const spool = clientFor(o);
      let started = 0;
      let missing: CommandMissing | undefined;
      const worker = spool.worker(
        queue,
        async (job, ctx) => {
          started++;
          if (o.maxJobs !== undefined && started >= o.maxJobs) void worker.stop();
          if (o.verbose) note(`spool work: job ${job.$seq} (delivery ${job.deliveries}) started`);
          await runCommand(argv, queue, job, ctx);
          if (o.verbose) note(`spool work: job ${job.$seq} done`);
        },
        {
          node: o.node,
          concurrency: o.concurrency,
          leaseMs: o.leaseMs,
          mode: o.poll ? 'poll' : 'push',
          raw: true,
          // A command that cannot start is not the job's fault: give it back at once and stop.
          nackDelayMs: (deliveries, err) => (err instanceof CommandMissing ? 0 : Math.min(60_000, 1000 * 2 ** Math.max(0, deliveries - 1))),
          onError: (err, job) => {
            if (err instanceof CommandMissing) {
              missing = err;
              void worker.stop();
              return;
            }
            note(`spool work: ${job ? `job ${String(job.seq)}: ` : ''}${(err as Error).message}`);
          },
        },
      );
      if (o.maxJobs === 0) void worker.stop();
      const stop = onStopSignal();
      void stop.promise.then(() => {
        note('spool work: stopping; waiting for running jobs (signal again to terminate them)');
        const again = onStopSignal();
        void again.promise.then(() => worker.stop({ timeoutMs: 0 }));
        void worker.done.finally(() => again.dispose());
        return worker.stop();
      });
      try {
        await worker.done;
      } finally {
        stop.dispose();
      }
      if (missing) throw usageError(missing.message);
      const s = worker.stats;
      if (o.json) printJson({ queue, node: worker.node, started: s.started, acked: s.acked, nacked: s.nacked, lost: s.lost });
      else note(`spool work: stopped after ${s.started} job${s.started === 1 ? '' : 's'}: ${s.acked} acked, ${s.nacked} nacked, ${s.lost} lost`);
      outcome.code = EXIT.ok;
    });
}
