// Renders records to their read-time JSON shape (docs/API.md "Records"), straight from stored bytes:
// {"$seq":N,"$ts":T,"$node":…,"$tag":…,"data":…,"meta":…}. Two passes (size, then write) into
// one buffer (a recycled reply page when it is big: src/core/pagePool.ts); no record is parsed
// or stringified.
//
// Hot code (docs/PERFORMANCE.md): a 1000-record diff page renders 1000 of these. The write pass builds no
// string per record: the member names are byte constants copied by a short loop, `$seq` and
// `$ts` are written as decimal digits straight into the page, and the stored texts are copied
// with TypedArray `set` (a memmove without a call into C++). Before, a template string for the
// head, two latin1 `Buffer.write`s and a `Buffer.copy` per record cost ~0.5 µs of the worker per
// record (`_copyActual`, `latin1Write`, `write`, `head` were the worker's top frames).
import type { RecordText } from './recordText.js';
import { digitCount, writeUint } from '../../core/decimal.js';
import { allocPage } from '../../core/pagePool.js';
import { InvariantError } from '../../core/invariant.js';

export interface RenderOpts {
  includeTags: boolean;
  includeMeta: boolean;
  includeData: boolean;
}

export interface RenderItem {
  seq: number;
  tsMs: number;
  text: RecordText;
  /** ASCII JSON members (each starting with a comma) written before the closing brace. */
  extra?: string;
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

function piece(out: Uint8Array, p: number, t: RecordText, off: number, len: number): number {
  // A plain Uint8Array view: Buffer#subarray is a JS wrapper that builds a FastBuffer (~10 % of
  // a catch-up page's render).
  out.set(new Uint8Array(t.buf.buffer, t.buf.byteOffset + off, len), p);
  return p + len;
}

function itemSize(it: RenderItem, o: RenderOpts): number {
  const t = it.text;
  let n = SEQ.length + digitCount(it.seq) + TS.length + digitCount(it.tsMs) + 1; // closing brace
  if (t.nodeLen > 0) n += NODE.length + t.nodeLen;
  if (o.includeTags && t.tagLen > 0) n += TAG.length + t.tagLen;
  if (o.includeData) n += DATA.length + t.dataLen;
  if (o.includeMeta && t.metaLen >= 0) n += META.length + t.metaLen;
  if (it.extra !== undefined) n += it.extra.length;
  return n;
}

/** One record's members after its `$ts` digits (written by renderRecordsArray), and its closing brace. */
function writeItemRest(out: Buffer, p: number, it: RenderItem, o: RenderOpts): number {
  const t = it.text;
  if (t.nodeLen > 0) p = piece(out, lit(out, p, NODE), t, t.nodeOff, t.nodeLen);
  if (o.includeTags && t.tagLen > 0) p = piece(out, lit(out, p, TAG), t, t.tagOff, t.tagLen);
  if (o.includeData) p = piece(out, lit(out, p, DATA), t, t.dataOff, t.dataLen);
  if (o.includeMeta && t.metaLen >= 0) p = piece(out, lit(out, p, META), t, t.metaOff, t.metaLen);
  if (it.extra !== undefined) p += out.write(it.extra, p, 'latin1');
  out[p++] = 0x7d; // }
  return p;
}

/** Renders `prefix` + `[r1,r2,…]` + `suffix` into one buffer. prefix/suffix are JSON (UTF-8). */
export function renderRecordsArray(prefix: string, items: readonly RenderItem[], suffix: string, o: RenderOpts): Buffer {
  const prefixLen = Buffer.byteLength(prefix, 'utf8');
  const suffixLen = Buffer.byteLength(suffix, 'utf8');
  let size = prefixLen + 2 + Math.max(0, items.length - 1) + suffixLen;
  for (let i = 0; i < items.length; i++) size += itemSize(items[i]!, o);
  const out = allocPage(size);
  let p = out.write(prefix, 0, 'utf8');
  // Where the last `$ts` digits of this page were written: records of one batch share their
  // `$ts`, so a record with the previous one's copies those bytes instead of converting again.
  let lastTsMs = -1;
  let lastTsAt = 0;
  let lastTsEnd = 0;
  out[p++] = 0x5b; // [
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[p++] = 0x2c;
    const it = items[i]!;
    p = lit(out, writeUint(out, lit(out, p, SEQ), it.seq), TS);
    if (it.tsMs === lastTsMs) {
      for (let k = lastTsAt; k < lastTsEnd; k++) out[p++] = out[k]!;
    } else {
      lastTsMs = it.tsMs;
      lastTsAt = p;
      p = lastTsEnd = writeUint(out, p, it.tsMs);
    }
    p = writeItemRest(out, p, it, o);
  }
  out[p++] = 0x5d; // ]
  p += out.write(suffix, p, 'utf8');
  if (p !== size) throw new InvariantError(`render size mismatch ${p} != ${size}`);
  return out;
}
