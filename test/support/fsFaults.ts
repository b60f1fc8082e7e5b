// Fault injection shared by the two test filesystems (SimDisk, FaultFs): the call counter, the
// planned faults, the error shape and the call log. Owns no files; the filesystems ask `begin()`
// once per counted call and throw (sync) or reject (async) with the returned fault, applying
// nothing of that call.
// Invariants: call numbers start at 1 and increase by one per counted call; the call log keeps
// the last CALL_LOG_MAX calls; at most FAULT_PLANS_MAX planned faults and rules are held.
import assert from 'node:assert/strict';
import os from 'node:os';
import util from 'node:util';

/** The injectable faults: disk full, I/O error, quota exceeded. */
export type FaultCode = 'ENOSPC' | 'EIO' | 'EDQUOT';

/**
 * What a call does, for sticky faults (`once: false`): 'write' = anything that changes the disk
 * (write, writev, writeFile, truncate, ftruncate, mkdir, open with a creating flag — 'w', 'wx',
 * 'r+c' — rename, unlink, rm); 'sync' = fsync, fdatasync, FsFile.sync; 'other' = everything else
 * (open 'r'/'r+', read, readFile, readdir, stat, exists, close).
 */
export type CallKind = 'write' | 'sync' | 'other';

export interface CallInfo {
  /** 1-based number of this counted call. */
  call: number;
  /** The Fs method name ('writevSync', 'open', ...) or 'file.<method>' for FsFile methods. */
  op: string;
  kind: CallKind;
  /** The path, or the path the fd was opened with (fd calls); `to` is a rename's target. */
  path?: string;
  to?: string;
  fd?: number;
  /** Bytes asked to write or read, when the call moves bytes. */
  bytes?: number;
}

export interface CallRecord extends CallInfo {
  /** The errno code the call failed with, when it failed at the time of the call. */
  error?: string;
}

export const CALL_LOG_MAX = 1000;
export const FAULT_PLANS_MAX = 64;

const OPEN_CREATING = new Set(['w', 'wx', 'r+c']);
const SYNC_OPS = new Set(['fdatasyncSync', 'fsyncSync', 'fdatasync', 'file.sync']);
const WRITE_OPS = new Set([
  'writeSync',
  'writevSync',
  'ftruncateSync',
  'writeFileSync',
  'mkdirSync',
  'unlinkSync',
  'renameSync',
  'mkdir',
  'rm',
  'rename',
  'link',
  'truncate',
  'file.writev',
  'file.writeFile',
  'file.truncate',
]);

export function kindOf(op: string, flags?: string): CallKind {
  if (SYNC_OPS.has(op)) return 'sync';
  if (WRITE_OPS.has(op)) return 'write';
  if ((op === 'openSync' || op === 'open') && flags !== undefined && OPEN_CREATING.has(flags)) return 'write';
  return 'other';
}

/** The syscall name Node puts on errors of each operation. */
const SYSCALLS: Record<string, string> = {
  openSync: 'open',
  open: 'open',
  closeSync: 'close',
  'file.close': 'close',
  writeSync: 'write',
  writevSync: 'writev',
  'file.writev': 'writev',
  'file.writeFile': 'write',
  writeFileSync: 'write',
  readSync: 'read',
  'file.read': 'read',
  readFileSync: 'read',
  readFile: 'read',
  fdatasyncSync: 'fdatasync',
  fdatasync: 'fdatasync',
  fsyncSync: 'fsync',
  'file.sync': 'fsync',
  ftruncateSync: 'ftruncate',
  'file.truncate': 'ftruncate',
  truncate: 'ftruncate',
  readdirSync: 'scandir',
  readdir: 'scandir',
  stat: 'stat',
  mkdirSync: 'mkdir',
  mkdir: 'mkdir',
  statSync: 'stat',
  existsSync: 'access',
  unlinkSync: 'unlink',
  renameSync: 'rename',
  rename: 'rename',
  link: 'link',
  rm: 'rm',
};

export function syscallOf(op: string): string {
  return SYSCALLS[op] ?? op;
}

/** Node's text for each errno (libuv has none for EDQUOT on Node 20, so it is supplied here). */
function describeErrno(code: string, errno: number): string {
  return util.getSystemErrorMap().get(errno)?.[1] ?? (code === 'EDQUOT' ? 'disk quota exceeded' : 'unknown error');
}

