// FaultFs: a pass-through `Fs` (src/storage/fs.ts) around any other Fs, typically nodeFs on a
// temp dir, that counts calls and fails chosen ones with ENOSPC / EIO / EDQUOT (same error shape
// and counting as SimDisk, test/support/fsFaults.ts). For tests that need real files, e.g. a
// disk-full test of the segment store; crash simulation is SimDisk's job.
// Invariants: every Fs method call and every FsFile method call is one counted call; a failed
// call never reaches the inner Fs (nothing of it is applied); the fd → path map holds only fds
// opened through this wrapper and not yet closed.
import type { Fs, FsFile, OpenFlags } from '../../src/storage/fs.js';
import { errnoOf } from '../../src/storage/fs.js';
import { FaultPlan, formatCallLog, fsError, kindOf, syscallOf, type CallInfo, type CallRecord, type FaultCode } from './fsFaults.js';

interface Target {
  path?: string;
  to?: string;
  fd?: number;
  bytes?: number;
  flags?: OpenFlags;
}

/** How a wrapper (the Fs or one of its FsFiles) runs one counted call. */
type Run = <T>(op: string, t: Target, fn: () => T) => T;
type RunAsync = <T>(op: string, t: Target, fn: () => Promise<T>) => Promise<T>;

export class FaultFs implements Fs {
  private readonly plan = new FaultPlan();
  private readonly fdPaths = new Map<number, string>();

  constructor(private readonly inner: Fs) {}

  /** Counted calls so far. */
  get calls(): number {
    return this.plan.calls;
  }
  /** Call `n` fails with `code`; with `once: false` every later call of its kind too, until clear(). */
  failAt(n: number, code: FaultCode, opts?: { once?: boolean }): void {
    this.plan.failAt(n, code, opts);
  }
  /** Every later call matching `match` (op, kind, path, fd...) fails with `code`, until clear(). */
  failWhen(match: (c: CallInfo) => boolean, code: FaultCode): void {
    this.plan.failWhen(match, code);
  }
  clear(): void {
    this.plan.clear();
  }
  callLog(): CallRecord[] {
    return this.plan.callLog();
  }
  formatCallLog(last = 40): string {
    return formatCallLog(this.plan.callLog().slice(-last));
  }

  /** Counts one call; throws its injected fault, if any, before anything reaches the inner Fs. */
  private start(op: string, t: Target): CallRecord {
    const p = t.path ?? (t.fd !== undefined ? this.fdPaths.get(t.fd) : undefined);
    const { rec, fault } = this.plan.begin({ op, kind: kindOf(op, t.flags), path: p, to: t.to, fd: t.fd, bytes: t.bytes });
    if (fault) throw fsError(fault, syscallOf(op), p);
    return rec;
  }

  private readonly run: Run = (op, t, fn) => {
    const rec = this.start(op, t);
    try {
      return fn();
    } catch (err) {
      rec.error ??= errnoOf(err) ?? 'exception';
      throw err;
    }
  };

  private readonly runAsync: RunAsync = (op, t, fn) => {
    let rec: CallRecord | undefined;
    try {
      rec = this.start(op, t);
      const r = rec;
      return fn().catch((err: unknown) => {
        r.error ??= errnoOf(err) ?? 'exception';
        throw err;
      });
    } catch (err) {
      if (rec) rec.error ??= errnoOf(err) ?? 'exception';
      return Promise.reject(err);
    }
  };

