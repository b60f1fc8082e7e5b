// Unpacks a backup tar (GET /v0/backup) into an empty directory, for `spool backup <dir>` and
// `spool restore`: only plain files under wal/, meta/ (snapshots, routers.json), topics/ and
// packs/ (never an absolute path or `..`), each fsynced, then every directory. Returns the
// backup's point (its BACKUP_POINT entry). A backup that fails to unpack (cut short, damaged,
// an unexpected entry) leaves the directory as it found it, new or empty: a server must never
// start on half a backup.
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { CliError, EXIT } from './common.js';

const ALLOWED =
  /^(wal\/\d{20}\.wal|meta\/snapshot-\d{20}-\d{12}\.snap|meta\/routers\.json|topics\/[0-9a-f]{12}\/seg-\d{20}\.log|packs\/pack-\d{20}-\d{1,3}-\d{1,3}\.log)$/;

/** A directory restore may fill: absent, or empty. A LOCK of a live server is refused first. */
export function assertEmptyTarget(dir: string, liveHolder: (dir: string) => number | undefined): void {
  const pid = fs.existsSync(dir) ? liveHolder(dir) : undefined;
  if (pid !== undefined) throw new CliError(`${dir} is in use by process ${pid} (a running server)`, EXIT.usage);
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0)
    throw new CliError(`${dir} is not empty: restore only into a new or empty directory`, EXIT.usage);
}

export async function untar(input: Readable, dir: string): Promise<{ point: unknown; files: number; bytes: number }> {
  const existed = fs.existsSync(dir);
  try {
    return await unpack(input, dir);
  } catch (err) {
    // The caller checked that `dir` was new or empty: everything in it now is this backup's.
    if (existed) for (const e of fs.readdirSync(dir)) fs.rmSync(path.join(dir, e), { recursive: true, force: true });
    else fs.rmSync(dir, { recursive: true, force: true });
    const why = err instanceof CliError ? err.message : `the backup is damaged or cut short (${(err as Error).message})`;
    throw new CliError(`${why}; nothing restored: ${dir} is ${existed ? 'empty' : 'not created'}`, EXIT.failure);
  }
}

async function unpack(input: Readable, dir: string): Promise<{ point: unknown; files: number; bytes: number }> {
  const { default: tar } = await import('tar-stream');
  fs.mkdirSync(dir, { recursive: true });
  const extract = tar.extract();
  const dirs = new Set<string>([dir]);
  let point: unknown = null;
  let files = 0;
  let bytes = 0;
  const done = (async () => {
    for await (const entry of extract) {
      const name = entry.header.name;
      if (name === 'BACKUP_POINT') {
        const chunks: Buffer[] = [];
        for await (const c of entry) chunks.push(c as Buffer);
        point = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        continue;
      }
      if (entry.header.type !== 'file' || !ALLOWED.test(name)) throw new CliError(`unexpected entry in the backup: ${name}`, EXIT.failure);
      const target = path.join(dir, name);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      for (let d = path.dirname(target); d.startsWith(dir) && d !== dir; d = path.dirname(d)) dirs.add(d);
      const fd = fs.openSync(target, 'wx', 0o644);
      try {
        for await (const c of entry) {
          fs.writeSync(fd, c as Buffer);
          bytes += (c as Buffer).length;
        }
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      files++;
    }
  })();
  await Promise.all([pipeline(input, extract), done]);
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
    const fd = fs.openSync(d, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
  if (point === null) throw new CliError('the backup has no BACKUP_POINT entry: it was cut short', EXIT.failure);
  return { point, files, bytes };
}
