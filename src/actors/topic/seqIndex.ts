// SeqIndex: per-topic columns addressed by seq (slot = seq - base), in chunks of 4096.
// Owned by one TopicActor (worker thread). Seqs are dense at assignment, so lookup is O(1);
// holes stay as flagged slots. Chunks wholly below the first live seq are dropped from the front.
// A chunk starts with room for 16 slots and doubles as it fills (up to 4096), so that a topic
// of ten records holds ~0.5 KB of columns, not the ~127 KB of a full chunk (many-topics issue).
import type { RecordText } from './recordText.js';

/**
 * EMPTY is also the state of a padded seq (reserved before a crash, never durable): readers skip
 * every slot that is not LIVE, so padding needs no slots of its own.
 */
export const SlotState = { EMPTY: 0, LIVE: 1, DELETED: 2, EVICTED: 3 } as const;

const CHUNK = 4096;
const FIRST_CAPACITY = 16;

/** A typed array of `cap` elements holding `old`'s elements first. */
function grown<T extends Float64Array | Uint32Array | Uint16Array | Uint8Array>(old: T, cap: number): T {
  const next = new (old.constructor as new (n: number) => T)(cap);
  next.set(old);
  return next;
}

class Chunk {
  /** Slots this chunk has room for now (a power of two up to CHUNK). */
  cap: number;
  ts: Float64Array;
  bytes: Uint32Array;
  state: Uint8Array;
  nodeId: Uint32Array;
  /** Where the record's frame lives in the topic's segments: segment ordinal * 2^32 + offset. */
  loc: Float64Array;
  frameLen: Uint32Array;
  recIdx: Uint16Array;

  constructor(cap: number) {
    this.cap = cap;
    this.ts = new Float64Array(cap);
    this.bytes = new Uint32Array(cap);
    this.state = new Uint8Array(cap);
    this.nodeId = new Uint32Array(cap);
    this.loc = new Float64Array(cap);
    this.frameLen = new Uint32Array(cap);
    this.recIdx = new Uint16Array(cap);
  }

  /** Makes room for slot `i` (< CHUNK): doubles the columns until it fits. */
  growFor(i: number): void {
    let cap = this.cap;
    while (cap <= i) cap *= 2;
    if (cap === this.cap) return;
    this.cap = cap;
    this.ts = grown(this.ts, cap);
    this.bytes = grown(this.bytes, cap);
    this.state = grown(this.state, cap);
    this.nodeId = grown(this.nodeId, cap);
    this.loc = grown(this.loc, cap);
    this.frameLen = grown(this.frameLen, cap);
    this.recIdx = grown(this.recIdx, cap);
    if (this.text !== null) this.text.length = cap;
  }
  /**
   * Hot records keep their text in memory; cold ones are read back from segments. The array
   * exists only while the chunk holds a hot record (most chunks of a big topic are cold).
   */
  text: (RecordText | undefined)[] | null = null;
  hot = 0;

  setText(i: number, t: RecordText | undefined): void {
    const had = this.text !== null && this.text[i] !== undefined;
    if (t === undefined) {
      if (!had) return;
      this.text![i] = undefined;
      if (--this.hot === 0) this.text = null;
      return;
    }
    if (this.text === null) this.text = new Array(this.cap);
    this.text[i] = t;
    if (!had) this.hot++;
  }
}

export class SeqIndex {
  /** Seq of slot 0 of chunks[0]; always a multiple of CHUNK plus 1. */
  private base = 1;
  private chunks: Chunk[] = [];
  /** Highest seq with a slot (assigned or padded). */
  last = 0;

  private chunkFor(seq: number, create: boolean): { c: Chunk; i: number } | undefined {
    const slot = seq - this.base;
    if (slot < 0) return undefined;
    const ci = Math.floor(slot / CHUNK);
    const i = slot - ci * CHUNK;
    if (create) {
      // Only the last chunk can be partly grown: every chunk before it is full.
      if (ci >= this.chunks.length) this.chunks.at(-1)?.growFor(CHUNK - 1);
      while (ci >= this.chunks.length) this.chunks.push(new Chunk(ci > this.chunks.length ? CHUNK : FIRST_CAPACITY));
      this.chunks[ci]!.growFor(i);
    }
    const c = this.chunks[ci];
    return c && i < c.cap ? { c, i } : undefined;
  }

  put(seq: number, tsMs: number, bytes: number, nodeId: number, loc: number, frameLen: number, recIdx: number, text: RecordText | undefined): void {
    const at = this.chunkFor(seq, true)!;
    at.c.ts[at.i] = tsMs;
    at.c.bytes[at.i] = bytes;
    at.c.state[at.i] = SlotState.LIVE;
    at.c.nodeId[at.i] = nodeId;
    at.c.loc[at.i] = loc;
    at.c.frameLen[at.i] = frameLen;
    at.c.recIdx[at.i] = recIdx;
    at.c.setText(at.i, text);
    if (seq > this.last) this.last = seq;
  }

  /**
   * Pads up to `to`: seqs that were reserved but whose records never became durable. Every slot
   * above `last` is EMPTY already, so this only moves `last`; no slot is allocated. (Padding
   * slot by slot gave every topic recovered after a crash a reservation block of up to 1024
   * slots: ~67 KB per idle topic and a third of the worker's recovery CPU with 6000 topics.)
   */
  pad(to: number): void {
    if (to > this.last) this.last = to;
  }

  state(seq: number): number {
    const at = this.chunkFor(seq, false);
    return at ? at.c.state[at.i]! : SlotState.EMPTY;
  }

  setState(seq: number, st: number): void {
    const at = this.chunkFor(seq, false);
    if (!at) return;
    at.c.state[at.i] = st;
    if (st !== SlotState.LIVE) at.c.setText(at.i, undefined);
  }

  ts(seq: number): number {
    const at = this.chunkFor(seq, false);
    return at ? at.c.ts[at.i]! : 0;
  }

  bytes(seq: number): number {
    const at = this.chunkFor(seq, false);
    return at ? at.c.bytes[at.i]! : 0;
  }

  nodeId(seq: number): number {
    const at = this.chunkFor(seq, false);
    return at ? at.c.nodeId[at.i]! : 0;
  }

  loc(seq: number): { loc: number; frameLen: number; recIdx: number } {
    const at = this.chunkFor(seq, false)!;
    return { loc: at.c.loc[at.i]!, frameLen: at.c.frameLen[at.i]!, recIdx: at.c.recIdx[at.i]! };
  }

  text(seq: number): RecordText | undefined {
    const at = this.chunkFor(seq, false);
    return at && at.c.text !== null ? at.c.text[at.i] : undefined;
  }

  setText(seq: number, t: RecordText | undefined): void {
    const at = this.chunkFor(seq, false);
    if (at) at.c.setText(at.i, t);
  }

  /** Drops whole chunks below `seq` (the first live seq). Their slots must all be dead. */
  dropBelow(seq: number): void {
    while (this.chunks.length > 1 && seq - this.base >= CHUNK) {
      this.chunks.shift();
      this.base += CHUNK;
    }
  }
}
