// Writes the compacted copy of one sealed segment (docs/ARCHITECTURE.md "Compaction"), on the
// topic worker that owns the topic, with async fs on libuv's pool. The segment is read a slice at
// a time (every frame CRC-checked) from its source: its own file, or the logical bytes of a
// topic's packed first segment in the pack files; each frame's live records are kept as
// compactFrames says, and the copy is written next to the topic's segment files and fsynced; the
// swap is the SegmentStore's. Paced: after each slice it waits so that the copy proceeds at no
// more than `bytesPerSec` of the source, and it gives the event loop a turn in between slices in
// any case. Nothing here changes the source; a copy that is given up is removed.
import type { Fs, FsFile } from './fs.js';
import { CopyBuilder, type Relocation } from './compactFrames.js';
import { probeFrame } from '../format/frame.js';
import { FRAME_PREFIX_BYTES } from '../format/constants.js';
import { alignUp } from '../format/frame.js';
import { CorruptionError } from '../core/corruption.js';

/** Bytes of the old file read per slice (a frame larger than this is read whole). */
export const COMPACT_SLICE_BYTES = 256 * 1024;

export interface CompactPace {
  /** Old-file bytes per second at most (0: as fast as it goes, a turn between slices). */
  bytesPerSec: number;
  nowMs(): number;
  sleep(ms: number): Promise<void>;
}

/** The bytes of a sealed segment as first written (offsets are the ones its records are indexed at). */
export interface CompactSource {
  /** Where the segment's bytes end. */
  readonly size: number;
  /** Exactly `len` bytes from `pos`. */
  read(pos: number, len: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** A segment file of its own as a source. */
export async function fileSource(fsx: Fs, file: string): Promise<CompactSource> {
  const fd = await fsx.open(file, 'r');
  let size: number;
  try {
    size = (await fsx.stat(file)).size;
  } catch (err) {
    await fd.close();
    throw err;
  }
  return {
    size,
    read: async (pos, len) => {
      const buf = Buffer.allocUnsafeSlow(len);
      const n = await fd.read(buf, 0, len, pos);
      if (n !== len) throw new Error(`${file}: short read ${n}/${len} at ${pos}`);
      return buf;
    },
    close: () => fd.close(),
  };
}

export interface CompactJob {
  /** The sealed segment (opened when the copy starts), what to call it in messages, and where its copy goes. */
  source: () => Promise<CompactSource>;
  name: string;
  temp: string;
  topicId: number;
  /** Whether a record is still live (asked on the worker, as the copy is made). */
  isLive(seq: number): boolean;
  /** False once the copy must be given up (the topic slept, was deleted, or the segment went). */
  still(): boolean;
}

/** The copy's relocation (undefined: nothing lives, the segment can simply go), and the sizes. */
export interface CompactOutcome {
  relocation: Relocation | undefined;
  oldBytes: number;
  newBytes: number;
}

/** Writes the copy; undefined when it was given up (its file removed). */
export async function writeCompacted(fsx: Fs, job: CompactJob, pace: CompactPace): Promise<CompactOutcome | undefined> {
  const src = await job.source();
  let dst: FsFile | undefined;
  let keep = false;
  try {
    const oldBytes = src.size;
    dst = await fsx.open(job.temp, 'w');
    const copy = new CopyBuilder(job.isLive);
    const started = pace.nowMs();
    let pos = 0;
    while (pos < oldBytes) {
      const slice = await readSlice(src, pos);
      let off = 0;
      for (;;) {
        const p = probeFrame(slice, off, slice.length);
        if (!p.ok) {
          if (p.reason === 'short' && off > 0) break; // the next slice starts with it
          throw new CorruptionError(job.name, `damaged frame (${p.reason}); not compacted`, pos + off);
        }
        copy.frame(slice, p.frame, pos + off);
        off += p.frame.size;
        if (off >= slice.length) break;
      }
      pos += off;
      if (pos >= oldBytes) copy.flush();
      const out = copy.take();
      // One buffer per slice: a split frame makes hundreds of pieces, past what one writev takes.
      const chunk = out.length === 1 ? out[0]! : Buffer.concat(out);
      if (chunk.length > 0) await writeAll(dst, [chunk], copy.size - chunk.length);
      if (!job.still()) return undefined;
      await paced(pace, started, pos);
      if (!job.still()) return undefined;
    }
    const relocation = copy.relocation;
    const written = copy.size;
    if (relocation.extents === 0) return { relocation: undefined, oldBytes, newBytes: 0 };
    await dst.sync();
    keep = true;
    return { relocation, oldBytes, newBytes: written };
  } finally {
    await src.close();
    await dst?.close();
    if (!keep) await fsx.rm(job.temp);
  }
}

/** Up to a slice of the source from `pos`, or more when the frame there is larger. */
async function readSlice(src: CompactSource, pos: number): Promise<Buffer> {
  let want = Math.min(COMPACT_SLICE_BYTES, src.size - pos);
  if (want >= FRAME_PREFIX_BYTES) {
    const head = await src.read(pos, FRAME_PREFIX_BYTES);
    want = Math.min(src.size - pos, Math.max(want, alignUp(FRAME_PREFIX_BYTES + head.readUInt32LE(0))));
  }
  return src.read(pos, want);
}

async function writeAll(dst: FsFile, bufs: Buffer[], at: number): Promise<void> {
  const total = bufs.reduce((n, b) => n + b.length, 0);
  let done = 0;
  let rest: Buffer[] = bufs;
  while (done < total) {
    const n = await dst.writev(rest, at + done);
    if (!(n > 0)) throw new Error(`compaction writev at ${at + done} wrote ${n}`);
    done += n;
    rest = [Buffer.concat(bufs).subarray(done)];
  }
}

/** Waits until `pos` bytes are due at the pace (at least one turn of the event loop). */
async function paced(pace: CompactPace, startedMs: number, pos: number): Promise<void> {
  const dueMs = pace.bytesPerSec > 0 ? startedMs + (pos * 1000) / pace.bytesPerSec : 0;
  await pace.sleep(Math.max(0, dueMs - pace.nowMs()));
}
