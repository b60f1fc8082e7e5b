// SeqIndex: per-topic columns addressed by seq (slot = seq - base), in chunks of 1024 slots.
// Owned by one TopicActor (worker thread). Seqs are dense at assignment, so lookup is O(1);
// holes stay as flagged slots. Chunks wholly below the first live seq are dropped from the front.
// A chunk has columns only for the run of its slots that were put: it starts with room for 16
// slots at its first put and doubles as it fills (up to 1024), so that a topic of ten records
// holds ~0.5 KB of columns, not the ~127 KB of a full chunk (many-topics issue). A chunk no put
// reached is a hole (no object): the reservation block a crash skips (1024 padded seqs) costs
// nothing, and the records after it start a small chunk of their own instead of growing one
// across the gap (64 KB per topic written again after a restart: 5 GB at 80k such topics).
// A chunk keeps all its columns in one buffer (see Chunk).
import assert from 'node:assert/strict';
import { RecordText } from './recordText.js';
import { InvariantError } from '../../core/invariant.js';
import { allocColumns, releaseColumns, type ColumnBlock } from '../../core/columns/columnSlabs.js';

/**
 * EMPTY is also the state of a padded seq (reserved before a crash, never durable): readers skip
 * every slot that is not LIVE, so padding needs no slots of its own. MARKER is a router dest's
 * trim marker (docs/ARCHITECTURE.md "Routers"): a seq that stands for source records lost before
 * they were forwarded. It is not a record: never counted, never a job, never evicted.
 */
export const SlotState = { EMPTY: 0, LIVE: 1, DELETED: 2, EVICTED: 3, MARKER: 4 } as const;

const CHUNK = 1024;
const FIRST_CAPACITY = 16;

/**
 * Column layout of a chunk's one buffer, for `cap` slots (36 bytes a slot): two float64
 * columns, then five uint32 columns; each column is `cap` elements long. In float64 elements:
 * ts at [0, cap), loc at [cap, 2cap); in uint32 elements: bytes at [4cap, 5cap), nodeId at
 * [5cap, 6cap), frameLen at [6cap, 7cap), state << 16 | recIdx at [7cap, 8cap), and where a hot
 * record lies in its text buffer at [8cap, 9cap).
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
const U_TEXT_OFF = 8;
const U_END = 9;

/** The SeqIndexes gone: their chunks' slab blocks go back for reuse (see `chunks`). */
const reclaim = new FinalizationRegistry<(Chunk | undefined)[]>((chunks) => {
  for (const c of chunks) c?.release();
});

class Chunk implements ColumnBlock {
  /** The first of the chunk's slots that has columns: slot `lo + i` is at index `i`. */
  lo: number;
  /** Slots this chunk has room for now (a power of two up to CHUNK; lo + cap <= CHUNK). */
  cap: number;
  f!: Float64Array;
  u!: Uint32Array;
  /** Where the columns start in `f` and `u` (a block of a shared slab, or 0 in an own buffer). */
  fo = 0;
  uo = 0;
  slab = -1;

  /** Room for FIRST_CAPACITY slots from `slot` (the chunk's first put). */
  constructor(slot: number) {
    this.cap = FIRST_CAPACITY;
    this.lo = Math.min(slot, CHUNK - FIRST_CAPACITY);
    allocColumns(this.cap, this);
  }

