// Where the WAL ends, for the recovery scan (`scan.ts`; docs/ARCHITECTURE.md "Checkpoints and
// recovery"), run on the WAL thread before it takes writes. Owns the decisions the scan takes when
// a file stops making sense:
// - a file whose header is bad: skipped, removed with the files after it, or refused;
// - a frame that does not check: a torn tail (the file is cut at the end of its valid prefix,
//   valid frames after the cut copied to wal/quarantine/ first) or mid-log corruption (refused,
//   or with SERVICE_RECOVERY_TRUNCATE=1 the later files are dropped too);
// - the pre-allocated zeros after the log's end, given back once the scan is done.
// Whenever whole frames are dropped (those two cases but a plain torn tail), the scan first
// leaves the durable quarantine/pending marker: that start, or the next one if it dies first,
// keeps what only the dropped frames could claim (docs/ARCHITECTURE.md "Checkpoints and recovery").
import path from 'node:path';
import { fsyncDirSync, isDiskFull, mkdirDurableSync, writeAllSync, type Fs } from '../storage/fs.js';
import { quarantineDir, quarantinePendingFile, walFileName } from '../format/layout.js';
import { FRAME_ALIGN, WAL_HEADER_BYTES } from '../format/constants.js';
import { probeFrame } from '../format/frame.js';
import { CorruptionError } from '../core/corruption.js';

/** The WAL files a scan covers, in order, and their directory. */
export interface ScanFiles {
  fsx: Fs;
  dataDir: string;
  dir: string;
  files: number[];
  /** Bytes of whole WAL files dropped (moved to quarantine/) under SERVICE_RECOVERY_TRUNCATE. */
  droppedBytes: number;
  /** Whole frames were dropped (markFramesDropped). */
  framesDropped: boolean;
}

const ZEROS = Buffer.alloc(64 * 1024);

/** True when buf[off..] holds only zeros: the pre-allocated tail (compared natively, 64 KiB at a time). */
export function allZero(buf: Buffer, off: number): boolean {
  for (let p = off; p < buf.length; p += ZEROS.length) {
    const n = Math.min(ZEROS.length, buf.length - p);
    if (buf.compare(ZEROS, 0, n, p, p + n) !== 0) return false;
  }
  return true;
}

export function findValidFrameAfter(buf: Buffer, off: number): number {
  for (let p = off + FRAME_ALIGN; p + 24 <= buf.length; p += FRAME_ALIGN) {
    if (buf.readUInt32LE(p) === 0) continue;
    if (probeFrame(buf, p, buf.length).ok) return p;
  }
  return -1;
}

/** True when the file holds nothing after its header but zeros: no frame was ever written to it. */
export function holdsNoData(buf: Buffer): boolean {
  return buf.length <= WAL_HEADER_BYTES || allZero(buf, WAL_HEADER_BYTES);
}

/**
 * True when one of the later files holds bytes after its header: frames were written there, so
 * (rotation syncs the old file first) every earlier file was complete. Pre-allocated files hold
 * only zeros, and files shorter than a header held nothing.
 */
async function laterFileHoldsData(fsx: Fs, dir: string, later: number[]): Promise<boolean> {
  for (const n of later) if (!holdsNoData(await fsx.readFile(path.join(dir, walFileName(n))))) return true;
  return false;
}

/** laterFileHoldsData for the offline tools (`spool verify`, `spool wal-dump`), blocking. */
export function laterFileHoldsDataSync(fsx: Fs, dir: string, later: number[]): boolean {
  return later.some((n) => !holdsNoData(fsx.readFileSync(path.join(dir, walFileName(n)))));
}

/**
 * The scan is about to drop whole frames (`why`): WAL files that held data, or frames after a bad
 * one. Any of them may have created a topic whose segment or pack bytes are on disk with no
 * other record of it, so recovery must not remove those as orphans (src/supervisor/orphans.ts).
 * The marker is durable before anything is dropped for good; the supervisor removes it once it
 * has moved them into quarantine/. False on a full disk (no marker): the caller drops nothing
 * for good then (this start still keeps the orphans, from the scan's result).
 */
function markFramesDropped(s: ScanFiles, why: string): boolean {
  s.framesDropped = true;
  const file = quarantinePendingFile(s.dataDir);
  try {
    if (s.fsx.existsSync(file)) return true;
    mkdirDurableSync(s.fsx, quarantineDir(s.dataDir));
    const fd = s.fsx.openSync(file, 'w');
    try {
      writeAllSync(s.fsx, fd, Buffer.from(`${why}\n`));
      s.fsx.fsyncSync(fd);
    } finally {
      s.fsx.closeSync(fd);
    }
    fsyncDirSync(s.fsx, quarantineDir(s.dataDir));
    return true;
  } catch (err) {
    if (!isDiskFull(err)) throw err;
    return false;
  }
}

