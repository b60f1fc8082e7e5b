// Compaction's byte-level rules (docs/FORMAT.md "Compacted segments"), pure functions over
// buffers: which pieces of an APPEND frame stay once some of its records are dead, the EXTENT
// frame that says which bytes of the segment as first written they stand for, and the map from
// those original offsets to a compacted file's. Used on a topic worker by the compactor
// (src/storage/compactor.ts), the segment loader and the segment store's cold reads, and by the
// simulated host of the queue model (test/support/simHost.ts).
// Offsets a topic actor keeps for its records are always the original ones (docs/ARCHITECTURE.md
// "Compaction"): a compacted file never changes what the actor knows, only where bytes are.
import { APPEND_HEAD_BYTES, APPEND_RECORD_HEAD_BYTES, EXTENT_BODY_BYTES, FRAME_HEADER_BYTES, FrameType } from '../format/constants.js';
import {
  forEachAppendRecord,
  frameSize,
  probeFrame,
  readAppendHead,
  readU64,
  sealFrame,
  writeU64,
  type FrameView,
} from '../format/frame.js';
import { CorruptionError } from '../core/corruption.js';
import { invariant } from '../core/invariant.js';

/** One EXTENT of a compacted file: original bytes [orig, orig + origLen) are now the frames at [phys, phys + physLen). */
export interface Extent {
  orig: number;
  origLen: number;
  phys: number;
  physLen: number;
}

/** Bytes of an EXTENT frame. */
export const EXTENT_FRAME_BYTES = frameSize(EXTENT_BODY_BYTES);

/**
 * Original offsets → a compacted file's offsets, for one segment: extents in original order
 * (which is also their order in the file). A read of original bytes [offset, offset + len)
 * becomes one read of the span from the first kept extent in it to the end of the last one;
 * the EXTENT frames inside that span are skipped by whoever parses it (only APPEND frames count).
 */
export class Relocation {
  private readonly orig: number[] = [];
  private readonly origLen: number[] = [];
  private readonly phys: number[] = [];
  private readonly physLen: number[] = [];

  add(e: Extent): void {
    const n = this.orig.length;
    if (n > 0 && e.orig < this.orig[n - 1]! + this.origLen[n - 1]!)
      throw new CorruptionError('compacted segment', `extent at ${e.orig} overlaps or precedes the one before it`);
    this.orig.push(e.orig);
    this.origLen.push(e.origLen);
    this.phys.push(e.phys);
    this.physLen.push(e.physLen);
  }

  get extents(): number {
    return this.orig.length;
  }

  /** Where the original bytes ended, as far as the kept extents know (0 when none is kept). */
  get origEnd(): number {
    const n = this.orig.length;
    return n === 0 ? 0 : this.orig[n - 1]! + this.origLen[n - 1]!;
  }

  /** The file span holding every kept frame of original bytes [offset, offset + len), or undefined when none is kept. */
  map(offset: number, len: number): { offset: number; len: number } | undefined {
    const end = offset + len;
    // The first extent ending after `offset`.
    let lo = 0;
    let hi = this.orig.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.orig[mid]! + this.origLen[mid]! <= offset) lo = mid + 1;
      else hi = mid;
    }
    let last = lo - 1;
    for (let i = lo; i < this.orig.length && this.orig[i]! < end; i++) last = i;
    if (last < lo) return undefined;
    return { offset: this.phys[lo]!, len: this.phys[last]! + this.physLen[last]! - this.phys[lo]! };
  }
}

export function encodeExtent(topicId: number, orig: number, origLen: number, physLen: number): Buffer {
  const buf = Buffer.alloc(EXTENT_FRAME_BYTES);
  writeU64(buf, FRAME_HEADER_BYTES, orig);
  buf.writeUInt32LE(origLen, FRAME_HEADER_BYTES + 8);
  buf.writeUInt32LE(physLen, FRAME_HEADER_BYTES + 12);
  sealFrame(buf, 0, FrameType.EXTENT, 0, topicId, EXTENT_BODY_BYTES);
  return buf;
}

export function readExtent(buf: Buffer, f: FrameView): { orig: number; origLen: number; physLen: number } {
  if (f.bodyLen < EXTENT_BODY_BYTES) throw new CorruptionError('compacted segment', `EXTENT frame body of ${f.bodyLen} bytes`);
  return { orig: readU64(buf, f.bodyOff), origLen: buf.readUInt32LE(f.bodyOff + 8), physLen: buf.readUInt32LE(f.bodyOff + 12) };
}

/**
 * The pieces of the APPEND frame `f` (in `buf`) that keep its live records. The frame itself,
 * byte for byte, when every record lives or its head speaks for the whole batch (an idempotency
 * key's entry names the batch's seqs; a router's forward header its records' origins); else one
 * new frame per run of consecutive live seqs, with the batch's `$ts` and flags and each record's
 * header and bytes as they were. None when no record lives.
 */
