// Unpacks a backup tar (GET /v0/backup) into an empty directory, for `spool backup <dir>` and
// `spool restore`: only plain files under wal/, meta/ (snapshots, routers.json), topics/ and
// packs/ (never an absolute path or `..`), each fsynced, then every directory. Returns the
// backup's point (its BACKUP_POINT entry). The directory is locked the whole time (the server's
// data-dir LOCK, src/storage/lock.ts), so no server starts on it before the backup is whole and
// checked. Unpacked, the data is checked before the lock goes: BACKUP_POINT's syntax, and
// `spool verify`'s checks (src/storage/verify.ts) with the WAL ending whole at that point; its
// notes (a torn tail of a segment prefix) are no reason to refuse. A backup that fails to unpack
// or to check (cut short, damaged, an unexpected entry, SIGINT or SIGTERM meanwhile) leaves the
// directory as it found it, new or empty, and no LOCK: a server must never start on half a
// backup. Loaded lazily by `restore` and `backup` (it reads the data through the storage code).
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { CliError, EXIT } from './common.js';
import { makeDirsSync, nodeFs } from '../storage/fs.js';
import { acquireLock, DataDirLockedError, type ReleaseLock } from '../storage/lock.js';
import { verifyDataDir } from '../storage/verify.js';
import type { WalPosition } from '../protocol/messages/wal.js';

const ALLOWED =
  /^(wal\/\d{20}\.wal|meta\/snapshot-\d{20}-\d{12}\.snap|meta\/routers\.json|topics\/[0-9a-f]{12}\/seg-\d{20}\.log|packs\/pack-\d{20}-\d{1,3}-\d{1,3}\.log)$/;

const notEmpty = (dir: string) => new CliError(`${dir} is not empty: a backup unpacks only into a new or empty directory`, EXIT.usage);

/** A directory restore may fill: absent, or empty. A LOCK of a live server is refused first. */
export function assertEmptyTarget(dir: string, liveHolder: (dir: string) => number | undefined): void {
  const pid = fs.existsSync(dir) ? liveHolder(dir) : undefined;
  if (pid !== undefined) throw new CliError(`${dir} is in use by process ${pid} (a running server, or a restore)`, EXIT.usage);
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) throw notEmpty(dir);
}

/** Takes `dir`'s data-dir lock (creating `dir` if absent); refused if another process holds it or anything else is in it. */
function lockTarget(dir: string): ReleaseLock {
  let release: ReleaseLock;
  try {
    release = acquireLock(nodeFs, dir);
  } catch (err) {
    if (err instanceof DataDirLockedError) throw new CliError(`${err.message} (a running server, or a restore)`, EXIT.usage);
    throw err;
  }
  if (fs.readdirSync(dir).some((e) => e !== LOCK)) {
    release(); // a server came and went since the caller's check: its LOCK stays as it left it
    throw notEmpty(dir);
  }
  return release;
}

const LOCK = 'LOCK';

export async function untar(input: Readable, dir: string): Promise<{ point: WalPosition; files: number; bytes: number }> {
  const existed = fs.existsSync(dir);
  const release = lockTarget(dir);
  // An interrupted unpack cleans up like a failed one: a LOCK left by a dead restore would be taken
  // over by the next server, which would start on half a backup.
  const abort = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => abort.abort(new CliError(`interrupted by ${sig}`, EXIT.failure));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const r = await unpack(input, dir, abort.signal);
    const point = checkUnpacked(dir, r.point);
    if (abort.signal.aborted) throw abort.signal.reason;
    release();
    return { ...r, point };
  } catch (err) {
    // The caller checked that `dir` was new or empty: everything in it now is this backup's. The
    // LOCK goes last, so no server starts on what is left meanwhile.
    for (const e of fs.readdirSync(dir)) if (e !== LOCK) fs.rmSync(path.join(dir, e), { recursive: true, force: true });
    release({ remove: true });
    if (!existed) {
      try {
        fs.rmdirSync(dir);
      } catch {
        /* a server took the directory since the LOCK went: it is the server's now */
      }
    }
    const why = err instanceof CliError ? err.message : `the backup is damaged or cut short (${(err as Error).message})`;
    throw new CliError(`${why}; nothing restored: ${dir} is ${existed ? 'empty' : 'not created'}`, EXIT.failure);
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/** BACKUP_POINT as the server writes it (`{"fileNo":..,"offset":..}` and a newline), or a CliError. */
function parsePoint(text: string): WalPosition {
  let p: unknown;
  try {
    p = JSON.parse(text);
  } catch {
    p = undefined;
  }
  const { fileNo, offset } = (p ?? {}) as Partial<WalPosition>;
  const ok = Number.isSafeInteger(fileNo) && fileNo! >= 0 && Number.isSafeInteger(offset) && offset! >= 0;
  if (!ok || text !== `${JSON.stringify({ fileNo, offset })}\n`)
    throw new CliError(`the backup is damaged: BACKUP_POINT is not a WAL position (${JSON.stringify(text.slice(0, 80))})`, EXIT.failure);
  return { fileNo: fileNo!, offset: offset! };
}

/** `spool verify`'s checks on the unpacked data, its WAL ending at the backup's point: any damage refuses the backup. */
function checkUnpacked(dir: string, point: WalPosition): WalPosition {
  let problems: string[];
  try {
    problems = verifyDataDir(nodeFs, dir, { walEnd: point }).problems;
  } catch (err) {
    problems = [`the check failed (${(err as Error).message})`];
  }
  if (problems.length === 0) return point;
  const shown = problems.slice(0, 5).join('; ') + (problems.length > 5 ? `; and ${problems.length - 5} more` : '');
  throw new CliError(`the backup is damaged (spool verify): ${shown}`, EXIT.failure);
}

async function unpack(input: Readable, dir: string, signal: AbortSignal): Promise<{ point: WalPosition; files: number; bytes: number }> {
  const { default: tar } = await import('tar-stream');
  makeDirsSync(dir);
  const extract = tar.extract();
  const dirs = new Set<string>([dir]);
  let point: WalPosition | null = null;
  let files = 0;
  let bytes = 0;
  const done = (async () => {
    for await (const entry of extract) {
      const name = entry.header.name;
      if (name === 'BACKUP_POINT') {
        const chunks: Buffer[] = [];
        for await (const c of entry) chunks.push(c as Buffer);
        point = parsePoint(Buffer.concat(chunks).toString('utf8'));
        continue;
      }
      if (entry.header.type !== 'file' || !ALLOWED.test(name)) throw new CliError(`unexpected entry in the backup: ${name}`, EXIT.failure);
      const target = path.join(dir, name);
      makeDirsSync(path.dirname(target));
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
  // Both settle before the caller cleans up, so no entry is written after it did.
  const settled = await Promise.allSettled([pipeline(input, extract, { signal }), done]);
  const failed = settled.flatMap((x) => (x.status === 'rejected' ? [x.reason as unknown] : []));
  if (signal.aborted) throw signal.reason;
  if (failed.length > 0) throw failed.find((e) => e instanceof CliError) ?? failed[0];
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
    const fd = fs.openSync(d, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
  if (point === null) throw new CliError('the backup has no BACKUP_POINT entry: it was cut short', EXIT.failure);
  return { point, files, bytes };
}
