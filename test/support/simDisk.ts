// SimDisk: an in-memory filesystem behind the `Fs` seam (src/storage/fs.ts) with POSIX-like crash
// semantics, for WAL unit tests, crash sweeps of a whole in-process server, and fuzzing. Owns the
// generations (boot to crash), the views bound to them, fault injection (shared FaultPlan) and the
// crash transform; the namespace and bytes live in SimTree / FileNode / DirNode.
//
// Durability model: a file's bytes are durable as of its last fsync/fdatasync (FsFile.sync); a
// directory's entries as of its last fsync (open(dir, 'r') + fsync, or FsFile.sync). A new name
// (create, mkdir, rename target) and a removal (unlink, rm, rename source) are lost or undone in a
// crash unless the directory was fsynced after them (mkdir too, unless `durableMkdir`).
//   crash('durable-only'): every directory takes its durable entries, every file its durable bytes.
//   crash('random'): directories as above; each file's writes/truncates since its last sync are
//     replayed over its durable bytes in order, each surviving with probability 1/2, the last
//     surviving write torn at a random byte (only a prefix of it lands). Draws from the seeded RNG.
//   crash('random-dirs'): as 'random', and first each unsynced directory change (a new name, a
//     removal, a rename as one unit) lands or not, a coin each: what a journaling filesystem may
//     commit before any fsync, which POSIX allows.
//   crash('process'): a SIGKILL of the process, not of the machine: every write and directory
//     change lands (the kernel's page cache outlives the process).
//
// Views: `fs()` returns the Fs of the live generation. After freeze() or crash() every earlier
// view and FsFile is DEAD: it touches nothing and never throws; sync calls return inert values
// (writes: the requested length, reads: 0 / empty, existsSync false, readdirSync [], statSync
// {size:0}, openSync a fake fd) and async calls return promises that never settle. A dead
// fsync "succeeds" without syncing, so whatever an abandoned server reports after `frozen`
// resolved is no evidence of durability.
//
// Counting: every Fs method call and every FsFile method call on a live view is one call
// (numbered from 1 since construction, across crashes); calls on dead views are not counted.
// Async calls are counted, applied and logged at the moment they are invoked; their promise
// settles on a later microtask. failAt(n)/freezeAt(n)/callLog use these numbers.
// Invariants: at most one live generation; no wall clock and no Math.random (the RNG is injected).
import assert from 'node:assert/strict';
import type { Fs, FsFile, OpenFlags } from '../../src/storage/fs.js';
import { errnoOf } from '../../src/storage/fs.js';
import { seededRng, type Rng } from '../../src/core/rng.js';
import { FaultPlan, formatCallLog, fsError, kindOf, syscallOf, type CallInfo, type CallRecord, type FaultCode } from './fsFaults.js';
import { normalize, SimTree, type SimLimits } from './simDiskTree.js';

export type CrashMode = 'durable-only' | 'random' | 'random-dirs' | 'process';

export interface FreezeInfo {
  /** The call after which the disk froze (the number of calls so far, for freeze()/crash()). */
  call: number;
  op: string;
  path?: string;
}

export interface SimDiskOptions {
  /** Seed for the crash RNG (default 'simdisk'); ignored when `rng` is given. */
  seed?: string;
  rng?: Rng;
  capacityBytes?: number;
  /** Over capacity, the bytes that fit land: a write/writev returns the short count (ENOSPC only when nothing fits), writeFile throws ENOSPC after them. */
  partialWrites?: boolean;
  durableMkdir?: boolean;
}

/** Fds handed out by dead views: never valid on any generation. */
const FAKE_FD_FIRST = 1 << 30;

interface Target {
  path?: string;
  to?: string;
  fd?: number;
  bytes?: number;
  flags?: OpenFlags;
}

/** What a view needs from its disk: whether it is live, and how to run one counted call. */
interface Runner {
  live(): boolean;
  run<T>(op: string, target: Target, fn: (tree: SimTree) => T): T;
  fakeFd(): number;
}

export class SimDisk {
  private readonly limits: SimLimits;
  private readonly tree: SimTree;
  private readonly plan = new FaultPlan();
  private readonly rng: Rng;
  private gen = 1;
  private frozenNow = false;
  private freezeAtCall: number | undefined;
  private frozenPromise!: Promise<FreezeInfo>;
  private resolveFrozen!: (info: FreezeInfo) => void;
  private view: Fs | undefined;
  private nextFakeFd = FAKE_FD_FIRST;
  /** Crashes so far. */
  crashes = 0;
  /** The seed of the crash RNG, to print with a failure (undefined when an `rng` was injected). */
  readonly seed: string | undefined;

