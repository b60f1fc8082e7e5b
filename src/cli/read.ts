// `spool read <topic> [--from] [--limit]`: the records after a seq as NDJSON on stdout, page by
// page (diff), until the topic is caught up or --limit records were printed. Record lines are the
// server's record texts (data and meta verbatim); with --data only the data, so
// `spool read t --data` gives back exactly the lines `spool append t` took. Gaps (cap/TTL loss)
// are reported on stderr, never silently skipped. An explicit --from above the head is exit 3
// unless --restart (fromAboveHead, shared with tail).
import { Command } from 'commander';
import {
  CliError,
  EXIT,
  clientFor,
  note,
  out,
  parseCount,
  parsePositive,
  parseSeq,
  recordLine,
  stringify,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';
import type { RawRecord, Tombstone } from '../client/types.js';
import { sinceOption } from './since.js';

interface ReadOpts extends ClientOpts {
  from?: bigint;
  since?: number;
  limit?: number;
  page: number;
  data?: boolean;
  tags?: boolean;
  meta: boolean;
  node?: string[];
  restart?: boolean;
}

/** A gap notice on stderr (text, or a JSON line with --json). */
export function reportGap(topic: string, t: Tombstone<bigint>, json: boolean | undefined, cmd: string): void {
  if (json) return note(stringify({ tombstone: { topic, ...t } }));
  const lost = t.gap_to >= t.gap_from;
  // The API's `recreated`: the cursor is above the head, and reading goes on from the start.
  if (t.reason === 'recreated')
    note(
      `spool ${cmd}: ${topic}: the cursor is above the head (${t.head_seq}): the topic was recreated; reading it from its start${lost ? ` (seqs ${t.gap_from}..${t.gap_to} are gone)` : ''}`,
    );
  else
    note(
      `spool ${cmd}: ${topic}: seqs ${t.gap_from}..${t.gap_to} are gone (${t.reason}${t.missed_estimate !== undefined ? `, ~${t.missed_estimate} records` : ''})`,
    );
}

/**
 * An explicit --from above a topic's head: nothing after it exists (the topic was recreated
 * since, or the seq belongs elsewhere). Without --restart that is an error, exit 3; with it, a
 * note, and the topic is read from its start.
 */
export function fromAboveHead(cmd: string, topic: string, from: bigint, head: bigint, restart: boolean | undefined): void {
  const what = `${topic}: --from ${from} is above the head (${head})`;
  if (restart) return note(`spool ${cmd}: ${what}; reading it from its start (--restart)`);
  const e = new CliError(
    `${what}: nothing after it exists (the topic was recreated since, or the seq is from elsewhere); nothing printed (--restart reads it from its start)`,
    EXIT.rejected,
    'from_above_head',
  );
  e.detail = { topic, from_seq: from, head_seq: head };
  throw e;
}

export function readCommand(outcome: Outcome): Command {
  return (
    withClientOptions(new Command('read'))
      .description('print records as NDJSON, from a seq until caught up')
      .argument('<topic>')
      // No commander default: a bigint one breaks help (JSON.stringify), and `from` stays undefined
      // unless given, so an explicit cursor above the head can be told from the default.
      .option('--from <seq>', 'start after this seq (exclusive, like diff from_seq; default 0 = from the earliest)', parseSeq)
      .addOption(sinceOption())
      .option('--limit <n>', 'print at most this many records', parseCount)
      .option('--page <n>', 'records per request (server clamp 1000)', parsePositive, 1000)
      .option('--data', "print only each record's data")
      .option('--tags', 'include $tag')
      .option('--no-meta', 'leave out meta')
      .option('--node <node...>', 'skip records written by these nodes')
      .option('--restart', 'when --from is above the head (the topic was recreated), read from the start instead of failing')
      .action(async (topic: string, o: ReadOpts) => {
        const spool = clientFor(o);
        // --since: the first diff resolves the time into a cursor.
        let cursor: bigint | undefined = o.since === undefined ? (o.from ?? 0n) : undefined;
        let firstPage = true;
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
          // The first page says where the head is: an explicit --from above it fails (or restarts).
          const t = page.tombstone;
          if (firstPage && o.from !== undefined && o.from > page.head_seq) {
            fromAboveHead('read', topic, o.from, page.head_seq, o.restart);
            if (t && (o.json || t.gap_to >= t.gap_from)) reportGap(topic, t, o.json, 'read'); // records lost at the start
          } else if (t) reportGap(topic, t, o.json, 'read');
          firstPage = false;
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
      })
  );
}
