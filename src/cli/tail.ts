// `spool tail <topic...> [-f]`: the last records of one or more topics, from one watch session,
// as NDJSON with the topic named in each line; with -f it keeps following, across dropped
// connections, server restarts and collected sessions (the client's watch resumes from the last
// record printed, docs/CLIENT.md "Watch"). SIGINT/SIGTERM end it with exit 0. A --from above a
// topic's head is exit 3 before anything is printed, unless --restart.
import { Command } from 'commander';
import {
  EXIT,
  clientFor,
  note,
  onStopSignal,
  out,
  parseCount,
  parseSeq,
  recordLine,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';
import { fromAboveHead, reportGap } from './read.js';
import type { RawRecord } from '../client/types.js';
import { sinceOption } from './since.js';

interface TailOpts extends ClientOpts {
  follow?: boolean;
  lines: number;
  from?: bigint;
  since?: number;
  data?: boolean;
  tags?: boolean;
  meta: boolean;
  node?: string[];
  quiet?: boolean;
  restart?: boolean;
}

/**
 * Where each topic starts: --since for all (the server resolves the time), or --from for all (an
 * error, or with --restart 0, where it is above the head), else `lines` seqs before its head.
 */
async function starts(
  spool: ReturnType<typeof clientFor>,
  topics: string[],
  o: TailOpts,
): Promise<Record<string, { from_seq?: bigint; from_ts?: number }>> {
  const out: Record<string, { from_seq?: bigint; from_ts?: number }> = {};
  for (const t of topics) {
    if (o.since !== undefined) {
      out[t] = { from_ts: o.since };
      continue;
    }
    const head = (await spool.getTopic(t, { touch: false })).head_seq;
    if (o.from === undefined) {
      const n = BigInt(o.lines);
      out[t] = { from_seq: head > n ? head - n : 0n };
    } else if (o.from > head) {
      fromAboveHead('tail', t, o.from, head, o.restart);
      out[t] = { from_seq: 0n };
    } else out[t] = { from_seq: o.from };
  }
  return out;
}

export function tailCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('tail'))
    .description('print the last records of topics as NDJSON ({"topic",...record}); -f follows them')
    .argument('<topic...>')
    .option('-f, --follow', 'keep following (resumes across reconnects and server restarts)')
    .option('-n, --lines <n>', 'start this many seqs before each head', parseCount, 10)
    .option('--from <seq>', 'start after this seq in every topic (overrides -n)', parseSeq)
    .option('--restart', 'where --from is above the head (the topic was recreated), start from the start instead of failing')
    .addOption(sinceOption().conflicts('lines'))
    .option('--data', "print only each record's data")
    .option('--tags', 'include $tag')
    .option('--no-meta', 'leave out meta')
    .option('--node <node...>', 'skip records written by these nodes')
    .option('-q, --quiet', 'no reconnect notices on stderr')
    .action(async (topics: string[], o: TailOpts) => {
      const spool = clientFor(o);
      const stop = onStopSignal();
      const watch = spool.watch({
        topics: await starts(spool, topics, o),
        include_tags: o.tags === true,
        include_meta: o.meta,
        node: o.node,
        raw: true,
        reconnect: o.follow === true,
        onReconnect: (err, attempt, delayMs) => {
          if (!o.quiet) note(`spool tail: ${err.message}; reconnecting${attempt > 1 ? ` (attempt ${attempt})` : ''} in ${delayMs} ms`);
        },
      });
      void stop.promise.then(() => watch.close());
      const pending = new Set(topics);
      try {
        for await (const ev of watch) {
          if (ev.type === 'record') await out(`${o.data ? ev.record.data : recordLine(ev.record as RawRecord<bigint>, ev.topic)}\n`);
          else if (ev.type === 'tombstone') reportGap(ev.topic, ev, o.json, 'tail');
          else if (ev.type === 'topic-deleted') {
            if (!o.quiet) note(`spool tail: ${ev.topic} was deleted`);
            pending.delete(ev.topic);
          } else if (ev.type === 'caught-up') pending.delete(ev.topic);
          if (!o.follow && pending.size === 0) break;
        }
      } finally {
        stop.dispose();
        watch.close();
      }
      outcome.code = EXIT.ok;
    });
}