  /**
   * Makes room for `slot` (< CHUNK): doubles the columns until they span it and the slots they
   * had. Puts come in seq order, so the run only grows upwards in practice.
   */
  growFor(slot: number): void {
    const lo = Math.min(this.lo, slot);
    const hi = Math.max(this.lo + this.cap, slot + 1);
    if (lo === this.lo && hi === this.lo + this.cap) return;
    let cap = this.cap;
    while (cap < hi - lo) cap *= 2;
    const newLo = Math.min(lo, CHUNK - cap);
    const shift = this.lo - newLo;
    const old: ColumnBlock & { cap: number } = { f: this.f, u: this.u, fo: this.fo, uo: this.uo, slab: this.slab, cap: this.cap };
    allocColumns(cap, this);
    for (let c = 0; c < F_COLS; c++)
      this.f.set(old.f.subarray(old.fo + c * old.cap, old.fo + (c + 1) * old.cap), this.fo + c * cap + shift);
    for (let c = U_BYTES; c < U_END; c++)
      this.u.set(old.u.subarray(old.uo + c * old.cap, old.uo + (c + 1) * old.cap), this.uo + c * cap + shift);
    releaseColumns(old.cap, old);
    this.cap = cap;
    this.lo = newLo;
    if (this.bufs !== null) {
      const bufs = new Array<Buffer | undefined>(cap);
      for (let k = 0; k < old.cap; k++) bufs[k + shift] = this.bufs[k];
      this.bufs = bufs;
    }
  }

  /** Gives the columns back (the chunk is dropped; never used again). */
  release(): void {
    releaseColumns(this.cap, this);
  }

  ts(i: number): number {
    return this.f[this.fo + F_TS * this.cap + i]!;
  }
  loc(i: number): number {
    return this.f[this.fo + F_LOC * this.cap + i]!;
  }
  bytes(i: number): number {
    return this.u[this.uo + U_BYTES * this.cap + i]!;
  }
  nodeId(i: number): number {
    return this.u[this.uo + U_NODE * this.cap + i]!;
  }
  frameLen(i: number): number {
    return this.u[this.uo + U_FRAME_LEN * this.cap + i]!;
  }
  state(i: number): number {
    return this.u[this.uo + U_META * this.cap + i]! >>> 16;
  }
  recIdx(i: number): number {
    return this.u[this.uo + U_META * this.cap + i]! & 0xffff;
  }

  set(i: number, tsMs: number, bytes: number, nodeId: number, loc: number, frameLen: number, recIdx: number): void {
    const cap = this.cap;
    const fo = this.fo + i;
    const uo = this.uo + i;
    this.f[fo + F_TS * cap] = tsMs;
    this.f[fo + F_LOC * cap] = loc;
    this.u[uo + U_BYTES * cap] = bytes;
    this.u[uo + U_NODE * cap] = nodeId;
    this.u[uo + U_FRAME_LEN * cap] = frameLen;
    this.u[uo + U_META * cap] = (SlotState.LIVE << 16) | (recIdx & 0xffff);
  }

  setState(i: number, st: number): void {
    const m = this.uo + U_META * this.cap + i;
    this.u[m] = (st << 16) | (this.u[m]! & 0xffff);
  }

  /**
   * Hot records keep their text in memory; cold ones are read back from segments. A hot record's
   * text is the buffer it lies in (its APPEND frame, or a block read back from a segment) and,
   * in the U_TEXT_OFF column, where its record head starts in it: no object per record, so the
   * young generation copies nothing per append and a full GC marks one array slot per hot
   * record instead of an object. The array exists only while the chunk holds a hot record (most
   * chunks of a big topic are cold).
   */
  bufs: (Buffer | undefined)[] | null = null;
  hot = 0;

  textOff(i: number): number {
    return this.u[this.uo + U_TEXT_OFF * this.cap + i]!;
  }

  setText(i: number, buf: Buffer, off: number): void {
    if (this.bufs === null) this.bufs = new Array(this.cap);
    if (this.bufs[i] === undefined) this.hot++;
    this.bufs[i] = buf;
    this.u[this.uo + U_TEXT_OFF * this.cap + i] = off;
  }

  dropText(i: number): void {
    if (this.bufs === null || this.bufs[i] === undefined) return;
    this.bufs[i] = undefined;
    if (--this.hot === 0) this.bufs = null;
  }
}

/**
 * One slot as a reader's scan sees it, filled by `SeqIndex.readSlot` with one lookup instead of
 * one per column (a catch-up page reads state, bytes, ts and text of each of 1000 seqs).
 */
export interface SlotRead {
  state: number;
  bytes: number;
  tsMs: number;
  nodeId: number;
  /** The buffer holding the record's text when it is hot (see `SeqIndex.text`), else undefined. */
  textBuf: Buffer | undefined;
  /** Where the record's head starts in `textBuf`. */
  textOff: number;
}

