// `spool topics ls|get|put|rm` (API: GET /v0/topics, GET/PUT/DELETE /v0/topics/:topic).
import { Command, Option } from 'commander';
import { CliError, EXIT, clientFor, parseCount, parseJsonArg, printJson, table, usageError, withClientOptions, type ClientOpts, type Outcome } from './common.js';
import type { TopicConfig } from '../client/types.js';

function ls(): Command {
  return withClientOptions(new Command('ls'))
    .description('list topics (all pages)')
    .option('--prefix <prefix>', 'only names starting with this')
    .action(async (o: ClientOpts & { prefix?: string }) => {
      const spool = clientFor(o);
      const all = [];
      for await (const t of spool.topics({ prefix: o.prefix, page_size: 1000 })) all.push(t);
      if (o.json) return printJson(all);
      const rows = [['TOPIC', 'HEAD', 'EARLIEST', 'COUNT', 'BYTES', 'DURABLE']];
      for (const t of all) rows.push([t.topic, String(t.head_seq), String(t.earliest_seq), String(t.count), String(t.bytes), t.durable ? 'yes' : 'no']);
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
      if (s.queue) lines.push(`queue        ${s.queue.ready} ready, ${s.queue.in_flight} in flight, ${s.queue.dead_lettered} dead-lettered`);
      lines.push('config');
      for (const [k, v] of Object.entries(s.config)) lines.push(`  ${k.padEnd(22)} ${JSON.stringify(v)}`);
      process.stdout.write(lines.join('\n') + '\n');
    });
}

interface PutOpts extends ClientOpts {
  config?: Record<string, unknown>;
  type?: 'log' | 'queue';
  durability?: TopicConfig['durability'];
  ttlMs?: number;
  capRecords?: number;
  capBytes?: number;
  discard?: 'old' | 'reject';
  leaseMs?: number;
  maxDeliveries?: number;
  deadLetter?: string;
}

function put(): Command {
  return withClientOptions(new Command('put'))
    .description('create a topic or replace its config (fields left out take their defaults)')
    .argument('<topic>')
    .option('--config <json>', 'the config object; the flags below override its fields', parseJsonArg)
    .addOption(new Option('--type <type>', 'topic kind').choices(['log', 'queue']))
    .addOption(new Option('--durability <class>', 'commit class').choices(['ephemeral', 'memory', 'disk', 'fsync']))
    .option('--ttl-ms <ms>', 'records older than this are not delivered', parseCount)
    .option('--cap-records <n>', 'retained record cap', parseCount)
    .option('--cap-bytes <n>', 'retained byte cap', parseCount)
    .addOption(new Option('--discard <policy>', 'full-topic policy').choices(['old', 'reject']))
    .option('--lease-ms <ms>', 'queue: default lease', parseCount)
    .option('--max-deliveries <n>', 'queue: dead-letter after this many deliveries', parseCount)
    .option('--dead-letter <topic>', 'queue: dead-letter topic')
    .action(async (topic: string, o: PutOpts) => {
      if (o.config !== undefined && (o.config === null || typeof o.config !== 'object' || Array.isArray(o.config))) throw usageError('--config must be a JSON object');
      const flags: Record<string, unknown> = {
        type: o.type,
        durability: o.durability,
        ttl_ms: o.ttlMs,
        cap_records: o.capRecords,
        cap_bytes: o.capBytes,
        discard: o.discard,
        lease_ms: o.leaseMs,
        max_deliveries: o.maxDeliveries,
        dead_letter: o.deadLetter,
      };
      const config = { ...(o.config ?? {}) };
      for (const [k, v] of Object.entries(flags)) if (v !== undefined) config[k] = v;
      const r = await clientFor(o).putTopic(topic, config as TopicConfig);
      if (o.json) return printJson(r);
      process.stdout.write(`${r.created ? 'created' : 'configured'} ${r.topic} (${r.config.type}, ${r.config.durability})\n`);
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
  cmd.addCommand(ls()).addCommand(get()).addCommand(put()).addCommand(rm(outcome));
  cmd.action(() => {
    throw new CliError('a subcommand is required: ls, get, put or rm (see spool topics --help)', EXIT.usage);
  });
  cmd.helpCommand(true); // `spool topics help put`: commander adds none to a command with an action
  return cmd;
}