export function keptPieces(buf: Buffer, f: FrameView, isLive: (seq: number) => boolean): Buffer[] {
  const head = readAppendHead(buf, f);
  // Runs of consecutive live records, flat: first index, count, byte start, byte end.
  const runs: number[] = [];
  forEachAppendRecord(buf, f, head, (i, r) => {
    if (!isLive(head.firstSeq + i)) return;
    const start = r.nodeOff - APPEND_RECORD_HEAD_BYTES;
    const end = r.dataOff + r.dataLen;
    const n = runs.length;
    if (n > 0 && runs[n - 4]! + runs[n - 3]! === i) {
      runs[n - 3]!++;
      runs[n - 1] = end;
    } else runs.push(i, 1, start, end);
  });
  if (runs.length === 0) return [];
  const frameStart = f.bodyOff - FRAME_HEADER_BYTES;
  const whole = runs.length === 4 && runs[1] === head.count;
  if (whole || head.idemKey !== undefined || head.fwd !== undefined) return [buf.subarray(frameStart, frameStart + f.size)];
  // One allocation for every piece of the frame (a frame split into hundreds of runs made as
  // many small buffers, and most of a copy's CPU was the collector's).
  let total = 0;
  for (let k = 0; k < runs.length; k += 4) total += frameSize(APPEND_HEAD_BYTES + (runs[k + 3]! - runs[k + 2]!));
  const slab = Buffer.alloc(total);
  const out: Buffer[] = [];
  for (let k = 0, at = 0; k < runs.length; k += 4) {
    const [first, count, start, end] = [runs[k]!, runs[k + 1]!, runs[k + 2]!, runs[k + 3]!];
    const bodyBytes = APPEND_HEAD_BYTES + (end - start);
    const piece = slab.subarray(at, at + frameSize(bodyBytes));
    at += piece.length;
    const p = FRAME_HEADER_BYTES;
    writeU64(piece, p, head.firstSeq + first);
    writeU64(piece, p + 8, head.tsMs);
    piece.writeUInt32LE(count, p + 16);
    // Key length 0 and head flags 0: frames with either are kept whole above.
    buf.copy(piece, p + APPEND_HEAD_BYTES, start, end);
    sealFrame(piece, 0, FrameType.APPEND, f.flags, f.topicId, bodyBytes);
    out.push(piece);
  }
  return out;
}

/**
 * Builds a compacted copy from the frames of a segment file, in file order: each APPEND frame of
 * a file never compacted is one unit (its own offset and size); in a file compacted before, an
 * EXTENT frame begins a unit that its APPEND frames share. A unit with a live record becomes an
 * EXTENT frame and its kept pieces (`take` hands out what to write next); a dead one, nothing.
 */
export class CopyBuilder {
  readonly relocation = new Relocation();
  /** Bytes of the copy so far (where the next frame goes). */
  size = 0;
  private out: Buffer[] = [];
  private unit: { orig: number; origLen: number; grouped: boolean; pieces: Buffer[] } | undefined;

  constructor(private readonly isLive: (seq: number) => boolean) {}

  /** The frame `f` of the source, at `off` in the source file. */
  frame(buf: Buffer, f: FrameView, off: number): void {
    if (f.type === FrameType.EXTENT) {
      this.flush();
      const e = readExtent(buf, f);
      this.unit = { orig: e.orig, origLen: e.origLen, grouped: true, pieces: [] };
      return;
    }
    if (f.type !== FrameType.APPEND) throw new CorruptionError('segment', `a frame of type ${f.type}`, off);
    if (!this.unit?.grouped) {
      this.flush();
      this.unit = { orig: off, origLen: f.size, grouped: false, pieces: [] };
    }
    this.unit.pieces.push(...keptPieces(buf, f, this.isLive));
    if (!this.unit.grouped) this.flush();
  }

  /** Ends the unit under way (at the end of the source, or before the next one). */
  flush(): void {
    const u = this.unit;
    this.unit = undefined;
    if (!u || u.pieces.length === 0) return;
    let physLen = 0;
    for (const p of u.pieces) physLen += p.length;
    const topicId = readU64(u.pieces[0]!, 16);
    this.out.push(encodeExtent(topicId, u.orig, u.origLen, physLen), ...u.pieces);
    this.relocation.add({ orig: u.orig, origLen: u.origLen, phys: this.size + EXTENT_FRAME_BYTES, physLen });
    this.size += EXTENT_FRAME_BYTES + physLen;
  }

  /** The frames to write since the last call (at `size` minus their length). */
  take(): Buffer[] {
    const out = this.out;
    this.out = [];
    return out;
  }
}

/**
 * Walks a checked segment buffer: `cb(frame, off, at)` for each APPEND frame, where `at` is the
 * original range it stands for (its own offset and size in a file never compacted; its EXTENT's
 * range in a compacted one). Returns the relocation of a compacted file, undefined otherwise.
 */
export function walkSegment(
  buf: Buffer,
  cb: (f: FrameView, off: number, at: { orig: number; origLen: number }) => void,
): Relocation | undefined {
  let reloc: Relocation | undefined;
  let cur: { orig: number; origLen: number } | undefined;
  for (let off = 0; off < buf.length;) {
    const p = probeFrame(buf, off, buf.length, false);
    invariant(p.ok, `frame vanished at ${off} of a checked segment`);
    const f = p.frame;
    if (f.type === FrameType.EXTENT) {
      const e = readExtent(buf, f);
      cur = { orig: e.orig, origLen: e.origLen };
      (reloc ??= new Relocation()).add({ ...cur, phys: off + f.size, physLen: e.physLen });
    } else cb(f, off, cur ?? { orig: off, origLen: f.size });
    off += f.size;
  }
  return reloc;
}
