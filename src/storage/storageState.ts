// The storage state every thread reads (docs/ARCHITECTURE.md "Storage faults"): one Int32 cell in
// the shared counters, written only by the WAL thread, and a second one counting the topic
// workers whose segment or pack writes wait for disk space; `storageStateOf` reads both.
//   OK      writes proceed;
//   FULL    the WAL cannot keep its reserve of pre-allocated space (ENOSPC/EDQUOT), or frames the
//           WAL took cannot reach their segments: requests that would write are refused with 429
//           throttled, detail.limit "disk_space", nothing applied; reads go on; it clears by
//           itself once space returns;
//   FAILED  a write or fsync failed for another reason (EIO…), or unexpectedly: the page cache
//           can no longer be trusted, so writes stay refused until a restart (recovery repairs).
import { SPACE_WAITS_SLOT, STORAGE_STATE_SLOT } from '../core/sharedCounters.js';

export const StorageState = { OK: 0, FULL: 1, FAILED: 2 } as const;
export type StorageStateCode = (typeof StorageState)[keyof typeof StorageState];

// SPACE_WAITS_SLOT counts the topic workers whose segment or pack writes wait for disk space. While
// any does, writes are refused as on a full WAL: the WAL still has its pre-allocated files, but
// every frame it takes then is one more that holds WAL space no checkpoint can free until it
// reaches a segment (a restart on such a disk had nothing left to free).

/** The storage state as the actors and probes see it: the WAL's, or FULL while segments wait for space. */
export function storageStateOf(counters: Int32Array): StorageStateCode {
  const s = Atomics.load(counters, STORAGE_STATE_SLOT) as StorageStateCode;
  return s === StorageState.OK && Atomics.load(counters, SPACE_WAITS_SLOT) > 0 ? StorageState.FULL : s;
}

/**
 * One thread's stores that hold frames waiting for disk space; the thread counts once in
 * SPACE_WAITS_SLOT while any does.
 */
export class SpaceWaits {
  private readonly waiting = new Set<object>();

  constructor(
    private readonly counters: Int32Array,
    private readonly log: (msg: string) => void,
  ) {}

  set(store: object, waits: boolean): void {
    if (waits) {
      if (this.waiting.has(store)) return;
      this.waiting.add(store);
      if (this.waiting.size > 1) return;
      Atomics.add(this.counters, SPACE_WAITS_SLOT, 1);
      this.log('spool: disk full: segment writes wait for space; writes are refused (429 disk_space) until they are done');
    } else if (this.waiting.delete(store) && this.waiting.size === 0) {
      Atomics.sub(this.counters, SPACE_WAITS_SLOT, 1);
      this.log('spool: segment writes caught up');
    }
  }
}

export function storageStateName(s: number): 'ok' | 'disk_full' | 'failed' {
  return s === StorageState.FULL ? 'disk_full' : s === StorageState.FAILED ? 'failed' : 'ok';
}
