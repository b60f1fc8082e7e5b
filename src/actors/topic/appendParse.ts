// Append request body parser. Owns the shape and limit rules of a POST append body
// and locates each record's `data` / `meta` as byte extents of the body, so they can be stored
// VERBATIM (only whitespace outside strings removed, by copyCompact) and never go through
// JSON.parse + JSON.stringify. Pure and synchronous; runs on the thread that receives the raw
// body bytes (the topic worker on the append path).
//
// One pass over the body: the byte scanner validates the whole document while the envelope and
// the records are walked (each value is scanned exactly once). Precedence of errors:
//   1. malformed JSON / empty body / top level not an object      -> 400 invalid_request
//   2. records: missing, not an array, empty                        -> 400 invalid_request
//      more than LIMITS.maxRecords entries                          -> 400 batch_too_large
//   3. the first record (in order) with a problem; per record: not an object, data missing,
//      tag / node / meta types, then limits tag_bytes, node_bytes, meta_bytes, meta_keys,
//      record_bytes                                                  -> invalid_request / record_too_large
//   4. batch node, idempotency_key, create, disable_backpressure, config
// Duplicate keys: the last occurrence wins (as JSON.parse), for the envelope and inside records;
// an earlier occurrence is still required to be well-formed JSON.
import { fail } from '../../core/errors.js';
import { collectUnknown, UNKNOWN_FIELDS_MAX } from '../../core/unknownFields.js';
import { BATCH_RECORDS_MAX, BATCH_TOO_LARGE_MESSAGE, IDEMPOTENCY_KEY_MAX_CHARS, IDEMPOTENCY_KEY_TOO_LONG_MESSAGE, NODE_MAX_BYTES, nodeTooLongMessage } from '../../core/limits.js';
import { CONFIG_FIELDS } from './config.js';
import {
  JsonScanError,
  bytesToString,
  decodeStringLiteral,
  scanStats,
  scanValue,
  skipWs,
  validateDocument,
  walkArray,
  walkObject,
} from '../../core/jsonScan.js';

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