/** An Error shaped like Node's fs errors: message "CODE: text, syscall 'path'", code, errno, syscall, path. */
export function fsError(code: string, syscall: string, filePath?: string, dest?: string): NodeJS.ErrnoException {
  const errnoNumber = (os.constants.errno as Record<string, number | undefined>)[code];
  assert.ok(errnoNumber !== undefined, `unknown errno code ${code}`);
  const errno = -errnoNumber;
  let where = syscall;
  if (filePath !== undefined) where += ` '${filePath}'`;
  if (dest !== undefined) where += ` -> '${dest}'`;
  const err: NodeJS.ErrnoException & { dest?: string } = new Error(`${code}: ${describeErrno(code, errno)}, ${where}`);
  err.code = code;
  err.errno = errno;
  err.syscall = syscall;
  if (filePath !== undefined) err.path = filePath;
  if (dest !== undefined) err.dest = dest;
  return err;
}

interface PlannedFault {
  code: FaultCode;
  once: boolean;
}

interface FaultRule {
  match: (c: CallInfo) => boolean;
  code: FaultCode;
}

/** The call counter, planned faults and call log of one filesystem. */
export class FaultPlan {
  private count = 0;
  private readonly at = new Map<number, PlannedFault>();
  private readonly rules: FaultRule[] = [];
  /** Kinds failing on every call since a `once: false` fault fired. */
  private readonly sticky = new Map<CallKind, FaultCode>();
  private readonly ring: CallRecord[] = [];
  private ringNext = 0;

  /** Counted calls so far. */
  get calls(): number {
    return this.count;
  }

  /** The n-th counted call fails; with `once: false` every later call of its kind fails too, until clear(). */
  failAt(n: number, code: FaultCode, opts: { once?: boolean } = {}): void {
    assert.ok(Number.isInteger(n) && n > this.count, `failAt(${n}): call ${n} has already happened (${this.count} so far)`);
    assert.ok(this.at.size < FAULT_PLANS_MAX, 'too many planned faults');
    this.at.set(n, { code, once: opts.once ?? true });
  }

  /** Every later call matching `match` fails, until clear(). */
  failWhen(match: (c: CallInfo) => boolean, code: FaultCode): void {
    assert.ok(this.rules.length < FAULT_PLANS_MAX, 'too many fault rules');
    this.rules.push({ match, code });
  }

  clear(): void {
    this.at.clear();
    this.rules.length = 0;
    this.sticky.clear();
  }

  /** Counts one call and logs it; returns its record and the fault to inject, if any. */
  begin(info: Omit<CallInfo, 'call'>): { rec: CallRecord; fault: FaultCode | undefined } {
    const rec: CallRecord = { call: ++this.count, ...info };
    this.log(rec);
    let fault = this.sticky.get(rec.kind);
    const planned = this.at.get(rec.call);
    if (planned) {
      this.at.delete(rec.call);
      fault = planned.code;
      if (!planned.once) this.sticky.set(rec.kind, planned.code);
    }
    fault ??= this.rules.find((r) => r.match(rec))?.code;
    if (fault) rec.error = fault;
    return { rec, fault };
  }

  private log(rec: CallRecord): void {
    if (this.ring.length < CALL_LOG_MAX) this.ring.push(rec);
    else this.ring[this.ringNext] = rec;
    this.ringNext = (this.ringNext + 1) % CALL_LOG_MAX;
  }

  /** The last CALL_LOG_MAX calls, oldest first. */
  callLog(): CallRecord[] {
    return this.ring.length < CALL_LOG_MAX ? [...this.ring] : [...this.ring.slice(this.ringNext), ...this.ring.slice(0, this.ringNext)];
  }
}

/** One line per call, for failure reports. */
export function formatCallLog(log: readonly CallRecord[]): string {
  return log
    .map((r) => {
      const where = [r.path !== undefined ? r.path : '', r.to !== undefined ? `-> ${r.to}` : '', r.fd !== undefined ? `fd=${r.fd}` : '']
        .filter(Boolean)
        .join(' ');
      return `#${r.call} ${r.op} ${where}${r.bytes !== undefined ? ` ${r.bytes}B` : ''}${r.error ? ` !${r.error}` : ''}`;
    })
    .join('\n');
}