export class SeqIndex {
  /** Seq of slot 0 of chunks[0]; always a multiple of CHUNK plus 1. */
  private base = 1;
  /**
   * Empty until the first slot; then a fresh array (a literal: an array grown from empty by a
   * push keeps room for 17) that the FinalizationRegistry holds, so it is only ever changed in
   * place. When this index is collected, its chunks' slab blocks are released.
   */
  private chunks: (Chunk | undefined)[] = [];
  /** Highest seq with a slot (assigned or padded). */
  last = 0;

  /**
   * Where `locate` found a seq's column: its chunk and index. Read right after a `locate` that
   * returned true; a lookup that allocated a `{ chunk, index }` pair per call was ~6 % of a
   * single-record append's encode.
   */
  private atChunk: Chunk | undefined = undefined;
  private atIdx = 0;

  /** Finds `seq`'s column (into `atChunk`/`atIdx`); false when it has none. */
  private locate(seq: number): boolean {
    const slot = seq - this.base;
    if (slot < 0) return false;
    const ci = Math.floor(slot / CHUNK);
    const c = this.chunks[ci];
    if (c === undefined) return false;
    const i = slot - ci * CHUNK - c.lo;
    if (i < 0 || i >= c.cap) return false;
    this.atChunk = c;
    this.atIdx = i;
    return true;
  }

  /** Makes room for `seq`'s column (a new chunk, or a grown one), then locates it. */
  private locateForPut(seq: number): void {
    const slot = seq - this.base;
    assert(slot >= 0, 'a put is above the dropped chunks');
    const ci = Math.floor(slot / CHUNK);
    const slotIn = slot - ci * CHUNK;
    if (this.chunks.length === 0) {
      this.chunks = [undefined];
      reclaim.register(this, this.chunks, this);
    }
    while (ci >= this.chunks.length) this.chunks.push(undefined);
    const c = this.chunks[ci];
    if (c === undefined) this.chunks[ci] = new Chunk(slotIn);
    else c.growFor(slotIn);
    this.locate(seq);
  }

  /**
   * The first LIVE seq in [from, to], else to + 1: holes and slots without columns are skipped
   * whole (a crash's padded reservation block is not walked slot by slot).
   */
  nextLive(from: number, to: number): number {
    return this.nextSlot(from, to, true);
  }

  /**
   * The first seq in [from, to] whose slot was put (LIVE, DELETED, EVICTED or MARKER: indexed,
   * with its `$ts`), else to + 1; skips holes and padding like nextLive. The
   * lookup of a read from a time probes with it (timeSeek.ts): a dead record's `$ts` still
   * orders the seqs around it.
   */
  nextPut(from: number, to: number): number {
    return this.nextSlot(from, to, false);
  }

  private nextSlot(from: number, to: number, liveOnly: boolean): number {
    let seq = Math.max(from, this.base);
    while (seq <= to) {
      const slot = seq - this.base;
      const ci = Math.floor(slot / CHUNK);
      const c = this.chunks[ci];
      if (c === undefined) {
        if (ci >= this.chunks.length) break;
        seq = this.base + (ci + 1) * CHUNK; // a hole: the next chunk
        continue;
      }
      let i = slot - ci * CHUNK - c.lo;
      if (i < 0) {
        seq -= i; // below the chunk's columns: its first slot
        i = 0;
      }
      for (; i < c.cap && seq <= to; i++, seq++) {
        const st = c.state(i);
        if (liveOnly ? st === SlotState.LIVE : st !== SlotState.EMPTY) return seq;
      }
      seq = this.base + (ci + 1) * CHUNK; // past the columns: the next chunk
    }
    return to + 1;
  }

