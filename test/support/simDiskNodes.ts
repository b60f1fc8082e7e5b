// The inodes of SimDisk (test/support/simDisk.ts): a file's bytes with the undo log of its
// writes since its last sync, and a directory's current and durable entries. Pure data; no Fs.
// A file keeps only its CURRENT bytes; its durable bytes are recovered by undoing the pending
// operations newest first (each remembers the bytes it overwrote and the length before it), so a
// sync costs nothing and a crash can replay any subset of the pending operations in order.
// Invariants: bytes of `buf` at or past `sizeBytes` are zero; `pending` holds at most
// PENDING_OPS_MAX operations and PENDING_BYTES_MAX bytes (past that the oldest one is written
// back, i.e. becomes durable, as a kernel's own writeback may do at any time).
import assert from 'node:assert/strict';
import type { Rng } from '../../src/core/rng.js';

export const PENDING_OPS_MAX = 4096;
export const PENDING_BYTES_MAX = 64 * 1024 * 1024;

/** A write since the last sync: `bytes` at `offsetBytes`; `overwritten` is what was there. */
export interface PendingWrite {
  kind: 'write';
  offsetBytes: number;
  bytes: Buffer;
  prevLengthBytes: number;
  overwritten: Buffer;
}

/** A truncate (or extension) since the last sync; `cut` is what a shrink removed. */
export interface PendingTruncate {
  kind: 'truncate';
  lengthBytes: number;
  prevLengthBytes: number;
  cut: Buffer;
}

export type PendingOp = PendingWrite | PendingTruncate;

export class FileNode {
  readonly kind = 'file';
  private buf = Buffer.alloc(0);
  private size = 0;
  private ops: PendingOp[] = [];
  private opsBytes = 0;

  constructor(readonly ino: number) {}

  get sizeBytes(): number {
    return this.size;
  }

  /** The length the file had at its last sync. */
  get durableSizeBytes(): number {
    return this.ops[0]?.prevLengthBytes ?? this.size;
  }

  /** Operations since the last sync, oldest first (read-only view for tests and describe()). */
  get pending(): readonly PendingOp[] {
    return this.ops;
  }

  /** A copy of the current bytes. */
  bytes(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.size));
  }

  read(dst: Uint8Array, dstOffset: number, length: number, positionBytes: number): number {
    const n = Math.max(0, Math.min(length, this.size - positionBytes));
    if (n > 0) dst.set(this.buf.subarray(positionBytes, positionBytes + n), dstOffset);
    return n;
  }

  write(offsetBytes: number, src: Uint8Array): void {
    if (src.byteLength === 0) return;
    const prevLengthBytes = this.size;
    const overwritten = Buffer.from(this.buf.subarray(Math.min(offsetBytes, this.size), Math.min(offsetBytes + src.byteLength, this.size)));
    const bytes = Buffer.from(src);
    this.rawWrite(offsetBytes, bytes);
    this.remember({ kind: 'write', offsetBytes, bytes, prevLengthBytes, overwritten }, bytes.length + overwritten.length);
  }

  truncate(lengthBytes: number): void {
    if (lengthBytes === this.size) return;
    const cut = Buffer.from(this.buf.subarray(Math.min(lengthBytes, this.size), this.size));
    const prevLengthBytes = this.size;
    this.setSize(lengthBytes);
    this.remember({ kind: 'truncate', lengthBytes, prevLengthBytes, cut }, cut.length);
  }

  /** fsync / fdatasync: everything so far is durable. */
  sync(): void {
    this.ops = [];
    this.opsBytes = 0;
  }

  /**
   * A crash: the bytes become the durable bytes, plus (with `rng`) each pending operation in
   * order with probability 1/2, the last surviving one torn (a prefix of it) if it is a write.
   */
  crash(rng: Rng | undefined): void {
    const ops = this.ops;
    this.sync();
    for (let i = ops.length - 1; i >= 0; i--) this.undo(ops[i]!);
    if (!rng) return;
    const kept = ops.filter(() => rng.next() < 0.5);
    kept.forEach((op, i) => {
      if (op.kind === 'truncate') return this.setSize(op.lengthBytes);
      const last = i === kept.length - 1;
      const n = last ? Math.floor(rng.next() * (op.bytes.length + 1)) : op.bytes.length;
      if (n > 0) this.rawWrite(op.offsetBytes, op.bytes.subarray(0, n));
    });
  }

  private remember(op: PendingOp, bytes: number): void {
    this.ops.push(op);
    this.opsBytes += bytes;
    while (this.ops.length > PENDING_OPS_MAX || (this.opsBytes > PENDING_BYTES_MAX && this.ops.length > 0)) {
      const old = this.ops.shift()!; // written back by the "kernel": now part of the durable bytes
      this.opsBytes -= old.kind === 'write' ? old.bytes.length + old.overwritten.length : old.cut.length;
    }
  }

  private undo(op: PendingOp): void {
    if (op.kind === 'write') {
      op.overwritten.copy(this.buf, op.offsetBytes);
      this.setSize(op.prevLengthBytes);
    } else {
      this.setSize(op.prevLengthBytes);
      op.cut.copy(this.buf, op.lengthBytes);
    }
  }

  private rawWrite(offsetBytes: number, src: Buffer): void {
    const end = offsetBytes + src.length;
    this.reserve(end);
    src.copy(this.buf, offsetBytes);
    if (end > this.size) this.size = end;
  }

  private setSize(lengthBytes: number): void {
    assert.ok(Number.isInteger(lengthBytes) && lengthBytes >= 0, `bad file length ${lengthBytes}`);
    if (lengthBytes < this.size) this.buf.fill(0, lengthBytes, this.size);
    else this.reserve(lengthBytes);
    this.size = lengthBytes;
  }

  private reserve(capacityBytes: number): void {
    if (capacityBytes <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(capacityBytes, this.buf.length * 2, 256));
    this.buf.copy(next, 0, 0, this.size);
    this.buf = next;
  }
}

export class DirNode {
  readonly kind = 'dir';
  entries = new Map<string, SimNode>();
  /** The entries as of the directory's last fsync. */
  durable = new Map<string, SimNode>();

  constructor(readonly ino: number) {}

  /** fsync of the directory: its entries are durable (not the contents of its files). */
  sync(): void {
    this.durable = new Map(this.entries);
  }
}

export type SimNode = FileNode | DirNode;
