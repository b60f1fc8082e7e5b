// The storage state every thread reads (issue: storage faults; docs/ARCHITECTURE.md "Storage
// faults"): one Int32 cell in the shared counters, written only by the WAL thread.
//   OK      writes proceed;
//   FULL    the WAL cannot keep its reserve of pre-allocated space (ENOSPC/EDQUOT): requests that
//           would write are refused with 429 throttled, detail.limit "disk_space", nothing
//           applied; reads go on; it clears by itself once space returns;
//   FAILED  a write or fsync failed for another reason (EIO…), or unexpectedly: the page cache
//           can no longer be trusted, so writes stay refused until a restart (recovery repairs).
export const StorageState = { OK: 0, FULL: 1, FAILED: 2 } as const;
export type StorageStateCode = (typeof StorageState)[keyof typeof StorageState];

/** Index of the storage state in the supervisor's shared counters (0 is the topic count). */
export const STORAGE_STATE_SLOT = 1;

export function storageStateName(s: number): 'ok' | 'disk_full' | 'failed' {
  return s === StorageState.FULL ? 'disk_full' : s === StorageState.FAILED ? 'failed' : 'ok';
}
