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
 * error, or with --restart 0, where it is above the head), else before its last `lines` records.
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
    if (o.from === undefined) out[t] = { from_seq: await lastRecordsStart(spool, t, head, o.lines, o.node) };
    else if (o.from > head) {
      fromAboveHead('tail', t, o.from, head, o.restart);
      out[t] = { from_seq: 0n };
    } else out[t] = { from_seq: o.from };
  }
  return out;
}

/** Records per diff page while counting back (the server clamps it to its own limit). */
const COUNT_PAGE = 1000;

/**
 * The seq to start after so that the last `n` records of `topic` (as `--node` leaves them) come
 * first. Seqs are not records: a restart after a crash skips the block of seqs reserved before
 * it, and caps, TTL and deletes leave gaps (docs/API.md "Seqs"). So a window before the head is
 * read (seqs only matter) and widened fourfold until it holds `n` records or reaches the first.
 */
export async function lastRecordsStart(
  spool: ReturnType<typeof clientFor>,
  topic: string,
  head: bigint,
  n: number,
  node?: string[],
): Promise<bigint> {
  if (n === 0) return head;
  for (let span = BigInt(n); ; span *= 4n) {
    const from = head > span ? head - span : 0n;
    let seqs: bigint[] = [];
    let earliest = 0n;
    for (let at = from; at < head;) {
      const page = await spool.diff(topic, { from_seq: at, limit: COUNT_PAGE, node, raw: true });
      earliest = page.earliest_seq;
      for (const r of page.records) seqs.push(r.$seq);
      if (seqs.length > n) seqs = seqs.slice(-n);
      if (page.caught_up || page.next_from_seq <= at) break;
      at = page.next_from_seq;
    }
    if (seqs.length === n) return seqs[0]! - 1n;
    // Fewer than n in the window: it already starts at or before the first record there is.
    if (from === 0n || from < earliest) return from;
  }
}

export function tailCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('tail'))
    .description('print the last records of topics as NDJSON ({"topic",...record}); -f follows them')
    .argument('<topic...>')
    .option('-f, --follow', 'keep following (resumes across reconnects and server restarts)')
    .option('-n, --lines <n>', 'start with the last <n> records of each topic', parseCount, 10)
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