export interface ParsedAppend {
  records: ParsedRecord[];
  /** Batch-level node. */
  node: string | undefined;
  nodeLit: string | undefined;
  /** undefined when absent or "". */
  idempotencyKey: string | undefined;
  create: boolean | undefined;
  /** Materialized with JSON.parse of its extent (it is small); validated elsewhere. */
  config: unknown | undefined;
  disableBackpressure: boolean;
  /** Ignored field names (top level, `records[i].x`, `config.x`), for the Warning header; bounded. */
  unknownFields: string[];
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
const LBRACKET = 0x5b;
const T = 0x74;
const F = 0x66;

// Known keys.
const K_OTHER = 0;
const K_RECORDS = 1;
const K_NODE = 2;
const K_IDEM = 3;
const K_CREATE = 4;
const K_CONFIG = 5;
const K_DISABLE_BP = 6;
const K_DATA = 7;
const K_META = 8;
const K_TAG = 9;

const TOP_KEYS: ReadonlyArray<readonly [string, number]> = [
  ['records', K_RECORDS],
  ['node', K_NODE],
  ['idempotency_key', K_IDEM],
  ['create', K_CREATE],
  ['config', K_CONFIG],
  ['disable_backpressure', K_DISABLE_BP],
];
const RECORD_KEYS: ReadonlyArray<readonly [string, number]> = [
  ['data', K_DATA],
  ['meta', K_META],
  ['tag', K_TAG],
  ['node', K_NODE],
];

function rawEquals(buf: Uint8Array, s: number, e: number, lit: string): boolean {
  if (e - s !== lit.length) return false;
  for (let i = 0; i < lit.length; i++) if (buf[s + i] !== lit.charCodeAt(i)) return false;
  return true;
}

/** Identifies the key literal [ks, ke) (quotes included) among `table`; handles escaped keys. */
function keyId(buf: Uint8Array, ks: number, ke: number, table: ReadonlyArray<readonly [string, number]>): number {
  const s = ks + 1;
  const e = ke - 1;
  for (let i = 0; i < table.length; i++) {
    const entry = table[i]!;
    if (rawEquals(buf, s, e, entry[0])) return entry[1];
  }
  // Rare: a key written with escapes, e.g. "d\u0061ta", is the same key to JSON.parse.
  for (let i = s; i < e; i++) {
    if (buf[i] === BACKSLASH) {
      const name = decodeStringLiteral(buf, ks, ke);
      for (let j = 0; j < table.length; j++) if (table[j]![0] === name) return table[j]![1];
      break;
    }
  }
  return K_OTHER;
}

function hasBackslash(buf: Uint8Array, s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (buf[i] === BACKSLASH) return true;
  return false;
}

interface StringField {
  value: string;
  lit: string;
  /** UTF-8 byte length of the decoded value. */
  bytes: number;
}

/** Decodes the valid string literal [s, e). */
function stringField(buf: Uint8Array, s: number, e: number): StringField {
  if (!hasBackslash(buf, s + 1, e - 1)) {
    const value = bytesToString(buf, s + 1, e - 1);
    return { value, lit: '"' + value + '"', bytes: e - s - 2 };
  }
  const lit = bytesToString(buf, s, e);
  const value = JSON.parse(lit) as string;
  return { value, lit, bytes: Buffer.byteLength(value, 'utf8') };
}

/** Mutable per-record scratch (one per parse call, reused for every record). */
interface RecordScratch {
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

/** One occurrence of the "records" key. */
interface RecordsState {
  isArray: boolean;
  count: number;
  records: ParsedRecord[];
  error: ParseFailure | undefined;
}

function malformed(e: JsonScanError): ParseFailure {
  return fail('invalid_request', `Request body is not valid JSON: ${e.message}.`);
}

function invalidField(field: string, message: string, index?: number): ParseFailure {
  return fail('invalid_request', message, index === undefined ? { field } : { field, index });
}

function tooLarge(index: number, limit: string, message: string): ParseFailure {
  return fail('record_too_large', message, { index, limit });
}

/** Checks the scratch of record `index` (its object just ended); returns the record or an error. */
function finishRecord(body: Uint8Array, r: RecordScratch, index: number, allow: LimitAllowance): ParsedRecord | ParseFailure {
  if (r.dataStart < 0) return invalidField('data', `records[${index}].data is required.`, index);
  if (r.tagStart >= 0 && body[r.tagStart] !== QUOTE)
    return invalidField('tag', `records[${index}].tag must be a string.`, index);
  if (r.nodeStart >= 0 && body[r.nodeStart] !== QUOTE)
    return invalidField('node', `records[${index}].node must be a string.`, index);
  if (r.metaStart >= 0 && body[r.metaStart] !== LBRACE)
    return invalidField('meta', `records[${index}].meta must be an object.`, index);

  let tag: StringField | undefined;
  if (r.tagStart >= 0) {
    tag = stringField(body, r.tagStart, r.tagEnd);
    if (tag.bytes > LIMITS.maxTagBytes)
      return tooLarge(index, 'tag_bytes', `records[${index}].tag is longer than ${LIMITS.maxTagBytes} bytes.`);
  }
  let node: StringField | undefined;
  if (r.nodeStart >= 0) {
    node = stringField(body, r.nodeStart, r.nodeEnd);
    if (node.bytes > LIMITS.maxNodeBytes)
      return tooLarge(index, 'node_bytes', nodeTooLongMessage(`records[${index}].node`));
  }
  let metaLen = -1;
  if (r.metaStart >= 0) {
    metaLen = r.metaEnd - r.metaStart - r.metaWs;
    if (metaLen > LIMITS.maxMetaBytes + allow.metaBytes)
      return tooLarge(index, 'meta_bytes', `records[${index}].meta is larger than ${LIMITS.maxMetaBytes} bytes.`);
    if (r.metaKeys > LIMITS.maxMetaKeys + allow.metaKeys)
      return tooLarge(index, 'meta_keys', `records[${index}].meta has more than ${LIMITS.maxMetaKeys} keys.`);
  }
  const dataLen = r.dataEnd - r.dataStart - r.dataWs;
  if (dataLen + (metaLen < 0 ? 0 : metaLen) > LIMITS.maxRecordBytes + allow.metaBytes)
    return tooLarge(
      index,
      'record_bytes',
      `records[${index}] is larger than ${LIMITS.maxRecordBytes} bytes (data + meta).`,
    );
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

export function parseAppendBody(body: Uint8Array, allow: LimitAllowance = NO_ALLOWANCE): { ok: true; value: ParsedAppend } | ParseFailure {
  const end = body.length;
  const start = skipWs(body, 0, end);
  if (start >= end) return fail('invalid_request', 'Request body is empty.');
  if (body[start] !== LBRACE) {
    try {
      validateDocument(body);
    } catch (e) {
      if (e instanceof JsonScanError) return malformed(e);
      throw e;
    }
    return fail('invalid_request', 'Request body must be a JSON object.');
  }

  // Last occurrence of each envelope field: [start, end) of its value, -1 when absent.
  let recs: RecordsState | undefined;
  let nodeS = -1;
  let nodeE = -1;
  let idemS = -1;
  let idemE = -1;
  let createS = -1;
  let configS = -1;
  let configE = -1;
  let dbpS = -1;

  const r: RecordScratch = {
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

  const unknownFields: string[] = [];
  const recordKeysSeen = new Set<string>();
  let recordIndex = 0;
  // Member of a record object (depth: body object, records array, record object are open).
  const onRecordMember = (ks: number, ke: number, vs: number): number => {
    const id = keyId(body, ks, ke, RECORD_KEYS);
    const ve = scanValue(body, vs, end, 3);
    if (id === K_OTHER && unknownFields.length < UNKNOWN_FIELDS_MAX) {
      const name = decodeStringLiteral(body, ks, ke);
      if (!recordKeysSeen.has(name)) {
        recordKeysSeen.add(name);
        unknownFields.push(`records[${recordIndex}].${name}`);
      }
    }
    switch (id) {
      case K_DATA:
        r.dataStart = vs;
        r.dataEnd = ve;
        r.dataWs = scanStats.ws;
        break;
      case K_META:
        r.metaStart = vs;
        r.metaEnd = ve;
        r.metaWs = scanStats.ws;
        r.metaKeys = scanStats.top;
        break;
      case K_TAG:
        r.tagStart = vs;
        r.tagEnd = ve;
        break;
      case K_NODE:
        r.nodeStart = vs;
        r.nodeEnd = ve;
        break;
    }
    return ve;
  };

  let cur: RecordsState | undefined;
  const onRecord = (es: number, index: number): number => {
    const st = cur!;
    st.count = index + 1;
    // Once a problem is known (or past the batch limit) only validate and count.
    if (st.error !== undefined || index >= LIMITS.maxRecords) return scanValue(body, es, end, 2);
    if (body[es] !== LBRACE) {
      st.error = invalidField('records', `records[${index}] must be an object.`, index);
      return scanValue(body, es, end, 2);
    }
    r.dataStart = r.metaStart = r.tagStart = r.nodeStart = -1;
    recordIndex = index;
    const oe = walkObject(body, es, end, 2, onRecordMember);
    const rec = finishRecord(body, r, index, allow);
    if ('ok' in rec) st.error = rec;
    else st.records.push(rec);
    return oe;
  };

  const onTop = (ks: number, ke: number, vs: number): number => {
    const id = keyId(body, ks, ke, TOP_KEYS);
    if (id === K_RECORDS) {
      const st: RecordsState = { isArray: body[vs] === LBRACKET, count: 0, records: [], error: undefined };
      recs = st;
      if (!st.isArray) return scanValue(body, vs, end, 1);
      cur = st;
      return walkArray(body, vs, end, 1, onRecord);
    }
    const ve = scanValue(body, vs, end, 1);
    if (id === K_OTHER && unknownFields.length < UNKNOWN_FIELDS_MAX) unknownFields.push(decodeStringLiteral(body, ks, ke));
    switch (id) {
      case K_NODE:
        nodeS = vs;
        nodeE = ve;
        break;
      case K_IDEM:
        idemS = vs;
        idemE = ve;
        break;
      case K_CREATE:
        createS = vs;
        break;
      case K_CONFIG:
        configS = vs;
        configE = ve;
        break;
      case K_DISABLE_BP:
        dbpS = vs;
        break;
    }
    return ve;
  };

  try {
    const oe = walkObject(body, start, end, 0, onTop);
    const tail = skipWs(body, oe, end);
    if (tail !== end) throw new JsonScanError('Unexpected data after JSON value', tail);
  } catch (e) {
    if (e instanceof JsonScanError) return malformed(e);
    throw e;
  }

  // ---- records ----
  const rs = recs as RecordsState | undefined;
  if (rs === undefined) return invalidField('records', 'records is required.');
  if (!rs.isArray) return invalidField('records', 'records must be an array.');
  if (rs.count === 0) return invalidField('records', 'records must not be empty.');
  if (rs.count > LIMITS.maxRecords)
    return fail('batch_too_large', BATCH_TOO_LARGE_MESSAGE, {
      count: rs.count,
      max: LIMITS.maxRecords,
    });
  if (rs.error !== undefined) return rs.error;

  // ---- envelope ----
  let node: StringField | undefined;
  if (nodeS >= 0) {
    if (body[nodeS] !== QUOTE) return invalidField('node', 'node must be a string.');
    node = stringField(body, nodeS, nodeE);
    if (node.bytes > LIMITS.maxNodeBytes)
      return fail('record_too_large', nodeTooLongMessage(), { limit: 'node_bytes' });
  }
  let idempotencyKey: string | undefined;
  if (idemS >= 0) {
    if (body[idemS] !== QUOTE) return invalidField('idempotency_key', 'idempotency_key must be a string.');
    const k = stringField(body, idemS, idemE).value;
    if (k.length > LIMITS.maxIdempotencyKeyChars)
      return invalidField(
        'idempotency_key',
        IDEMPOTENCY_KEY_TOO_LONG_MESSAGE,
      );
    if (k !== '') idempotencyKey = k;
  }
  let create: boolean | undefined;
  if (createS >= 0) {
    const c = body[createS];
    if (c !== T && c !== F) return invalidField('create', 'create must be a boolean.');
    create = c === T;
  }
  let disableBackpressure = false;
  if (dbpS >= 0) {
    const c = body[dbpS];
    if (c !== T && c !== F) return invalidField('disable_backpressure', 'disable_backpressure must be a boolean.');
    disableBackpressure = c === T;
  }
  let config: unknown;
  if (configS >= 0) {
    if (body[configS] !== LBRACE) return invalidField('config', 'config must be an object.');
    config = JSON.parse(bytesToString(body, configS, configE));
    collectUnknown(unknownFields, config, CONFIG_FIELDS, 'config.');
  }

  return {
    ok: true,
    value: {
      records: rs.records,
      node: node?.value,
      nodeLit: node?.lit,
      idempotencyKey,
      create,
      config,
      disableBackpressure,
      unknownFields,
    },
  };
}
