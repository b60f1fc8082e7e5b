// RecordText: one record's bytes as stored (the APPEND frame it arrived in), by offsets.
// Every read variant is a concatenation of these pieces, so no reader re-serializes a record.
// Hot records are not kept as RecordTexts (SeqIndex holds their buffer and offset in columns);
// one is built when a reader asks for a record's text and lives as long as that read.
import { RecordExtent } from '../../format/frame.js';
import { APPEND_RECORD_HEAD_BYTES, META_ABSENT } from '../../format/constants.js';

export class RecordText {
  constructor(
    readonly buf: Buffer,
    readonly nodeOff: number,
    readonly nodeLen: number,
    readonly tagOff: number,
    readonly tagLen: number,
    readonly metaOff: number,
    readonly metaLen: number, // -1 when absent
    readonly dataOff: number,
    readonly dataLen: number,
  ) {}

  static fromExtent(buf: Buffer, r: RecordExtent): RecordText {
    return new RecordText(buf, r.nodeOff, r.nodeLen, r.tagOff, r.tagLen, r.metaOff, r.metaLen, r.dataOff, r.dataLen);
  }

  /** The record whose 12-byte head starts at `p` in `buf` (see `readHead`). */
  static at(buf: Buffer, p: number): RecordText {
    const h = readHead(buf, p);
    return new RecordText(buf, h.nodeOff, h.nodeLen, h.tagOff, h.tagLen, h.metaOff, h.metaLen, h.dataOff, h.dataLen);
  }

  /** Where this record's head starts in `buf` (what `at` takes). */
  get headOff(): number {
    return this.nodeOff - APPEND_RECORD_HEAD_BYTES;
  }

  /** The spec's `bytes` measure: stored data text plus stored meta text. */
  get payloadBytes(): number {
    return this.dataLen + Math.max(0, this.metaLen);
  }
}

/** What `readHead` fills: one per thread, read at once by the caller (no object per call). */
const head: RecordExtent = { nodeOff: 0, nodeLen: 0, tagOff: 0, tagLen: 0, metaOff: 0, metaLen: -1, dataOff: 0, dataLen: 0 };

/**
 * The extents of the record whose 12-byte head starts at `p` in `buf` (the layout of
 * docs/FORMAT.md's APPEND records: node, tag, meta and data follow the head), in a shared
 * scratch object to copy from before the next call. The head's fields are read byte by byte:
 * Buffer's readUInt*LE cost ~9 ns a call, and a DataView per call would be an allocation.
 */
export function readHead(buf: Buffer, p: number): Readonly<RecordExtent> {
  head.nodeLen = buf[p]! | (buf[p + 1]! << 8);
  head.tagLen = buf[p + 2]! | (buf[p + 3]! << 8);
  const metaRaw = (buf[p + 4]! | (buf[p + 5]! << 8) | (buf[p + 6]! << 16)) + buf[p + 7]! * 0x1000000;
  head.dataLen = (buf[p + 8]! | (buf[p + 9]! << 8) | (buf[p + 10]! << 16)) + buf[p + 11]! * 0x1000000;
  head.metaLen = metaRaw === META_ABSENT ? -1 : metaRaw;
  head.nodeOff = p + APPEND_RECORD_HEAD_BYTES;
  head.tagOff = head.nodeOff + head.nodeLen;
  head.metaOff = head.tagOff + head.tagLen;
  head.dataOff = head.metaOff + (head.metaLen > 0 ? head.metaLen : 0);
  return head;
}
