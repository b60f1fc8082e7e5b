// Router definitions on disk (DESIGN 5, docs/FORMAT.md): `meta/routers.json`, rewritten whole on
// every change (temp file, fsync, rename, fsync dir) and read once at startup. The body carries
// a CRC-32 of its `routers` JSON; a damaged file refuses to start rather than silently losing
// routers. Main thread.
import path from 'node:path';
import { crc32 } from 'node:zlib';
import type { RouterDef } from '../core/messages/router.js';
import { metaDir } from '../storage/layout.js';
import { fsyncDir, mkdirDurable, type Fs } from '../storage/fs.js';

/** A router as stored: its definition and where its forwarder started (no backfill). */
export interface StoredRouter extends RouterDef {
  start: number;
}

export interface RouterFile {
  version: 1;
  nextId: number;
  routers: StoredRouter[];
}

const FILE = 'routers.json';

export function routerFilePath(dataDir: string): string {
  return path.join(metaDir(dataDir), FILE);
}

export function loadRouters(fsx: Fs, dataDir: string): RouterFile {
  const p = routerFilePath(dataDir);
  if (!fsx.existsSync(p)) return { version: 1, nextId: 1, routers: [] };
  const doc = JSON.parse(fsx.readFileSync(p).toString('utf8')) as { crc: number; body: string };
  if (crc32(Buffer.from(doc.body, 'utf8')) !== doc.crc) throw new Error(`${p}: checksum mismatch`);
  return JSON.parse(doc.body) as RouterFile;
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
