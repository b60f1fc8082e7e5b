// The WAL's spare (docs/ARCHITECTURE.md "Storage faults", "Deleting on a full disk"): a small file of
// zeros, `wal/spare`, kept beside the WAL files. When the WAL needs a file it cannot make on a full
// disk (the first file of a run, or the next one while the current file has no room left), it
// renames the spare into that file's place and writes the header over its first bytes: a short
// WAL file, made with no new space, that takes the frames which give space back (a topic or
// record delete) while writes wait. The spare is made again, by the WAL thread in the background,
// whenever there is room for it. Runs on the WAL thread (WalWriter uses it).
// Invariant: `wal/spare` exists only whole and durable (written as `spare.tmp`, fsynced, renamed,
// its directory fsynced), so the file it becomes holds only zeros after its header.
import path from 'node:path';
import { errnoOf, fsyncDir, isDiskFull, mkdirDurable, writeAll, type Fs, type FsFile } from '../storage/fs.js';
import { walDir } from '../format/layout.js';

/** The spare's size: enough for a BOOT frame and a few hundred topic deletes. */
export const SPARE_BYTES_MAX = 64 * 1024;

/** The spare's size for WAL files of `walFileBytes` (no larger than one). */
export function spareBytesFor(walFileBytes: number): number {
  return Math.min(SPARE_BYTES_MAX, walFileBytes);
}

export const SPARE_NAME = 'spare';
const SPARE_TMP_NAME = 'spare.tmp';

export class WalSpare {
  /** Known to exist whole (undefined: not looked yet). */
  private ready: boolean | undefined;
  private making: Promise<boolean> | undefined;

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
    /** Its size (spareBytesFor); 0: there is none, and none is made. */
    readonly bytes: number,
  ) {}

  private get file(): string {
    return path.join(walDir(this.dataDir), SPARE_NAME);
  }

  /** The spare is there and nothing is making it (it can be taken now). */
  get available(): boolean {
    if (this.making || this.bytes === 0) return false;
    this.ready ??= this.exists();
    return this.ready;
  }

  /** Whether a spare is on disk (looked once; when that fails, none: it is made again over it). */
  private exists(): boolean {
    try {
      return this.fsx.existsSync(this.file);
    } catch {
      return false;
    }
  }

  /**
   * Makes the spare if it is missing, in the background. Resolves true once it is there, false
   * when the disk is full (the temp file is removed) or `halted()`; rejects on any other error.
   */
  make(halted: () => boolean): Promise<boolean> {
    if (this.making) return this.making;
    if (this.bytes === 0) return Promise.resolve(false);
    if (this.available) return Promise.resolve(true);
    this.making = this.write(halted).finally(() => (this.making = undefined));
    return this.making;
  }

  private async write(halted: () => boolean): Promise<boolean> {
    const dir = walDir(this.dataDir);
    const tmp = path.join(dir, SPARE_TMP_NAME);
    let f: FsFile | undefined;
    try {
      await mkdirDurable(this.fsx, dir);
      if (halted()) return false;
      f = await this.fsx.open(tmp, 'w');
      // Zeros written, not a sparse size: only written blocks hold space for later.
      await writeAll(f, Buffer.alloc(this.bytes), 0);
      await f.sync();
      const closing = f;
      f = undefined;
      await closing.close();
      if (halted()) return false;
      await this.fsx.rename(tmp, this.file);
      await fsyncDir(this.fsx, dir);
      this.ready = true;
      return true;
    } catch (err) {
      await f?.close().catch(() => undefined);
      if (!halted()) await this.fsx.rm(tmp).catch(() => undefined);
      if (isDiskFull(err)) return false;
      throw err;
    }
  }

  /**
   * Renames the spare to `to` (no new space taken); false when it turns out to be gone (removed
   * by hand). Throws any other failure; the spare then stays (a rename is all or nothing).
   */
  takeAs(to: string): boolean {
    try {
      this.fsx.renameSync(this.file, to);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
      this.ready = false;
      return false;
    }
    this.ready = false;
    return true;
  }
}
