// Record frames for a pushed batch, per projection (include flags, node filter, limit, byte
// budget). A batch is rendered once per projection, by concatenating the pieces the worker
// rendered once (docs/ARCHITECTURE.md "Watch streams"), and the same bytes go to every stream that shares the projection.
import { LRUCache } from 'lru-cache';
import type { WatchBatch } from '../../protocol/messages/events.js';
import type { WatchOptions } from './session.js';
import { encodeCursor } from './cursor.js';
import { frame } from '../sse/wire.js';

/** One or more record frame payloads covering a batch, and the cursor after each. */
export interface PushFrames {
  payloads: Buffer[];
  tos: number[];
  /**
   * The whole SSE frames (`id:` line included) as a single-topic session sends them: its id
   * is a function of the topic and `to` alone, so every such stream shares these bytes.
   */
  single?: Buffer[];
}

const NONE: PushFrames = { payloads: [], tos: [], single: [] };
const DATA_PREFIX_LEN = 8; // ,"data":
const META_PREFIX_LEN = 8; // ,"meta":

/** The key of a projection: everything that changes the frames a batch becomes. */
export function projectionKey(o: WatchOptions): string {
  const flags = `${o.includeTags ? 't' : ''}${o.includeMeta ? 'm' : ''}${o.includeData ? 'd' : ''}`;
  return `${flags}/${o.limit}/${o.maxBatchBytes}/${o.nodes ? JSON.stringify(o.nodes) : ''}`;
}

/** Renders a batch's frames for one projection. */
export function projectBatch(b: WatchBatch, o: WatchOptions): PushFrames {
  const n = b.nodeIdx.length;
  if (n === 0) return NONE;
  const buf = Buffer.from(b.buf.buffer, b.buf.byteOffset, b.buf.byteLength);
  const offs = b.offs;
  let skipSlots: Set<number> | null = null;
  if (b.dedupeNode && o.nodes) {
    skipSlots = new Set();
    for (let i = 0; i < b.nodes.length; i++) if (o.nodes.includes(b.nodes[i]!)) skipSlots.add(i);
  }
  const topic = JSON.stringify(b.topic);
  const payloads: Buffer[] = [];
  const tos: number[] = [];
  let parts: Buffer[] = [];
  let count = 0;
  let bytes = 0;
  let from = b.from;
  let lastSeq = b.from;
  const flush = (to: number) => {
    parts.push(Buffer.from(`],"from_seq":${from},"to_seq":${to},"head_seq":${b.head}}`, 'latin1'));
    payloads.push(Buffer.concat(parts));
    tos.push(to);
    from = to;
    parts = [];
    count = 0;
    bytes = 0;
  };
  for (let i = 0; i < n; i++) {
    const h = offs[i * 4]!;
    const t = offs[i * 4 + 1]!;
    const d = offs[i * 4 + 2]!;
    const m = offs[i * 4 + 3]!;
    const end = offs[i * 4 + 4]!;
    if (skipSlots && b.nodeIdx[i]! >= 0 && skipSlots.has(b.nodeIdx[i]!)) continue;
    const size = m - d - DATA_PREFIX_LEN + Math.max(0, end - m - META_PREFIX_LEN);
    const seq = seqAt(buf, h);
    if (count > 0 && (count >= o.limit || bytes + size > o.maxBatchBytes)) flush(lastSeq);
    if (count === 0) parts.push(Buffer.from(`{"topic":${topic},"records":[`, 'utf8'));
    else parts.push(COMMA);
    parts.push(buf.subarray(h, t));
    if (o.includeTags) parts.push(buf.subarray(t, d));
    if (o.includeData) parts.push(buf.subarray(d, m));
    if (o.includeMeta) parts.push(buf.subarray(m, end));
    parts.push(CLOSE);
    count++;
    bytes += size;
    lastSeq = seq;
  }
  // The last frame runs to the batch's end: filtered records after it advance the cursor too.
  if (count > 0) flush(b.to);
  return { payloads, tos };
}

const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');
const SEQ_AT = '{"$seq":'.length;

/** The seq of a rendered record head `{"$seq":N,…`. */
function seqAt(buf: Buffer, h: number): number {
  let v = 0;
  for (let p = h + SEQ_AT; ; p++) {
    const c = buf[p]!;
    if (c < 0x30 || c > 0x39) return v;
    v = v * 10 + (c - 0x30);
  }
}

/**
 * Frames per (batch, projection), shared by every stream with that projection. A batch's frames
 * are needed only while it is fanned out, so a few recent batches are kept, keyed by their
 * number (a cheap lookup on the per-stream path), each with its projections.
 */
export class ProjectionCache {
  private readonly byBatch = new LRUCache<number, Map<string, PushFrames>>({ max: 16 });

  frames(batchNo: number, b: WatchBatch, o: WatchOptions, key: string): PushFrames {
    let projections = this.byBatch.get(batchNo);
    if (!projections) this.byBatch.set(batchNo, (projections = new Map()));
    let f = projections.get(key);
    if (!f) projections.set(key, (f = projectBatch(b, o)));
    return f;
  }

  /** The frames with their id lines, for sessions that watch only this topic. */
  singleTopicFrames(f: PushFrames, topic: string): Buffer[] {
    if (!f.single) f.single = f.payloads.map((p, i) => frame('record', encodeCursor([topic], [f.tos[i]!]), p));
    return f.single;
  }
}
