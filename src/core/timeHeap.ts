// TimeHeap: a binary min-heap of (at, seq) number pairs ordered by `at`, then `seq`, held in one
// Float64Array. The lease table's deadlines and nack delays live here: an entry is two numbers
// and refers to no object, so a stale entry (an acked or extended lease, which stays until it
// reaches the top or the heap is rebuilt) keeps nothing alive for the garbage collector to copy
// and promote. Stale entries are the caller's to recognise when popped. Pure.

export class TimeHeap {
  /** Pairs: `at` at 2i, `seq` at 2i+1. */
  private cells = new Float64Array(64);
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
    if (2 * this.n === this.cells.length) {
      const grown = new Float64Array(this.cells.length * 2);
      grown.set(this.cells);
      this.cells = grown;
    }
    const c = this.cells;
    let i = this.n++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pa = c[2 * p]!;
      if (pa < at || (pa === at && c[2 * p + 1]! < seq)) break;
      c[2 * i] = pa;
      c[2 * i + 1] = c[2 * p + 1]!;
      i = p;
    }
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
      const l = 2 * i + 1;
      if (l >= last) break;
      let m = l;
      const r = l + 1;
      if (r < last && (c[2 * r]! < c[2 * l]! || (c[2 * r] === c[2 * l] && c[2 * r + 1]! < c[2 * l + 1]!))) m = r;
      const ma = c[2 * m]!;
      if (at < ma || (at === ma && seq < c[2 * m + 1]!)) break;
      c[2 * i] = ma;
      c[2 * i + 1] = c[2 * m + 1]!;
      i = m;
    }
    c[2 * i] = at;
    c[2 * i + 1] = seq;
  }

  clear(): void {
    this.n = 0;
    // A heap that once held a burst gives the memory back when emptied.
    if (this.cells.length > 64) this.cells = new Float64Array(64);
  }
}
