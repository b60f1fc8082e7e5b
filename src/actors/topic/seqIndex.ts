// SeqIndex: per-topic columns addressed by seq (slot = seq - base), in chunks of 4096.
// Owned by one TopicActor (worker thread). Seqs are dense at assignment, so lookup is O(1);
// holes stay as flagged slots. Chunks wholly below the first live seq are dropped from the front.
// A chunk starts with room for 16 slots and doubles as it fills (up to 4096), so that a topic
// of ten records holds ~0.5 KB of columns, not the ~127 KB of a full chunk (many-topics issue).
// A chunk keeps all its columns in one buffer (see Chunk).
import assert from 'node:assert/strict';
import type { RecordText } from './recordText.js';

/**
 * EMPTY is also the state of a padded seq (reserved before a crash, never durable): readers skip
 * every slot that is not LIVE, so padding needs no slots of its own.
 */
export const SlotState = { EMPTY: 0, LIVE: 1, DELETED: 2, EVICTED: 3 } as const;

const CHUNK = 4096;
const FIRST_CAPACITY = 16;

/**
 * Column layout of a chunk's one buffer, for `cap` slots (32 bytes a slot): two float64
 * columns, then four uint32 columns; each column is `cap` elements long. In float64 elements:
 * ts at [0, cap), loc at [cap, 2cap); in uint32 elements: bytes at [4cap, 5cap), nodeId at
 * [5cap, 6cap), frameLen at [6cap, 7cap), and state << 16 | recIdx at [7cap, 8cap).
 * One ArrayBuffer and two views instead of seven typed arrays: each typed array is ~190 bytes
 * of heap objects plus its own malloc'd store, ~1.3 KB of a ten-record topic's idle cost.
 */
const F_TS = 0;
const F_LOC = 1;
const F_COLS = 2;
const U_BYTES = 4;
const U_NODE = 5;
const U_FRAME_LEN = 6;
const U_META = 7;
const U_END = 8;
const BYTES_PER_SLOT = 32;

class Chunk {
  /** Slots this chunk has room for now (a power of two up to CHUNK). */
  cap: number;
  f: Float64Array;
  u: Uint32Array;

  constructor(cap: number) {
    this.cap = cap;
    const buf = new ArrayBuffer(cap * BYTES_PER_SLOT);
    this.f = new Float64Array(buf);
    this.u = new Uint32Array(buf);
  }

  /** Makes room for slot `i` (< CHUNK): doubles the columns until it fits. */
  growFor(i: number): void {
    let cap = this.cap;
    while (cap <= i) cap *= 2;
    if (cap === this.cap) return;
    const old = this.cap;
    const { f, u } = this;
    const buf = new ArrayBuffer(cap * BYTES_PER_SLOT);
    this.f = new Float64Array(buf);
    this.u = new Uint32Array(buf);
    for (let c = 0; c < F_COLS; c++) this.f.set(f.subarray(c * old, (c + 1) * old), c * cap);
    for (let c = U_BYTES; c < U_END; c++) this.u.set(u.subarray(c * old, (c + 1) * old), c * cap);
    this.cap = cap;
    if (this.text !== null) this.text.length = cap;
  }

  ts(i: number): number {
    return this.f[F_TS * this.cap + i]!;
  }
  loc(i: number): number {
    return this.f[F_LOC * this.cap + i]!;
  }
  bytes(i: number): number {
    return this.u[U_BYTES * this.cap + i]!;
  }
  nodeId(i: number): number {
    return this.u[U_NODE * this.cap + i]!;
  }
  frameLen(i: number): number {
    return this.u[U_FRAME_LEN * this.cap + i]!;
  }
  state(i: number): number {
    return this.u[U_META * this.cap + i]! >>> 16;
  }
  recIdx(i: number): number {
    return this.u[U_META * this.cap + i]! & 0xffff;
  }

  set(i: number, tsMs: number, bytes: number, nodeId: number, loc: number, frameLen: number, recIdx: number): void {
    const cap = this.cap;
    this.f[F_TS * cap + i] = tsMs;
    this.f[F_LOC * cap + i] = loc;
    this.u[U_BYTES * cap + i] = bytes;
    this.u[U_NODE * cap + i] = nodeId;
    this.u[U_FRAME_LEN * cap + i] = frameLen;
    this.u[U_META * cap + i] = (SlotState.LIVE << 16) | (recIdx & 0xffff);
  }

  setState(i: number, st: number): void {
    const m = U_META * this.cap + i;
    this.u[m] = (st << 16) | (this.u[m]! & 0xffff);
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
    assert(recIdx >= 0 && recIdx <= 0xffff, 'a record index fits 16 bits');
    const at = this.chunkFor(seq, true)!;
    at.c.set(at.i, tsMs, bytes, nodeId, loc, frameLen, recIdx);
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
    return at ? at.c.state(at.i) : SlotState.EMPTY;
  }

  setState(seq: number, st: number): void {
    const at = this.chunkFor(seq, false);
    if (!at) return;
    at.c.setState(at.i, st);
    if (st !== SlotState.LIVE) at.c.setText(at.i, undefined);
  }

  ts(seq: number): number {
    const at = this.chunkFor(seq, false);
    return at ? at.c.ts(at.i) : 0;
  }

  bytes(seq: number): number {
    const at = this.chunkFor(seq, false);
    return at ? at.c.bytes(at.i) : 0;
  }

  nodeId(seq: number): number {
    const at = this.chunkFor(seq, false);
    return at ? at.c.nodeId(at.i) : 0;
  }

  loc(seq: number): { loc: number; frameLen: number; recIdx: number } {
    const at = this.chunkFor(seq, false)!;
    return { loc: at.c.loc(at.i), frameLen: at.c.frameLen(at.i), recIdx: at.c.recIdx(at.i) };
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
