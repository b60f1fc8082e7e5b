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
// This file owns the reading: the file loop, the frame loop and the batching of frames per worker;
// the decisions above are in `scanRepair.ts`.
import path from 'node:path';
import type { Fs, FsFile } from '../storage/fs.js';
import type { WalPosition } from '../protocol/messages/wal.js';
import { walDir, walFileName } from '../format/layout.js';
import { checkWalHeader, listWalFiles } from './files.js';
import { FRAME_PREFIX_BYTES, WAL_HEADER_BYTES, FrameType } from '../format/constants.js';
import { alignUp, decodeJsonBody, FrameView, probeFrame } from '../format/frame.js';
import { CorruptionError } from '../core/corruption.js';
import { allZero, freeZeroTails, onBadHeader, repairTail, type ScanFiles } from './scanRepair.js';

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
  /** Whole WAL files moved to quarantine/ under SERVICE_RECOVERY_TRUNCATE, in bytes. */
  droppedFileBytes: number;
  /**
   * Whole frames were dropped: WAL files that held data (SERVICE_RECOVERY_TRUNCATE), or frames
   * after a bad one (`damage`). Orphans are then kept, not removed (src/supervisor/orphans.ts).
   */
  framesDropped: boolean;
  /** Bad frames that had whole frames after them in the same file (docs/ARCHITECTURE.md "Torn tails versus corruption"). */
  damage: { file: string; offset: number; reason: string }[];
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
/**
 * A frame's bytes with their zero padding. The CRC does not cover the padding, so a crash (in a
 * file that is not pre-allocated) may leave the last frame whole but short of it; replay writes
 * the frame into its segment at its padded size, which the index counts on.
 */
function wholeFrame(buf: Buffer, off: number, size: number): Buffer {
  if (off + size <= buf.length) return buf.subarray(off, off + size);
  return Buffer.concat([buf.subarray(off), Buffer.alloc(off + size - buf.length)]);
}

/**
 * Frames waiting to go to each worker, as views of the window: they go out (one copy per frame,
 * straight into the ArrayBuffer that crosses to the worker) before the window moves.
 */
class FrameBatches {
  private readonly pending = new Map<number, Buffer[]>();
  private readonly pendingBytes = new Map<number, number>();

  constructor(private readonly sink: ScanSink) {}

  /** Queues a frame for worker `w`; returns the bytes now pending for it. */
  add(w: number, frame: Buffer): number {
    let list = this.pending.get(w);
    if (!list) this.pending.set(w, (list = []));
    list.push(frame);
    const n = (this.pendingBytes.get(w) ?? 0) + frame.length;
    this.pendingBytes.set(w, n);
    return n;
  }

  async flush(w: number): Promise<void> {
    const list = this.pending.get(w);
    if (!list || list.length === 0) return;
    const n = this.pendingBytes.get(w)!;
    const chunk = Buffer.from(this.sink.chunkBuffer?.(n) ?? new ArrayBuffer(n), 0, n);
    let at = 0;
    for (const b of list) {
      chunk.set(b, at);
      at += b.length;
    }
    this.pending.set(w, []);
    this.pendingBytes.set(w, 0);
    await this.sink.emit(w, chunk);
  }

  async flushAll(): Promise<void> {
    for (const w of this.pending.keys()) await this.flush(w);
  }
}

/** `windowBytes`: how much of a file is read at a time (tests use tiny windows). */
export async function scanWal(
  fsx: Fs,
  dataDir: string,
  from: WalPosition | undefined,
  truncateOnCorruption: boolean,
  sink: ScanSink,
  windowBytes = WINDOW_BYTES,
): Promise<ScanResult> {
  const files = listWalFiles(fsx, dataDir).filter((n) => !from || n >= from.fileNo);
  const s: ScanFiles = { fsx, dataDir, dir: walDir(dataDir), files, droppedBytes: 0, framesDropped: false };
  return new WalScan(s, from, truncateOnCorruption, sink, windowBytes).run();
}

/** One recovery scan: the files in order, the frames of each, the repair where a file stops. */
class WalScan {
  private readonly sizes: number[];
  private readonly total: number;
  /** Bytes of the files done so far, for progress. */
  private scanned = 0;
  private readonly result: ScanResult;
  private readonly batches: FrameBatches;
  private readonly win: FileWindow;
  /** Pre-allocated zeros after the log's last frame (in its file, and in a reserve after it). */
  private zeroTails: { file: string; off: number }[] = [];

  constructor(
    private readonly s: ScanFiles,
    private readonly from: WalPosition | undefined,
    private readonly truncateOnCorruption: boolean,
    private readonly sink: ScanSink,
    windowBytes: number,
  ) {
    this.sizes = s.files.map((n) => s.fsx.statSync(path.join(s.dir, walFileName(n))).size);
    this.total = this.sizes.reduce((a, b) => a + b, 0) || 1;
    this.result = {
      lastFileNo: s.files.at(-1) ?? from?.fileNo ?? 0,
      frames: 0,
      bytes: 0,
      tornBytes: 0,
      quarantinedBytes: 0,
      droppedFileBytes: 0,
      framesDropped: false,
      damage: [],
    };
    this.batches = new FrameBatches(sink);
    this.win = new FileWindow(windowBytes);
  }

