// Renders records to their read-time JSON shape (docs/API.md "Records"), straight from stored bytes:
// {"$seq":N,"$ts":T,"$node":…,"$tag":…,"data":…,"meta":…}. One pass into one buffer (a
// recycled reply page when it is big: src/core/pagePool.ts); no record is parsed or stringified.
//
// Hot code (docs/PERFORMANCE.md): a 1000-record diff page renders 1000 of these. The write pass builds no
// string per record: the member names are byte constants copied by a short loop, `$seq` and
// `$ts` are written as decimal digits straight into the page, and the stored texts are copied
// with TypedArray `set` (a memmove without a call into C++). Before, a template string for the
// head, two latin1 `Buffer.write`s and a `Buffer.copy` per record cost ~0.5 µs of the worker per
// record (`_copyActual`, `latin1Write`, `write`, `head` were the worker's top frames).
import type { RecordText } from './recordText.js';
import { readRecordAt, recordExtent, type RecordExtent } from '../../format/frame.js';
import { digitCount, writeUint } from '../../core/decimal.js';
import { allocPageUpTo, finishPage, isPage, recyclePages } from '../../core/pagePool.js';
import { InvariantError } from '../../core/invariant.js';

export interface RenderOpts {
  includeTags: boolean;
  includeMeta: boolean;
  includeData: boolean;
}

/**
 * One record to render: where its head lies in the buffer holding it (the seq index's hot text,
 * or a RecordText's: the APPEND record layout) and the members a read adds. The head's extents
 * are read as the record is written, not kept here: a page of 1000 records builds 1000 of these.
 */
export class RenderItem {
  constructor(
    readonly seq: number,
    readonly tsMs: number,
    readonly buf: Buffer,
    readonly headOff: number,
    /** The record's payload bytes (data and meta texts), for the page's size estimate. */
    readonly bytes: number,
    /** ASCII JSON members (each starting with a comma) written before the closing brace. */
    readonly extra: string | undefined = undefined,
  ) {}

  /** `t` as record `seq` of a page. */
  static of(seq: number, tsMs: number, t: RecordText, extra?: string): RenderItem {
    return new RenderItem(seq, tsMs, t.buf, t.headOff, t.payloadBytes, extra);
  }
}

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const SEQ = ascii('{"$seq":');
const TS = ascii(',"$ts":');
const NODE = ascii(',"$node":');
const TAG = ascii(',"$tag":');
const DATA = ascii(',"data":');
const META = ascii(',"meta":');

function lit(out: Uint8Array, p: number, s: Uint8Array): number {
  for (let k = 0; k < s.length; k++) out[p + k] = s[k]!;
  return p + s.length;
}

function piece(out: Uint8Array, p: number, buf: Buffer, off: number, len: number): number {
  // A plain Uint8Array view: Buffer#subarray is a JS wrapper that builds a FastBuffer (~10 % of
  // a catch-up page's render).
  out.set(new Uint8Array(buf.buffer, buf.byteOffset + off, len), p);
  return p + len;
}

/** The JSON of one record: exactly what `writeItem` writes for it (its head read into `h`). */
function itemSize(it: RenderItem, h: Readonly<RecordExtent>, o: RenderOpts): number {
  let n = SEQ.length + digitCount(it.seq) + TS.length + digitCount(it.tsMs) + 1; // closing brace
  if (h.nodeLen > 0) n += NODE.length + h.nodeLen;
  if (o.includeTags && h.tagLen > 0) n += TAG.length + h.tagLen;
  if (o.includeData) n += DATA.length + h.dataLen;
  if (o.includeMeta && h.metaLen >= 0) n += META.length + h.metaLen;
  if (it.extra !== undefined) n += it.extra.length;
  return n;
}

