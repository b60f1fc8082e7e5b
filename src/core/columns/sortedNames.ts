// SortedNames: the names of a worker's topic actors in order (UTF-16 code unit order, as `<` and
// Array.prototype.sort compare), for paging `GET /v0/topics` and the first metrics series
// without sorting every name per page. Runs on a topic worker thread; pure data.
// Layout: sorted leaves of at most LEAF_MAX names each, every leaf non-empty, and the leaves in
// order (the last name of a leaf is below the first of the next). An insert is two binary
// searches and a splice within one leaf (a leaf splits in two when it passes LEAF_MAX); a page is
// two binary searches and a walk. One pointer per name plus ~1% in leaf arrays: the name strings
// themselves are the actors' own.

/** Names per leaf at most: a splice moves at most this many pointers. */
const LEAF_MAX = 512;

/** First index in sorted `a` whose element is above `x` (strict) or at/above it (not strict). */
function bound(a: readonly string[], x: string, strict: boolean): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const v = a[mid]!;
    if (v < x || (strict && v === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SortedNames {
  private readonly leaves: string[][] = [];
  private count = 0;

  /** `leafMax`: names per leaf at most (tests use tiny leaves to exercise splits). */
  constructor(private readonly leafMax = LEAF_MAX) {}

  get size(): number {
    return this.count;
  }

  /** The leaf that holds `name`, or would: the last leaf whose first name is at or below it. */
  private leafFor(name: string): number {
    let lo = 0;
    let hi = this.leaves.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.leaves[mid]![0]! <= name) lo = mid + 1;
      else hi = mid;
    }
    return Math.max(0, lo - 1);
  }

  /** Adds `name`; false when it was there already. */
  add(name: string): boolean {
    if (this.leaves.length === 0) {
      this.leaves.push([name]);
      this.count = 1;
      return true;
    }
    const li = this.leafFor(name);
    const leaf = this.leaves[li]!;
    const at = bound(leaf, name, false);
    if (leaf[at] === name) return false;
    leaf.splice(at, 0, name);
    this.count++;
    if (leaf.length > this.leafMax) this.leaves.splice(li + 1, 0, leaf.splice(leaf.length >>> 1));
    return true;
  }

  /**
   * Adds many names at once (recovery restores a snapshot's sleeping topics): one sort and a
   * merge with what is here, leaves rebuilt half full. A name already here is not added twice.
   * Inserting a million names one by one in random order cost seconds; this is one sort.
   */
  addAll(names: string[]): void {
    if (names.length === 0) return;
    const incoming = [...names].sort();
    const merged: string[] = [];
    const existing = this.leaves.flat();
    let i = 0;
    let j = 0;
    while (i < existing.length || j < incoming.length) {
      const next = j >= incoming.length || (i < existing.length && existing[i]! <= incoming[j]!) ? existing[i++]! : incoming[j++]!;
      if (merged.length === 0 || merged[merged.length - 1] !== next) merged.push(next);
    }
    const fill = Math.max(1, this.leafMax >>> 1);
    this.leaves.length = 0;
    for (let k = 0; k < merged.length; k += fill) this.leaves.push(merged.slice(k, k + fill));
    this.count = merged.length;
  }

  /** Removes `name`; false when it was not there. */
  delete(name: string): boolean {
    if (this.leaves.length === 0) return false;
    const li = this.leafFor(name);
    const leaf = this.leaves[li]!;
    const at = bound(leaf, name, false);
    if (leaf[at] !== name) return false;
    leaf.splice(at, 1);
    this.count--;
    if (leaf.length === 0) this.leaves.splice(li, 1);
    return true;
  }

  /**
   * The names above `after` that start with `prefix`, in order, while `visit` returns true.
   * Starts at the first name at or above max(after, prefix), so a page costs O(log n + names
   * visited), not a sort of every name.
   */
  forEachFrom(after: string, prefix: string, visit: (name: string) => boolean): void {
    const strict = after >= prefix;
    const start = strict ? after : prefix;
    for (let li = this.leafFor(start), i = bound(this.leaves[li] ?? [], start, strict); li < this.leaves.length; li++, i = 0) {
      const leaf = this.leaves[li]!;
      for (; i < leaf.length; i++) {
        const name = leaf[i]!;
        if (!name.startsWith(prefix)) return;
        if (!visit(name)) return;
      }
    }
  }
}
