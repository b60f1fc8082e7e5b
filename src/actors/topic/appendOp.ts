// The append path of a TopicActor (docs/API.md "Append"): encode one APPEND frame per batch from the
// scanner's byte extents, assign contiguous seqs, index the records as hot texts, and keep the
// seq reservation ahead of what becomes visible (reservation.ts). Pure.
import { copyCompact } from '../../core/jsonScan.js';
import {
  type AppendRecords,
  encodeRecords,
  appendSectionHeadBytes,
  frameAppendSection,
  forEachAppendRecord,
  payloadBytesOf,
  headOffOf,
  readAppendHead,
  readRecordAt,
  recordExtent,
  probeFrame,
} from '../../format/frame.js';
import type { ParsedAppend } from './appendParse.js';
import type { ParsedRecord } from './appendRecord.js';
import type { TopicInstance } from './instance.js';
import { SlotState } from './seqIndex.js';
import type { CopyLayout, ForwardInfo } from '../../protocol/messages/router.js';
import { applyForward, forwardHeaderMaxBytes, replayForward } from '../router/applied.js';
import type { SegmentPlacement } from '../../format/layout.js';
import { InvariantError } from '../../core/invariant.js';

/** Where segments roll: SERVICE_SEGMENT_BYTES, and the pack threshold of the first (0: no packs). */
export interface SegmentLimits {
  segmentBytes: number;
  packBytes?: number;
  /**
   * Past `packFramesFromBytes`, the packed first segment also rolls once it holds `packFramesMax`
   * frames (absent: no frame bound, as traces recorded before it).
   */
  packFramesMax?: number;
  packFramesFromBytes?: number;
}

/**
 * The frame bound of a topic's packed first segment (docs/ARCHITECTURE.md "Pack files"): past
 * 64 KiB (the pack threshold before SERVICE_PACK_BYTES became 1 MiB) it stays packed only while
 * it holds fewer than 64 frames. A frame in a pack is a run of its own unless it landed right
 * after the topic's previous one, and a cold read costs a pread per run, so a topic written in
 * small frames rolls to its own file at 64 KiB as before (runs as before), and only one written
 * in batches (1 KiB a frame and more) stays packed up to SERVICE_PACK_BYTES, in at most 64 runs.
 */
export const PACK_FRAMES_MAX = 64;
export const PACK_FRAMES_FROM_BYTES = 64 * 1024;

const TWO_32 = 0x1_0000_0000;

export interface EncodedBatch {
  frame: Buffer;
  firstSeq: number;
  lastSeq: number;
  /** Records that become live when the batch is visible (0 for a router's trim marker). */
  live: number;
  bytes: number;
}

function litBuf(lit: string | undefined): Buffer | undefined {
  return lit === undefined ? undefined : Buffer.from(lit, 'utf8');
}

/**
 * The encoder's view of a parsed batch (texts copied compacted, once), by index: one object per
 * batch. The literals of per-record nodes and tags are made once, and only when some record
 * has one.
 */
class ParsedRecords implements AppendRecords {
  readonly count: number;
  private readonly batchNode: Buffer | undefined;
  private readonly nodeLits: (Buffer | undefined)[] | undefined;
  private readonly tagLits: (Buffer | undefined)[] | undefined;

