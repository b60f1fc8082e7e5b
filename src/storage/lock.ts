// Single-writer guard for a data directory (docs/ARCHITECTURE.md "Other decisions"): LOCK is created with O_EXCL and holds
// "pid start-ms". A lock left by a dead process is taken over. Release keeps the file and writes
// pid 0 into it (never alive) rather than removing it: a restart on a full disk then takes it
// over by unlinking it first, which frees the space its O_EXCL create needs. Hand-written rather
// than proper-lockfile: we need exactly this pid check and nothing else (docs/ARCHITECTURE.md).
import fs from 'node:fs';
import path from 'node:path';
import { mkdirDurableSync, type Fs } from './fs.js';

export class DataDirLockedError extends Error {}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A killed process can linger as a zombie until reaped; it holds nothing.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EPERM';
  }
}

export function acquireLock(fsx: Fs, dataDir: string): () => void {
  mkdirDurableSync(fsx, dataDir);
  const file = path.join(dataDir, 'LOCK');
  const content = `${process.pid} ${Date.now()}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = fsx.openSync(file, 'wx');
      fsx.writeSync(fd, Buffer.from(content), 0);
      fsx.fsyncSync(fd);
      fsx.closeSync(fd);
      return () => {
        try {
          if (fsx.readFileSync(file).toString('utf8') !== content) return; // someone else's now
          const released = Buffer.from(`0 ${Date.now()}\n`.padEnd(content.length));
          const rfd = fsx.openSync(file, 'r+');
          try {
            fsx.writeSync(rfd, released, 0); // rewrites the same block: needs no free space
            fsx.fsyncSync(rfd);
          } finally {
            fsx.closeSync(rfd);
          }
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(fsx.readFileSync(file).toString('utf8').split(' ')[0]);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new DataDirLockedError(`data directory ${dataDir} is in use by process ${pid}`);
      }
      fsx.unlinkSync(file); // stale lock of a dead process
    }
  }
  throw new DataDirLockedError(`could not lock ${dataDir}`);
}

/** The pid of a live process holding `dataDir`'s LOCK, if any (offline tools refuse such a dir). */
export function liveLockHolder(fsx: Fs, dataDir: string): number | undefined {
  let text: string;
  try {
    text = fsx.readFileSync(path.join(dataDir, 'LOCK')).toString('utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.split(' ')[0]);
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : undefined;
}
