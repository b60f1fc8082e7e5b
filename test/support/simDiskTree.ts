// The namespace and open files of SimDisk (test/support/simDisk.ts): path resolution, the fd
// table, every operation with Node's errors (ENOENT, EEXIST, EISDIR, ENOTDIR, EBADF, ENOTEMPTY,
// ENOSPC), the space limit, the crash transform and describe(). Knows nothing of fault
// injection, generations or views; an operation either applies whole or throws, except a write
// under `partialWrites`, which applies the prefix that fits: as on Linux, a positional
// write/writev then returns that short count (ENOSPC only when nothing fits), while a whole-file
// write (writeFile, which Node loops over short writes) then throws ENOSPC.
// Invariants: the root always exists and is durable; a path is normalized to absolute posix
// form before lookup; fds are never reused; the sum of current file lengths stays within
// `capacityBytes` (when set).
import assert from 'node:assert/strict';
import path from 'node:path';
import type { OpenFlags } from '../../src/storage/fs.js';
import type { Rng } from '../../src/core/rng.js';
import { fsError } from './fsFaults.js';
import { DirNode, FileNode, type SimNode } from './simDiskNodes.js';

/** What Node's stat reports as a directory's size on ext4. */
const DIR_SIZE_BYTES = 4096;
const FD_FIRST = 3;

export interface SimLimits {
  /** Sum of current file lengths allowed; undefined = unlimited. */
  capacityBytes: number | undefined;
  /**
   * Over capacity, write the bytes that fit (else write nothing): a positional write/writev
   * returns the short count, as Linux does (ENOSPC only when nothing fits); writeFile throws ENOSPC
   * after the prefix, as Node's loop over short writes does.
   */
  partialWrites: boolean;
  /** mkdir's new entries are durable at once (ext4's journal in practice); POSIX does not promise it. */
  durableMkdir: boolean;
}

interface OpenFile {
  node: SimNode;
  path: string;
  flags: OpenFlags;
  readable: boolean;
  writable: boolean;
  /** File position, used only by FsFile.writeFile (every other call is positional). */
  posBytes: number;
}

