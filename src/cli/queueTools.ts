// `spool leases|term|redrive` (docs/CLI.md "Queue tools"; docs/QUEUES.md "Leases", "Term",
// "Redrive"): who holds which job of a queue; failing jobs for good; moving dead-lettered jobs
// back into their queue. Each a thin layer over one client call, exit codes as the other client
// commands (a term that skipped a seq is exit 3, as ack).
import { Command } from 'commander';
import {
  EXIT,
  clientFor,
  nodeOption,
  parsePositive,
  parseSeq,
  printJson,
  table,
  usageError,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';
import { parseJobs } from './settle.js';
import type { LeaseInfo, TagMatch } from '../client/types.js';

/** "in 12.3s" / "expired": a deadline as the operator reads it. */
function until(deadlineMs: number, nowMs: number): string {
  const left = deadlineMs - nowMs;
  return left < 0 ? 'expired' : `in ${(left / 1000).toFixed(1)}s`;
}

export function leasesCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('leases'))
    .description('who holds what: the live leases of a queue (SEQ NODE DELIVERIES DEADLINE VIA), every page')
    .argument('<queue>')
    .option('--node <node>', 'only the leases this worker holds')
    .option('--limit <n>', 'at most this many (default: all)', parsePositive)
    .action(async (queue: string, o: ClientOpts & { node?: string; limit?: number }) => {
      const spool = clientFor(o);
      const all: LeaseInfo<bigint>[] = [];
      for await (const l of spool.allLeases(queue, { node: o.node, limit: o.limit === undefined ? 1000 : Math.min(o.limit, 1000) })) {
        all.push(l);
        if (o.limit !== undefined && all.length >= o.limit) break;
      }
      if (o.json) printJson(all);
      else {
        const now = Date.now();
        const rows = [
          ['SEQ', 'NODE', 'DELIVERIES', 'DEADLINE', 'VIA'],
          ...all.map((l) => [String(l.$seq), l.node, String(l.deliveries), until(l.deadline, now), l.via]),
        ];
        process.stdout.write(all.length ? table(rows) : '');
      }
      outcome.code = EXIT.ok;
    });
}

export function termCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('term'))
    .description("fail jobs for good: to the queue's dead-letter topic at once, whatever their deliveries (released when it has none)")
    .argument('<queue>')
    .argument('<jobs...>', 'seqs held by --node, each optionally with its lease id: 17 or 17:lease_…')
    .option('--reason <text>', 'stamped as $dead_letter_reason (at most 1024 bytes)')
    .addOption(nodeOption())
    .action(async (queue: string, jobs: string[], o: ClientOpts & { node: string; reason?: string }) => {
      const { seqs, leaseIds } = parseJobs(jobs);
      const r = await clientFor(o).term(queue, { node: o.node, seqs, lease_ids: leaseIds, reason: o.reason });
      if (o.json) printJson(r);
      else {
        const what =
          r.dead_letter === null
            ? `released ${r.released} (${queue} has no dead-letter topic)`
            : `moved ${r.terminated} to ${r.dead_letter}`;
        const skipped = r.skipped.length ? `; skipped (not held by ${o.node}, or a stale lease id): ${r.skipped.join(' ')}` : '';
        process.stdout.write(`${what}${skipped}\n`);
      }
      outcome.code = r.skipped.length ? EXIT.rejected : EXIT.ok;
    });
}

interface RedriveOpts extends ClientOpts {
  from?: string;
  seq?: bigint[];
  tag?: string;
  tagPrefix?: string;
  max?: number;
}

export function redriveCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('redrive'))
    .description('move dead-lettered jobs back into their queue: all of them, or those given by --seq / --tag / --tag-prefix (both: AND)')
    .argument('<queue>')
    .option('--from <topic>', "the dead-letter topic (default: the queue's dead_letter)")
    .option('--seq <seq>', 'a seq of the dead-letter topic (repeat for more)', (v: string, prev: bigint[] | undefined) => [
      ...(prev ?? []),
      parseSeq(v),
    ])
    .option('--tag <tag>', 'only jobs with exactly this tag')
    .option('--tag-prefix <prefix>', 'only jobs whose tag starts with this')
    .option('--max <n>', 'at most this many jobs (default and most: 10000 per call)', parsePositive)
    .action(async (queue: string, o: RedriveOpts) => {
      if (o.tag !== undefined && o.tagPrefix !== undefined) throw usageError('give --tag or --tag-prefix, not both');
      if (o.tagPrefix !== undefined && o.tagPrefix.includes('*')) throw usageError('--tag-prefix is a literal prefix (no *)');
      const match: TagMatch | undefined =
        o.tag !== undefined ? ['tag', 'Eq', o.tag] : o.tagPrefix !== undefined ? ['tag', 'Glob', `${o.tagPrefix}*`] : undefined;
      const r = await clientFor(o).redrive(queue, { from: o.from, seqs: o.seq, match, max: o.max });
      if (o.json) printJson(r);
      else {
        const skipped = r.skipped.length ? `; not moved (absent, or not ${queue}'s): ${r.skipped.join(' ')}` : '';
        const more = r.more ? '; more remain (run it again)' : '';
        process.stdout.write(
          `moved ${r.redriven} job${r.redriven === 1 ? '' : 's'} from ${r.from} back into ${r.topic}${skipped}${more}\n`,
        );
      }
      outcome.code = EXIT.ok;
    });
}
