// The records of a router's copy batch (docs/ARCHITECTURE.md "Routers"), built in the source
// topic's actor (worker thread) straight in the APPEND frame's record layout (docs/FORMAT.md):
// record head, node, tag, meta, data. The dest's actor frames the section with one copy, never a
// JSON parse or a per-record encode. Each record's stored bytes are copied, never re-serialized;
// `preserve_node`/`preserve_tag` false leave those out; room is left around the records for the
// dest to write the frame's head and padding where they lie; `exactly_once` copies get the reserved
// meta key `_spool_router` = "<router>:<source topic id>:<source seq>" at the end of their meta
// (docs/API.md "Routers"). Records stored contiguously with their heads (a hot batch) are copied
// as runs. Pure.
import { APPEND_RECORD_HEAD_BYTES, META_ABSENT } from '../../format/constants.js';
import { digitCount, writeUint } from '../../core/decimal.js';
import type { CopyLayout, RouterDef } from '../../protocol/messages/router.js';
import { InvariantError } from '../../core/invariant.js';
import { bufferView } from '../../format/frame.js';
import type { RecordText } from '../topic/recordText.js';

export const ROUTER_META_KEY = '_spool_router';

const LBRACE = 0x7b;
const COMMA = 0x2c;
const STAMP_CLOSE = Buffer.from('"}', 'latin1');
/** A frame is padded to 8 bytes: at most 7 after its records. */
const FRAME_PAD_MAX = 7;

export class CopySection {
  private readonly texts: RecordText[] = [];
  private readonly seqs: number[] = [];
  /** `"_spool_router":"<router>:<source id>:` (exactly_once only): a stamp is this, the seq, `"}`. */
  private readonly stampHead: Buffer | undefined;
  private size = 0;
  private viewBuf: Buffer | undefined;
  private view: DataView | undefined;
  count = 0;
  /** The copies' data + meta bytes as stored at the source (the batch bound, FORWARD_BYTES_MAX). */
  bytes = 0;

  constructor(
    private readonly def: RouterDef,
    sourceId: number,
  ) {
    if (def.guarantee !== 'exactly_once') return;
    const value = JSON.stringify(`${def.name}:${sourceId}:`);
    this.stampHead = Buffer.from(`${JSON.stringify(ROUTER_META_KEY)}:${value.slice(0, -1)}`, 'utf8');
  }

  add(srcSeq: number, t: RecordText): void {
    this.texts.push(t);
    this.seqs.push(srcSeq);
    this.size += APPEND_RECORD_HEAD_BYTES + this.nodeLen(t) + this.tagLen(t) + Math.max(0, this.metaLen(t, srcSeq)) + t.dataLen;
    this.count++;
    this.bytes += t.dataLen + Math.max(0, t.metaLen);
  }

  /**
   * The body of the batch, a buffer of its own: `headroom` bytes left for the dest's frame head,
   * the `count` records in the APPEND frame's layout, and 7 bytes for the frame's padding.
   */
  finish(headroom: number): { body: Buffer; layout: CopyLayout } {
    const out = Buffer.allocUnsafeSlow(headroom + this.size + FRAME_PAD_MAX);
    let p = headroom;
    // A pending run of source bytes that are already whole records in the output's layout.
    let runBuf: Buffer | undefined;
    let runStart = 0;
    let runEnd = 0;
    for (let i = 0; i < this.texts.length; i++) {
      const t = this.texts[i]!;
      const whole =
        this.stampHead === undefined && this.nodeLen(t) === t.nodeLen && this.tagLen(t) === t.tagLen && storedWhole(t, this.viewOf(t.buf));
      if (whole && runBuf === t.buf && runEnd === t.nodeOff - APPEND_RECORD_HEAD_BYTES) {
        runEnd = t.dataOff + t.dataLen;
        continue;
      }
      if (runBuf) p += runBuf.copy(out, p, runStart, runEnd);
      runBuf = undefined;
      if (whole) {
        runBuf = t.buf;
        runStart = t.nodeOff - APPEND_RECORD_HEAD_BYTES;
        runEnd = t.dataOff + t.dataLen;
        continue;
      }
      p = this.writeRecord(out, p, t, this.seqs[i]!);
    }
    if (runBuf) p += runBuf.copy(out, p, runStart, runEnd);
    if (p !== headroom + this.size) throw new InvariantError(`copy section: wrote ${p - headroom} of ${this.size} bytes`);
    // The headroom and the padding are the dest's to write, but the body crosses (and is traced)
    // whole: zeroed, no leftover process memory goes with it, and a replay compares equal bytes.
    out.fill(0, 0, headroom);
    out.fill(0, p);
    return { body: out, layout: { count: this.count, offset: headroom, bytes: this.size } };
  }

