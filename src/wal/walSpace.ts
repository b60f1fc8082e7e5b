// The WAL's share of a full disk (WAL thread). Normally a WAL file is unlinked only once the
// checkpoint AFTER the one that covers it is durable: the previous snapshot stays usable as a
// fallback, with the WAL it needs. When the WAL cannot make its next file (its reserve, or the
// first file of a run), cannot write frames past a file's pre-allocated end, or whenever the
// storage state is FULL for another reason (segment writes waiting for space), that margin is
// what gives way: the files wholly before the newest snapshot's cut are unlinked, after the
// older snapshots that would need them (so no snapshot is ever left whose WAL is gone). Without
// this a restart on a disk that had filled stayed read-only for good: recovery's checkpoint
// cannot finish without a WAL file to mark, and only that checkpoint would have freed the files
// (docs/ARCHITECTURE.md "Storage faults").
import path from 'node:path';
import type { WalPosition } from '../protocol/messages/wal.js';
import { fsyncDirSync, type Fs } from '../storage/fs.js';
import { freeBytes } from '../storage/freeSpace.js';
import { walDir, walFileName } from '../format/layout.js';
import { removeSnapshotsBefore } from '../storage/snapshot.js';
import { listWalFiles } from './files.js';
import { mib } from './walSizing.js';

export class WalSpace {
  /** The newest durable snapshot's cut: every frame before it is in segments and that snapshot. */
  private covered: WalPosition | undefined;

  constructor(
    private readonly fsx: Fs,
    private readonly dataDir: string,
    private readonly log: (msg: string) => void,
    /** The volume's free bytes, when known (the real disk; undefined under a simulated one). */
    private readonly free: () => number | undefined = () => freeBytes(dataDir),
  ) {}

  /** A snapshot at `cut` is durable (recovery's loaded one, or a checkpoint's). */
  coveredBy(cut: WalPosition | undefined): void {
    if (
      cut &&
      (!this.covered || cut.fileNo > this.covered.fileNo || (cut.fileNo === this.covered.fileNo && cut.offset > this.covered.offset))
    )
      this.covered = cut;
  }

  /**
   * Frees the WAL files the newest snapshot covers (never `currentFileNo`, the one being
   * written): returns the bytes freed, 0 when there is nothing to free.
   */
  reclaim(currentFileNo: number): number {
    const cut = this.covered;
    if (!cut) return 0;
    const dir = walDir(this.dataDir);
    const doomed = listWalFiles(this.fsx, this.dataDir).filter((n) => n < cut.fileNo && n !== currentFileNo);
    if (doomed.length === 0) return 0;
    const snapshots = removeSnapshotsBefore(this.fsx, this.dataDir, cut);
    let bytes = 0;
    for (const n of doomed) {
      const file = path.join(dir, walFileName(n));
      bytes += this.fsx.statSync(file).size;
      this.fsx.unlinkSync(file);
    }
    fsyncDirSync(this.fsx, dir);
    this.log(
      `spool: disk full: removed ${doomed.length} WAL file(s) (${mib(bytes)}) that the newest checkpoint covers` +
        (snapshots > 0 ? `, and ${snapshots} older snapshot(s) that needed them` : '') +
        '; until the next checkpoint there is no older snapshot to fall back on',
    );
    return bytes;
  }

  /** The volume's free bytes, when known. */
  freeBytes(): number | undefined {
    return this.free();
  }

  /** "needs 64.0 MiB, 1.2 MiB free", for the log line that says why writes are refused. */
  shortfall(neededBytes: number): string {
    const free = this.free();
    return `needs ${mib(neededBytes)} for a WAL file${free === undefined ? '' : `, ${mib(free)} free`}`;
  }
}
