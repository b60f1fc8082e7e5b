// WalWriter: the WAL files and their syscalls (docs/ARCHITECTURE.md "The life of an append"), used by GroupCommit on the WAL thread,
// which decides what to write and when to sync. It owns the open file, its number and the write
// offset, writes whole batches at the offset, rotates to a new file, and fdatasyncs.
// Files are pre-allocated: created with their header and zero-filled to `fileBytes`, fsynced
// with their directory entry, before any frame goes in. So frame writes never allocate space
// (ENOSPC shows up while preparing a file) and fdatasync never has to update the file size;
// only a write larger than the room left (a batch larger than a whole file) runs past the
// pre-allocated end, and one the disk cannot take there is undone (`write`) so it can be
// tried again at the same offset. While one file is written, the next is prepared in the background: that file
// is the WAL's space reserve (docs/ARCHITECTURE.md "Storage faults"). On a full disk, a file it
// cannot make can be made small instead: of the spare (walSpare.ts), which takes no new space, or
// in what space is left.
// Invariants: frames are written in order, never after a recovered tail (a run always starts in
// a new file); the old file's last sync completes before a rotation (the torn-tail vs corruption
// rule of recovery, docs/ARCHITECTURE.md "Checkpoints and recovery"); an fd is closed only after any sync on it finished; after
// halt() (the WAL failed) no preparation step starts, so nothing more is written.
import path from 'node:path';
import {
  fsyncDir,
  fsyncDirSync,
  isDiskFull,
  mkdirDurable,
  mkdirDurableSync,
  writeAll,
  writeAllSync,
  type Fs,
  type FsFile,
} from '../storage/fs.js';
import { walDir, walFileName } from '../format/layout.js';
import { encodeWalHeader } from './files.js';
import { WAL_HEADER_BYTES } from '../format/constants.js';
import { InvariantError } from '../core/invariant.js';
import { WalSpare } from './walSpare.js';

/** Zeros are written in chunks of this size. */
const ZERO_CHUNK_BYTES = 1024 * 1024;
const ZEROS = Buffer.alloc(ZERO_CHUNK_BYTES);

export interface WalWriterOptions {
  /** Rotate once a batch would pass this size (one oversized batch may overrun it). */
  fileBytes: number;
  bootEpoch: number;
  /** Zero-fill files to fileBytes when they are created (off only in tests of the old layout). */
  preallocate: boolean;
  /**
   * The size of the spare and of a small file (walSpare.ts; SPARE_BYTES_MAX, or fileBytes when
   * smaller); 0 or absent: none, a file the disk has no room for waits (tests of the reserve alone).
   */
  spareBytes?: number;
}

