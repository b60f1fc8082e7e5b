// One record of an append body: the limits a record is checked against (with the allowance a
// dead-letter copy adds), the per-record scratch the body walker fills, and `finishRecord`, which
// turns that scratch into a `ParsedRecord` or the record's first problem. Also the shared failure
// shapes of the append parser. Pure and synchronous; runs where `appendParse.ts` runs (the topic
// worker on the append path, once per record).
import { fail } from '../../protocol/errors.js';
import { NODE_MAX_BYTES, nodeTooLongMessage, BATCH_RECORDS_MAX, IDEMPOTENCY_KEY_MAX_CHARS } from '../../protocol/limits.js';
import { bytesToString } from '../../core/jsonScan.js';

export interface ParsedRecord {
  /** Extent of the data value in the body, and its compacted byte length. */
  dataStart: number;
  dataEnd: number;
  dataLen: number;
  /** Extent of the meta object in the body; metaLen = -1 (and start = end = 0) when absent. */
  metaStart: number;
  metaEnd: number;
  metaLen: number;
  /** Decoded tag, and the JSON string literal exactly as sent (with quotes). */
  tag: string | undefined;
  tagLit: string | undefined;
  /** Per-record node (NOT defaulted to the batch node here). */
  node: string | undefined;
  nodeLit: string | undefined;
}

export type ParseFailure = {
  ok: false;
  status: number;
  code: string;
  message: string;
  detail?: Record<string, unknown>;
};

export const LIMITS = {
  maxRecords: BATCH_RECORDS_MAX,
  maxRecordBytes: 1048576,
  maxMetaBytes: 16384,
  maxMetaKeys: 64,
  maxTagBytes: 256,
  maxNodeBytes: NODE_MAX_BYTES,
  maxIdempotencyKeyChars: IDEMPOTENCY_KEY_MAX_CHARS,
} as const;

/**
 * What a dead-letter copy may add to a record that was within the limits: the three
 * `$dead_letter_*` meta keys (docs/QUEUES.md). Only actors set it (`AppendRequest.stamped`).
 */
export interface LimitAllowance {
  metaKeys: number;
  metaBytes: number;
}
export const NO_ALLOWANCE: LimitAllowance = { metaKeys: 0, metaBytes: 0 };
/** A term's `reason` (docs/QUEUES.md "Term"): at most this many bytes of UTF-8. */
export const DEAD_LETTER_REASON_BYTES_MAX = 1024;
/**
 * Three keys (a 255-byte queue name and two 16-digit numbers fit well within 512 bytes), plus a
 * term's `$dead_letter_reason` (its key, and its value JSON-escaped: at most 6 bytes a byte).
 */
export const DEAD_LETTER_STAMPS: LimitAllowance = { metaKeys: 4, metaBytes: 512 + 32 + 6 * DEAD_LETTER_REASON_BYTES_MAX };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;

function hasBackslash(buf: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (buf[i] === BACKSLASH) return true;
  return false;
}

export interface StringField {
  value: string;
  lit: string;
  /** UTF-8 byte length of the decoded value. */
  bytes: number;
}

/** Decodes the valid string literal [s, e). */
export function stringField(buf: Uint8Array, s: number, e: number): StringField {
  if (!hasBackslash(buf, s + 1, e - 1)) {
    const value = bytesToString(buf, s + 1, e - 1);
    return { value, lit: '"' + value + '"', bytes: e - s - 2 };
  }
  const lit = bytesToString(buf, s, e);
  const value = JSON.parse(lit) as string;
  return { value, lit, bytes: Buffer.byteLength(value, 'utf8') };
}

/** Mutable per-record scratch (one per parse call, reused for every record). */
export interface RecordScratch {
  dataStart: number;
  dataEnd: number;
  dataWs: number;
  metaStart: number;
  metaEnd: number;
  metaWs: number;
  metaKeys: number;
  tagStart: number;
  tagEnd: number;
  nodeStart: number;
  nodeEnd: number;
}

export function newRecordScratch(): RecordScratch {
  return {
    dataStart: -1,
    dataEnd: -1,
    dataWs: 0,
    metaStart: -1,
    metaEnd: -1,
    metaWs: 0,
    metaKeys: 0,
    tagStart: -1,
    tagEnd: -1,
    nodeStart: -1,
    nodeEnd: -1,
  };
}

export function invalidField(field: string, message: string, index?: number): ParseFailure {
  return fail('invalid_request', message, index === undefined ? { field } : { field, index });
}

function tooLarge(index: number, limit: string, message: string): ParseFailure {
  return fail('record_too_large', message, { index, limit });
}

/** Checks the scratch of record `index` (its object just ended); returns the record or an error. */
export function finishRecord(body: Uint8Array, r: RecordScratch, index: number, allow: LimitAllowance): ParsedRecord | ParseFailure {
  if (r.dataStart < 0) return invalidField('data', `records[${index}].data is required`, index);
  if (r.tagStart >= 0 && body[r.tagStart] !== QUOTE) return invalidField('tag', `records[${index}].tag must be a string`, index);
  if (r.nodeStart >= 0 && body[r.nodeStart] !== QUOTE) return invalidField('node', `records[${index}].node must be a string`, index);
  if (r.metaStart >= 0 && body[r.metaStart] !== LBRACE) return invalidField('meta', `records[${index}].meta must be an object`, index);

  let tag: StringField | undefined;
  if (r.tagStart >= 0) {
    tag = stringField(body, r.tagStart, r.tagEnd);
    if (tag.bytes > LIMITS.maxTagBytes)
      return tooLarge(index, 'tag_bytes', `records[${index}].tag is longer than ${LIMITS.maxTagBytes} bytes`);
  }
  let node: StringField | undefined;
  if (r.nodeStart >= 0) {
    node = stringField(body, r.nodeStart, r.nodeEnd);
    if (node.bytes > LIMITS.maxNodeBytes) return tooLarge(index, 'node_bytes', nodeTooLongMessage(`records[${index}].node`));
  }
  let metaLen = -1;
  if (r.metaStart >= 0) {
    metaLen = r.metaEnd - r.metaStart - r.metaWs;
    if (metaLen > LIMITS.maxMetaBytes + allow.metaBytes)
      return tooLarge(index, 'meta_bytes', `records[${index}].meta is larger than ${LIMITS.maxMetaBytes} bytes`);
    if (r.metaKeys > LIMITS.maxMetaKeys + allow.metaKeys)
      return tooLarge(index, 'meta_keys', `records[${index}].meta has more than ${LIMITS.maxMetaKeys} keys`);
  }
  const dataLen = r.dataEnd - r.dataStart - r.dataWs;
  if (dataLen + (metaLen < 0 ? 0 : metaLen) > LIMITS.maxRecordBytes + allow.metaBytes)
    return tooLarge(index, 'record_bytes', `records[${index}] is larger than ${LIMITS.maxRecordBytes} bytes (data + meta)`);
  return {
    dataStart: r.dataStart,
    dataEnd: r.dataEnd,
    dataLen,
    metaStart: r.metaStart < 0 ? 0 : r.metaStart,
    metaEnd: r.metaStart < 0 ? 0 : r.metaEnd,
    metaLen,
    tag: tag?.value,
    tagLit: tag?.lit,
    node: node?.value,
    nodeLit: node?.lit,
  };
}
