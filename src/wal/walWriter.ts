// WalWriter: the WAL files and their syscalls (DESIGN 1.5), used by GroupCommit on the WAL thread,
// which decides what to write and when to sync. It owns the open file, its number and the write
// offset, writes whole batches at the offset, rotates to a new file, and fdatasyncs.
// Invariants: frames are written in order, never after a recovered tail (a run always starts a
// new file); the old file's last sync completes before a rotation (the torn-tail vs
// corruption rule of recovery, DESIGN 2.3); an fd is closed only after any sync on it finished.
import type { Fs } from '../storage/fs.js';
import { createWalFile } from './files.js';
import { WAL_HEADER_BYTES } from './format.js';

export class WalWriter {
  private fd = -1;
  fileNo = 0;
  offset = 0;
  /** Fds of rotated files whose last async sync is still running. */
  private closeAfterSync: number[] = [];
  private syncsInFlight = 0;

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
    /** Rotate once a batch would pass this size (one oversized batch may overrun). */
    readonly fileBytes: number,
    private readonly bootEpoch: number,
  ) {}

  get isOpen(): boolean {
    return this.fd >= 0;
  }

  /** Creates file `fileNo` (header fsynced with its directory entry) and writes from there. */
  open(fileNo: number): void {
    this.fd = createWalFile(this.fsx, this.dataDir, fileNo, this.bootEpoch);
    this.fileNo = fileNo;
    this.offset = WAL_HEADER_BYTES;
  }

  /** True when `size` more bytes belong in the current file rather than a new one. */
  fits(size: number): boolean {
    return this.offset + size <= this.fileBytes || this.offset === WAL_HEADER_BYTES;
  }

  /** Writes the buffers at the offset, finishing partial writes. Throws on any error. */
  write(bufs: Buffer[]): number {
    let size = 0;
    for (const b of bufs) size += b.length;
    let written = 0;
    while (written < size) {
      const n =
        written === 0
          ? this.fsx.writevSync(this.fd, bufs, this.offset)
          : this.fsx.writeSync(this.fd, Buffer.concat(bufs).subarray(written), this.offset + written);
      written += n;
    }
    this.offset += size;
    return size;
  }

  /** Syncs the current file and moves to the next one. */
  rotate(): void {
    this.fsx.fdatasyncSync(this.fd);
    const old = this.fd;
    if (this.syncsInFlight === 0) this.fsx.closeSync(old);
    else this.closeAfterSync.push(old);
    this.open(this.fileNo + 1);
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