  constructor(
    private readonly body: Buffer,
    private readonly records: readonly ParsedRecord[],
    batchNodeLit: string | undefined,
  ) {
    this.count = records.length;
    this.batchNode = litBuf(batchNodeLit);
    let nodeLits: (Buffer | undefined)[] | undefined;
    let tagLits: (Buffer | undefined)[] | undefined;
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      if (r.nodeLit !== undefined) (nodeLits ??= new Array(records.length))[i] = litBuf(r.nodeLit);
      if (r.tagLit !== undefined) (tagLits ??= new Array(records.length))[i] = litBuf(r.tagLit);
    }
    this.nodeLits = nodeLits;
    this.tagLits = tagLits;
  }

  nodeLit(i: number): Buffer | undefined {
    return this.nodeLits?.[i] ?? this.batchNode;
  }

  tagLit(i: number): Buffer | undefined {
    return this.tagLits?.[i];
  }

  metaLen(i: number): number {
    return this.records[i]!.metaLen;
  }

  dataLen(i: number): number {
    return this.records[i]!.dataLen;
  }

  // The scanner already knows each compact length: when nothing needs removing, one memcpy.
  writeMeta(i: number, dst: Buffer, off: number): void {
    const r = this.records[i]!;
    copyCompact(this.body, r.metaStart, r.metaEnd, dst, off, r.metaLen);
  }

  writeData(i: number, dst: Buffer, off: number): void {
    const r = this.records[i]!;
    copyCompact(this.body, r.dataStart, r.dataEnd, dst, off, r.dataLen);
  }
}

/** Where each record's head lies in the frame being indexed (reused: the worker runs one step at a time). */
const headsScratch: number[] = [];

/**
 * Assigns seqs to a parsed batch, encodes its frame and indexes its records (not yet visible:
 * reads stop at `head`). Returns the frame so the caller can submit it per the topic's class.
 */
export function encodeBatch(
  inst: TopicInstance,
  body: Buffer,
  p: ParsedAppend,
  idemKey: string | undefined,
  tsMs: number,
  limits: SegmentLimits,
  fwd?: ForwardInfo,
  /** A redrive batch's header (src/actors/queue/redrivePending.ts), written into the frame. */
  redrive?: Buffer,
): EncodedBatch {
  const firstSeq = inst.assigned + 1;
  // A router copy batch: its progress rides in the same frame (one checksummed unit).
  const fwdHeader = fwd ? applyForward(inst, fwd, firstSeq, p.records.length) : undefined;
  const idem = idemKey === undefined ? undefined : Buffer.from(idemKey, 'utf8');
  const heads = headsScratch;
  const frame = encodeRecords(
    { topicId: inst.id, firstSeq, tsMs, idemKey: idem, fwd: fwdHeader, redrive },
    new ParsedRecords(body, p.records, p.nodeLit),
    heads,
    // A written topic's texts leave the hot cache oldest first, so small frames can share pool
    // slabs; an ephemeral topic's live records stay as long as its retention keeps them, and
    // each would hold a whole slab.
    inst.config.durability !== 'ephemeral',
  );
  const lastSeq = firstSeq + p.records.length - 1;
  inst.assigned = lastSeq;
  const loc = placeBatch(inst, firstSeq, frame.length, limits);
  // Index straight from the encoder's extents: no second CRC pass or node re-parse.
  let bytes = 0;
  for (let i = 0; i < p.records.length; i++) {
    const rec = p.records[i]!;
    const size = rec.dataLen + Math.max(0, rec.metaLen);
    bytes += size;
    const node = rec.node ?? p.node;
    inst.index.put(firstSeq + i, tsMs, size, node === undefined ? 0 : inst.nodes.id(node), loc, frame.length, i, frame, heads[i]!);
    if (rec.tag !== undefined) inst.tags.add(rec.tag, firstSeq + i);
  }
  if (idemKey !== undefined) inst.idem.set(idemKey, { firstSeq, count: p.records.length, tsMs });
  if (tsMs > inst.lastTsMs) inst.lastTsMs = tsMs;
  if (fwd?.lost) {
    // A trim notice's one record is a marker, not a record (docs/ARCHITECTURE.md "Routers").
    inst.index.setState(firstSeq, SlotState.MARKER);
    return { frame, firstSeq, lastSeq, live: 0, bytes: 0 };
  }
  return { frame, firstSeq, lastSeq, live: p.records.length, bytes };
}