export function normalize(p: string): string {
  const n = path.posix.normalize(path.posix.join('/', p));
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

export class SimTree {
  readonly root = new DirNode(1);
  private nextIno = 2;
  private nextFd = FD_FIRST;
  private readonly fds = new Map<number, OpenFile>();

  constructor(readonly limits: SimLimits) {}

  // ---- paths ---------------------------------------------------------------------------------

  /** The node at `p`, or undefined if some component is missing; ENOTDIR through a file. */
  lookup(p: string, syscall: string): SimNode | undefined {
    let node: SimNode = this.root;
    for (const name of p.split('/').filter(Boolean)) {
      if (node.kind !== 'dir') throw fsError('ENOTDIR', syscall, p);
      const next = node.entries.get(name);
      if (!next) return undefined;
      node = next;
    }
    return node;
  }

  /** The directory holding `p` and its last name: ENOENT if missing, ENOTDIR if a file. */
  private parentOf(p: string, syscall: string): { dir: DirNode; name: string } {
    assert.ok(p !== '/', `${syscall} of the root`);
    const dir = this.lookup(path.posix.dirname(p), syscall);
    if (!dir) throw fsError('ENOENT', syscall, p);
    if (dir.kind !== 'dir') throw fsError('ENOTDIR', syscall, p);
    return { dir, name: path.posix.basename(p) };
  }

  fdPath(fd: number): string | undefined {
    return this.fds.get(fd)?.path;
  }

  // ---- fds -----------------------------------------------------------------------------------

  open(p: string, flags: OpenFlags): number {
    let node = this.lookup(p, 'open');
    if (!node) {
      if (flags === 'r' || flags === 'r+') throw fsError('ENOENT', 'open', p);
      const { dir, name } = this.parentOf(p, 'open');
      node = new FileNode(this.nextIno++);
      dir.entries.set(name, node);
    } else if (flags === 'wx') {
      throw fsError('EEXIST', 'open', p);
    } else if (node.kind === 'dir') {
      if (flags !== 'r') throw fsError('EISDIR', 'open', p);
    } else if (flags === 'w') {
      node.truncate(0);
    }
    const fd = this.nextFd++;
    this.fds.set(fd, { node, path: p, flags, readable: flags !== 'w' && flags !== 'wx', writable: flags !== 'r', posBytes: 0 });
    return fd;
  }

  close(fd: number): void {
    this.fdOf(fd, 'close');
    this.fds.delete(fd);
  }

  closeAll(): void {
    this.fds.clear();
  }

  private fdOf(fd: number, syscall: string): OpenFile {
    const f = this.fds.get(fd);
    if (!f) throw fsError('EBADF', syscall);
    return f;
  }

  private writableFile(fd: number, syscall: string): FileNode {
    const f = this.fdOf(fd, syscall);
    if (!f.writable) throw fsError('EBADF', syscall);
    assert.ok(f.node.kind === 'file', 'a directory fd is never writable');
    return f.node;
  }

  /**
   * Writes the buffers at `positionBytes` (undefined: at the fd's position, advancing it). Returns
   * the bytes written: short only under partialWrites, and never for a `whole` write (writeFile).
   */
  write(fd: number, bufs: readonly Uint8Array[], positionBytes: number | undefined, syscall: string, whole = false): number {
    const node = this.writableFile(fd, syscall);
    const f = this.fds.get(fd)!;
    const at = positionBytes ?? f.posBytes;
    const data = bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs);
    const n = this.writeWithin(node, at, data, syscall, f.path, whole);
    if (positionBytes === undefined) f.posBytes += n;
    return n;
  }

  read(fd: number, dst: Uint8Array, dstOffset: number, length: number, positionBytes: number): number {
    const f = this.fdOf(fd, 'read');
    if (!f.readable) throw fsError('EBADF', 'read');
    if (f.node.kind === 'dir') throw fsError('EISDIR', 'read');
    assert.ok(dstOffset >= 0 && length >= 0 && dstOffset + length <= dst.byteLength, 'read past the buffer');
    return f.node.read(dst, dstOffset, length, positionBytes);
  }

  /** fsync / fdatasync of a file (its bytes) or a directory opened 'r' (its entries). */
  sync(fd: number, syscall: string): void {
    this.fdOf(fd, syscall).node.sync();
  }

  ftruncate(fd: number, lengthBytes: number, syscall: string): void {
    const node = this.writableFile(fd, syscall);
    this.truncateWithin(node, lengthBytes, syscall, this.fds.get(fd)!.path);
  }

  // ---- paths: whole-file and namespace operations --------------------------------------------

  readFile(p: string): Buffer {
    const node = this.lookup(p, 'open');
    if (!node) throw fsError('ENOENT', 'open', p);
    if (node.kind === 'dir') throw fsError('EISDIR', 'read');
    return node.bytes();
  }

  /** open 'w' + write: all or nothing unless partialWrites. */
  writeFile(p: string, data: Uint8Array): void {
    const existing = this.lookup(p, 'open');
    if (existing?.kind === 'dir') throw fsError('EISDIR', 'open', p);
    const oldBytes = existing?.sizeBytes ?? 0;
    if (!existing) this.parentOf(p, 'open'); // ENOENT / ENOTDIR before anything changes
    if (!this.limits.partialWrites && data.byteLength - oldBytes > this.freeBytes()) throw fsError('ENOSPC', 'write', p);
    const fd = this.open(p, 'w');
    try {
      this.write(fd, [data], 0, 'write', true);
    } finally {
      this.close(fd);
    }
  }

  truncate(p: string, lengthBytes: number): void {
    const node = this.lookup(p, 'open');
    if (!node) throw fsError('ENOENT', 'open', p);
    if (node.kind === 'dir') throw fsError('EISDIR', 'open', p);
    this.truncateWithin(node, lengthBytes, 'ftruncate', p);
  }

  readdir(p: string): string[] {
    const node = this.lookup(p, 'scandir');
    if (!node) throw fsError('ENOENT', 'scandir', p);
    if (node.kind !== 'dir') throw fsError('ENOTDIR', 'scandir', p);
    return [...node.entries.keys()].sort();
  }

  /** Recursive; EEXIST if `p` is a file, ENOTDIR through a file. Returns the first directory created. */
  mkdir(p: string): string | undefined {
    let dir = this.root;
    let first: string | undefined;
    const names = p.split('/').filter(Boolean);
    names.forEach((name, i) => {
      const next = dir.entries.get(name);
      if (next?.kind === 'file') throw fsError(i === names.length - 1 ? 'EEXIST' : 'ENOTDIR', 'mkdir', p);
      if (next) return void (dir = next);
      const made = new DirNode(this.nextIno++);
      dir.entries.set(name, made);
      if (this.limits.durableMkdir) dir.durable.set(name, made);
      first ??= '/' + names.slice(0, i + 1).join('/');
      dir = made;
    });
    return first;
  }

  stat(p: string): { size: number } {
    const node = this.lookup(p, 'stat');
    if (!node) throw fsError('ENOENT', 'stat', p);
    return { size: node.kind === 'file' ? node.sizeBytes : DIR_SIZE_BYTES };
  }

  exists(p: string): boolean {
    try {
      return this.lookup(p, 'access') !== undefined;
    } catch {
      return false;
    }
  }

  unlink(p: string): void {
    const { dir, name } = this.parentOf(p, 'unlink');
    const node = dir.entries.get(name);
    if (!node) throw fsError('ENOENT', 'unlink', p);
    if (node.kind === 'dir') throw fsError('EISDIR', 'unlink', p);
    dir.entries.delete(name);
  }

  rename(from: string, to: string): void {
    const src = this.lookup(from, 'rename');
    if (!src) throw fsError('ENOENT', 'rename', from, to);
    const a = this.parentOf(from, 'rename');
    const b = this.parentOf(to, 'rename');
    if (src.kind === 'dir' && (to === from || to.startsWith(`${from}/`))) {
      if (to === from) return;
      throw fsError('EINVAL', 'rename', from, to);
    }
    const dst = b.dir.entries.get(b.name);
    if (dst === src) return;
    if (dst?.kind === 'dir' && src.kind === 'file') throw fsError('EISDIR', 'rename', from, to);
    if (dst?.kind === 'file' && src.kind === 'dir') throw fsError('ENOTDIR', 'rename', from, to);
    if (dst?.kind === 'dir' && dst.entries.size > 0) throw fsError('ENOTEMPTY', 'rename', from, to);
    a.dir.entries.delete(a.name);
    b.dir.entries.set(b.name, src);
  }

  /** A second name for a file: both names are the one node (a hard link). */
  link(from: string, to: string): void {
    const src = this.lookup(from, 'link');
    if (!src) throw fsError('ENOENT', 'link', from, to);
    if (src.kind === 'dir') throw fsError('EPERM', 'link', from, to);
    const b = this.parentOf(to, 'link');
    if (b.dir.entries.has(b.name)) throw fsError('EEXIST', 'link', from, to);
    b.dir.entries.set(b.name, src);
  }

  /** A file or a directory tree; silent if absent. */
  rm(p: string): void {
    let node: SimNode | undefined;
    try {
      node = this.lookup(p, 'rm');
    } catch {
      return; // through a file: absent
    }
    if (!node) return;
    const { dir, name } = this.parentOf(p, 'rm');
    const clear = (n: SimNode): void => {
      if (n.kind !== 'dir') return;
      for (const child of n.entries.values()) clear(child);
      n.entries.clear();
    };
    clear(node);
    dir.entries.delete(name);
  }

  // ---- space ---------------------------------------------------------------------------------

  /** Sum of current lengths of every file still named or still open. */
  usedBytes(): number {
    const seen = new Set<FileNode>();
    const visit = (n: SimNode): void => {
      if (n.kind === 'file') seen.add(n);
      else for (const c of n.entries.values()) visit(c);
    };
    visit(this.root);
    for (const f of this.fds.values()) if (f.node.kind === 'file') seen.add(f.node);
    let total = 0;
    for (const f of seen) total += f.sizeBytes;
    return total;
  }

  private freeBytes(): number {
    const cap = this.limits.capacityBytes;
    return cap === undefined ? Infinity : cap - this.usedBytes();
  }

  private writeWithin(node: FileNode, at: number, data: Uint8Array, syscall: string, p: string, whole: boolean): number {
    assert.ok(Number.isInteger(at) && at >= 0, `bad write position ${at}`);
    const growth = Math.max(0, at + data.byteLength - node.sizeBytes);
    if (growth === 0 || growth <= this.freeBytes()) {
      node.write(at, data);
      return data.byteLength;
    }
    if (this.limits.partialWrites) {
      const fit = Math.min(data.byteLength, node.sizeBytes + this.freeBytes() - at);
      if (fit > 0) {
        node.write(at, data.subarray(0, fit));
        // Linux reports what a write(2) took as a short count, not as an error.
        if (!whole) return fit;
      }
    }
    throw fsError('ENOSPC', syscall, p);
  }

  private truncateWithin(node: FileNode, lengthBytes: number, syscall: string, p: string): void {
    if (lengthBytes - node.sizeBytes > this.freeBytes()) throw fsError('ENOSPC', syscall, p);
    node.truncate(lengthBytes);
  }

  // ---- crash ---------------------------------------------------------------------------------

  /**
   * Every directory takes its durable entries, every file reachable from them its crash bytes.
   * With `entries`, each unsynced directory change first becomes durable or not (see landEntries).
   */
  crash(rng: Rng | undefined, entries = false): void {
    this.fds.clear();
    if (rng && entries) this.landEntries(rng);
    const seen = new Set<SimNode>();
    const visit = (n: SimNode): void => {
      if (seen.has(n)) return;
      seen.add(n);
      if (n.kind === 'file') return n.crash(rng);
      n.entries = new Map([...n.durable].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
      n.sync();
      for (const child of n.entries.values()) visit(child);
    };
    visit(this.root);
  }

  /** A process kill: the kernel keeps every write and directory change; only the fds go. */
  kill(): void {
    this.fds.clear();
    const seen = new Set<SimNode>();
    const visit = (n: SimNode): void => {
      if (seen.has(n)) return;
      seen.add(n);
      n.sync();
      if (n.kind === 'dir') for (const child of n.entries.values()) visit(child);
    };
    visit(this.root);
  }

  /**
   * Unsynced directory changes (a new name, a removed name, a replaced name) land or not, one
   * coin each, as a journaling filesystem may commit them before any fsync. The changes that
   * move one node (a rename: its old name goes, its new name comes, maybe over another file)
   * are one unit, so a rename lands whole or not at all and a file never loses both names.
   * Draws from `rng` in a fixed order (directories and names sorted).
   */
  private landEntries(rng: Rng): void {
    const units = new Map<SimNode, { dir: DirNode; name: string; to: SimNode | undefined }[]>();
    const seen = new Set<DirNode>();
    const visit = (d: DirNode): void => {
      if (seen.has(d)) return;
      seen.add(d);
      for (const name of [...new Set([...d.entries.keys(), ...d.durable.keys()])].sort()) {
        const cur = d.entries.get(name);
        const dur = d.durable.get(name);
        if (cur !== dur) {
          const key = (cur ?? dur)!;
          let unit = units.get(key);
          if (!unit) units.set(key, (unit = []));
          unit.push({ dir: d, name, to: cur });
        }
        for (const n of [cur, dur]) if (n?.kind === 'dir') visit(n);
      }
    };
    visit(this.root);
    for (const unit of units.values()) {
      if (rng.next() < 0.5) continue;
      for (const c of unit) {
        if (c.to) c.dir.durable.set(c.name, c.to);
        else c.dir.durable.delete(c.name);
      }
    }
  }

  /** Everything current becomes durable (test setup: a clean shutdown and sync(2)). */
  syncAll(): void {
    const visit = (n: SimNode): void => {
      n.sync();
      if (n.kind === 'dir') for (const child of n.entries.values()) visit(child);
    };
    visit(this.root);
    for (const f of this.fds.values()) f.node.sync();
  }

  /** The tree, current vs durable: `+name` not durable yet, `-name` removed but durable, `~name` replaced. */
  describe(): string {
    const lines: string[] = [];
    const visit = (dir: DirNode, indent: string): void => {
      const names = [...new Set([...dir.entries.keys(), ...dir.durable.keys()])].sort();
      for (const name of names) {
        const cur = dir.entries.get(name);
        const dur = dir.durable.get(name);
        const mark = !dur ? '+' : !cur ? '-' : cur !== dur ? '~' : ' ';
        const n = (cur ?? dur)!;
        if (n.kind === 'dir') {
          lines.push(`${indent}${mark}${name}/`);
          visit(n, `${indent}  `);
        } else {
          lines.push(`${indent}${mark}${name}  size=${n.sizeBytes} durable=${n.durableSizeBytes} pending=${n.pending.length}`);
        }
      }
    };
    lines.push('/');
    visit(this.root, '  ');
    return lines.join('\n');
  }
}
