// RecordText: one record's bytes as stored (the APPEND frame it arrived in), by offsets.
// Every read variant is a concatenation of these pieces, so no reader re-serializes a record.
// Hot records are not kept as RecordTexts (SeqIndex holds their buffer and offset in columns);
// one is built when a reader asks for a record's text and lives as long as that read.
import { headOffOf, readRecordAt, recordExtent } from '../../format/frame.js';

/** What `at` reads a head into before building the text (one per thread). */
const scratch = recordExtent();

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

  /** The record whose 12-byte head starts at `p` in `buf` (the APPEND record layout). */
  static at(buf: Buffer, p: number): RecordText {
    const h = scratch;
    readRecordAt(buf, p, h);
    return new RecordText(buf, h.nodeOff, h.nodeLen, h.tagOff, h.tagLen, h.metaOff, h.metaLen, h.dataOff, h.dataLen);
  }

  /** Where this record's head starts in `buf` (what `at` takes). */
  get headOff(): number {
    return headOffOf(this);
  }

  /** The spec's `bytes` measure: stored data text plus stored meta text. */
  get payloadBytes(): number {
    return this.dataLen + Math.max(0, this.metaLen);
  }
}
