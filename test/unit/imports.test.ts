// No import cycles under src/ (docs/ARCHITECTURE.md "Code map"), type-only imports included:
// a cycle is a seam in the wrong place even when the compiler erases it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');

function files(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** Relative imports and re-exports of each module, resolved to file paths. */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of files(root)) {
    const src = fs.readFileSync(f, 'utf8');
    const deps = [...src.matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm)].map((m) =>
      path.join(path.dirname(f), m[1]!.replace(/\.js$/, '.ts')),
    );
    g.set(f, deps);
  }
  return g;
}

test('src/ has no import cycles', () => {
  const g = graph();
  const done = new Set<string>();
  const onPath: string[] = [];
  const cycles: string[] = [];
  const visit = (f: string): void => {
    const at = onPath.indexOf(f);
    if (at >= 0) {
      cycles.push([...onPath.slice(at), f].map((p) => path.relative(root, p)).join(' -> '));
      return;
    }
    if (done.has(f)) return;
    onPath.push(f);
    for (const d of g.get(f) ?? []) visit(d);
    onPath.pop();
    done.add(f);
  };
  for (const f of g.keys()) visit(f);
  assert.ok(g.size > 50, `found only ${g.size} modules under ${root}`);
  assert.deepEqual(cycles, []);
});

/** Modules that may import node:fs: the Fs seam itself, and files outside the data directory. */
const NODE_FS_ALLOWED = new Set([
  'storage/fs.ts', // the seam
  'cli/serve.ts', // SERVICE_PORT_FILE
  'cli/lines.ts', // NDJSON input files of `spool append --file`
  'cli/program.ts', // existence checks of `replay` and `wal-dump` arguments
  'storage/lock.ts', // /proc/<pid>/stat (is the lock holder alive?)
  'supervisor/backup.ts', // online backup: hard links of live files, out of band like cp
  'http/routes/backup.ts', // streams the staged hard links
  'http/routes/status.ts', // the static status page
  'cli/backup.ts', // writes the backup tar or directory
  'cli/restore.ts', // reads a backup tar file
  'cli/untar.ts', // unpacks a backup into an empty directory
  'cli/workLimits.ts', // `spool work` looks its job command up on PATH before it starts
  'core/threadCpu.ts', // /proc/thread-self/stat: the stage clock's per-thread CPU (debug)
  'storage/freeSpace.ts', // statfs of the data volume: a measurement, never the data path
  'storage/writableLayout.ts', // access(2) of this process's rights at the start: only a real disk has them
  'replay/replayer.ts', // trace files
  'replay/traceWriter.ts',
]);

test('only the Fs seam touches the data directory: no other module imports node:fs', () => {
  const offenders = files(root)
    .map((f) => path.relative(root, f))
    .filter((rel) => !NODE_FS_ALLOWED.has(rel) && /from 'node:fs(\/promises)?'/.test(fs.readFileSync(path.join(root, rel), 'utf8')));
  assert.deepEqual(offenders, []);
});

/**
 * What a client module imports that it may not: anything outside src/client, except type-only
 * imports (`import type`, `export type`) of src/protocol, the wire types' home, which the compiler
 * erases. A value import of server code, even of src/protocol, is an offender.
 */
