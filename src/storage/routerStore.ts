// Router definitions on disk (docs/ARCHITECTURE.md "Routers"; docs/FORMAT.md): `meta/routers.json`, rewritten whole on
// every change (temp file, fsync, rename, fsync dir) and read once at startup. The body carries
// a CRC-32 of its `routers` JSON; a damaged file refuses to start rather than silently losing
// routers. Main thread.
import path from 'node:path';
import { crc32 } from 'node:zlib';
import type { RouterDef } from '../protocol/messages/router.js';
import { metaDir } from '../format/layout.js';
import { fsyncDir, mkdirDurable, type Fs } from './fs.js';
import { CorruptionError } from '../core/corruption.js';

/**
 * A router as stored: its definition, where its forwarder started (no backfill), and the instance
 * ids its source and dest had when it was stored (absent in files of older builds: not checked).
 * A restart drops a router whose topic of that name is now another instance (deleted and created
 * again while the file still listed the router: docs/ARCHITECTURE.md "Deleting on a full disk").
 */
export interface StoredRouter extends RouterDef {
  start: number;
  sourceInstance?: number;
  destInstance?: number;
}

export interface RouterFile {
  version: 1;
  nextId: number;
  routers: StoredRouter[];
}

const FILE = 'routers.json';

/**
 * The ends of `r` that exist now as another instance than the one it was stored with (a topic
 * deleted and created again while the file still listed the router): `isNow(topic, id)` says
 * whether the live topic of that name is instance `id`, `exists(topic)` whether there is one.
 * An end stored without an id (an older build's file) is not checked. The server drops such a
 * router at start, and `spool verify` notes it.
 */
export function recreatedEnds(
  r: StoredRouter,
  exists: (topic: string) => boolean,
  isNow: (topic: string, id: number) => boolean,
): string[] {
  const ends: [string, number | undefined][] = [
    [r.source, r.sourceInstance],
    [r.dest, r.destInstance],
  ];
  return ends.filter(([t, id]) => id !== undefined && exists(t) && !isNow(t, id)).map(([t]) => t);
}

export function routerFilePath(dataDir: string): string {
  return path.join(metaDir(dataDir), FILE);
}

/** Whether `x` is an integer at least `min` (and a safe one). */
function isInt(x: unknown, min: number): x is number {
  return Number.isSafeInteger(x) && (x as number) >= min;
}

/** What is wrong with one stored router's fields (their types), or undefined. */
function badRouter(r: Record<string, unknown>): string | undefined {
  for (const k of ['name', 'source', 'dest', 'guarantee'] as const) if (typeof r[k] !== 'string') return `${k} is not a string`;
  for (const k of ['preserveNode', 'preserveTag', 'allowCycle'] as const) if (typeof r[k] !== 'boolean') return `${k} is not a boolean`;
  if (!isInt(r.id, 1)) return 'id is not a positive integer';
  if (!isInt(r.start, 0)) return 'start is not a seq';
  for (const k of ['sourceInstance', 'destInstance'] as const)
    if (r[k] !== undefined && !isInt(r[k], 1)) return `${k} is not a topic instance id`;
  const f = r.filter as { op?: unknown; value?: unknown } | null;
  if (f !== null && (typeof f !== 'object' || (f.op !== 'Eq' && f.op !== 'Glob') || typeof f.value !== 'string'))
    return 'filter is not a tag match';
  return undefined;
}

/** The file's text decoded and checked (JSON, CRC, version, field types), or what is wrong. */
export function decodeRouterFile(text: string): RouterFile | string {
  let doc: { crc?: unknown; body?: unknown };
  let file: RouterFile;
  try {
    doc = JSON.parse(text) as typeof doc;
    if (typeof doc.body !== 'string') return 'no body';
    if (crc32(Buffer.from(doc.body, 'utf8')) !== doc.crc) return 'checksum mismatch';
    file = JSON.parse(doc.body) as RouterFile;
  } catch {
    return 'not valid JSON';
  }
  if (typeof file !== 'object' || file === null || file.version !== 1) return 'not a version 1 routers file';
  if (!isInt(file.nextId, 1) || !Array.isArray(file.routers)) return 'nextId or routers missing';
  for (const [i, r] of file.routers.entries()) {
    const why = typeof r === 'object' && r !== null ? badRouter(r as unknown as Record<string, unknown>) : 'not an object';
    if (why) return `router ${i}: ${why}`;
  }
  return file;
}

export function loadRouters(fsx: Fs, dataDir: string): RouterFile {
  const p = routerFilePath(dataDir);
  if (!fsx.existsSync(p)) return { version: 1, nextId: 1, routers: [] };
  const file = decodeRouterFile(fsx.readFileSync(p).toString('utf8'));
  if (typeof file === 'string') throw new CorruptionError(p, file);
  return file;
}

export async function saveRouters(fsx: Fs, dataDir: string, file: RouterFile): Promise<void> {
  const dir = metaDir(dataDir);
  await mkdirDurable(fsx, dir);
  const body = JSON.stringify(file);
  const text = Buffer.from(JSON.stringify({ crc: crc32(Buffer.from(body, 'utf8')), body }), 'utf8');
  const tmp = path.join(dir, `${FILE}.tmp`);
  const f = await fsx.open(tmp, 'w');
  try {
    await f.writeFile(text);
    await f.sync();
  } finally {
    await f.close();
  }
  await fsx.rename(tmp, path.join(dir, FILE));
  await fsyncDir(fsx, dir);
}