export class WalWriter {
  private fd = -1;
  fileNo = 0;
  offset = 0;
  /** Fds of rotated files whose last async sync is still running. */
  private closeAfterSync: number[] = [];
  private syncsInFlight = 0;
  /** The next file, pre-allocated and durable, ready to take over at the next rotation. */
  private nextReady: number | undefined;
  private preparing: Promise<void> | undefined;
  /** The WAL failed: no preparation step starts any more. */
  private halted = false;
  /** The end of the current file's allocated space: writes up to it take no new space. */
  private allocatedEnd = 0;
  /** The size the current file was made with (fileBytes, or the spare's for a file made of it). */
  private fileEnd = 0;
  /** The small file a file the disk has no room for can be made of (walSpare.ts). */
  readonly spare: WalSpare;

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
    private readonly opts: WalWriterOptions,
  ) {
    this.spare = new WalSpare(fsx, dataDir, opts.spareBytes ?? 0);
  }

  /** The size each file is made with. */
  get fileBytes(): number {
    return this.opts.fileBytes;
  }

  get isOpen(): boolean {
    return this.fd >= 0;
  }

  /** The next file is ready: the writer holds a reserve of a whole file of space. */
  get reserveReady(): boolean {
    return this.nextReady === this.fileNo + 1;
  }

  /**
   * The next file is being prepared: a rotation must wait for it (GroupCommit does), so that
   * nothing takes over that name while the preparation might still remove a half-made file.
   */
  get preparingNext(): Promise<boolean> | undefined {
    return this.preparing ? this.prepareNext() : undefined;
  }

  private pathOf(fileNo: number): string {
    return path.join(walDir(this.dataDir), walFileName(fileNo));
  }

  /**
   * Creates file `fileNo` now (header, zero fill, fsynced with its directory entry), or adopts
   * it if it was prepared, and writes from there. Throws (ENOSPC…) with nothing left behind.
   */
  open(fileNo: number): void {
    if (this.nextReady === fileNo) {
      this.nextReady = undefined;
      this.fd = this.fsx.openSync(this.pathOf(fileNo), 'r+');
    } else {
      this.fd = this.createSync(fileNo);
    }
    this.fileNo = fileNo;
    this.offset = WAL_HEADER_BYTES;
    this.fileEnd = this.opts.fileBytes;
    this.allocatedEnd = this.opts.preallocate ? this.opts.fileBytes : WAL_HEADER_BYTES;
  }

  /**
   * Opens file `fileNo` small, the spare's size (docs/ARCHITECTURE.md "Deleting on a full disk"):
   * made of the spare when there is one, which takes no new space (renamed into place, its
   * header written over its first zeros, fsynced with its directory entry), else created like
   * any file (header, zeros) in what space is left. Returns which. Throws (ENOSPC…) with nothing
   * of the file that could be read as a frame: the spare stays when its rename fails; after it,
   * the file holds a header or not and zeros, which recovery and createSync read as a creation
   * cut short.
   */
  openSmall(fileNo: number): 'spare' | 'created' {
    if (this.preparing) throw new InvariantError(`WAL file ${fileNo} is being prepared; rotate after it`);
    const bytes = this.spare.bytes;
    const file = this.pathOf(fileNo);
    const fromSpare = this.spare.available && this.spare.takeAs(file);
    let fd: number;
    if (fromSpare) {
      fd = this.fsx.openSync(file, 'r+');
      try {
        writeAllSync(this.fsx, fd, encodeWalHeader(fileNo, this.opts.bootEpoch), 0);
        this.fsx.fdatasyncSync(fd);
        fsyncDirSync(this.fsx, walDir(this.dataDir));
      } catch (err) {
        this.fsx.closeSync(fd);
        throw err;
      }
    } else {
      fd = this.createSync(fileNo, bytes, true);
    }
    this.fd = fd;
    this.fileNo = fileNo;
    this.offset = WAL_HEADER_BYTES;
    this.fileEnd = this.allocatedEnd = bytes;
    return fromSpare ? 'spare' : 'created';
  }

  /** Bytes the current file can still take without new space (its pre-allocated rest). */
  room(): number {
    return this.isOpen ? Math.max(0, this.allocatedEnd - this.offset) : 0;
  }

  /** Bytes past the pre-allocated end a write of `size` bytes would take (0 without pre-allocation). */
  overrunBytes(size: number): number {
    return this.opts.preallocate ? Math.max(0, this.offset + size - this.allocatedEnd) : 0;
  }

  private createSync(fileNo: number, bytes = this.opts.fileBytes, zeroFill = this.opts.preallocate): number {
    if (this.preparing) throw new InvariantError(`WAL file ${fileNo} is being prepared; rotate after it`);
    const dir = walDir(this.dataDir);
    mkdirDurableSync(this.fsx, dir);
    const file = this.pathOf(fileNo);
    // A half-made file a failed preparation could not remove holds nothing: start it again.
    if (this.fsx.existsSync(file) && fileNo > this.fileNo) this.fsx.unlinkSync(file);
    const fd = this.fsx.openSync(file, 'wx');
    try {
      writeAllSync(this.fsx, fd, encodeWalHeader(fileNo, this.opts.bootEpoch), 0);
      if (zeroFill) {
        for (let p = WAL_HEADER_BYTES; p < bytes; p += ZERO_CHUNK_BYTES) {
          writeAllSync(this.fsx, fd, ZEROS.subarray(0, Math.min(ZERO_CHUNK_BYTES, bytes - p)), p);
        }
      }
      this.fsx.fdatasyncSync(fd);
      fsyncDirSync(this.fsx, dir);
      return fd;
    } catch (err) {
      // A half-made file would only hold space: remove it (that is what frees it on a full disk).
      this.fsx.closeSync(fd);
      this.fsx.unlinkSync(file);
      throw err;
    }
  }

  /**
   * Prepares the next file in the background (async fs on the libuv pool). Resolves true when
   * it is ready, false when the disk is full (the half-made file is removed) or the writer is
   * halted; rejects on any other error.
   */
  prepareNext(): Promise<boolean> {
    const fileNo = this.fileNo + 1;
    if (this.nextReady === fileNo) return Promise.resolve(true);
    if (this.halted) return Promise.resolve(false);
    this.preparing ??= this.prepare(fileNo).finally(() => (this.preparing = undefined));
    return this.preparing.then(() => this.nextReady === fileNo);
  }

  /**
   * Prepares `fileNo`, the first file of a run, in the background (the WAL thread does it while
   * the workers still apply the replay); `open(fileNo)` adopts it when it is ready, and creates
   * it itself otherwise (a full disk, any error here: that path reports them).
   */
  prepareFirst(fileNo: number): Promise<void> {
    this.preparing ??= this.prepare(fileNo)
      .catch(() => undefined)
      .finally(() => (this.preparing = undefined));
    return this.preparing;
  }

  private async prepare(fileNo: number): Promise<void> {
    const dir = walDir(this.dataDir);
    const file = this.pathOf(fileNo);
    let f: FsFile | undefined;
    let created = false;
    try {
      this.checkHalted();
      await mkdirDurable(this.fsx, dir);
      this.checkHalted();
      // Creating the file can meet a full disk too (a directory block, an inode): inside the
      // try, so that it counts as FULL like the zero fill, not as a failed WAL.
      f = await this.fsx.open(file, 'wx');
      created = true;
      this.checkHalted();
      await writeAll(f, encodeWalHeader(fileNo, this.opts.bootEpoch), 0);
      if (this.opts.preallocate) {
        for (let p = WAL_HEADER_BYTES; p < this.opts.fileBytes; p += ZERO_CHUNK_BYTES) {
          this.checkHalted();
          await writeAll(f, ZEROS.subarray(0, Math.min(ZERO_CHUNK_BYTES, this.opts.fileBytes - p)), p);
        }
      }
      this.checkHalted();
      await f.sync();
      const closing = f;
      f = undefined;
      await closing.close();
      this.checkHalted();
      await fsyncDir(this.fsx, dir);
      this.nextReady = fileNo;
    } catch (err) {
      await f?.close().catch(() => undefined);
      // Halted: nothing more is written, not even the removal. The half-made file (empty, or a
      // header and maybe zeros) holds no frame, and recovery reads it as such (src/wal/scan.ts).
      if (this.halted) return;
      if (created) await this.fsx.rm(file);
      if (!isDiskFull(err)) throw err;
    }
  }

  private checkHalted(): void {
    if (this.halted) throw new Error('the WAL failed: preparation stopped');
  }

  /** The WAL failed (GroupCommit): a preparation in flight stops at its next step, none starts. */
  halt(): void {
    this.halted = true;
  }

  /**
   * True when `size` more bytes belong in the current file rather than a new one. `alone`: they
   * are one submission, which an empty file takes whatever its size (a batch larger than a
   * file); submissions that only together pass the file's end do not all go into it.
   */
  fits(size: number, alone = true): boolean {
    return this.offset + size <= this.fileEnd || (alone && this.offset === WAL_HEADER_BYTES);
  }

  /**
   * Writes the buffers at the offset, finishing partial writes. Throws on any error. On a full
   * disk (ENOSPC, EDQUOT, which can only come past the pre-allocated end) the write is undone
   * first: the offset stays, what landed of it is zeroed and the space it took past the
   * allocated end is given back, so the file ends as before the write (zeros after the last
   * frame: a crash then leaves no torn frame, and the next write there leaves no stale bytes
   * that recovery would read as a bad frame before later ones).
   */
  write(bufs: Buffer[]): number {
    let size = 0;
    for (const b of bufs) size += b.length;
    let written = 0;
    try {
      while (written < size) {
        const n =
          written === 0
            ? this.fsx.writevSync(this.fd, bufs, this.offset)
            : this.fsx.writeSync(this.fd, Buffer.concat(bufs).subarray(written), this.offset + written);
        written += n;
      }
    } catch (err) {
      if (isDiskFull(err)) this.undoWrite(written);
      throw err;
    }
    this.offset += size;
    if (this.offset > this.allocatedEnd) this.allocatedEnd = this.offset;
    return size;
  }

  /**
   * A write that took `written` bytes at the offset did not complete: the file goes back to how
   * it was. On a file system where even that meets a full disk (copy-on-write), the torn bytes
   * stay: they end the last file (a torn tail), and the retry writes the same submissions over
   * them, from the same offset, before anything can follow.
   */
  private undoWrite(written: number): void {
    const end = this.offset + written;
    const zeroEnd = Math.min(end, this.allocatedEnd);
    try {
      if (end > this.allocatedEnd) this.fsx.ftruncateSync(this.fd, this.allocatedEnd);
      for (let p = this.offset; p < zeroEnd; p += ZERO_CHUNK_BYTES) {
        writeAllSync(this.fsx, this.fd, ZEROS.subarray(0, Math.min(ZERO_CHUNK_BYTES, zeroEnd - p)), p);
      }
    } catch (err) {
      if (!isDiskFull(err)) throw err;
    }
  }

  /**
   * Syncs the current file and moves to the next one: the prepared one, or one created now
   * (which throws ENOSPC when the reserve was not there and the disk is full).
   */
  rotate(): void {
    this.switchTo(() => this.open(this.fileNo + 1));
  }

  /** Syncs the current file and moves to the next one, small (openSmall). */
  rotateSmall(): 'spare' | 'created' {
    let how: 'spare' | 'created' = 'created';
    this.switchTo(() => (how = this.openSmall(this.fileNo + 1)));
    return how;
  }

  private switchTo(openNext: () => void): void {
    this.fsx.fdatasyncSync(this.fd);
    const old = this.fd;
    openNext();
    if (this.syncsInFlight === 0) this.fsx.closeSync(old);
    else this.closeAfterSync.push(old);
  }

  /** fdatasync of the current file on the libuv pool; covers what was written before the call. */
  async syncAsync(): Promise<void> {
    this.syncsInFlight++;
    try {
      await this.fsx.fdatasync(this.fd);
    } finally {
      if (--this.syncsInFlight === 0) for (const old of this.closeAfterSync.splice(0)) this.fsx.closeSync(old);
    }
  }

  syncNow(): void {
    if (this.fd >= 0) this.fsx.fdatasyncSync(this.fd);
  }
}