/** SERVICE_RECOVERY_TRUNCATE cannot drop WAL files for good without the marker: the start is refused. */
function noRoomToDrop(file: string, what: string): CorruptionError {
  return new CorruptionError(
    file,
    `${what}; SERVICE_RECOVERY_TRUNCATE cannot drop it while the disk is full (quarantine/pending cannot be written): free some space and start again`,
  );
}

/**
 * Ends the log before `files[from]` (SERVICE_RECOVERY_TRUNCATE): that file and every later one
 * are moved into wal/quarantine/ (as `<file>.dropped`), not deleted: what they held is kept, byte
 * for byte, after the server started without it. Returns their bytes.
 */
function dropFilesFrom(s: ScanFiles, from: number): number {
  let bytes = 0;
  const dropped = s.files.slice(from);
  if (dropped.length === 0) return 0;
  const qdir = path.join(s.dir, 'quarantine');
  mkdirDurableSync(s.fsx, qdir);
  for (const n of dropped) {
    const name = walFileName(n);
    bytes += s.fsx.statSync(path.join(s.dir, name)).size;
    // The next start may reuse a dropped file's number: an earlier drop's copy is never replaced.
    let to = path.join(qdir, `${name}.dropped`);
    for (let k = 2; s.fsx.existsSync(to); k++) to = path.join(qdir, `${name}.dropped.${k}`);
    s.fsx.renameSync(path.join(s.dir, name), to);
  }
  fsyncDirSync(s.fsx, qdir);
  fsyncDirSync(s.fsx, s.dir);
  return bytes;
}

/**
 * File `files[i]` has a bad header (`headerErr`). Returns 'skip' to go on with the next file, or
 * the new last file number when the log ends before this file (this file and later ones removed).
 */
export async function onBadHeader(
  s: ScanFiles,
  i: number,
  headerErr: string,
  truncateOnCorruption: boolean,
  fileNoBefore: number,
): Promise<'skip' | number> {
  const file = path.join(s.dir, walFileName(s.files[i]!));
  // A file whose header never became durable, with nothing but zeros after it, held no
  // frame (frames follow a durable header): a creation or pre-allocation cut short by a
  // crash. At the end of the log it is removed, so the next run reuses its number and it
  // never sits in the middle; elsewhere (left by an older version) it is skipped.
  if (holdsNoData(await s.fsx.readFile(file))) {
    if (await laterFileHoldsData(s.fsx, s.dir, s.files.slice(i + 1))) return 'skip';
    // Nothing to keep: this file and the ones after it held no frame. Unlinked, not quarantined
    // (a whole pre-allocated file each, and a normal crash's leftover: no damage to report).
    for (const n of s.files.slice(i)) s.fsx.unlinkSync(path.join(s.dir, walFileName(n)));
    fsyncDirSync(s.fsx, s.dir);
    return i > 0 ? s.files[i - 1]! : fileNoBefore;
  } else if (!truncateOnCorruption) {
    throw new CorruptionError(`WAL file ${file}`, headerErr);
  } else if (!markFramesDropped(s, `SERVICE_RECOVERY_TRUNCATE: ${file}: ${headerErr}; dropped with the WAL files after it`)) {
    throw noRoomToDrop(file, headerErr);
  }
  // Truncating mode: keep the prefix, i.e. every earlier file; drop this one and later ones.
  s.droppedBytes += dropFilesFrom(s, i);
  return i > 0 ? s.files[i - 1]! : fileNoBefore;
}

/** What `repairTail` did to the file, for the scan's result. */
export interface TailRepair {
  tornBytes: number;
  quarantinedBytes: number;
  /**
   * Where the bad frame was, when whole frames followed it in the same file: not the clean end a
   * crash leaves, so the start says so loudly (a power loss can leave it; so can damage).
   */
  damage?: { file: string; offset: number; reason: string };
  /** True when the later files were dropped too: the log ends with this file. */
  endsLog: boolean;
}

/**
 * The frame at `off` in `files[i]` did not check (`reason`). A torn tail unless a later file
 * holds data: then mid-log corruption, refused unless `truncateOnCorruption`.
 */