  openSync(p: string, flags: OpenFlags): number {
    const fd = this.run('openSync', { path: p, flags }, () => this.inner.openSync(p, flags));
    this.fdPaths.set(fd, p);
    return fd;
  }
  closeSync(fd: number): void {
    this.run('closeSync', { fd }, () => this.inner.closeSync(fd));
    this.fdPaths.delete(fd);
  }
  writeSync(fd: number, buf: Uint8Array, position: number): number {
    return this.run('writeSync', { fd, bytes: buf.byteLength }, () => this.inner.writeSync(fd, buf, position));
  }
  writevSync(fd: number, bufs: Uint8Array[], position: number): number {
    const bytes = bufs.reduce((n, b) => n + b.byteLength, 0);
    return this.run('writevSync', { fd, bytes }, () => this.inner.writevSync(fd, bufs, position));
  }
  readSync(fd: number, buf: Uint8Array, position: number): number {
    return this.run('readSync', { fd, bytes: buf.byteLength }, () => this.inner.readSync(fd, buf, position));
  }
  fdatasyncSync(fd: number): void {
    this.run('fdatasyncSync', { fd }, () => this.inner.fdatasyncSync(fd));
  }
  fsyncSync(fd: number): void {
    this.run('fsyncSync', { fd }, () => this.inner.fsyncSync(fd));
  }
  ftruncateSync(fd: number, length: number): void {
    this.run('ftruncateSync', { fd }, () => this.inner.ftruncateSync(fd, length));
  }
  readFileSync(p: string): Buffer {
    return this.run('readFileSync', { path: p }, () => this.inner.readFileSync(p));
  }
  writeFileSync(p: string, data: Uint8Array): void {
    this.run('writeFileSync', { path: p, bytes: data.byteLength }, () => this.inner.writeFileSync(p, data));
  }
  readdirSync(p: string): string[] {
    return this.run('readdirSync', { path: p }, () => this.inner.readdirSync(p));
  }
  mkdirSync(p: string): string | undefined {
    return this.run('mkdirSync', { path: p }, () => this.inner.mkdirSync(p));
  }
  statSync(p: string): { size: number } {
    return this.run('statSync', { path: p }, () => this.inner.statSync(p));
  }
  /** Like Node's, never throws: an injected fault reads as "absent". */
  existsSync(p: string): boolean {
    try {
      return this.run('existsSync', { path: p }, () => this.inner.existsSync(p));
    } catch (err) {
      if (errnoOf(err) === undefined) throw err;
      return false;
    }
  }
  unlinkSync(p: string): void {
    this.run('unlinkSync', { path: p }, () => this.inner.unlinkSync(p));
  }
  renameSync(from: string, to: string): void {
    this.run('renameSync', { path: from, to }, () => this.inner.renameSync(from, to));
  }

  fdatasync(fd: number): Promise<void> {
    return this.runAsync('fdatasync', { fd }, () => this.inner.fdatasync(fd));
  }
  open(p: string, flags: OpenFlags): Promise<FsFile> {
    return this.runAsync('open', { path: p, flags }, async () => new FaultFile(await this.inner.open(p, flags), p, this.runAsync));
  }
  readFile(p: string): Promise<Buffer> {
    return this.runAsync('readFile', { path: p }, () => this.inner.readFile(p));
  }
  stat(p: string): Promise<{ size: number }> {
    return this.runAsync('stat', { path: p }, () => this.inner.stat(p));
  }

  readdir(p: string): Promise<string[]> {
    return this.runAsync('readdir', { path: p }, () => this.inner.readdir(p));
  }
  mkdir(p: string): Promise<string | undefined> {
    return this.runAsync('mkdir', { path: p }, () => this.inner.mkdir(p));
  }
  rm(p: string): Promise<void> {
    return this.runAsync('rm', { path: p }, () => this.inner.rm(p));
  }
  rename(from: string, to: string): Promise<void> {
    return this.runAsync('rename', { path: from, to }, () => this.inner.rename(from, to));
  }
  link(from: string, to: string): Promise<void> {
    return this.runAsync('link', { path: from, to }, () => this.inner.link(from, to));
  }
  truncate(p: string, length: number): Promise<void> {
    return this.runAsync('truncate', { path: p }, () => this.inner.truncate(p, length));
  }
}

/** An FsFile of the inner Fs whose every method is a counted call. */
class FaultFile implements FsFile {
  constructor(
    private readonly inner: FsFile,
    private readonly path: string,
    private readonly runAsync: RunAsync,
  ) {}

  writev(buffers: Uint8Array[], position: number): Promise<number> {
    const bytes = buffers.reduce((n, b) => n + b.byteLength, 0);
    return this.runAsync('file.writev', { path: this.path, bytes }, () => this.inner.writev(buffers, position));
  }
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return this.runAsync('file.read', { path: this.path, bytes: length }, () => this.inner.read(buffer, offset, length, position));
  }
  writeFile(data: Uint8Array): Promise<void> {
    return this.runAsync('file.writeFile', { path: this.path, bytes: data.byteLength }, () => this.inner.writeFile(data));
  }
  sync(): Promise<void> {
    return this.runAsync('file.sync', { path: this.path }, () => this.inner.sync());
  }
  truncate(length: number): Promise<void> {
    return this.runAsync('file.truncate', { path: this.path }, () => this.inner.truncate(length));
  }
  close(): Promise<void> {
    return this.runAsync('file.close', { path: this.path }, () => this.inner.close());
  }
}
