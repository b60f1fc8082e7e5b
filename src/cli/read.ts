// `spool read <topic> [--from] [--limit]`: the records after a seq as NDJSON on stdout, page by
// page (diff), until the topic is caught up or --limit records were printed. Record lines are the
// server's record texts (data and meta verbatim); with --data only the data, so
// `spool read t --data` gives back exactly the lines `spool append t` took. Gaps (cap/TTL loss)
// are reported on stderr, never silently skipped.
import { Command } from 'commander';
import { EXIT, clientFor, note, out, parseCount, parsePositive, parseSeq, recordLine, stringify, withClientOptions, type ClientOpts, type Outcome } from './common.js';
import type { RawRecord, Tombstone } from '../client/types.js';
import { sinceOption } from './since.js';

interface ReadOpts extends ClientOpts {
  from: bigint;
  since?: number;
  limit?: number;
  page: number;
  data?: boolean;
  tags?: boolean;
  meta: boolean;
  node?: string[];
}

/** A gap notice on stderr (text, or a JSON line with --json). */
export function reportGap(topic: string, t: Tombstone<bigint>, json: boolean | undefined, cmd: string): void {
  if (json) note(stringify({ tombstone: { topic, ...t } }));
  else note(`spool ${cmd}: ${topic}: seqs ${t.gap_from}..${t.gap_to} are gone (${t.reason}${t.missed_estimate !== undefined ? `, ~${t.missed_estimate} records` : ''})`);
}

export function readCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('read'))
    .description('print records as NDJSON, from a seq until caught up')
    .argument('<topic>')
    .option('--from <seq>', 'start after this seq (exclusive, like diff from_seq; 0 = from the earliest)', parseSeq, 0n)
    .addOption(sinceOption())
    .option('--limit <n>', 'print at most this many records', parseCount)
    .option('--page <n>', 'records per request (server clamp 1000)', parsePositive, 1000)
    .option('--data', 'print only each record\'s data')
    .option('--tags', 'include $tag')
    .option('--no-meta', 'leave out meta')
    .option('--node <node...>', 'skip records written by these nodes')
    .action(async (topic: string, o: ReadOpts) => {
      const spool = clientFor(o);
      let cursor: bigint | undefined = o.since === undefined ? o.from : undefined; // --since: the first diff resolves it
      let printed = 0;
      const want = o.limit ?? Infinity;
      while (printed < want) {
        const page = await spool.diff(topic, {
          from_seq: cursor,
          from_ts: cursor === undefined ? o.since : undefined,
          limit: Math.min(o.page, want - printed),
          include_tags: o.tags === true,
          include_meta: o.meta,
          node: o.node,
          raw: true,
        });
        if (page.tombstone) reportGap(topic, page.tombstone, o.json, 'read');
        let text = '';
        for (const r of page.records as RawRecord<bigint>[]) {
          text += `${o.data ? r.data : recordLine(r)}\n`;
          if (++printed >= want) break;
        }
        if (text) await out(text);
        cursor = page.next_from_seq;
        if (page.caught_up) break;
      }
      outcome.code = EXIT.ok;
    });
}