  /** A view of the buffer (the last one asked for is kept: a run's texts share their frame). */
  private viewOf(buf: Buffer): DataView {
    if (buf !== this.viewBuf) {
      this.viewBuf = buf;
      this.view = bufferView(buf);
    }
    return this.view!;
  }

  private nodeLen(t: RecordText): number {
    return this.def.preserveNode ? t.nodeLen : 0;
  }

  private tagLen(t: RecordText): number {
    return this.def.preserveTag ? t.tagLen : 0;
  }

  /** The copy's meta length (-1: absent): the stored meta, with the stamp for exactly_once. */
  private metaLen(t: RecordText, srcSeq: number): number {
    if (!this.stampHead) return t.metaLen;
    // `{...,` + stamp, or `{` + stamp for an absent or empty meta; the stamp ends in `"}`.
    return (t.metaLen > 2 ? t.metaLen : 1) + this.stampHead.length + digitCount(srcSeq) + STAMP_CLOSE.length;
  }

  private writeRecord(out: Buffer, at: number, t: RecordText, srcSeq: number): number {
    const nodeLen = this.nodeLen(t);
    const tagLen = this.tagLen(t);
    const metaLen = this.metaLen(t, srcSeq);
    out.writeUInt16LE(nodeLen, at);
    out.writeUInt16LE(tagLen, at + 2);
    out.writeUInt32LE(metaLen < 0 ? META_ABSENT : metaLen, at + 4);
    out.writeUInt32LE(t.dataLen, at + 8);
    let p = at + APPEND_RECORD_HEAD_BYTES;
    if (nodeLen > 0) p += t.buf.copy(out, p, t.nodeOff, t.nodeOff + nodeLen);
    if (tagLen > 0) p += t.buf.copy(out, p, t.tagOff, t.tagOff + tagLen);
    if (this.stampHead) {
      if (t.metaLen > 2) {
        p += t.buf.copy(out, p, t.metaOff, t.metaOff + t.metaLen - 1);
        out[p++] = COMMA;
      } else {
        out[p++] = LBRACE;
      }
      p += this.stampHead.copy(out, p);
      p = writeUint(out, p, srcSeq);
      p += STAMP_CLOSE.copy(out, p);
    } else if (metaLen > 0) {
      p += t.buf.copy(out, p, t.metaOff, t.metaOff + metaLen);
    }
    return p + t.buf.copy(out, p, t.dataOff, t.dataOff + t.dataLen);
  }
}

/**
 * Whether the record's bytes sit in its buffer (`view`, bufferView) as one APPEND record: its head right
 * before its texts. A DataView, not Buffer's readUInt*LE: those cost ~9 ns a call, per copy.
 */
export function storedWhole(t: RecordText, view: DataView): boolean {
  const h = t.nodeOff - APPEND_RECORD_HEAD_BYTES;
  const metaBytes = Math.max(0, t.metaLen);
  return (
    h >= 0 &&
    t.tagOff === t.nodeOff + t.nodeLen &&
    t.metaOff === t.tagOff + t.tagLen &&
    t.dataOff === t.metaOff + metaBytes &&
    view.getUint16(h, true) === t.nodeLen &&
    view.getUint16(h + 2, true) === t.tagLen &&
    view.getUint32(h + 4, true) === (t.metaLen < 0 ? META_ABSENT : t.metaLen) &&
    view.getUint32(h + 8, true) === t.dataLen
  );
}
