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
//
// This file owns the walk and the envelope; the per-record checks and the limits live in
// `appendRecord.ts` (import them from there).
import { fail } from '../../protocol/errors.js';
import { collectUnknown, UNKNOWN_FIELDS_MAX } from '../../core/unknownFields.js';
import { BATCH_TOO_LARGE_MESSAGE, idempotencyKeyProblem, nodeTooLongMessage } from '../../protocol/limits.js';
import { CONFIG_FIELDS } from '../../protocol/topicConfig.js';
import {
  JsonScanError,
  MAX_DEPTH,
  bytesToString,
  releaseWordView,
  decodeStringLiteral,
  scanStats,
  scanValue,
  skipWs,
  validateDocument,
  walkArray,
  walkObject,
} from '../../core/jsonScan.js';
import {
  LIMITS,
  NO_ALLOWANCE,
  finishRecord,
  invalidField,
  newRecordScratch,
  stringField,
  type LimitAllowance,
  type ParsedRecord,
  type ParseFailure,
  type RecordScratch,
  type StringField,
} from './appendRecord.js';

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

/** One occurrence of the "records" key. */
interface RecordsState {
  isArray: boolean;
  count: number;
  records: ParsedRecord[];
  error: ParseFailure | undefined;
}

function malformed(e: JsonScanError): ParseFailure {
  if (e.tooDeep)
    return fail('invalid_request', `body nests deeper than ${MAX_DEPTH} levels (at byte ${e.offset}), this server's limit`, {
      limit: 'max_depth',
      max: MAX_DEPTH,
    });
  return fail('invalid_request', `body is not valid JSON: ${e.message}`);
}

/**
 * The single pass over a body whose first byte is `{`: walks the envelope, remembers the extent
 * of the last occurrence of each envelope field (-1 when absent), checks each record as its object
 * ends and collects ignored field names. `walk` throws JsonScanError on malformed JSON; the
 * envelope fields are checked afterwards (`envelopeFields`), as their precedence requires.
 */
class AppendBodyScan {
  records: RecordsState | undefined = undefined;
  nodeStart = -1;
  nodeEnd = -1;
  idemStart = -1;
  idemEnd = -1;
  createStart = -1;
  configStart = -1;
  configEnd = -1;
  dbpStart = -1;
  readonly unknownFields: string[] = [];
  private readonly body: Uint8Array;
  private readonly end: number;
  private readonly allow: LimitAllowance;
  private readonly r: RecordScratch = newRecordScratch();
  private readonly recordKeysSeen = new Set<string>();
  private recordIndex = 0;

  constructor(body: Uint8Array, allow: LimitAllowance) {
    this.body = body;
    this.end = body.length;
    this.allow = allow;
  }

  /** Walks the object at `start` and checks that only whitespace follows it. */
  walk(start: number): void {
    const oe = walkObject(this.body, start, this.end, 0, this.onTop);
    const tail = skipWs(this.body, oe, this.end);
    if (tail !== this.end) throw new JsonScanError('Unexpected data after JSON value', tail);
  }

  /** Member of the body object. */
  private readonly onTop = (ks: number, ke: number, vs: number): number => {
    const body = this.body;
    const id = keyId(body, ks, ke, TOP_KEYS);
    if (id === K_RECORDS) {
      const st: RecordsState = { isArray: body[vs] === LBRACKET, count: 0, records: [], error: undefined };
      this.records = st;
      if (!st.isArray) return scanValue(body, vs, this.end, 1);
      return walkArray(body, vs, this.end, 1, this.onRecord);
    }
    const ve = scanValue(body, vs, this.end, 1);
    if (id === K_OTHER && this.unknownFields.length < UNKNOWN_FIELDS_MAX) this.unknownFields.push(decodeStringLiteral(body, ks, ke));
    switch (id) {
      case K_NODE:
        this.nodeStart = vs;
        this.nodeEnd = ve;
        break;
      case K_IDEM:
        this.idemStart = vs;
        this.idemEnd = ve;
        break;
      case K_CREATE:
        this.createStart = vs;
        break;
      case K_CONFIG:
        this.configStart = vs;
        this.configEnd = ve;
        break;
      case K_DISABLE_BP:
        this.dbpStart = vs;
        break;
    }
    return ve;
  };

  /** Element `index` of the records array being walked (`this.records`). */
  private readonly onRecord = (es: number, index: number): number => {
    const body = this.body;
    const st = this.records!;
    st.count = index + 1;
    // Once a problem is known (or past the batch limit) only validate and count.
    if (st.error !== undefined || index >= LIMITS.maxRecords) return scanValue(body, es, this.end, 2);
    if (body[es] !== LBRACE) {
      st.error = invalidField('records', `records[${index}] must be an object`, index);
      return scanValue(body, es, this.end, 2);
    }
    const r = this.r;
    r.dataStart = r.metaStart = r.tagStart = r.nodeStart = -1;
    this.recordIndex = index;
    const oe = walkObject(body, es, this.end, 2, this.onRecordMember);
    const rec = finishRecord(body, r, index, this.allow);
    if ('ok' in rec) st.error = rec;
    else st.records.push(rec);
    return oe;
  };

