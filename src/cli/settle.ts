// `spool ack|nack <queue> <seq[:lease_id]...>`: settle leased jobs (docs/API.md "Queues"). A lease id after
// the seq fences the call to that delivery; seqs the server skipped (not held by --node, or a
// stale lease id) are listed, and make the exit code 3 so scripts notice.
import { Command } from 'commander';
import {
  EXIT,
  clientFor,
  nodeOption,
  parseCount,
  printJson,
  usageError,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';

/** `17` or `17:lease_0a1b…` → seqs and (when any was given) lease ids, "" for the rest. */
export function parseJobs(args: string[]): { seqs: bigint[]; leaseIds: string[] | undefined } {
  const seqs: bigint[] = [];
  const ids: string[] = [];
  for (const a of args) {
    const m = /^(\d+)(?::(lease_[0-9a-f]+))?$/.exec(a);
    if (!m) throw usageError(`not a job: ${JSON.stringify(a)} (expected <seq> or <seq>:<lease_id>)`);
    seqs.push(BigInt(m[1]!));
    ids.push(m[2] ?? '');
  }
  return { seqs, leaseIds: ids.some((x) => x !== '') ? ids : undefined };
}

type SettleOpts = ClientOpts & { node: string; delayMs?: number };

function settle(kind: 'ack' | 'nack', outcome: Outcome): Command {
  const cmd = withClientOptions(new Command(kind))
    .description(kind === 'ack' ? 'acknowledge jobs: removes them from the queue' : 'give jobs back: ready again now or after --delay-ms')
    .argument('<queue>')
    .argument('<jobs...>', 'seqs, each optionally with its lease id: 17 or 17:lease_…')
    .addOption(nodeOption());
  if (kind === 'nack') cmd.option('--delay-ms <ms>', 'ready again after this long', parseCount, 0);
  return cmd.action(async (queue: string, jobs: string[], o: SettleOpts) => {
    const { seqs, leaseIds } = parseJobs(jobs);
    const spool = clientFor(o);
    const req = { node: o.node, seqs, lease_ids: leaseIds };
    const r = kind === 'ack' ? await spool.ack(queue, req) : await spool.nack(queue, { ...req, delay_ms: o.delayMs });
    const done = 'acked' in r ? r.acked : r.nacked;
    if (o.json) printJson(r);
    else {
      const skipped = r.skipped.length ? `; skipped (not held by ${o.node}, or a stale lease id): ${r.skipped.join(' ')}` : '';
      process.stdout.write(`${kind}ed ${done}${skipped}\n`);
    }
    outcome.code = r.skipped.length ? EXIT.rejected : EXIT.ok;
  });
}

export const ackCommand = (outcome: Outcome) => settle('ack', outcome);
export const nackCommand = (outcome: Outcome) => settle('nack', outcome);
