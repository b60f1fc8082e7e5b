// Idempotency table of one topic instance: key → the batch it produced. Entries are kept in
// time order (Map insertion order; $ts never decreases) and pruned lazily by the window.
// Never an LRU: an early eviction would turn a retry into a duplicate. The map exists only while
// it holds an entry (most topics never see a key, and every key leaves after the window).

export interface IdemEntry {
  firstSeq: number;
  count: number;
  tsMs: number;
}

export class IdempotencyTable {
  private entries: Map<string, IdemEntry> | undefined = undefined;

  get(key: string, nowMs: number, windowMs: number): IdemEntry | undefined {
    this.prune(nowMs, windowMs);
    return this.entries?.get(key);
  }

  set(key: string, e: IdemEntry): void {
    const m = (this.entries ??= new Map());
    m.delete(key);
    m.set(key, e);
  }

  prune(nowMs: number, windowMs: number): void {
    if (!this.entries) return;
    for (const [k, e] of this.entries) {
      if (nowMs - e.tsMs <= windowMs) break;
      this.entries.delete(k);
    }
    if (this.entries.size === 0) this.entries = undefined;
  }

  toJSON(): [string, IdemEntry][] {
    return this.entries ? [...this.entries] : [];
  }

  static from(list: [string, IdemEntry][]): IdempotencyTable {
    const t = new IdempotencyTable();
    for (const [k, e] of list) t.set(k, e);
    return t;
  }
}
