// Tag index of one topic instance (DESIGN 3.4): tag → ascending seqs, added to on every append.
// A sorted key array, rebuilt lazily when new tags appear, makes a Glob "p*" a binary-searched
// key range; Eq is a point lookup. Dead entries are pruned as lookups meet them.

export class TagIndex {
  private readonly postings = new Map<string, number[]>();
  private sortedKeys: string[] | null = [];

  add(tag: string, seq: number): void {
    let list = this.postings.get(tag);
    if (!list) {
      this.postings.set(tag, (list = []));
      this.sortedKeys = null;
    }
    list.push(seq);
  }

  /** Seqs of records tagged exactly `tag` (ascending; may include dead ones). */
  eq(tag: string): number[] {
    return this.postings.get(tag) ?? [];
  }

  /** Tags starting with `prefix`, in order. */
  keysWithPrefix(prefix: string): string[] {
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
    const list = this.postings.get(tag);
    if (!list) return;
    const kept = list.filter(alive);
    if (kept.length === 0) {
      this.postings.delete(tag);
      this.sortedKeys = null;
    } else if (kept.length !== list.length) this.postings.set(tag, kept);
  }
}
