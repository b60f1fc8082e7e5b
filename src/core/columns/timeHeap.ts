// TimeHeap: a binary min-heap of (at, seq) number pairs ordered by `at`, then `seq`, held in one
// Float64Array. The lease table's deadlines and nack delays live here: an entry is two numbers
// and refers to no object, so a stale entry (an acked or extended lease, which stays until it
// reaches the top or the heap is rebuilt) keeps nothing alive for the garbage collector to copy
// and promote. Stale entries are the caller's to recognise when popped. Pure.
import { grownTo } from './grow.js';

export class TimeHeap {
  /** Pairs: `at` at 2i, `seq` at 2i+1; none until the first push (an idle queue has two heaps). */
  private cells = new Float64Array(0);
  private n = 0;

  get size(): number {
    return this.n;
  }

  /** The smallest `at`, or undefined when empty. */
  peekAt(): number | undefined {
    return this.n === 0 ? undefined : this.cells[0];
  }

  /** The seq of the top entry (meaningful only when not empty). */
  peekSeq(): number {
    return this.cells[1]!;
  }

  push(at: number, seq: number): void {
    this.cells = grownTo(this.cells, Math.max(64, 2 * (this.n + 1)));
    const c = this.cells;
    let i = this.n++;
    for (let p = (i - 1) >> 1; i > 0 && !before(c, p, at, seq); i = p, p = (i - 1) >> 1) moveTo(c, p, i);
    c[2 * i] = at;
    c[2 * i + 1] = seq;
  }

  /** Removes the top entry (call peekAt/peekSeq first to read it). */
  pop(): void {
    if (this.n === 0) return;
    const c = this.cells;
    const last = --this.n;
    const at = c[2 * last]!;
    const seq = c[2 * last + 1]!;
    let i = 0;
    for (;;) {
      let m = 2 * i + 1;
      if (m >= last) break;
      if (m + 1 < last && before(c, m + 1, c[2 * m]!, c[2 * m + 1]!)) m++;
      if (!before(c, m, at, seq)) break;
      moveTo(c, m, i);
      i = m;
    }
    c[2 * i] = at;
    c[2 * i + 1] = seq;
  }

  clear(): void {
    this.n = 0;
    // A heap that once held a burst gives the memory back when emptied.
    if (this.cells.length > 64) this.cells = new Float64Array(0);
  }
}

/** Entry `i` of `c` comes before (at, seq). */
function before(c: Float64Array, i: number, at: number, seq: number): boolean {
  const a = c[2 * i]!;
  return a < at || (a === at && c[2 * i + 1]! < seq);
}

/** Copies entry `from` of `c` over entry `to`. */
function moveTo(c: Float64Array, from: number, to: number): void {
  c[2 * to] = c[2 * from]!;
  c[2 * to + 1] = c[2 * from + 1]!;
}
