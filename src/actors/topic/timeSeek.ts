// Reading from a time (docs/API.md "Diff: read from a cursor", `from_ts`): turns a point in time
// into the exclusive seq cursor a read starts from, by binary search over the `$ts` column of
// the topic's seq index. Pure; runs inside a TopicActor step (diff, and the `seek` of a watch
// POST), so a sleeping topic has been woken and its index rebuilt before it runs.
//
// Why a binary search is exact: a record's `$ts` is max(step time, the topic's last `$ts`)
// (appendStep.ts), and recovery and a wake restore that last `$ts` from every frame they index,
// so `$ts` never decreases in seq order over the records the index holds, across restarts and
// clock steps (docs/ARCHITECTURE.md "Reading from a time"). Dead records (deleted, evicted) keep
// their `$ts` in the index, so a probe that lands on one is as good as a live one.
import type { SeqIndex } from './seqIndex.js';
import type { TopicInstance } from './instance.js';

export interface PutSearch {
  /** The first put seq in the range whose `$ts` is at or after the time, else hi + 1. */
  seq: number;
  /** Index probes it took (a bound the unit tests check: about 2·log2 of the range). */
  probes: number;
}

/**
 * The first seq in [lo, hi] whose slot was put with `$ts >= tsMs`, by binary search; slots
 * never put (holes, padding) are stepped over by nextPut. Each round either halves the range
 * or ends it, so it takes O(log(hi - lo)) probes.
 */
export function firstPutAtOrAfter(index: SeqIndex, tsMs: number, lo: number, hi: number): PutSearch {
  let best = hi + 1;
  let probes = 0;
  while (lo <= hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const p = index.nextPut(mid, hi);
    probes++;
    if (p > hi) {
      hi = mid - 1; // nothing was put in [mid, hi]
    } else if (index.ts(p) >= tsMs) {
      best = p; // nothing put in [mid, p): the answer is p or below mid
      hi = mid - 1;
    } else {
      lo = p + 1; // every put seq up to p is older
    }
  }
  return { seq: best, probes };
}

/**
 * The exclusive cursor of a read from `tsMs`: the seq before the first record whose `$ts` is at
 * or after it, so the read starts at that record.
 * - The oldest record the index still knows is already that recent, or it knows none: 0, the
 *   cursor of a read from the start. Records lost below it (cap, TTL) can no longer be dated,
 *   so the read gets the tombstone a `from_seq: 0` read gets; with none lost, it starts at the
 *   earliest record (or is an empty page at the head).
 * - No record is that recent: the head, as a tail (an empty page; a long-poll waits there).
 * - Otherwise right after the last record (live or dead) older than `tsMs`; a gap of lost
 *   records it opens onto gets the tombstone a read from that seq gets (those records were at
 *   or after `tsMs`, so the reader wanted them).
 */
export function cursorAtTs(inst: TopicInstance, tsMs: number): number {
  const head = inst.head;
  const index = inst.index;
  const oldest = index.nextPut(1, head);
  if (oldest > head || index.ts(oldest) >= tsMs) return 0;
  return firstPutAtOrAfter(index, tsMs, oldest + 1, head).seq - 1;
}
