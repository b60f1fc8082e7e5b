// Idempotency table of one topic instance: key → the batch it produced. Entries are kept in
// time order (Map insertion order; $ts never decreases) and pruned lazily by the window.
// Never an LRU: an early eviction would turn a retry into a duplicate.

export interface IdemEntry {
  firstSeq: number;
  count: number;
  tsMs: number;
}

export class IdempotencyTable {
  private readonly entries = new Map<string, IdemEntry>();

  get(key: string, nowMs: number, windowMs: number): IdemEntry | undefined {
    this.prune(nowMs, windowMs);
    return this.entries.get(key);
  }

  set(key: string, e: IdemEntry): void {
    this.entries.delete(key);
    this.entries.set(key, e);
  }

  prune(nowMs: number, windowMs: number): void {
    for (const [k, e] of this.entries) {
      if (nowMs - e.tsMs <= windowMs) break;
      this.entries.delete(k);
    }
  }

  toJSON(): [string, IdemEntry][] {
    return [...this.entries];
  }

  static from(list: [string, IdemEntry][]): IdempotencyTable {
    const t = new IdempotencyTable();
    for (const [k, e] of list) t.set(k, e);
    return t;
  }
}
