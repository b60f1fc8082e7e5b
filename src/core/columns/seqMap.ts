// SeqMap: a map from seqs (non-negative integers below 2^53) to values, for tables that churn one
// entry per job (the lease table's leases, delivery counts and nack delays). An open-addressing
// table with linear probing and backward-shift deletion: keys in a Float64Array, values in one
// array, a removed entry's slot emptied at once. A JS Map that churns allocates a new hash table
// every few dozen inserts and links the old one to it; once one of those tables is promoted, the
// chain keeps every later table and every value they held alive through young-generation
// collections until a full one (the claim+ack bench promoted ~2.4 MB per scavenge this way).
// This table is reallocated only when it grows or shrinks, and an empty map holds no table at
// all (a lease table has three, and an idle queue uses none of them). Not an IdIndex (idIndex.ts):
// leases are objects and delays are times past int32, and its pages of 4096 ids would be made and
// dropped as the window of jobs in flight moves. Iteration order is unspecified;
// `keys()` and `entries()` return copies, so the map may change while a caller walks them. Pure.

const EMPTY = -1;
const MIN_CAPACITY = 16;
/**
 * A table shrinks only above this capacity: a queue whose leases swing between a handful and a
 * few dozen every pass would otherwise grow and shrink its table each time (and a dropped table
 * that was promoted drags the values it held into the old generation with it).
 */
const SHRINK_ABOVE = 256;
const TWO_32 = 4294967296;
const NO_KEYS = new Float64Array(0);

export class SeqMap<V> {
  /** Empty (NO_KEYS, no values) until the first set, and again after clear(). */
  private keyCells = NO_KEYS;
  private vals: (V | undefined)[] = [];
  private mask = 0;
  /** 32 - log2(capacity): the hash's top bits pick the home slot. */
  private shift = 32;
  private n = 0;

  get size(): number {
    return this.n;
  }

  /** Fibonacci hashing of the seq's two 32-bit halves: consecutive seqs land far apart. */
  private home(seq: number): number {
    const h = Math.imul((seq >>> 0) ^ Math.imul((seq / TWO_32) | 0, 0x27d4eb2d), 0x9e3779b1);
    return h >>> this.shift;
  }

  /** The slot holding `seq`, or -1. */
  private find(seq: number): number {
    if (this.n === 0) return -1;
    const keys = this.keyCells;
    for (let i = this.home(seq); ; i = (i + 1) & this.mask) {
      const k = keys[i]!;
      if (k === seq) return i;
      if (k === EMPTY) return -1;
    }
  }

  get(seq: number): V | undefined {
    const i = this.find(seq);
    return i < 0 ? undefined : this.vals[i];
  }

  has(seq: number): boolean {
    return this.find(seq) >= 0;
  }

  set(seq: number, value: V): this {
    if (this.keyCells.length === 0) this.resize(MIN_CAPACITY);
    const keys = this.keyCells;
    let i = this.home(seq);
    for (; ; i = (i + 1) & this.mask) {
      const k = keys[i]!;
      if (k === seq) {
        this.vals[i] = value;
        return this;
      }
      if (k === EMPTY) break;
    }
    keys[i] = seq;
    this.vals[i] = value;
    // At most half full: probes stay short.
    if (++this.n > (this.mask + 1) >> 1) this.resize((this.mask + 1) * 2);
    return this;
  }

  delete(seq: number): boolean {
    let i = this.find(seq);
    if (i < 0) return false;
    const keys = this.keyCells;
    const mask = this.mask;
    // Backward shift: pull later entries of the probe run into the hole unless their home slot
    // lies cyclically in (hole, their slot]; no tombstones, so churn never degrades probing.
    for (let j = (i + 1) & mask; keys[j] !== EMPTY; j = (j + 1) & mask) {
      const h = this.home(keys[j]!);
      const stays = i <= j ? i < h && h <= j : i < h || h <= j;
      if (stays) continue;
      keys[i] = keys[j]!;
      this.vals[i] = this.vals[j];
      i = j;
    }
    keys[i] = EMPTY;
    this.vals[i] = undefined;
    // Give memory back after a burst, with room to spare so a steady size never flaps.
    if (--this.n < (mask + 1) >> 3 && mask + 1 > SHRINK_ABOVE) this.resize((mask + 1) >> 1);
    return true;
  }

  clear(): void {
    this.n = 0;
    this.keyCells = NO_KEYS;
    this.vals = [];
    this.mask = 0;
    this.shift = 32;
  }

  /** The seqs held, as a new array. */
  keys(): number[] {
    return this.collect((i) => this.keyCells[i]!);
  }

  /** The values held, as a new array. */
  values(): V[] {
    return this.collect((i) => this.vals[i] as V);
  }

  /** The [seq, value] pairs held, as a new array. */
  entries(): [number, V][] {
    return this.collect((i): [number, V] => [this.keyCells[i]!, this.vals[i] as V]);
  }

  /** `pick` of every occupied slot, in slot order. */
  private collect<T>(pick: (slot: number) => T): T[] {
    const out: T[] = [];
    const keys = this.keyCells;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) out.push(pick(i));
    return out;
  }

  private resize(capacity: number): void {
    const oldKeys = this.keyCells;
    const oldValues = this.vals;
    this.keyCells = new Float64Array(capacity).fill(EMPTY);
    this.vals = new Array<V | undefined>(capacity).fill(undefined);
    this.mask = capacity - 1;
    this.shift = 32 - Math.log2(capacity);
    const keys = this.keyCells;
    for (let j = 0; j < oldKeys.length; j++) {
      const seq = oldKeys[j]!;
      if (seq === EMPTY) continue;
      let i = this.home(seq);
      while (keys[i] !== EMPTY) i = (i + 1) & this.mask;
      keys[i] = seq;
      this.vals[i] = oldValues[j];
    }
  }
}
