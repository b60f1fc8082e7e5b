// `spool claim <queue>`: lease jobs (docs/API.md "Queues"). Prints one line per job, tab-separated:
// seq, lease id, deliveries, data (verbatim); with --json the claim response. Settle them with
// `spool ack` / `spool nack` using the same --node (default `cli@<host>`, or SPOOL_NODE).
import { Command } from 'commander';
import {
  EXIT,
  clientFor,
  nodeOption,
  parseCount,
  parsePositive,
  stringify,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';
import type { RawJob } from '../client/types.js';

/** A job as JSON with its data and meta spliced in verbatim (they are raw texts here). */
export function jobJson(j: RawJob<bigint>): string {
  const { data, meta, ...rest } = j;
  return `${stringify(rest).slice(0, -1)},"data":${data}${meta !== undefined ? `,"meta":${meta}` : ''}}`;
}

export function claimCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('claim'))
    .description('lease jobs from a queue; prints "seq<TAB>lease_id<TAB>deliveries<TAB>data" per job')
    .argument('<queue>')
    .option('--max <n>', 'jobs to lease (server clamp 1000)', parsePositive, 1)
    .option('--lease-ms <ms>', "lease length (default: the queue's lease_ms)", parseCount)
    .option('--wait-ms <ms>', 'wait up to this long for a job when none is ready (server clamp 30000)', parseCount)
    .addOption(nodeOption())
    .action(async (queue: string, o: ClientOpts & { max: number; leaseMs?: number; waitMs?: number; node: string }) => {
      const r = await clientFor(o).claim(queue, { node: o.node, max: o.max, lease_ms: o.leaseMs, wait_ms: o.waitMs, raw: true });
      if (o.json) {
        const { claimed, ...rest } = r;
        const head = stringify(rest);
        process.stdout.write(`{"claimed":[${(claimed as RawJob<bigint>[]).map(jobJson).join(',')}],${head.slice(1)}\n`);
      } else {
        for (const j of r.claimed as RawJob<bigint>[]) process.stdout.write(`${j.$seq}\t${j.lease_id}\t${j.deliveries}\t${j.data}\n`);
      }
      outcome.code = EXIT.ok;
    });
}