function clientImportOffenders(file: string, src: string): string[] {
  const dir = path.join(root, 'client');
  const offenders: string[] = [];
  for (const m of src.matchAll(/^(import|export)(\s+type)?\s[^'"]*?from\s+'([^']+)'|^\s*(?:const|let)\s.*?await import\('([^']+)'\)/gm)) {
    const spec = (m[3] ?? m[4])!;
    const target = path.join(path.dirname(file), spec);
    if (spec.startsWith('.') && target.startsWith(dir + path.sep)) continue;
    const typeOnly = m[2] !== undefined;
    if (typeOnly && spec.startsWith('.') && target.startsWith(path.join(root, 'protocol') + path.sep)) continue;
    offenders.push(`${path.relative(root, file)} imports ${typeOnly ? 'types of ' : ''}${spec}`);
  }
  return offenders;
}

test('the client library (src/client) imports only itself and protocol types: no server code, no Node built-in, no package', () => {
  const dir = path.join(root, 'client');
  const offenders: string[] = [];
  for (const f of files(dir)) {
    offenders.push(...clientImportOffenders(f, fs.readFileSync(f, 'utf8')));
    // Browser-safe: no Node globals either.
    const src = fs.readFileSync(f, 'utf8').replace(/\/\/.*$/gm, '');
    for (const g of ['Buffer', 'process.', 'require(', '__dirname', 'NodeJS.'])
      if (src.includes(g)) offenders.push(`${path.relative(root, f)} uses ${g}`);
  }
  assert.ok(files(dir).length >= 10, `found only ${files(dir).length} client modules`);
  assert.deepEqual(offenders, []);
});

test('the client import check catches value imports of server code and type imports outside protocol', () => {
  const file = path.join(root, 'client', 'planted.ts');
  const planted = (line: string) => clientImportOffenders(file, line + '\n');
  assert.deepEqual(planted("import type { DiffBody } from '../protocol/wire.js';"), []);
  assert.deepEqual(planted("export type { Health, Ready } from '../protocol/wire.js';"), []);
  assert.deepEqual(planted("import { Transport } from './transport.js';"), []);
  assert.deepEqual(planted("import { fail } from '../protocol/errors.js';"), ['client/planted.ts imports ../protocol/errors.js']);
  assert.deepEqual(planted("import { type DiffBody } from '../protocol/wire.js';"), ['client/planted.ts imports ../protocol/wire.js']);
  assert.deepEqual(planted("export { CONFIG_FIELDS } from '../protocol/topicConfig.js';"), [
    'client/planted.ts imports ../protocol/topicConfig.js',
  ]);
  assert.deepEqual(planted("import type { WatchBody } from '../http/schemas.js';"), [
    'client/planted.ts imports types of ../http/schemas.js',
  ]);
  assert.deepEqual(planted("import { HttpError } from '../http/reply.js';"), ['client/planted.ts imports ../http/reply.js']);
  assert.deepEqual(planted("import type { Readable } from 'node:stream';"), ['client/planted.ts imports types of node:stream']);
  assert.deepEqual(planted("  const m = await import('../storage/fs.js');"), ['client/planted.ts imports ../storage/fs.js']);
});

test('client commands of the CLI do not load server code: only serve, replay, wal-dump and the offline tools do, lazily', () => {
  const serverDirs = [
    'actors',
    'core',
    'format',
    'http',
    'protocol',
    'replay',
    'storage',
    'streams',
    'supervisor',
    'topicThread',
    'wal',
  ].map((d) => path.join(root, d) + path.sep);
  const lazy = new Set(['cli/serve.ts', 'cli/replay.ts', 'cli/walDump.ts', 'cli/offline.ts', 'cli/untar.ts']);
  const offenders: string[] = [];
  for (const f of [path.join(root, 'cli.ts'), ...files(path.join(root, 'cli'))]) {
    if (lazy.has(path.relative(root, f))) continue;
    const src = fs.readFileSync(f, 'utf8');
    for (const m of src.matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm)) {
      const target = path.join(path.dirname(f), m[1]!);
      if (serverDirs.some((d) => target.startsWith(d)) || target === path.join(root, 'config.js'))
        offenders.push(`${path.relative(root, f)} imports ${m[1]}`);
    }
  }
  assert.deepEqual(offenders, []);
});

/**
 * The layers of src/, lowest first (docs/ARCHITECTURE.md "Code map"): a module may import its own
 * folder and the layers below it, never one above. Folders on one rank are peers. Files at the
 * top of src/ rank by file; the client library is checked on its own (above).
 */
const LAYER_OF_FOLDER: Record<string, number> = {
  core: 0,
  protocol: 1,
  format: 2,
  storage: 3,
  wal: 3,
  auth: 3,
  actors: 4,
  replay: 5,
  topicThread: 5,
  supervisor: 6,
  pressure: 7,
  streams: 7,
  http: 8,
  cli: 9,
};
const LAYER_OF_TOP_FILE: Record<string, number> = { 'config.ts': 5, 'configSchema.ts': 5, 'log.ts': 5, 'cli.ts': 10 };

function layerOf(file: string): number | undefined {
  const parts = path.relative(root, file).split(path.sep);
  if (parts.length === 1) return LAYER_OF_TOP_FILE[parts[0]!];
  if (parts[0] === 'client') return undefined;
  return LAYER_OF_FOLDER[parts[0]!];
}

test('imports run one way: no module imports a layer above its own', () => {
  const offenders: string[] = [];
  const unranked = new Set<string>();
  for (const [f, deps] of graph()) {
    const from = layerOf(f);
    if (from === undefined) {
      if (!path.relative(root, f).startsWith(`client${path.sep}`)) unranked.add(path.relative(root, f));
      continue;
    }
    for (const d of deps) {
      const to = layerOf(d);
      if (to === undefined) continue; // the client: its own test
      if (to > from) offenders.push(`${path.relative(root, f)} -> ${path.relative(root, d)}`);
    }
  }
  assert.deepEqual([...unranked], [], 'every folder and top-level file has a layer');
  assert.deepEqual(offenders, []);
});
