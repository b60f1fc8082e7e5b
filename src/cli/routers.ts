// `spool routers ls|get|put|rm` (API: GET /v0/routers, GET/PUT/DELETE /v0/routers/:router).
import { Command, Option } from 'commander';
import {
  subcommandGroup,
  EXIT,
  clientFor,
  parseJsonArg,
  printJson,
  table,
  usageError,
  withClientOptions,
  type ClientOpts,
  type Outcome,
} from './common.js';
import type { RouterConfig, TagMatch } from '../client/types.js';

function ls(): Command {
  return withClientOptions(new Command('ls'))
    .description('list routers (all pages)')
    .option('--prefix <prefix>', 'only names starting with this')
    .option('--source <topic>', 'only routers from this topic')
    .option('--dest <topic>', 'only routers into this topic')
    .action(async (o: ClientOpts & { prefix?: string; source?: string; dest?: string }) => {
      const spool = clientFor(o);
      const all = [];
      for await (const r of spool.routers({ prefix: o.prefix, source: o.source, dest: o.dest, page_size: 1000 })) all.push(r);
      if (o.json) return printJson(all);
      const rows = [['ROUTER', 'SOURCE', 'DEST', 'GUARANTEE', 'FORWARDED']];
      for (const r of all) rows.push([r.router, r.source, r.dest, r.guarantee, String(r.forwarded_total)]);
      process.stdout.write(all.length ? table(rows) : '');
    });
}

function get(): Command {
  return withClientOptions(new Command('get'))
    .description('show a router: its config and records forwarded (exit 4 if absent)')
    .argument('<router>')
    .action(async (router: string, o: ClientOpts) => {
      const r = await clientFor(o).getRouter(router);
      if (o.json) return printJson(r);
      const lines = [
        `router       ${r.router}`,
        `route        ${r.source} -> ${r.dest} (${r.guarantee})`,
        `filter       ${r.filter === null ? '-' : JSON.stringify(r.filter)}`,
        `preserve     node ${r.preserve_node ? 'yes' : 'no'}, tag ${r.preserve_tag ? 'yes' : 'no'}`,
        `allow cycle  ${r.allow_cycle ? 'yes' : 'no'}`,
        `forwarded    ${r.forwarded_total}`,
      ];
      process.stdout.write(lines.join('\n') + '\n');
    });
}

interface PutOpts extends ClientOpts {
  source: string;
  dest: string;
  filter?: unknown;
  guarantee?: RouterConfig['guarantee'];
  preserveNode: boolean;
  preserveTag: boolean;
  createDest: boolean;
  allowCycle?: boolean;
}

function put(): Command {
  return withClientOptions(new Command('put'))
    .description(
      'create a router or replace its config (fields left out take their defaults; source and dest of an existing router cannot change)',
    )
    .argument('<router>')
    .requiredOption('--source <topic>', 'topic to forward from')
    .requiredOption('--dest <topic>', 'topic to forward into')
    .option('--filter <tuple>', 'forward only matching records: a tag, or a JSON tuple like \'["tag","Glob","eu-*"]\'')
    .addOption(new Option('--guarantee <mode>', 'delivery mode').choices(['at_least_once', 'exactly_once']))
    .option('--no-preserve-node', 'clear $node on the copies')
    .option('--no-preserve-tag', 'clear $tag on the copies')
    .option('--no-create-dest', 'refuse (exit 4) when dest does not exist')
    .option('--allow-cycle', 'allow this router to close a cycle (mirrors)')
    .action(async (router: string, o: PutOpts) => {
      const config: RouterConfig = {
        source: o.source,
        dest: o.dest,
        preserve_node: o.preserveNode,
        preserve_tag: o.preserveTag,
        create_dest: o.createDest,
        allow_cycle: o.allowCycle === true,
      };
      if (o.guarantee !== undefined) config.guarantee = o.guarantee;
      if (o.filter !== undefined) config.filter = parseFilter(String(o.filter));
      const r = await clientFor(o).putRouter(router, config);
      if (o.json) return printJson(r);
      process.stdout.write(`${r.created ? 'created' : 'configured'} ${r.router} (${r.source} -> ${r.dest}, ${r.guarantee})\n`);
    });
}

/** A JSON tuple (or `null`) as given, else the text is a tag to match exactly. */
function parseFilter(text: string): TagMatch | null {
  const t = text.trim();
  if (t.startsWith('[') || t === 'null') {
    const v = parseJsonArg(t);
    if (v !== null && !Array.isArray(v)) throw usageError('--filter must be a tag or a JSON tuple');
    return v as TagMatch | null;
  }
  return text;
}

function rm(outcome: Outcome): Command {
  return withClientOptions(new Command('rm'))
    .description('delete a router; records already forwarded stay (an absent router is not an error)')
    .argument('<router>')
    .action(async (router: string, o: ClientOpts) => {
      const r = await clientFor(o).deleteRouter(router);
      if (o.json) return printJson(r);
      process.stdout.write(r.deleted ? `deleted ${r.router}\n` : `${r.router} did not exist\n`);
      outcome.code = EXIT.ok;
    });
}

export function routersCommand(outcome: Outcome): Command {
  const cmd = new Command('routers').description('list, show, create/configure and delete routers');
  cmd.addCommand(ls()).addCommand(get()).addCommand(put()).addCommand(rm(outcome));
  return subcommandGroup(cmd, 'ls, get, put or rm');
}