  constructor(opts: SimDiskOptions = {}) {
    this.seed = opts.rng ? undefined : (opts.seed ?? 'simdisk');
    this.rng = opts.rng ?? seededRng(this.seed!);
    this.limits = {
      capacityBytes: opts.capacityBytes,
      partialWrites: opts.partialWrites ?? false,
      durableMkdir: opts.durableMkdir ?? false,
    };
    this.tree = new SimTree(this.limits);
    this.armFrozen();
  }

  // ---- configuration and inspection (not counted) ----------------------------------------------

  get capacityBytes(): number | undefined {
    return this.limits.capacityBytes;
  }
  set capacityBytes(v: number | undefined) {
    this.limits.capacityBytes = v;
  }
  get partialWrites(): boolean {
    return this.limits.partialWrites;
  }
  set partialWrites(v: boolean) {
    this.limits.partialWrites = v;
  }
  /** Counted calls since construction. */
  get calls(): number {
    return this.plan.calls;
  }
  /** 1 at construction, +1 per crash. */
  get generation(): number {
    return this.gen;
  }
  get isFrozen(): boolean {
    return this.frozenNow;
  }
  /** Resolves when the live generation freezes (freezeAt, freeze() or crash()). */
  get frozen(): Promise<FreezeInfo> {
    return this.frozenPromise;
  }

  /** Sum of current lengths of every named or open file. */
  usedBytes(): number {
    return this.tree.usedBytes();
  }
  /** Current bytes of a file, or undefined if there is no file at `p`. */
  peek(p: string): Buffer | undefined {
    const n = this.tree.lookup(normalize(p), 'open');
    return n?.kind === 'file' ? n.bytes() : undefined;
  }
  /** Everything current becomes durable (test setup). */
  syncAll(): void {
    this.tree.syncAll();
  }
  describe(): string {
    return this.tree.describe();
  }
  /** The last CALL_LOG_MAX counted calls, oldest first. */
  callLog(): CallRecord[] {
    return this.plan.callLog();
  }
  formatCallLog(last = 40): string {
    return formatCallLog(this.plan.callLog().slice(-last));
  }

  // ---- faults --------------------------------------------------------------------------------

  /**
   * Counted call `n` throws (sync) or rejects (async) with `code`, applying nothing. With
   * `once: false` (default true) every later call of the same kind (fsFaults.ts CallKind) fails
   * too, until clearFaults(). Faults survive crashes.
   */
  failAt(n: number, code: FaultCode, opts?: { once?: boolean }): void {
    this.plan.failAt(n, code, opts);
  }
  /** Every later call matching `match` fails with `code`, until clearFaults(). */
  failWhen(match: (c: CallInfo) => boolean, code: FaultCode): void {
    this.plan.failWhen(match, code);
  }
  clearFaults(): void {
    this.plan.clear();
  }
  /** Counted call `n` completes normally (its effect applied, its result delivered), then the disk freezes. */
  freezeAt(n: number): void {
    assert.ok(Number.isInteger(n) && n > this.plan.calls, `freezeAt(${n}): call ${n} has already happened`);
    this.freezeAtCall = n;
  }

  // ---- generations ---------------------------------------------------------------------------

  /** The Fs of the live generation. */
  fs(): Fs {
    assert.ok(!this.frozenNow, 'the disk is frozen: crash() it first');
    this.view ??= new SimFs(this.runner(this.gen));
    return this.view;
  }

  /** Every view becomes dead now; `frozen` resolves. Idempotent. */
  freeze(): void {
    this.freezeWith({ call: this.plan.calls, op: 'freeze()' });
  }

  /** Freezes (if not yet), then reboots: fds closed, the crash transform applied, a new generation. */
  crash(mode: CrashMode): void {
    this.freezeWith({ call: this.plan.calls, op: 'crash()' });
    if (mode === 'process') this.tree.kill();
    else this.tree.crash(mode === 'durable-only' ? undefined : this.rng, mode === 'random-dirs');
    this.gen++;
    this.crashes++;
    this.frozenNow = false;
    this.view = undefined;
    this.armFrozen();
  }

