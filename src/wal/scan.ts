// Recovery scan of the WAL (docs/ARCHITECTURE.md "Checkpoints and recovery"), run on the WAL thread before it takes writes.
// Reads files from the checkpoint position, validates every frame, routes each to the worker
// that owns its topic, and decides where the log ends:
// - a bad frame followed by a LATER file that holds anything after its header is mid-log
//   corruption: refuse to start (SERVICE_RECOVERY_TRUNCATE=1 keeps the prefix instead). A later
//   file of a header and zeros (the pre-allocated reserve, docs/ARCHITECTURE.md "Storage faults") or without a durable
//   header (a creation cut short) held no frame, so it proves nothing about the earlier file;
// - valid frames only later in the SAME file, or nothing valid after it: a torn tail. The tail is
//   copied to wal/quarantine/ when it held valid frames, and the file is truncated at the end of
//   the valid prefix, so a later boot never mistakes stale bytes for frames.
import path from 'node:path';
import { fsyncDirSync, isDiskFull, mkdirDurableSync, writeAllSync, type Fs, type FsFile } from '../storage/fs.js';
import type { WalPosition } from '../core/messages/wal.js';
import { walDir, walFileName } from '../storage/layout.js';
import { checkWalHeader, listWalFiles } from './files.js';
import { FRAME_ALIGN, FRAME_PREFIX_BYTES, WAL_HEADER_BYTES, FrameType } from './format.js';
import { alignUp, decodeJsonBody, FrameView, probeFrame } from './frame.js';
import { CorruptionError } from '../core/corruption.js';

/**
 * Recovery without a usable snapshot replays the WAL from its start; that is whole only if the
 * log still begins at file 1 (a WAL file is unlinked only once a snapshot covers it). Otherwise
 * every snapshot is damaged or gone, and replaying what is left would silently drop whatever
 * the missing files and snapshot held: refuse to start instead.
 */
export function assertWalFromStart(fsx: Fs, dataDir: string): void {
  const first = listWalFiles(fsx, dataDir)[0];
  if (first !== undefined && first > 1) {
    throw new CorruptionError(
      path.join(dataDir, 'wal'),
      `no usable snapshot in ${path.join(dataDir, 'meta')}, and the WAL starts at file ${first}: the files before it were removed once a snapshot covered them, so the data cannot be rebuilt from what is left; restore a backup`,
    );
  }
}

export interface ScanSink {
  /** Worker index for a frame, or undefined to drop it (global or unknown-topic frames). */
  route(buf: Buffer, f: FrameView): number | undefined;
  /** A chunk of whole frames for one worker, in log order: the start of its own ArrayBuffer (transferable). */
  emit(worker: number, chunk: Buffer): void | Promise<void>;
  /** An ArrayBuffer of at least `bytes` for a chunk (reused ones); a fresh one when absent. */
  chunkBuffer?(bytes: number): ArrayBuffer;
  progress(fraction: number): void;
  /** Every frame, including global ones (BOOT), for epoch bookkeeping. */
  seen(buf: Buffer, f: FrameView): void;
}

export interface ScanResult {
  lastFileNo: number;
  frames: number;
  bytes: number;
  tornBytes: number;
  quarantinedBytes: number;
}

export const CHUNK_BYTES = 4 * 1024 * 1024;
/** A file is read through a window this large (grown for a larger frame), one for the whole scan. */
const WINDOW_BYTES = 8 * 1024 * 1024;

/**
 * A window over one WAL file. The scan used to read each file whole: a pre-allocated file is
 * 64 MiB however little it holds, and those buffers were the largest part of what recovery left
 * for the GC (docs/ARCHITECTURE.md "Many topics"). `view` holds the file's bytes [base, base + view.length).
 */
class FileWindow {
  private buf: Buffer;
  view: Buffer;
  base = 0;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafeSlow(bytes);
    this.view = this.buf.subarray(0, 0);
  }

  /** File offset just past the window. */
  get end(): number {
    return this.base + this.view.length;
  }

  /** Reads the file from `from` on into the window: all of it that fits, at least `need` bytes if the file has them. */
  async load(fh: FsFile, size: number, from: number, need: number): Promise<void> {
    if (need > this.buf.length) this.buf = Buffer.allocUnsafeSlow(alignUp(need));
    const want = Math.min(this.buf.length, size - from);
    let got = 0;
    while (got < want) {
      const n = await fh.read(this.buf, got, want - got, from + got);
      if (n === 0) break;
      got += n;
    }
    this.base = from;
    this.view = this.buf.subarray(0, got);
  }
}
const ZEROS = Buffer.alloc(64 * 1024);

