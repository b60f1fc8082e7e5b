// ColumnSlabs: where the SeqIndex chunks of small topics keep their columns (many-topics issue).
// A chunk of up to SLAB_MAX_CAP slots takes a block of a shared 1 MiB ArrayBuffer instead of an
// ArrayBuffer of its own: at a million ten-record topics, a buffer per chunk was ~400 B of
// overhead per topic (the ArrayBuffer object, two typed-array views, the off-heap backing store
// record) and a million buffers for every GC to sweep. Blocks are powers of two (16 to
// SLAB_MAX_CAP slots, 36 bytes a slot), freed blocks are reused by size, zeroed on reuse; slabs
// are never given back (a worker's peak of small chunks stays allocated).
// One instance per thread (module state): a worker's actors all run on its one thread.

/** Bytes per slot (SeqIndex's column layout). */
export const BYTES_PER_SLOT = 36;
/** Largest chunk (in slots) kept in a slab; bigger ones get their own buffer. */
export const SLAB_MAX_CAP = 256;
const SLAB_BYTES = 1 << 20;

/** Where a chunk's columns are: the chunk itself holds these fields (no object per block). */
export interface ColumnBlock {
  f: Float64Array;
  u: Uint32Array;
  /** Offset of the block in `f` (float64 elements) and in `u` (uint32 elements). */
  fo: number;
  uo: number;
  /** Index of the slab, or -1 for a buffer of the chunk's own. */
  slab: number;
}

interface Slab {
  f: Float64Array;
  u: Uint32Array;
}

const slabs: Slab[] = [];
/** Free blocks per size class (log2 of cap), each as slab index × SLAB_BYTES + byte offset. */
const free = new Map<number, number[]>();
/** Bytes used in the newest slab. */
let used = SLAB_BYTES;

/** Blocks handed out and not released (tests and metrics). */
export let slabBlocksInUse = 0;

function sizeClass(cap: number): number {
  return Math.log2(cap);
}

/** Points `b` at a zeroed block for `cap` slots: in a slab when small, else a buffer of its own. */
export function allocColumns(cap: number, b: ColumnBlock): void {
  const bytes = cap * BYTES_PER_SLOT;
  if (cap > SLAB_MAX_CAP) {
    const buf = new ArrayBuffer(bytes);
    b.f = new Float64Array(buf);
    b.u = new Uint32Array(buf);
    b.fo = b.uo = 0;
    b.slab = -1;
    return;
  }
  slabBlocksInUse++;
  const at = free.get(sizeClass(cap))?.pop();
  let idx: number;
  let off: number;
  if (at !== undefined) {
    idx = Math.floor(at / SLAB_BYTES);
    off = at % SLAB_BYTES;
    slabs[idx]!.u.fill(0, off / 4, (off + bytes) / 4);
  } else {
    if (used + bytes > SLAB_BYTES) {
      const buf = new ArrayBuffer(SLAB_BYTES);
      slabs.push({ f: new Float64Array(buf), u: new Uint32Array(buf) });
      used = 0;
    }
    idx = slabs.length - 1;
    off = used;
    used += bytes;
  }
  const slab = slabs[idx]!;
  b.f = slab.f;
  b.u = slab.u;
  b.fo = off / 8;
  b.uo = off / 4;
  b.slab = idx;
}

/** Gives `b`'s block of `cap` slots back (nothing to do for a buffer of its own). Never twice. */
export function releaseColumns(cap: number, b: ColumnBlock): void {
  if (b.slab < 0) return;
  slabBlocksInUse--;
  const cls = sizeClass(cap);
  let list = free.get(cls);
  if (!list) free.set(cls, (list = []));
  list.push(b.slab * SLAB_BYTES + b.uo * 4);
  b.slab = -1;
}