  private freezeWith(info: FreezeInfo): void {
    if (this.frozenNow) return;
    this.frozenNow = true;
    this.freezeAtCall = undefined;
    this.resolveFrozen(info);
  }

  private armFrozen(): void {
    this.frozenPromise = new Promise((resolve) => (this.resolveFrozen = resolve));
  }

  private runner(gen: number): Runner {
    const live = () => this.gen === gen && !this.frozenNow;
    return {
      live,
      fakeFd: () => this.nextFakeFd++,
      run: <T>(op: string, t: Target, fn: (tree: SimTree) => T): T => {
        assert.ok(live(), 'a dead view ran a call');
        const p = t.path ?? (t.fd !== undefined ? this.tree.fdPath(t.fd) : undefined);
        const { rec, fault } = this.plan.begin({ op, kind: kindOf(op, t.flags), path: p, to: t.to, fd: t.fd, bytes: t.bytes });
        try {
          if (fault) throw fsError(fault, syscallOf(op), p);
          return fn(this.tree);
        } catch (err) {
          rec.error ??= errnoOf(err) ?? 'exception';
          throw err;
        } finally {
          if (this.freezeAtCall === rec.call) this.freezeWith({ call: rec.call, op, ...(p !== undefined ? { path: p } : {}) });
        }
      },
    };
  }
}

function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

/** An Fs bound to one generation; see the header for its dead behaviour. */
class SimFs implements Fs {
  constructor(private readonly r: Runner) {}

  private s<T>(op: string, t: Target, dead: () => T, fn: (tree: SimTree) => T): T {
    return this.r.live() ? this.r.run(op, t, fn) : dead();
  }