  /** Member of a record object (depth: body object, records array, record object are open). */
  private readonly onRecordMember = (ks: number, ke: number, vs: number): number => {
    const body = this.body;
    const id = keyId(body, ks, ke, RECORD_KEYS);
    const ve = scanValue(body, vs, this.end, 3);
    if (id === K_OTHER && this.unknownFields.length < UNKNOWN_FIELDS_MAX) this.noteUnknownRecordKey(ks, ke);
    const r = this.r;
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

  /** An ignored record key is reported once, under the index of the first record carrying it. */
  private noteUnknownRecordKey(ks: number, ke: number): void {
    const name = decodeStringLiteral(this.body, ks, ke);
    if (this.recordKeysSeen.has(name)) return;
    this.recordKeysSeen.add(name);
    this.unknownFields.push(`records[${this.recordIndex}].${name}`);
  }
}

export function parseAppendBody(body: Uint8Array, allow: LimitAllowance = NO_ALLOWANCE): { ok: true; value: ParsedAppend } | ParseFailure {
  const start = skipWs(body, 0, body.length);
  if (start >= body.length) return fail('invalid_request', 'request body is required');
  if (body[start] !== LBRACE) return notAnObject(body);
  const scan = new AppendBodyScan(body, allow);
  try {
    scan.walk(start);
  } catch (e) {
    if (e instanceof JsonScanError) return malformed(e);
    throw e;
  } finally {
    releaseWordView();
  }
  const rs = scan.records;
  const recordsError = recordListError(rs);
  if (recordsError !== undefined) return recordsError;
  return envelopeFields(body, scan, rs!.records);
}

/** A body that is not a JSON object: malformed JSON wins over the shape error. */
function notAnObject(body: Uint8Array): ParseFailure {
  try {
    validateDocument(body);
  } catch (e) {
    if (e instanceof JsonScanError) return malformed(e);
    throw e;
  }
  return fail('invalid_request', 'body must be a JSON object');
}

/** The records list's shape and count, then the first record's problem (if any). */
function recordListError(rs: RecordsState | undefined): ParseFailure | undefined {
  if (rs === undefined) return invalidField('records', 'records is required');
  if (!rs.isArray) return invalidField('records', 'records must be an array');
  if (rs.count === 0) return invalidField('records', 'records must not be empty');
  if (rs.count > LIMITS.maxRecords)
    return fail('batch_too_large', BATCH_TOO_LARGE_MESSAGE, {
      count: rs.count,
      max: LIMITS.maxRecords,
    });
  return rs.error;
}

/** Checks the envelope fields, in their order of precedence, and assembles the result. */
function envelopeFields(body: Uint8Array, scan: AppendBodyScan, records: ParsedRecord[]): { ok: true; value: ParsedAppend } | ParseFailure {
  let node: StringField | undefined;
  if (scan.nodeStart >= 0) {
    if (body[scan.nodeStart] !== QUOTE) return invalidField('node', 'node must be a string');
    node = stringField(body, scan.nodeStart, scan.nodeEnd);
    if (node.bytes > LIMITS.maxNodeBytes) return fail('record_too_large', nodeTooLongMessage(), { limit: 'node_bytes' });
  }
  let idempotencyKey: string | undefined;
  if (scan.idemStart >= 0) {
    if (body[scan.idemStart] !== QUOTE) return invalidField('idempotency_key', 'idempotency_key must be a string');
    const k = stringField(body, scan.idemStart, scan.idemEnd).value;
    const problem = idempotencyKeyProblem(k);
    if (problem !== undefined) return invalidField('idempotency_key', problem);
    idempotencyKey = k;
  }
  const create = booleanField(body, scan.createStart, 'create');
  if (typeof create === 'object') return create;
  const disableBackpressure = booleanField(body, scan.dbpStart, 'disable_backpressure');
  if (typeof disableBackpressure === 'object') return disableBackpressure;
  const unknownFields = scan.unknownFields;
  let config: unknown;
  if (scan.configStart >= 0) {
    if (body[scan.configStart] !== LBRACE) return invalidField('config', 'config must be an object');
    config = JSON.parse(bytesToString(body, scan.configStart, scan.configEnd));
    collectUnknown(unknownFields, config, CONFIG_FIELDS, 'config.');
  }

  return {
    ok: true,
    value: {
      records,
      node: node?.value,
      nodeLit: node?.lit,
      idempotencyKey,
      create,
      config,
      disableBackpressure: disableBackpressure ?? false,
      unknownFields,
    },
  };
}

/** The boolean envelope field whose value starts at `s` (-1: absent, undefined). */
function booleanField(body: Uint8Array, s: number, field: string): boolean | undefined | ParseFailure {
  if (s < 0) return undefined;
  const c = body[s];
  if (c !== T && c !== F) return invalidField(field, `${field} must be a boolean`);
  return c === T;
}