export async function repairTail(s: ScanFiles, i: number, off: number, reason: string, truncateOnCorruption: boolean): Promise<TailRepair> {
  const { fsx, dir, files } = s;
  const fileNo = files[i]!;
  const file = path.join(dir, walFileName(fileNo));
  // A torn tail or corruption (rare): the repair works on the whole file.
  const buf = await fsx.readFile(file);
  const later = findValidFrameAfter(buf, off);
  // The next file may exist without frames: pre-allocated (or being pre-allocated) while
  // this one was written. Only data in a later file proves this one was complete.
  const laterFileValid = i < files.length - 1 && (await laterFileHoldsData(fsx, dir, files.slice(i + 1)));
  if (laterFileValid && !truncateOnCorruption) {
    throw new CorruptionError(
      file,
      `mid-log corruption (${reason}); a later WAL file holds frames. Set SERVICE_RECOVERY_TRUNCATE=1 to keep the prefix.`,
      off,
    );
  }
  const repair: TailRepair = { tornBytes: buf.length - off, quarantinedBytes: 0, endsLog: false };
  // Bytes that held valid frames are copied aside before the file is cut. Without the
  // space for the copy (a full disk) the tail is left as it is: it is never read as data
  // (writing always continues in a new file), and the next recovery tries again.
  let keepTail = false;
  const marked =
    later < 0 && !laterFileValid ? true : markFramesDropped(s, `${file} at offset ${off}: ${reason}; the whole frames after it dropped`);
  if (!marked && laterFileValid) throw noRoomToDrop(file, `mid-log corruption (${reason}) at offset ${off}`);
  if (later >= 0) {
    repair.damage = { file, offset: off, reason };
    // Without the marker the frames after it stay in the file (as without room for the copy):
    // the next start meets them again, and keeps the orphans again.
    if (marked && quarantineTail(fsx, dir, fileNo, buf, off)) repair.quarantinedBytes = buf.length - off;
    else keepTail = true;
  }
  if (!keepTail) cutFile(fsx, dir, file, off);
  if (laterFileValid) {
    // Truncating mode: drop every later file too (into quarantine/), keeping only the prefix.
    s.droppedBytes += dropFilesFrom(s, i + 1);
    repair.endsLog = true;
  }
  return repair;
}

/** Copies buf[off..] to wal/quarantine/ durably; false when the disk is full (nothing copied). */
function quarantineTail(fsx: Fs, dir: string, fileNo: number, buf: Buffer, off: number): boolean {
  try {
    // Durable before the cut: the copy, and its name in quarantine/.
    const qdir = path.join(dir, 'quarantine');
    mkdirDurableSync(fsx, qdir);
    const qfd = fsx.openSync(path.join(qdir, `${walFileName(fileNo)}.${off}`), 'w');
    try {
      writeAllSync(fsx, qfd, buf.subarray(off));
      fsx.fsyncSync(qfd);
    } finally {
      fsx.closeSync(qfd);
    }
    fsyncDirSync(fsx, qdir);
    return true;
  } catch (err) {
    if (!isDiskFull(err)) throw err;
    return false;
  }
}

/** Cuts `file` at `off`, durably, so a later boot never mistakes stale bytes for frames. */
function cutFile(fsx: Fs, dir: string, file: string, off: number): void {
  const fd = fsx.openSync(file, 'r+');
  fsx.ftruncateSync(fd, off);
  fsx.fsyncSync(fd);
  fsx.closeSync(fd);
  fsyncDirSync(fsx, dir);
}

/**
 * Gives back the pre-allocated space after the log's end: a run never writes into an earlier
 * run's files (it starts a new one), so those zeros would only hold space, up to two files of it
 * (the one written last and its reserve), until checkpoints trimmed them. On a disk that had
 * filled up that is the room a restart needs. Best effort: a failure leaves the zeros, which
 * read as the end of the log anyway.
 */
export function freeZeroTails(fsx: Fs, tails: { file: string; off: number }[]): void {
  if (tails.length === 0) return;
  try {
    for (const t of tails) {
      const fd = fsx.openSync(t.file, 'r+');
      // Not fsynced: the space is free at once, and a crash that undid the cut brings back
      // zeros, which read as the end of the log. (An fsync would also make durable any frame
      // written but never synced, which no caller of the scan has asked for.)
      try {
        fsx.ftruncateSync(fd, t.off);
      } finally {
        fsx.closeSync(fd);
      }
    }
  } catch {
    // the zeros stay; nothing reads them as frames
  }
}
