// `spool topics ls|get|create|set|put|rm` (API: GET /v0/topics, GET/PUT/DELETE
// /v0/topics/:topic); the config subcommands are in topicConfig.ts.
import { Command } from 'commander';
import { EXIT, subcommandGroup, clientFor, printJson, table, withClientOptions, type ClientOpts, type Outcome } from './common.js';
import { topicConfigCommands } from './topicConfig.js';
import { SpoolError } from '../client/errors.js';
import type { TopicSummary } from '../client/types.js';

/** Topic states fetched at once by `topics ls` (one GET each). */
const LS_GETS_AT_ONCE = 8;

type Listed = TopicSummary<bigint> & { type?: string; durability?: string };

/**
 * Adds each summary's `type` and `durability` from its topic's state (the list route does not
 * carry them), LS_GETS_AT_ONCE requests at a time; a topic deleted since the list is dropped.
 */
async function withKinds(spool: ReturnType<typeof clientFor>, all: TopicSummary<bigint>[]): Promise<Listed[]> {
  const out: (Listed | undefined)[] = new Array(all.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < all.length; i = next++) {
      try {
        const { topic, ...figures } = all[i]!;
        const s = await spool.getTopic(topic, { touch: false });
        out[i] = { topic, type: s.type, durability: s.config.durability, ...figures };
      } catch (e) {
        if (!(e instanceof SpoolError && e.status === 404)) throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(LS_GETS_AT_ONCE, all.length) }, lane));
  return out.filter((t) => t !== undefined);
}

function ls(): Command {
  return withClientOptions(new Command('ls'))
    .description("list topics (all pages) with each one's type and durability class")
    .option('--prefix <prefix>', 'only names starting with this')
    .option('--brief', 'only what the list route gives: no TYPE/DURABILITY, no request per topic (FSYNC: durability is fsync)')
    .action(async (o: ClientOpts & { prefix?: string; brief?: boolean }) => {
      const spool = clientFor(o);
      const summaries: TopicSummary<bigint>[] = [];
      for await (const t of spool.topics({ prefix: o.prefix, page_size: 1000 })) summaries.push(t);
      const all: Listed[] = o.brief ? summaries : await withKinds(spool, summaries);
      if (o.json) return printJson(all);
      const rows = o.brief
        ? [['TOPIC', 'HEAD', 'EARLIEST', 'COUNT', 'BYTES', 'FSYNC']]
        : [['TOPIC', 'TYPE', 'DURABILITY', 'HEAD', 'EARLIEST', 'COUNT', 'BYTES']];
      for (const t of all) {
        const figures = [String(t.head_seq), String(t.earliest_seq), String(t.count), String(t.bytes)];
        rows.push(o.brief ? [t.topic, ...figures, t.durable ? 'yes' : 'no'] : [t.topic, t.type!, t.durability!, ...figures]);
      }
      process.stdout.write(all.length ? table(rows) : '');
    });
}

function get(): Command {
  return withClientOptions(new Command('get'))
    .description('show a topic: watermarks, counts, config (exit 4 if absent)')
    .argument('<topic>')
    .action(async (topic: string, o: ClientOpts) => {
      const s = await clientFor(o).getTopic(topic, { touch: false });
      if (o.json) return printJson(s);
      const lines = [
        `topic        ${s.topic} (${s.type})`,
        `seqs         ${s.earliest_seq}..${s.head_seq} (next ${s.next_seq})`,
        `records      ${s.count} (${s.bytes} bytes)`,
        `last write   ${s.last_write_ts === null ? '-' : new Date(s.last_write_ts).toISOString()}`,
      ];
      if (s.queue)
        lines.push(`queue        ${s.queue.ready} ready, ${s.queue.in_flight} in flight, ${s.queue.dead_lettered} dead-lettered`);
      lines.push('config');
      for (const [k, v] of Object.entries(s.config)) lines.push(`  ${k.padEnd(22)} ${JSON.stringify(v)}`);
      process.stdout.write(lines.join('\n') + '\n');
    });
}

function rm(outcome: Outcome): Command {
  return withClientOptions(new Command('rm'))
    .description('delete a topic and all its records (an absent topic is not an error)')
    .argument('<topic>')
    .option('--if-empty', 'only if it holds no live record (else exit 3)')
    .action(async (topic: string, o: ClientOpts & { ifEmpty?: boolean }) => {
      const r = await clientFor(o).deleteTopic(topic, { if_empty: o.ifEmpty });
      if (o.json) return printJson(r);
      process.stdout.write(r.deleted ? `deleted ${r.topic}\n` : `${r.topic} did not exist\n`);
      outcome.code = EXIT.ok;
    });
}

export function topicsCommand(outcome: Outcome): Command {
  const cmd = new Command('topics').description('list, show, create/configure and delete topics');
  cmd.addCommand(ls()).addCommand(get());
  for (const c of topicConfigCommands()) cmd.addCommand(c);
  cmd.addCommand(rm(outcome));
  return subcommandGroup(cmd, 'ls, get, create, set, put or rm');
}