  put(
    seq: number,
    tsMs: number,
    bytes: number,
    nodeId: number,
    loc: number,
    frameLen: number,
    recIdx: number,
    textBuf: Buffer | undefined,
    textOff: number,
  ): void {
    assert(recIdx >= 0 && recIdx <= 0xffff, 'a record index fits 16 bits');
    this.locateForPut(seq);
    const c = this.atChunk!;
    c.set(this.atIdx, tsMs, bytes, nodeId, loc, frameLen, recIdx);
    if (textBuf !== undefined) c.setText(this.atIdx, textBuf, textOff);
    else c.dropText(this.atIdx);
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
    return this.locate(seq) ? this.atChunk!.state(this.atIdx) : SlotState.EMPTY;
  }

  setState(seq: number, st: number): void {
    if (!this.locate(seq)) return;
    const c = this.atChunk!;
    c.setState(this.atIdx, st);
    if (st !== SlotState.LIVE) c.dropText(this.atIdx);
  }

  /** Fills `v` with `seq`'s slot and returns its state (EMPTY, with `v` otherwise stale, when it has no slot). */
  readSlot(seq: number, v: SlotRead): number {
    if (!this.locate(seq)) return (v.state = SlotState.EMPTY);
    const c = this.atChunk!;
    const i = this.atIdx;
    v.bytes = c.bytes(i);
    v.tsMs = c.ts(i);
    v.nodeId = c.nodeId(i);
    const buf = c.bufs !== null ? c.bufs[i] : undefined;
    v.textBuf = buf;
    if (buf !== undefined) v.textOff = c.textOff(i);
    return (v.state = c.state(i));
  }

  ts(seq: number): number {
    return this.locate(seq) ? this.atChunk!.ts(this.atIdx) : 0;
  }

  bytes(seq: number): number {
    return this.locate(seq) ? this.atChunk!.bytes(this.atIdx) : 0;
  }

  nodeId(seq: number): number {
    return this.locate(seq) ? this.atChunk!.nodeId(this.atIdx) : 0;
  }

  loc(seq: number): { loc: number; frameLen: number; recIdx: number } {
    if (!this.locate(seq)) throw new InvariantError(`loc of seq ${seq}, which is not indexed`);
    const c = this.atChunk!;
    const i = this.atIdx;
    return { loc: c.loc(i), frameLen: c.frameLen(i), recIdx: c.recIdx(i) };
  }

  /** Whether `seq`'s text is in memory (a hot record), without building its RecordText. */
  hasText(seq: number): boolean {
    if (!this.locate(seq)) return false;
    const b = this.atChunk!.bufs;
    return b !== null && b[this.atIdx] !== undefined;
  }

  /** `seq`'s text when it is in memory: a new RecordText over the buffer it lies in. */
  text(seq: number): RecordText | undefined {
    if (!this.locate(seq)) return undefined;
    const c = this.atChunk!;
    const buf = c.bufs !== null ? c.bufs[this.atIdx] : undefined;
    return buf === undefined ? undefined : RecordText.at(buf, c.textOff(this.atIdx));
  }

  /** Keeps `seq`'s text in memory: the record whose head starts at `off` in `buf`. */
  setText(seq: number, buf: Buffer, off: number): void {
    if (this.locate(seq)) this.atChunk!.setText(this.atIdx, buf, off);
  }

  /** Lets `seq`'s text go (evicted from memory; it stays in its segment). */
  dropText(seq: number): void {
    if (this.locate(seq)) this.atChunk!.dropText(this.atIdx);
  }

  /**
   * Gives every chunk's columns back now (a topic going to sleep), instead of when the index is
   * collected: a sleeping topic's old index can sit in the old generation for a long time.
   * The index is empty afterwards and must not be used again.
   */
  release(): void {
    if (this.chunks.length === 0) return;
    reclaim.unregister(this);
    for (const c of this.chunks) c?.release();
    this.chunks = [];
    this.atChunk = undefined;
  }

  /** Drops whole chunks below `seq` (the first live seq). Their slots must all be dead. */
  dropBelow(seq: number): void {
    while (this.chunks.length > 1 && seq - this.base >= CHUNK) {
      this.chunks.shift()?.release();
      this.base += CHUNK;
    }
    this.atChunk = undefined; // not kept alive by a stale lookup
  }
}