/** True when buf[off..] holds only zeros: the pre-allocated tail (compared natively, 64 KiB at a time). */
function allZero(buf: Buffer, off: number): boolean {
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

/**
 * A frame's bytes with their zero padding. The CRC does not cover the padding, so a crash (in a
 * file that is not pre-allocated) may leave the last frame whole but short of it; replay writes
 * the frame into its segment at its padded size, which the index counts on.
 */
function wholeFrame(buf: Buffer, off: number, size: number): Buffer {
  if (off + size <= buf.length) return buf.subarray(off, off + size);
  return Buffer.concat([buf.subarray(off), Buffer.alloc(off + size - buf.length)]);
}

/** True when the file holds nothing after its header but zeros: no frame was ever written to it. */
function holdsNoData(buf: Buffer): boolean {
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

/** `windowBytes`: how much of a file is read at a time (tests use tiny windows). */
export async function scanWal(fsx: Fs, dataDir: string, from: WalPosition | undefined, truncateOnCorruption: boolean, sink: ScanSink, windowBytes = WINDOW_BYTES): Promise<ScanResult> {
  const files = listWalFiles(fsx, dataDir).filter((n) => !from || n >= from.fileNo);
  const dir = walDir(dataDir);
  const sizes = files.map((n) => fsx.statSync(path.join(dir, walFileName(n))).size);
  const total = sizes.reduce((a, b) => a + b, 0) || 1;
  let scanned = 0;
  const result: ScanResult = { lastFileNo: files.at(-1) ?? (from?.fileNo ?? 0), frames: 0, bytes: 0, tornBytes: 0, quarantinedBytes: 0 };
  const pending = new Map<number, Buffer[]>();
  const pendingBytes = new Map<number, number>();
  // One copy per frame, straight into the ArrayBuffer that crosses to the worker.
  const flushWorker = async (w: number) => {
    const list = pending.get(w);
    if (!list || list.length === 0) return;
    const n = pendingBytes.get(w)!;
    const chunk = Buffer.from(sink.chunkBuffer?.(n) ?? new ArrayBuffer(n), 0, n);
    let at = 0;
    for (const b of list) {
      chunk.set(b, at);
      at += b.length;
    }
    pending.set(w, []);
    pendingBytes.set(w, 0);
    await sink.emit(w, chunk);
  };
  // Pending frames are views of the window: they go out before it moves.
  const flushAll = async () => {
    for (const w of pending.keys()) await flushWorker(w);
  };
  const win = new FileWindow(windowBytes);
  /** Pre-allocated zeros after the log's last frame (in its file, and in a reserve after it). */
  let zeroTails: { file: string; off: number }[] = [];
  /** True when the file holds only zeros from `from` on (the pre-allocated tail), read window by window. */
  const zerosToEnd = async (fh: FsFile, size: number, from: number): Promise<boolean> => {
    if (!allZero(win.view, from - win.base)) return false;
    while (win.end < size) {
      await flushAll();
      await win.load(fh, size, win.end, 0);
      if (!allZero(win.view, 0)) return false;
    }
    return true;
  };

  for (let i = 0; i < files.length; i++) {
    const fileNo = files[i]!;
    const isLast = i === files.length - 1;
    const file = path.join(dir, walFileName(fileNo));
    const fh = await fsx.open(file, 'r');
    let size = 0;
    let off = 0;
    let stop: string | undefined;
    try {
      size = fsx.statSync(file).size;
      await flushAll();
      await win.load(fh, size, 0, WAL_HEADER_BYTES);
      const headerErr = checkWalHeader(win.view, fileNo);
      if (headerErr) {
        // A file whose header never became durable, with nothing but zeros after it, held no
        // frame (frames follow a durable header): a creation or pre-allocation cut short by a
        // crash. At the end of the log it is removed, so the next run reuses its number and it
        // never sits in the middle; elsewhere (left by an older version) it is skipped.
        if (holdsNoData(await fsx.readFile(file))) {
          if (await laterFileHoldsData(fsx, dir, files.slice(i + 1))) continue;
          for (const n of files.slice(i)) fsx.unlinkSync(path.join(dir, walFileName(n)));
          fsyncDirSync(fsx, dir);
          result.lastFileNo = i > 0 ? files[i - 1]! : (from?.fileNo ?? 0);
          break;
        }
        if (!truncateOnCorruption) throw new CorruptionError(`WAL file ${file}`, headerErr);
        // Truncating mode: keep the prefix, i.e. every earlier file; drop this one and later ones.
        for (const n of files.slice(i)) fsx.unlinkSync(path.join(dir, walFileName(n)));
        fsyncDirSync(fsx, dir);
        result.lastFileNo = i > 0 ? files[i - 1]! : (from?.fileNo ?? 0);
        break;
      }
      off = from && fileNo === from.fileNo ? Math.max(from.offset, WAL_HEADER_BYTES) : WAL_HEADER_BYTES;
      /** Moves the window to `off` when fewer than `need` bytes of the file from there are in it. */
      const ensure = async (need: number) => {
        if (off >= win.base && (off + need <= win.end || win.end >= size)) return;
        await flushAll();
        await win.load(fh, size, off, need);
      };
      while (off < size) {
        await ensure(FRAME_PREFIX_BYTES);
        let p = probeFrame(win.view, off - win.base, win.view.length);
        if (!p.ok && p.reason === 'short' && win.end < size) {
          await ensure(alignUp(FRAME_PREFIX_BYTES + win.view.readUInt32LE(off - win.base)));
          p = probeFrame(win.view, off - win.base, win.view.length);
        } else if (p.ok && off + p.frame.size > win.end && win.end < size) {
          await ensure(p.frame.size); // its padding runs past the window
          p = probeFrame(win.view, off - win.base, win.view.length);
        }
        if (!p.ok) {
          if (p.reason !== 'end' || !(await zerosToEnd(fh, size, off))) stop = p.reason;
          else zeroTails.push({ file, off });
          break;
        }
        const f = p.frame;
        const buf = win.view;
        sink.seen(buf, f);
        const w = sink.route(buf, f);
        if (w !== undefined) {
          let list = pending.get(w);
          if (!list) pending.set(w, (list = []));
          list.push(wholeFrame(buf, off - win.base, f.size));
          const n = (pendingBytes.get(w) ?? 0) + f.size;
          pendingBytes.set(w, n);
          if (n >= CHUNK_BYTES) {
            await flushWorker(w);
            sink.progress(Math.min(1, (scanned + off) / total)); // within a file too: files are 64 MiB
          }
        }
        if (zeroTails.length > 0) zeroTails = []; // an earlier file's tail is not the log's end
        result.frames++;
        result.bytes += f.size;
        off += f.size;
      }
    } finally {
      await fh.close();
    }
    if (stop !== undefined) {
      // A torn tail or corruption (rare): the repair below works on the whole file.
      const buf = await fsx.readFile(file);
      const later = findValidFrameAfter(buf, off);
      // The next file may exist without frames: pre-allocated (or being pre-allocated) while
      // this one was written. Only data in a later file proves this one was complete.
      const laterFileValid = !isLast && (await laterFileHoldsData(fsx, dir, files.slice(i + 1)));
      if (laterFileValid && !truncateOnCorruption) {
        throw new CorruptionError(file, `mid-log corruption (${stop}); a later WAL file holds frames. Set SERVICE_RECOVERY_TRUNCATE=1 to keep the prefix.`, off);
      }
      result.tornBytes += buf.length - off;
      // Bytes that held valid frames are copied aside before the file is cut. Without the
      // space for the copy (a full disk) the tail is left as it is: it is never read as data
      // (writing always continues in a new file), and the next recovery tries again.
      let keepTail = false;
      if (later >= 0) {
        try {
          // Durable before the cut below: the copy, and its name in quarantine/.
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
          result.quarantinedBytes += buf.length - off;
        } catch (err) {
          if (!isDiskFull(err)) throw err;
          keepTail = true;
        }
      }
      if (!keepTail) {
        const fd = fsx.openSync(file, 'r+');
        fsx.ftruncateSync(fd, off);
        fsx.fsyncSync(fd);
        fsx.closeSync(fd);
        fsyncDirSync(fsx, dir);
      }
      if (laterFileValid) {
        // Truncating mode: drop every later file too, keeping only the prefix.
        for (const n of files.slice(i + 1)) fsx.unlinkSync(path.join(dir, walFileName(n)));
        fsyncDirSync(fsx, dir);
        result.lastFileNo = fileNo;
        scanned += sizes[i]!;
        break;
      }
    }
    scanned += sizes[i]!;
    sink.progress(Math.min(1, scanned / total));
  }
  for (const w of pending.keys()) await flushWorker(w);
  freeZeroTails(fsx, zeroTails);
  sink.progress(1);
  return result;
}

/**
 * Gives back the pre-allocated space after the log's end: a run never writes into an earlier
 * run's files (it starts a new one), so those zeros would only hold space, up to two files of it
 * (the one written last and its reserve), until checkpoints trimmed them. On a disk that had
 * filled up that is the room a restart needs. Best effort: a failure leaves the zeros, which
 * read as the end of the log anyway.
 */
function freeZeroTails(fsx: Fs, tails: { file: string; off: number }[]): void {
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

export function isTopicCreate(f: FrameView): boolean {
  return f.type === FrameType.TOPIC_CREATE;
}

export function topicNameOf(buf: Buffer, f: FrameView): string {
  return (decodeJsonBody(buf, f) as { name: string }).name;
}
