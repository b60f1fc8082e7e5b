// The Fs seam (docs/ARCHITECTURE.md "Code map"): every access to the data directory goes through one
// injected `Fs`, built once at each thread's entry point. `nodeFs` is the real one; tests wrap
// it (test/support/faultFs.ts: ENOSPC, EIO, crashes at the N-th call) or replace it with a
// simulated disk that loses what was never fsynced (test/support/simDisk.ts). The interface is the
// subset of node:fs that spool uses, with the same meaning, so nodeFs is a thin pass-through.
// Synchronous calls are for the WAL thread (blocking is its job), startup and offline tools;
// workers and the HTTP thread use the asynchronous ones.
import fs from 'node:fs';
import path from 'node:path';
import fsp from 'node:fs/promises';

/** An open file for asynchronous use (segments, snapshots). */
export interface FsFile {
  writev(buffers: Uint8Array[], position: number): Promise<number>;
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  writeFile(data: Uint8Array): Promise<void>;
  /** fsync: data and metadata. */
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

export interface Fs {
  // ---- synchronous -------------------------------------------------------------------------
  /** `flags`: 'r', 'r+', 'w', 'wx' (create, fail if it exists). */
  openSync(path: string, flags: OpenFlags): number;
  closeSync(fd: number): void;
  writeSync(fd: number, buf: Uint8Array, position: number): number;
  writevSync(fd: number, bufs: Uint8Array[], position: number): number;
  readSync(fd: number, buf: Uint8Array, position: number): number;
  fdatasyncSync(fd: number): void;
  /** fsync of a file or, opened with 'r', of a directory (its entries). */
  fsyncSync(fd: number): void;
  ftruncateSync(fd: number, length: number): void;
  readFileSync(path: string): Buffer;
  writeFileSync(path: string, data: Uint8Array): void;
  readdirSync(path: string): string[];
  /** Recursive; no error if it exists. Returns the first directory it created, if any. */
  mkdirSync(path: string): string | undefined;
  statSync(path: string): { size: number };
  existsSync(path: string): boolean;
  unlinkSync(path: string): void;
  renameSync(from: string, to: string): void;
  // ---- asynchronous ------------------------------------------------------------------------
  fdatasync(fd: number): Promise<void>;
  open(path: string, flags: OpenFlags): Promise<FsFile>;
  readFile(path: string): Promise<Buffer>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<{ size: number }>;
  /** Recursive; no error if it exists. Returns the first directory it created, if any. */
  mkdir(path: string): Promise<string | undefined>;
  /** Removes a file or a directory tree; no error if absent. */
  rm(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** A second name for a file (a hard link); EEXIST if `to` exists. */
  link(from: string, to: string): Promise<void>;
  truncate(path: string, length: number): Promise<void>;
}

/** 'r+c' opens read/write and creates the file if it is missing (never truncating it). */
export type OpenFlags = 'r' | 'r+' | 'w' | 'wx' | 'r+c';

function nodeFlags(f: OpenFlags): string | number {
  return f === 'r+c' ? fs.constants.O_RDWR | fs.constants.O_CREAT : f;
}

/** A callback call of node:fs as a promise. */
function call<T>(start: (done: (err: NodeJS.ErrnoException | null, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value as T))));
}

/**
 * An open file as a descriptor and node:fs's callback calls, not a fs/promises FileHandle: a
 * FileHandle read of a few KB cost ~25-40 µs of the calling thread's CPU here, the callback
 * call ~8-13 µs (measured with 160k preads of 2.7 KB, 16 at a time), and recovery and cold
 * reads of many small topics are a pread each.
 */
class NodeFile implements FsFile {
  constructor(private readonly fd: number) {}
  writev(buffers: Uint8Array[], position: number): Promise<number> {
    return call<number>((done) => fs.writev(this.fd, buffers as NodeJS.ArrayBufferView[], position, done));
  }
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return call<number>((done) => fs.read(this.fd, buffer, offset, length, position, done));
  }
  writeFile(data: Uint8Array): Promise<void> {
    return call<void>((done) => fs.writeFile(this.fd, data, done));
  }
  sync(): Promise<void> {
    return call<void>((done) => fs.fsync(this.fd, done));
  }
  truncate(length: number): Promise<void> {
    return call<void>((done) => fs.ftruncate(this.fd, length, done));
  }
  close(): Promise<void> {
    return call<void>((done) => fs.close(this.fd, done));
  }
}

/**
 * `mkdir -p`: creates `dir` and any missing parents; returns the first directory it created
 * (undefined when `dir` existed), as Node's `{ recursive: true }` does. Not that option itself:
 * where a directory cannot be made although its parent exists (`/proc/x`), Node's recursive
 * mkdir retries for ever; here a second ENOENT is final.
 */
export function makeDirsSync(dir: string): string | undefined {
  try {
    fs.mkdirSync(dir);
    return dir;
  } catch (err) {
    if (errnoOf(err) === 'EEXIST' && fs.statSync(dir).isDirectory()) return undefined;
    const parent = path.dirname(dir);
    if (errnoOf(err) !== 'ENOENT' || parent === dir) throw err;
    const first = makeDirsSync(parent);
    try {
      fs.mkdirSync(dir);
    } catch (again) {
      if (errnoOf(again) !== 'EEXIST' || !fs.statSync(dir).isDirectory()) throw again; // made meanwhile: fine
    }
    return first ?? dir;
  }
}

