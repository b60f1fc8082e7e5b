// RecordText: one record's bytes as stored (the APPEND frame it arrived in), by offsets.
// Every read variant is a concatenation of these pieces, so no reader re-serializes a record.
import { RecordExtent } from '../../format/frame.js';

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

  /** The spec's `bytes` measure: stored data text plus stored meta text. */
  get payloadBytes(): number {
    return this.dataLen + Math.max(0, this.metaLen);
  }
}