  async run(): Promise<ScanResult> {
    for (let i = 0; i < this.s.files.length; i++) {
      const next = await this.scanFile(i);
      if (next === 'end') break;
      if (next === 'skip') continue;
      this.sink.progress(Math.min(1, this.scanned / this.total));
    }
    await this.batches.flushAll();
    freeZeroTails(this.s.fsx, this.zeroTails);
    this.sink.progress(1);
    this.result.droppedFileBytes = this.s.droppedBytes;
    this.result.framesDropped = this.s.framesDropped;
    return this.result;
  }

  /** Scans file `files[i]`: 'next' when the log goes on, 'end' when it ends here, 'skip' for a file that held nothing. */
  private async scanFile(i: number): Promise<'next' | 'end' | 'skip'> {
    const { fsx, dir, files } = this.s;
    const fileNo = files[i]!;
    const file = path.join(dir, walFileName(fileNo));
    const fh = await fsx.open(file, 'r');
    let stopped: { off: number; reason: string | undefined };
    try {
      const size = fsx.statSync(file).size;
      await this.batches.flushAll();
      await this.win.load(fh, size, 0, WAL_HEADER_BYTES);
      const headerErr = checkWalHeader(this.win.view, fileNo);
      if (headerErr) {
        const outcome = await onBadHeader(this.s, i, headerErr, this.truncateOnCorruption, this.from?.fileNo ?? 0);
        if (outcome === 'skip') return 'skip';
        this.result.lastFileNo = outcome;
        return 'end';
      }
      const off = this.from && fileNo === this.from.fileNo ? Math.max(this.from.offset, WAL_HEADER_BYTES) : WAL_HEADER_BYTES;
      stopped = await this.scanFrames(fh, file, size, off);
    } finally {
      await fh.close();
    }
    let next: 'next' | 'end' = 'next';
    if (stopped.reason !== undefined) {
      const repair = await repairTail(this.s, i, stopped.off, stopped.reason, this.truncateOnCorruption);
      this.result.tornBytes += repair.tornBytes;
      this.result.quarantinedBytes += repair.quarantinedBytes;
      if (repair.damage) this.result.damage.push(repair.damage);
      if (repair.endsLog) {
        this.result.lastFileNo = fileNo;
        next = 'end';
      }
    }
    this.scanned += this.sizes[i]!;
    return next;
  }

  /**
   * The frame loop over one file from `off`: returns where it stopped and why (reason undefined
   * when the file ended cleanly, at its end or at the pre-allocated zeros).
   */
  private async scanFrames(fh: FsFile, file: string, size: number, off: number): Promise<{ off: number; reason: string | undefined }> {
    const win = this.win;
    while (off < size) {
      await this.ensure(fh, size, off, FRAME_PREFIX_BYTES);
      let p = probeFrame(win.view, off - win.base, win.view.length);
      if (!p.ok && p.reason === 'short' && win.end < size) {
        await this.ensure(fh, size, off, alignUp(FRAME_PREFIX_BYTES + win.view.readUInt32LE(off - win.base)));
        p = probeFrame(win.view, off - win.base, win.view.length);
      } else if (p.ok && off + p.frame.size > win.end && win.end < size) {
        await this.ensure(fh, size, off, p.frame.size); // its padding runs past the window
        p = probeFrame(win.view, off - win.base, win.view.length);
      }
      if (!p.ok) {
        if (p.reason !== 'end' || !(await this.zerosToEnd(fh, size, off))) return { off, reason: p.reason };
        this.zeroTails.push({ file, off });
        return { off, reason: undefined };
      }
      await this.takeFrame(p.frame, off);
      if (this.zeroTails.length > 0) this.zeroTails = []; // an earlier file's tail is not the log's end
      this.result.frames++;
      this.result.bytes += p.frame.size;
      off += p.frame.size;
    }
    return { off, reason: undefined };
  }

  /** Hands the frame at file offset `off` (in the window) to the sink and to its worker's batch. */
  private async takeFrame(f: FrameView, off: number): Promise<void> {
    const buf = this.win.view;
    this.sink.seen(buf, f);
    const w = this.sink.route(buf, f);
    if (w === undefined) return;
    const n = this.batches.add(w, wholeFrame(buf, off - this.win.base, f.size));
    if (n >= CHUNK_BYTES) {
      await this.batches.flush(w);
      this.sink.progress(Math.min(1, (this.scanned + off) / this.total)); // within a file too: files are 64 MiB
    }
  }

  /** Moves the window to `off` when fewer than `need` bytes of the file from there are in it. */
  private async ensure(fh: FsFile, size: number, off: number, need: number): Promise<void> {
    const win = this.win;
    if (off >= win.base && (off + need <= win.end || win.end >= size)) return;
    await this.batches.flushAll();
    await win.load(fh, size, off, need);
  }

  /** True when the file holds only zeros from `from` on (the pre-allocated tail), read window by window. */
  private async zerosToEnd(fh: FsFile, size: number, from: number): Promise<boolean> {
    const win = this.win;
    if (!allZero(win.view, from - win.base)) return false;
    while (win.end < size) {
      await this.batches.flushAll();
      await win.load(fh, size, win.end, 0);
      if (!allZero(win.view, 0)) return false;
    }
    return true;
  }
}

export function isTopicCreate(f: FrameView): boolean {
  return f.type === FrameType.TOPIC_CREATE;
}

export function topicNameOf(buf: Buffer, f: FrameView): string {
  return (decodeJsonBody(buf, f) as { name: string }).name;
}
