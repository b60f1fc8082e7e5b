// Single-writer guard for a data directory (docs/ARCHITECTURE.md "Other decisions"): LOCK is created with O_EXCL and holds
// "pid start-ms pid-namespace identity". A lock left by a dead process is taken over; so is one
// whose pid now belongs to another process (a reboot, or the pid reused after a crash): the
// identity is the boot's id and the holder's start time, which a reused pid does not repeat. A pid says nothing
// across PID namespaces (two containers on one volume are both pid 1), so the holder also touches
// LOCK every LOCK_REFRESH_MS, and a lock of another namespace is live while that mtime is fresh.
// Release keeps the file and writes pid 0 into it (never alive) rather than removing it: a
// restart on a full disk then takes it over by unlinking it first, which frees the space its
// O_EXCL create needs; `spool restore`, which leaves a directory as it found it when it fails,
// releases by removing the file instead (`{ remove: true }`). Hand-written rather than
// proper-lockfile: we need exactly these checks.
import fs from 'node:fs';
import path from 'node:path';
import { mkdirDurableSync, nodeFs, type Fs } from './fs.js';

/** How often the holder touches LOCK. */
export const LOCK_REFRESH_MS = 2000;
/** A lock of another PID namespace untouched this long is stale (its holder is gone). */
export const LOCK_STALE_MS = 10_000;

export class DataDirLockedError extends Error {}

/** Releases a lock: marks LOCK free (pid 0), or with `remove` unlinks it; never someone else's. */
export type ReleaseLock = (opts?: { remove?: boolean }) => void;

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

/** This process's PID namespace ("pid:[4026531836]"), or "" where /proc does not say. */
function pidNamespace(): string {
  try {
    return fs.readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** How long a torn LOCK is given to be finished by a start writing it right now. */
const TORN_RECHECK_MS = 50;

interface LockHolder {
  pid: number;
  /** The holder's PID namespace ("" in a LOCK written before namespaces were recorded). */
  ns: string;
  /** processIdentity of the holder ("" in a LOCK written before it was recorded). */
  ident: string;
}

function holderOf(text: string): LockHolder {
  const [pid, , ns, ident] = text.trim().split(' ');
  return { pid: Number(pid), ns: ns ?? '', ident: ident ?? '' };
}

/**
 * What tells a process apart from a later one given the same pid: the boot's id and the
 * process's start time (clock ticks since boot, /proc/<pid>/stat field 22); "" where /proc does
 * not say (then only the pid is judged, as before).
 */
export function processIdentity(pid: number | 'self'): string {
  try {
    const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]; // field 22; field 3 is index 0
    return boot && start ? `${boot}/${start}` : '';
  } catch {
    return '';
  }
}

/**
 * The holder LOCK names. A torn line (no newline: a released lock's line is padded with spaces
 * after its own) names none: a holder writes and
 * fsyncs its whole line before it holds anything, so it is a start that crashed while taking the
 * lock, or one writing it this very moment. A moment later the second has finished; the first
 * is stale, whatever its half line says.
 */
function readHolder(fsx: Fs, file: string): LockHolder {
  let text = fsx.readFileSync(file).toString('utf8');
  if (text !== '' && !text.includes('\n')) {
    Atomics.wait(sleeper, 0, 0, TORN_RECHECK_MS);
    text = fsx.readFileSync(file).toString('utf8');
    if (!text.includes('\n')) text = '';
  }
  return holderOf(text);
}

/** Ms since LOCK was last touched, or undefined when it cannot be read (a simulated disk). */
function lockAgeMs(file: string): number | undefined {
  try {
    return Date.now() - fs.statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * Whether the holder of LOCK runs: by its pid in this namespace, by LOCK's fresh mtime in another
 * (`ageMs` undefined: no mtime to judge by, so held).
 */
function held(h: LockHolder, ns: string, ageMs: number | undefined): boolean {
  if (!Number.isInteger(h.pid) || h.pid <= 0) return false; // released
  if (h.ns === '' || h.ns === ns) {
    if (h.pid === process.pid || !alive(h.pid)) return false;
    // Alive, but perhaps as another process now: only a known identity that differs says so.
    const now = h.ident === '' ? '' : processIdentity(h.pid);
    return now === '' || now === h.ident;
  }
  return ageMs === undefined || ageMs < LOCK_STALE_MS;
}

/**
 * Touches `file` every LOCK_REFRESH_MS. A function of its own: the timer's closure holds the path
 * and nothing else (one in acquireLock kept its Fs, and a test's abandoned world, reachable).
 */
function touchEvery(file: string): NodeJS.Timeout {
  const t = setInterval(() => {
    try {
      const now = new Date();
      fs.utimesSync(file, now, now);
    } catch {
      /* the directory is gone: nothing to refresh */
    }
  }, LOCK_REFRESH_MS);
  t.unref();
  return t;
}

export function acquireLock(fsx: Fs, dataDir: string): ReleaseLock {
  mkdirDurableSync(fsx, dataDir);
  const file = path.join(dataDir, 'LOCK');
  const ns = pidNamespace();
  const content = `${process.pid} ${Date.now()} ${ns} ${processIdentity('self')}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = fsx.openSync(file, 'wx');
      fsx.writeSync(fd, Buffer.from(content), 0);
      fsx.fsyncSync(fd);
      fsx.closeSync(fd);
      const refresh = fsx === nodeFs ? touchEvery(file) : undefined; // a simulated disk has no mtime
      return (opts = {}) => {
        clearInterval(refresh);
        try {
          if (fsx.readFileSync(file).toString('utf8') !== content) return; // someone else's now
          if (opts.remove) return void fsx.unlinkSync(file);
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
      const h = readHolder(fsx, file);
      // A lock of another namespace (a container's) goes stale LOCK_STALE_MS after its holder
      // stopped touching it: a restart right after a crash waits that long, once.
      for (let waited = 0; held(h, ns, lockAgeMs(file)); waited += 500) {
        if (h.ns === '' || h.ns === ns || waited > LOCK_STALE_MS)
          throw new DataDirLockedError(
            `data directory ${dataDir} is in use by process ${h.pid}${h.ns !== '' && h.ns !== ns ? ` in another PID namespace (${h.ns}: a container?), its lock touched ${lockAgeMs(file) ?? '?'} ms ago` : ''}`,
          );
        Atomics.wait(sleeper, 0, 0, 500);
      }
      fsx.unlinkSync(file); // stale lock of a dead process
    }
  }
  throw new DataDirLockedError(`could not lock ${dataDir}`);
}

/** The pid of a live process holding `dataDir`'s LOCK, if any (offline tools refuse such a dir). */
export function liveLockHolder(fsx: Fs, dataDir: string): number | undefined {
  const file = path.join(dataDir, 'LOCK');
  let h: LockHolder;
  try {
    h = readHolder(fsx, file);
  } catch {
    return undefined;
  }
  return held(h, pidNamespace(), lockAgeMs(file)) ? h.pid : undefined;
}