/**
 * Assigns seqs to a router copy batch whose records already are a section in the APPEND frame's
 * layout (src/actors/router/copySection.ts), frames it where it lies in `body` (the forwarder left
 * room for the head, copyHeadroom) and indexes its records as hot texts over the frame, as
 * `encodeBatch` does for a parsed body.
 */
export function encodeCopyBatch(
  inst: TopicInstance,
  body: Buffer,
  copies: CopyLayout,
  tsMs: number,
  limits: SegmentLimits,
  fwd: ForwardInfo,
): EncodedBatch {
  const firstSeq = inst.assigned + 1;
  const count = copies.count;
  const fwdHeader = applyForward(inst, fwd, firstSeq, count);
  const frame = frameAppendSection(body, copies.offset, copies.bytes, inst.id, firstSeq, tsMs, count, fwdHeader);
  const lastSeq = firstSeq + count - 1;
  inst.assigned = lastSeq;
  const loc = placeBatch(inst, firstSeq, frame.length, limits);
  const bytes = indexCopies(inst, frame, appendSectionHeadBytes(fwdHeader.length), count, firstSeq, tsMs, loc);
  if (tsMs > inst.lastTsMs) inst.lastTsMs = tsMs;
  return { frame, firstSeq, lastSeq, live: count, bytes };
}

/**
 * Indexes a framed copy section's records as hot texts; returns their data + meta bytes. A loop
 * over the record heads of its own, not walkRecordSection's callback: it runs for every copy a
 * dest takes, and the dest checked the section's extents already (scanCopySection).
 */
function indexCopies(
  inst: TopicInstance,
  frame: Buffer,
  recordsOff: number,
  count: number,
  firstSeq: number,
  tsMs: number,
  loc: number,
): number {
  let bytes = 0;
  let p = recordsOff;
  const r = recordExtent();
  for (let i = 0; i < count; i++) {
    p = readRecordAt(frame, p, r);
    const size = payloadBytesOf(r);
    bytes += size;
    const nodeId = r.nodeLen > 0 ? inst.nodes.idOfLiteral(frame.toString('latin1', r.nodeOff, r.tagOff)) : 0;
    inst.index.put(firstSeq + i, tsMs, size, nodeId, loc, frame.length, i, frame, headOffOf(r));
    if (r.tagLen > 0) inst.tags.add(inst.nodes.tagOfLiteral(frame.toString('latin1', r.tagOff, r.metaOff)), firstSeq + i);
  }
  if (p > frame.length) throw new InvariantError(`copy frame: records end at ${p}, past the frame's ${frame.length} bytes`);
  return bytes;
}

/** The room a copy batch's body leaves before its records: the most its frame's head can take. */
export function copyHeadroom(fwd: ForwardInfo): number {
  return appendSectionHeadBytes(forwardHeaderMaxBytes(fwd));
}

/** Where a new batch's frame goes: its place in the active segment (0 for an ephemeral topic). */
function placeBatch(inst: TopicInstance, firstSeq: number, frameLen: number, limits: SegmentLimits): number {
  // An ephemeral batch's frame is never written, so it takes no place in the segment (its texts
  // stay in memory: never cold). Placing it anyway left a gap that every later frame of the
  // topic landed after once its class changed: a pack refused the frame (storage FAILED), an
  // own segment file got a hole that recovery reads as its end.
  if (inst.config.durability !== 'ephemeral') return placeInSegment(inst, firstSeq, frameLen, limits);
  inst.holdsUnwritten = true;
  return 0;
}

/**
 * Reserves the frame's place in the topic's active segment, rolling to a new one when full. The
 * first segment (ordinal 0) is packed: it rolls once the frame would take it past the pack
 * threshold, and is an own file from the start when packs are off or its first frame alone is
 * larger. Later segments are own files that roll at SERVICE_SEGMENT_BYTES.
 */
