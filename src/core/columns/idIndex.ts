// IdIndex: topic id -> int32, for the per-topic indexes a topic worker fills once per topic at
// recovery (PackMap's slots, Dormancy's sleepers by id). A Map<number, number> of a million
// entries cost a hash insert, its rehashes and its GC marking per topic (docs/ARCHITECTURE.md "Many topics", ~1 s of the
// worker's CPU before ready); here a lookup is one small-Map read for the page (skipped while
// ids stay in the last page used) and one typed-array read. Ids are integers below 2^53 given
// out mostly in order (epoch × 2^24 + counter), so they cluster: PAGE_IDS consecutive ids share
// one Int32Array page, made on first use and dropped when its last id goes, so sparse or huge
// ids cost one page each and never a table sized by the largest id. Pure data; any thread.
// Invariants: `size` is the number of ids held; a page's COUNT slot is its ids held (> 0).
import assert from 'node:assert/strict';

/** Ids per page: 4096 ids -> 16 KiB. */
const PAGE_IDS = 4096;
/** The slot after a page's values: how many of them are held. */
const COUNT = PAGE_IDS;
/** The value of an id not held (so no stored value may be it). */
const NONE = -0x8000_0000;

export class IdIndex {
  private readonly pages = new Map<number, Int32Array>();
  /** The page of `lastKey` (ids arrive mostly in order: usually the same page as before). */
  private lastKey = -1;
  private lastPage: Int32Array | undefined;
  /** Ids held. */
  size = 0;

  get(id: number): number | undefined {
    const key = Math.floor(id / PAGE_IDS);
    const page = key === this.lastKey ? this.lastPage : this.pageOf(key);
    if (page === undefined) return undefined;
    const v = page[id - key * PAGE_IDS]!;
    return v === NONE ? undefined : v;
  }

  has(id: number): boolean {
    return this.get(id) !== undefined;
  }

  /** Sets `id`'s value: an int32 other than -2^31. */
  set(id: number, value: number): void {
    if (!(value === (value | 0) && value !== NONE)) assert.fail(`IdIndex: value ${value} is not a storable int32`);
    const key = Math.floor(id / PAGE_IDS);
    let page = key === this.lastKey ? this.lastPage : this.pageOf(key);
    if (page === undefined) {
      if (!(Number.isSafeInteger(id) && id >= 0)) assert.fail(`IdIndex: id ${id} is not a non-negative safe integer`);
      page = new Int32Array(PAGE_IDS + 1).fill(NONE, 0, PAGE_IDS);
      this.pages.set(key, page);
      this.lastKey = key;
      this.lastPage = page;
    }
    const at = id - key * PAGE_IDS;
    if (page[at] === NONE) {
      page[COUNT]!++;
      this.size++;
    }
    page[at] = value;
  }

  /** Forgets `id`; false when it was not held. */
  delete(id: number): boolean {
    const key = Math.floor(id / PAGE_IDS);
    const page = key === this.lastKey ? this.lastPage : this.pageOf(key);
    const at = id - key * PAGE_IDS;
    if (page === undefined || page[at] === NONE) return false;
    page[at] = NONE;
    this.size--;
    if (--page[COUNT]! === 0) {
      this.pages.delete(key);
      if (this.lastKey === key) this.lastPage = undefined;
    }
    return true;
  }

  /** The page of `key`, remembered as the last one used (or undefined when it has none). */
  private pageOf(key: number): Int32Array | undefined {
    const page = this.pages.get(key);
    this.lastKey = key;
    this.lastPage = page;
    return page;
  }
}