/** One record's members after its `$ts` digits (written by renderRecordsArray), and its closing brace. */
function writeItemRest(out: Buffer, p: number, it: RenderItem, h: Readonly<RecordExtent>, o: RenderOpts): number {
  const b = it.buf;
  if (h.nodeLen > 0) p = piece(out, lit(out, p, NODE), b, h.nodeOff, h.nodeLen);
  if (o.includeTags && h.tagLen > 0) p = piece(out, lit(out, p, TAG), b, h.tagOff, h.tagLen);
  if (o.includeData) p = piece(out, lit(out, p, DATA), b, h.dataOff, h.dataLen);
  if (o.includeMeta && h.metaLen >= 0) p = piece(out, lit(out, p, META), b, h.metaOff, h.metaLen);
  if (it.extra !== undefined) p += out.write(it.extra, p, 'latin1');
  out[p++] = 0x7d; // }
  return p;
}

/** The head of the record being written (one per thread). */
const head = recordExtent();

/**
 * Most one record takes besides its payload bytes and `extra`: member names, the largest
 * `$seq` and `$ts` digits, a comma, and room for a `$node` and `$tag` of typical length. A
 * record with longer ones grows the page (`grow`).
 */
const ITEM_ROOM = SEQ.length + 16 + TS.length + 16 + NODE.length + TAG.length + DATA.length + META.length + 2 + 96;

/** A bigger buffer holding the first `used` bytes of `out`, with room for `need` more. */
function grow(out: Buffer, used: number, need: number): Buffer {
  const next = allocPageUpTo(Math.max(2 * out.length, used + need));
  out.copy(next, 0, 0, used);
  if (isPage(out.buffer)) recyclePages([out.buffer as ArrayBuffer]);
  return next;
}

/**
 * Renders `prefix` + `[r1,r2,…]` + `suffix` into one buffer. prefix/suffix are JSON (UTF-8).
 * One pass: the page is taken for an estimate from the items' payload bytes, and each record's
 * head is read once, as it is written (a size pass read every head first: at a catch-up window
 * bigger than the CPU's caches, that pass took the cache miss of each record's frame memory).
 */
export function renderRecordsArray(prefix: string, items: readonly RenderItem[], suffix: string, o: RenderOpts): Buffer {
  const prefixLen = Buffer.byteLength(prefix, 'utf8');
  const suffixLen = Buffer.byteLength(suffix, 'utf8');
  let estimate = prefixLen + 2 + suffixLen + items.length * ITEM_ROOM;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    estimate += it.bytes + (it.extra !== undefined ? it.extra.length : 0);
  }
  let out = allocPageUpTo(estimate);
  let p = out.write(prefix, 0, 'utf8');
  // Where the last `$ts` digits of this page were written: records of one batch share their
  // `$ts`, so a record with the previous one's copies those bytes instead of converting again.
  let lastTsMs = -1;
  let lastTsAt = 0;
  let lastTsEnd = 0;
  out[p++] = 0x5b; // [
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const h = head;
    readRecordAt(it.buf, it.headOff, h);
    const size = itemSize(it, h, o);
    if (p + 1 + size + 1 + suffixLen > out.length) out = grow(out, p, 1 + size + 1 + suffixLen + (items.length - i) * ITEM_ROOM);
    if (i > 0) out[p++] = 0x2c;
    const end = p + size;
    p = lit(out, writeUint(out, lit(out, p, SEQ), it.seq), TS);
    if (it.tsMs === lastTsMs) {
      for (let k = lastTsAt; k < lastTsEnd; k++) out[p++] = out[k]!;
    } else {
      lastTsMs = it.tsMs;
      lastTsAt = p;
      p = lastTsEnd = writeUint(out, p, it.tsMs);
    }
    p = writeItemRest(out, p, it, h, o);
    if (p !== end) throw new InvariantError(`render size mismatch ${p} != ${end}`);
  }
  out[p++] = 0x5d; // ]
  p += out.write(suffix, p, 'utf8');
  return finishPage(out, p);
}