  private a<T>(op: string, t: Target, fn: (tree: SimTree) => T): Promise<T> {
    if (!this.r.live()) return never();
    try {
      return Promise.resolve(this.r.run(op, t, fn));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  openSync(p: string, flags: OpenFlags): number {
    const path = normalize(p);
    return this.s('openSync', { path, flags }, this.r.fakeFd, (t) => t.open(path, flags));
  }
  closeSync(fd: number): void {
    this.s(
      'closeSync',
      { fd },
      () => undefined,
      (t) => t.close(fd),
    );
  }
  writeSync(fd: number, buf: Uint8Array, position: number): number {
    return this.s(
      'writeSync',
      { fd, bytes: buf.byteLength },
      () => buf.byteLength,
      (t) => t.write(fd, [buf], position, 'write'),
    );
  }
  writevSync(fd: number, bufs: Uint8Array[], position: number): number {
    const bytes = bufs.reduce((n, b) => n + b.byteLength, 0);
    return this.s(
      'writevSync',
      { fd, bytes },
      () => bytes,
      (t) => t.write(fd, bufs, position, 'writev'),
    );
  }
  readSync(fd: number, buf: Uint8Array, position: number): number {
    return this.s(
      'readSync',
      { fd, bytes: buf.byteLength },
      () => 0,
      (t) => t.read(fd, buf, 0, buf.byteLength, position),
    );
  }
  fdatasyncSync(fd: number): void {
    this.s(
      'fdatasyncSync',
      { fd },
      () => undefined,
      (t) => t.sync(fd, 'fdatasync'),
    );
  }
  fsyncSync(fd: number): void {
    this.s(
      'fsyncSync',
      { fd },
      () => undefined,
      (t) => t.sync(fd, 'fsync'),
    );
  }
  ftruncateSync(fd: number, length: number): void {
    this.s(
      'ftruncateSync',
      { fd },
      () => undefined,
      (t) => t.ftruncate(fd, length, 'ftruncate'),
    );
  }
  readFileSync(p: string): Buffer {
    const path = normalize(p);
    return this.s(
      'readFileSync',
      { path },
      () => Buffer.alloc(0),
      (t) => t.readFile(path),
    );
  }
  writeFileSync(p: string, data: Uint8Array): void {
    const path = normalize(p);
    this.s(
      'writeFileSync',
      { path, bytes: data.byteLength },
      () => undefined,
      (t) => t.writeFile(path, data),
    );
  }
  readdirSync(p: string): string[] {
    const path = normalize(p);
    return this.s(
      'readdirSync',
      { path },
      () => [],
      (t) => t.readdir(path),
    );
  }
  mkdirSync(p: string): string | undefined {
    const path = normalize(p);
    return this.s(
      'mkdirSync',
      { path },
      () => undefined,
      (t) => t.mkdir(path),
    );
  }
  statSync(p: string): { size: number } {
    const path = normalize(p);
    return this.s(
      'statSync',
      { path },
      () => ({ size: 0 }),
      (t) => t.stat(path),
    );
  }
  /** Like Node's, never throws: an injected fault reads as "absent". */
  existsSync(p: string): boolean {
    const path = normalize(p);
    try {
      return this.s(
        'existsSync',
        { path },
        () => false,
        (t) => t.exists(path),
      );
    } catch (err) {
      if (errnoOf(err) === undefined) throw err;
      return false;
    }
  }
  unlinkSync(p: string): void {
    const path = normalize(p);
    this.s(
      'unlinkSync',
      { path },
      () => undefined,
      (t) => t.unlink(path),
    );
  }
  renameSync(from: string, to: string): void {
    const [a, b] = [normalize(from), normalize(to)];
    this.s(
      'renameSync',
      { path: a, to: b },
      () => undefined,
      (t) => t.rename(a, b),
    );
  }

  fdatasync(fd: number): Promise<void> {
    return this.a('fdatasync', { fd }, (t) => t.sync(fd, 'fdatasync'));
  }
  open(p: string, flags: OpenFlags): Promise<FsFile> {
    const path = normalize(p);
    return this.a('open', { path, flags }, (t) => new SimFile(this.r, t.open(path, flags)));
  }
  readFile(p: string): Promise<Buffer> {
    const path = normalize(p);
    return this.a('readFile', { path }, (t) => t.readFile(path));
  }
  readdir(p: string): Promise<string[]> {
    const path = normalize(p);
    return this.a('readdir', { path }, (t) => t.readdir(path));
  }
  stat(p: string): Promise<{ size: number }> {
    const path = normalize(p);
    return this.a('stat', { path }, (t) => t.stat(path));
  }
  mkdir(p: string): Promise<string | undefined> {
    const path = normalize(p);
    return this.a('mkdir', { path }, (t) => t.mkdir(path));
  }
  rm(p: string): Promise<void> {
    const path = normalize(p);
    return this.a('rm', { path }, (t) => t.rm(path));
  }
  rename(from: string, to: string): Promise<void> {
    const [a, b] = [normalize(from), normalize(to)];
    return this.a('rename', { path: a, to: b }, (t) => t.rename(a, b));
  }
  link(from: string, to: string): Promise<void> {
    const [a, b] = [normalize(from), normalize(to)];
    return this.a('link', { path: a, to: b }, (t) => t.link(a, b));
  }
  truncate(p: string, length: number): Promise<void> {
    const path = normalize(p);
    return this.a('truncate', { path }, (t) => t.truncate(path, length));
  }
}

/** An FsFile of one generation: dead (never settling) once its generation is. */
class SimFile implements FsFile {
  constructor(
    private readonly r: Runner,
    private readonly fd: number,
  ) {}

  private a<T>(op: string, bytes: number | undefined, fn: (tree: SimTree) => T): Promise<T> {
    if (!this.r.live()) return never();
    try {
      return Promise.resolve(this.r.run(op, { fd: this.fd, ...(bytes !== undefined ? { bytes } : {}) }, fn));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  writev(buffers: Uint8Array[], position: number): Promise<number> {
    const bytes = buffers.reduce((n, b) => n + b.byteLength, 0);
    return this.a('file.writev', bytes, (t) => t.write(this.fd, buffers, position, 'writev'));
  }
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number> {
    return this.a('file.read', length, (t) => t.read(this.fd, buffer, offset, length, position));
  }
  writeFile(data: Uint8Array): Promise<void> {
    return this.a('file.writeFile', data.byteLength, (t) => void t.write(this.fd, [data], undefined, 'write', true));
  }
  sync(): Promise<void> {
    return this.a('file.sync', undefined, (t) => t.sync(this.fd, 'fsync'));
  }
  truncate(length: number): Promise<void> {
    return this.a('file.truncate', undefined, (t) => t.ftruncate(this.fd, length, 'ftruncate'));
  }
  close(): Promise<void> {
    return this.a('file.close', undefined, (t) => t.close(this.fd));
  }
}