export function placeInSegment(inst: TopicInstance, firstSeq: number, frameLen: number, limits: SegmentLimits): number {
  const seg = inst.segment;
  const packBytes = limits.packBytes ?? 0;
  if (seg.ordinal === 0 && seg.packed && seg.size === 0 && !(frameLen <= packBytes)) seg.packed = false;
  const packed = seg.ordinal === 0 && seg.packed;
  const limit = packed ? packBytes : limits.segmentBytes;
  const tooManyFrames =
    packed && seg.frames >= (limits.packFramesMax ?? Infinity) && seg.size + frameLen > (limits.packFramesFromBytes ?? 0);
  if (seg.size > 0 && (seg.size + frameLen > limit || tooManyFrames)) {
    (seg.sealedBytes ??= [])[seg.ordinal] = seg.size;
    seg.firstSeq = firstSeq;
    seg.size = 0;
    seg.frames = 0;
    seg.ordinal += 1;
    seg.firstSeqs.push(firstSeq);
  }
  const loc = seg.ordinal * TWO_32 + seg.size;
  seg.size += frameLen;
  seg.frames++;
  return loc;
}

/**
 * Seals the active segment (compaction asks, for a quiet one that is mostly dead): the next
 * frame starts a new one at the next seq, so the sealed one can be compacted. A packed first
 * segment is sealed too (the next frame starts the topic's first own file); an empty one stays.
 */
export function sealActive(inst: TopicInstance): void {
  const seg = inst.segment;
  if (seg.size === 0) return;
  (seg.sealedBytes ??= [])[seg.ordinal] = seg.size;
  seg.firstSeq = inst.assigned + 1;
  seg.size = 0;
  seg.frames = 0;
  seg.ordinal += 1;
  seg.firstSeqs.push(seg.firstSeq);
}

/** Where the frame just placed (the last `frameLen` bytes of the active segment) goes on disk. */
export function activePlacement(inst: TopicInstance, frameLen: number): SegmentPlacement {
  const seg = inst.segment;
  const place: SegmentPlacement = { topicId: inst.id, segFirstSeq: seg.firstSeq, offset: seg.size - frameLen };
  if (seg.ordinal === 0 && seg.packed) place.packed = true;
  return place;
}

/**
 * Indexes every record of an APPEND frame that starts at `off` in `buf` (already CRC-checked by
 * whoever read it); returns the batch's payload bytes. With `keepText` the records stay in
 * memory as texts over `buf`; otherwise they are cold and read back from segments on demand.
 * `frameLen`: the original bytes the frame stands for, when it comes from a compacted segment.
 */
export function indexFrame(inst: TopicInstance, buf: Buffer, off: number, loc: number, keepText: boolean, frameLen?: number): number {
  const probe = probeFrame(buf, off, buf.length, false);
  if (!probe.ok) throw new InvariantError(`indexFrame: not a frame (${probe.reason})`);
  const head = readAppendHead(buf, probe.frame);
  let total = 0;
  forEachAppendRecord(buf, probe.frame, head, (i, r) => {
    const bytes = payloadBytesOf(r);
    total += bytes;
    const nodeId = r.nodeLen > 0 ? inst.nodes.idOfLiteral(buf.toString('latin1', r.nodeOff, r.nodeOff + r.nodeLen)) : 0;
    const textBuf = keepText ? buf : undefined;
    inst.index.put(head.firstSeq + i, head.tsMs, bytes, nodeId, loc, frameLen ?? probe.frame.size, i, textBuf, headOffOf(r));
    if (r.tagLen > 0) inst.tags.add(inst.nodes.tagOfLiteral(buf.toString('latin1', r.tagOff, r.tagOff + r.tagLen)), head.firstSeq + i);
  });
  if (head.idemKey !== undefined) inst.idem.set(head.idemKey, { firstSeq: head.firstSeq, count: head.count, tsMs: head.tsMs });
  if (head.fwd !== undefined) replayForward(inst, head.fwd, head.firstSeq);
  if (head.tsMs > inst.lastTsMs) inst.lastTsMs = head.tsMs;
  return total;
}
