// Renders records to their read-time JSON shape (SPEC 2.2), straight from stored bytes:
// {"$seq":N,"$ts":T,"$node":…,"$tag":…,"data":…,"meta":…}. Two passes (size, then write) into
// one buffer; no record is parsed or stringified.
import type { RecordText } from './recordText.js';

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

function head(it: RenderItem): string {
  return `{"$seq":${it.seq},"$ts":${it.tsMs}`;
}

function itemSize(it: RenderItem, h: string, o: RenderOpts): number {
  const t = it.text;
  let n = h.length + 1; // closing brace
  if (t.nodeLen > 0) n += 9 + t.nodeLen; // ,"$node":
  if (o.includeTags && t.tagLen > 0) n += 8 + t.tagLen; // ,"$tag":
  if (o.includeData) n += 8 + t.dataLen; // ,"data":
  if (o.includeMeta && t.metaLen >= 0) n += 8 + t.metaLen; // ,"meta":
  if (it.extra !== undefined) n += it.extra.length;
  return n;
}

function writeItem(out: Buffer, p: number, it: RenderItem, h: string, o: RenderOpts): number {
  const t = it.text;
  p += out.write(h, p, 'latin1');
  if (t.nodeLen > 0) {
    p += out.write(',"$node":', p, 'latin1');
    p += t.buf.copy(out, p, t.nodeOff, t.nodeOff + t.nodeLen);
  }
  if (o.includeTags && t.tagLen > 0) {
    p += out.write(',"$tag":', p, 'latin1');
    p += t.buf.copy(out, p, t.tagOff, t.tagOff + t.tagLen);
  }
  if (o.includeData) {
    p += out.write(',"data":', p, 'latin1');
    p += t.buf.copy(out, p, t.dataOff, t.dataOff + t.dataLen);
  }
  if (o.includeMeta && t.metaLen >= 0) {
    p += out.write(',"meta":', p, 'latin1');
    p += t.buf.copy(out, p, t.metaOff, t.metaOff + t.metaLen);
  }
  if (it.extra !== undefined) p += out.write(it.extra, p, 'latin1');
  out[p++] = 0x7d; // }
  return p;
}

/** Renders `prefix` + `[r1,r2,…]` + `suffix` into one buffer. prefix/suffix are ASCII-safe JSON. */
export function renderRecordsArray(prefix: string, items: readonly RenderItem[], suffix: string, o: RenderOpts): Buffer {
  const prefixBuf = Buffer.from(prefix, 'utf8');
  const suffixBuf = Buffer.from(suffix, 'utf8');
  const heads = items.map(head);
  let size = prefixBuf.length + 2 + Math.max(0, items.length - 1) + suffixBuf.length;
  for (let i = 0; i < items.length; i++) size += itemSize(items[i]!, heads[i]!, o);
  const out = Buffer.allocUnsafe(size);
  let p = prefixBuf.copy(out, 0);
  out[p++] = 0x5b; // [
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[p++] = 0x2c;
    p = writeItem(out, p, items[i]!, heads[i]!, o);
  }
  out[p++] = 0x5d; // ]
  p += suffixBuf.copy(out, p);
  if (p !== size) throw new Error(`render size mismatch ${p} != ${size}`);
  return out;
}