/** makeDirsSync without blocking. */
export async function makeDirs(dir: string): Promise<string | undefined> {
  try {
    await fsp.mkdir(dir);
    return dir;
  } catch (err) {
    if (errnoOf(err) === 'EEXIST' && (await fsp.stat(dir)).isDirectory()) return undefined;
    const parent = path.dirname(dir);
    if (errnoOf(err) !== 'ENOENT' || parent === dir) throw err;
    const first = await makeDirs(parent);
    try {
      await fsp.mkdir(dir);
    } catch (again) {
      if (errnoOf(again) !== 'EEXIST' || !(await fsp.stat(dir)).isDirectory()) throw again;
    }
    return first ?? dir;
  }
}

/** The real filesystem. */
export const nodeFs: Fs = {
  openSync: (p, flags) => fs.openSync(p, nodeFlags(flags), 0o644),
  closeSync: (fd) => fs.closeSync(fd),
  writeSync: (fd, buf, position) => fs.writeSync(fd, buf, 0, buf.byteLength, position),
  writevSync: (fd, bufs, position) => fs.writevSync(fd, bufs, position),
  readSync: (fd, buf, position) => fs.readSync(fd, buf, 0, buf.byteLength, position),
  fdatasyncSync: (fd) => fs.fdatasyncSync(fd),
  fsyncSync: (fd) => fs.fsyncSync(fd),
  ftruncateSync: (fd, length) => fs.ftruncateSync(fd, length),
  readFileSync: (p) => fs.readFileSync(p),
  writeFileSync: (p, data) => fs.writeFileSync(p, data),
  readdirSync: (p) => fs.readdirSync(p),
  mkdirSync: (p) => makeDirsSync(p),
  statSync: (p) => ({ size: fs.statSync(p).size }),
  existsSync: (p) => fs.existsSync(p),
  unlinkSync: (p) => fs.unlinkSync(p),
  renameSync: (from, to) => fs.renameSync(from, to),
  fdatasync: (fd) => call<void>((done) => fs.fdatasync(fd, done)),
  open: async (p, flags) => new NodeFile(await call<number>((done) => fs.open(p, nodeFlags(flags), 0o644, done))),
  readFile: (p) => fsp.readFile(p),
  readdir: (p) => fsp.readdir(p),
  stat: async (p) => ({ size: (await fsp.stat(p)).size }),
  mkdir: (p) => makeDirs(p),
  rm: (p) => fsp.rm(p, { recursive: true, force: true }),
  rename: (from, to) => fsp.rename(from, to),
  link: (from, to) => fsp.link(from, to),
  truncate: (p, length) => fsp.truncate(p, length),
};

/** fsync of a directory, so the entries created or renamed in it survive a crash. */
export function fsyncDirSync(fsx: Fs, dir: string): void {
  const fd = fsx.openSync(dir, 'r');
  try {
    fsx.fsyncSync(fd);
  } finally {
    fsx.closeSync(fd);
  }
}

export async function fsyncDir(fsx: Fs, dir: string): Promise<void> {
  const f = await fsx.open(dir, 'r');
  try {
    await f.sync();
  } finally {
    await f.close();
  }
}

/** Writes all of `buf` at `position`, finishing short writes. */
export function writeAllSync(fsx: Fs, fd: number, buf: Uint8Array, position = 0): void {
  for (let done = 0; done < buf.byteLength;) done += fsx.writeSync(fd, buf.subarray(done), position + done);
}

export async function writeAll(f: FsFile, buf: Uint8Array, position = 0): Promise<void> {
  for (let done = 0; done < buf.byteLength;) done += await f.writev([buf.subarray(done)], position + done);
}

/**
 * mkdir -p that survives a crash: every directory it creates is fsynced into its parent
 * (a new directory entry is only durable once its parent is, POSIX). Nothing to do if it exists.
 */
export function mkdirDurableSync(fsx: Fs, dir: string): void {
  const first = fsx.mkdirSync(dir);
  if (first === undefined) return;
  for (const parent of newDirParents(first, dir)) fsyncDirSync(fsx, parent);
}

export async function mkdirDurable(fsx: Fs, dir: string): Promise<void> {
  const first = await fsx.mkdir(dir);
  if (first === undefined) return;
  for (const parent of newDirParents(first, dir)) await fsyncDir(fsx, parent);
}

/**
 * The directories to fsync after a recursive mkdir of `dir` whose first new directory was
 * `first`: the parent of each new directory, top first.
 */
export function newDirParents(first: string, dir: string): string[] {
  const out: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    out.push(path.dirname(d));
    if (d === path.resolve(first) || path.dirname(d) === d) break;
  }
  return out.reverse();
}

/** The errno code of an error from an Fs call (undefined for other errors). */
export function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Linux's EDQUOT: libuv has no name for it, so Node reports code 'UNKNOWN' with this errno. */
const EDQUOT_ERRNO = -122;

/** Out of space: ENOSPC, or a quota (EDQUOT). */
export function isDiskFull(err: unknown): boolean {
  const c = errnoOf(err);
  return c === 'ENOSPC' || c === 'EDQUOT' || (err as NodeJS.ErrnoException | undefined)?.errno === EDQUOT_ERRNO;
}

/** The part of `bufs` (as one byte sequence) from byte `from` on, without copying. */
export function unwritten(bufs: Buffer[], from: number): Buffer[] {
  const out: Buffer[] = [];
  let skip = from;
  for (const b of bufs) {
    if (skip >= b.length) {
      skip -= b.length;
      continue;
    }
    out.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return out;
}
