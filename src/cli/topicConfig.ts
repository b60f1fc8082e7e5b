// `spool topics create|set|put`: the three ways to give a topic a config (docs/CLI.md "topics").
// The wire has one, PUT /v0/topics/:topic, a full replacement (fields left out go back to their
// defaults); the CLI adds the two intents people mean more often:
// - create: create the topic if absent; an existing one is never changed (its differences from
//   the fields given are said on stderr). A GET, then a PUT only on 404.
// - set: change the named fields and keep the rest: GET the config, merge, PUT it whole.
// - put: the PUT as on the wire; what it changed on an existing topic is printed.
// Neither GET-then-PUT is atomic (the wire has no conditional PUT): a change by another client
// between the two requests is overwritten, and docs/CLI.md says so.
import { Command, Option } from 'commander';
import {
  CliError,
  EXIT,
  clientFor,
  note,
  parseCount,
  parseJsonArg,
  printJson,
  usageError,
  withClientOptions,
  type ClientOpts,
} from './common.js';
import { SpoolError } from '../client/errors.js';
import type { PutTopicResult, TopicConfig, TopicState } from '../client/types.js';

type Config = Record<string, unknown>;

interface ConfigOpts extends ClientOpts {
  config?: Config;
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

/** A topic command taking a config: --config and one flag per common field. */
function withConfigOptions(cmd: Command): Command {
  return withClientOptions(cmd)
    .argument('<topic>')
    .option('--config <json>', 'config fields as a JSON object; the flags below override its fields', parseJsonArg)
    .addOption(new Option('--type <type>', 'topic kind (fixed at creation)').choices(['log', 'queue']))
    .addOption(new Option('--durability <class>', 'commit class').choices(['ephemeral', 'memory', 'disk', 'fsync']))
    .option('--ttl-ms <ms>', 'records older than this are not delivered', parseCount)
    .option('--cap-records <n>', 'retained record cap', parseCount)
    .option('--cap-bytes <n>', 'retained byte cap', parseCount)
    .addOption(new Option('--discard <policy>', 'full-topic policy').choices(['old', 'reject']))
    .option('--lease-ms <ms>', 'queue: default lease', parseCount)
    .option('--max-deliveries <n>', 'queue: dead-letter after this many deliveries', parseCount)
    .option('--dead-letter <topic>', 'queue: dead-letter topic');
}

/** The fields the command line names: --config's, overridden by the flags. */
function givenFields(o: ConfigOpts): Config {
  if (o.config !== undefined && (o.config === null || typeof o.config !== 'object' || Array.isArray(o.config)))
    throw usageError('--config must be a JSON object');
  const flags: Config = {
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
  return config;
}

/** The topic's state, or undefined when it does not exist. */
async function current(spool: ReturnType<typeof clientFor>, topic: string): Promise<TopicState<bigint> | undefined> {
  try {
    return await spool.getTopic(topic, { touch: false });
  } catch (e) {
    if (e instanceof SpoolError && e.status === 404) return undefined;
    throw e;
  }
}

const show = (v: unknown) => JSON.stringify(v);

/**
 * `from → to` for each field that differs, in `to`'s key order. `durable` only echoes
 * `durability` (true exactly for fsync), so it is left out when that is listed.
 */
export function configChanges(from: Config, to: Config): string[] {
  const keys = Object.keys(to).filter((k) => show(from[k]) !== show(to[k]));
  return keys.filter((k) => !(k === 'durable' && keys.includes('durability'))).map((k) => `${k} ${show(from[k])} → ${show(to[k])}`);
}

/** Applies `fields` over a resolved config, as the server would read the merged PUT. */
export function mergeConfig(base: Config, fields: Config): Config {
  const merged = { ...base, ...fields };
  // `durability` wins over `durable` on the wire: a change of `durable` alone must drop the old class.
  if ('durable' in fields && !('durability' in fields)) delete merged.durability;
  return merged;
}

/** `changes` undefined: not known (put could not read the config before). */
function printResult(r: PutTopicResult, changes: string[] | undefined, json: boolean | undefined): void {
  if (json) return printJson({ topic: r.topic, created: r.created, config: r.config, ...(changes ? { changed: changes } : {}) });
  const what = `${r.topic} (${r.config.type}, ${r.config.durability})`;
  if (r.created) process.stdout.write(`created ${what}\n`);
  else if (changes === undefined) process.stdout.write(`configured ${what}\n`);
  else process.stdout.write(changes.length ? `configured ${what}: ${changes.join(', ')}\n` : `${what} unchanged\n`);
}

function create(): Command {
  return withConfigOptions(new Command('create'))
    .description('create a topic with this config if it does not exist; an existing topic is never changed')
    .action(async (topic: string, o: ConfigOpts) => {
      const fields = givenFields(o);
      const spool = clientFor(o);
      const before = await current(spool, topic);
      if (before === undefined) {
        const r = await spool.putTopic(topic, fields as TopicConfig);
        // Created by another client between our GET and PUT: the PUT replaced that config.
        if (!r.created) note(`spool topics create: ${topic} was created meanwhile by another client; this config replaced its own`);
        return printResult(r, [], o.json);
      }
      const have = before.config as Config;
      if (fields.type !== undefined && fields.type !== have.type) {
        throw new CliError(
          `${topic} exists as a ${String(have.type)}, not a ${String(fields.type)} (left unchanged)`,
          EXIT.rejected,
          'topic_exists_incompatible',
        );
      }
      const differs = Object.keys(fields).filter((k) => show(mergeConfig(have, fields)[k]) !== show(have[k]));
      const given = differs.map((k) => `${k} is ${show(have[k])} (given ${show(fields[k])})`).join(', ');
      if (differs.length)
        note(`spool topics create: ${topic} exists and was left unchanged: ${given}; \`spool topics set\` changes fields`);
      if (o.json) return printJson({ topic, created: false, config: have, changed: [], differs });
      process.stdout.write(`${topic} (${before.type}, ${String(have.durability)}) exists, unchanged\n`);
    });
}

function set(): Command {
  return withConfigOptions(new Command('set'))
    .description('change the named config fields of an existing topic and keep the others (exit 4 if absent)')
    .action(async (topic: string, o: ConfigOpts) => {
      const fields = givenFields(o);
      if (Object.keys(fields).length === 0) throw usageError("name a field to change: a flag such as --cap-records, or --config '{…}'");
      const spool = clientFor(o);
      const before = await current(spool, topic);
      if (before === undefined)
        throw new CliError(`topic ${topic} does not exist (\`spool topics create\` makes it)`, EXIT.notFound, 'topic_not_found');
      const have = before.config as Config;
      const r = await spool.putTopic(topic, mergeConfig(have, fields) as TopicConfig);
      printResult(r, configChanges(have, r.config as Config), o.json);
    });
}

function put(): Command {
  return withConfigOptions(new Command('put'))
    .description('create a topic or replace its whole config, as HTTP PUT does: fields not given go back to their defaults')
    .action(async (topic: string, o: ConfigOpts) => {
      const fields = givenFields(o);
      const spool = clientFor(o);
      // Read only to say what the PUT changed: a key without `read` can still PUT, as on the wire.
      const before = await current(spool, topic).catch((e: unknown) => {
        if (e instanceof SpoolError && e.status === 403) return null;
        throw e;
      });
      const r = await spool.putTopic(topic, fields as TopicConfig);
      printResult(
        r,
        before === null ? undefined : before && !r.created ? configChanges(before.config as Config, r.config as Config) : [],
        o.json,
      );
    });
}

/** The config subcommands of `spool topics`. */
export function topicConfigCommands(): Command[] {
  return [create(), set(), put()];
}
