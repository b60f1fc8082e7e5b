// Tag index of one topic instance (docs/ARCHITECTURE.md "Retention"): tag → ascending seqs, added to on every append.
// A sorted key array, rebuilt lazily when new tags appear, makes a Glob "p*" a binary-searched
// key range; Eq is a point lookup. Dead entries are pruned as lookups meet them.
// The map is made at the first tag (most topics have none) and dropped when pruned empty.

export class TagIndex {
  private postings: Map<string, number[]> | undefined = undefined;
  private sortedKeys: string[] | null = null;

  add(tag: string, seq: number): void {
    let list = this.postings?.get(tag);
    if (!list) {
      (this.postings ??= new Map()).set(tag, (list = []));
      this.sortedKeys = null;
    }
    list.push(seq);
  }

  /** Seqs of records tagged exactly `tag` (ascending; may include dead ones). */
  eq(tag: string): number[] {
    return this.postings?.get(tag) ?? [];
  }

  /** Tags starting with `prefix`, in order. */
  keysWithPrefix(prefix: string): string[] {
    if (!this.postings) return [];
    if (this.sortedKeys === null) this.sortedKeys = [...this.postings.keys()].sort();
    const keys = this.sortedKeys;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < keys.length && keys[i]!.startsWith(prefix); i++) out.push(keys[i]!);
    return out;
  }

  /** Keeps only the seqs `alive` says are still live (pruning as lookups meet dead entries). */
  prune(tag: string, alive: (seq: number) => boolean): void {
    const list = this.postings?.get(tag);
    if (!list) return;
    const kept = list.filter(alive);
    if (kept.length === 0) {
      this.postings!.delete(tag);
      this.sortedKeys = null;
      if (this.postings!.size === 0) this.postings = undefined;
    } else if (kept.length !== list.length) this.postings!.set(tag, kept);
  }
}
