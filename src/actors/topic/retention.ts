// Retention of one topic instance (docs/ARCHITECTURE.md "Watermarks"): cap eviction, TTL expiry and user deletes, and
// the two floors they move. Involuntary removal (cap, TTL) moves `evictFloor` and is written to
// the loss ledger, so readers below it get a tombstone; a user delete moves only `earliest`, so
// a purely deleted gap reads silently. Counters change the moment a slot leaves LIVE.
// Invariant: evictFloor <= earliest <= head + 1. Pure; runs inside actor steps.
import type { TopicInstance } from './instance.js';
import type { LossReason, LossRun } from '../../format/topicPart.js';
import { SlotState } from './seqIndex.js';

/** The one way a slot leaves LIVE: counters, state, and a queue job's lease table entries. */
function removeLive(inst: TopicInstance, seq: number, to: number): void {
  inst.count--;
  inst.bytes -= inst.index.bytes(seq);
  inst.index.setState(seq, to);
  inst.queue?.table.forget(seq);
}

function evict(inst: TopicInstance, seq: number, reason: LossReason): void {
  removeLive(inst, seq, SlotState.EVICTED);
  if (seq + 1 > inst.evictFloor) inst.evictFloor = seq + 1;
  inst.provenance?.dropMarkersBelow(inst.evictFloor); // the cap or TTL tombstone covers them now
  inst.recordLoss(seq, reason);
  inst.floorsDirty = true;
}

/** Evicts the oldest live records while a cap is exceeded; returns how many went. */
export function applyCaps(inst: TopicInstance): number {
  const { cap_records: capRecords, cap_bytes: capBytes } = inst.config;
  if (capRecords === 0 && capBytes === 0) return 0;
  let n = 0;
  while ((capRecords > 0 && inst.count > capRecords) || (capBytes > 0 && inst.bytes > capBytes)) {
    const seq = inst.earliest();
    if (seq > inst.head) break;
    evict(inst, seq, 'cap');
    n++;
  }
  if (n > 0) inst.index.dropBelow(inst.earliest());
  return n;
}

/**
 * Expires records older than ttl_ms at `now` (judged at request time, no timers). $ts never
 * decreases within a topic, so the expired records are a prefix of the live ones.
 */
export function applyTtl(inst: TopicInstance, now: number): number {
  const ttl = inst.config.ttl_ms;
  if (ttl === 0) return 0;
  let n = 0;
  for (;;) {
    const seq = inst.earliest();
    if (seq > inst.head || !(now - inst.index.ts(seq) > ttl)) break;
    evict(inst, seq, 'ttl');
    n++;
  }
  if (n > 0) inst.index.dropBelow(inst.earliest());
  return n;
}

export interface MatchSpec {
  op: 'Eq' | 'Glob';
  /** Eq: the tag; Glob: the literal prefix (without the trailing `*`). */
  value: string;
}

/**
 * Deletes live records with seq <= bound, below `beforeSeq` when given, and with a matching tag
 * when `match` is given (both ANDed). Point-in-time: `bound` is the head at call time, so later
 * records with the same tag survive. Returns how many were deleted.
 */
export function deleteRecords(
  inst: TopicInstance,
  beforeSeq: number | null,
  match: MatchSpec | null,
  bound: number,
  replaying = false,
): number {
  const last = beforeSeq === null ? bound : Math.min(bound, beforeSeq - 1);
  let deleted = 0;
  const del = (seq: number) => {
    if (inst.index.state(seq) !== SlotState.LIVE) return;
    removeLive(inst, seq, SlotState.DELETED);
    deleted++;
  };
  if (match === null) {
    for (let s = inst.earliest(); s <= last; s++) del(s);
    if (beforeSeq !== null && beforeSeq > inst.deleteBelow) inst.deleteBelow = beforeSeq;
  } else {
    const tags = match.op === 'Eq' ? [match.value] : inst.tags.keysWithPrefix(match.value);
    for (const tag of tags) {
      for (const s of inst.tags.eq(tag)) {
        if (s > last) break;
        del(s);
      }
      inst.tags.prune(tag, (s) => s > inst.head || inst.index.state(s) === SlotState.LIVE);
    }
  }
  // While replaying, later slots may not be indexed yet and earlier ones may still be marked
  // dead at the end of recovery; chunks are dropped then.
  if (deleted > 0 && !replaying) inst.index.dropBelow(inst.earliest());
  return deleted;
}

/**
 * Deletes the live records among `seqs` (queue acks and dead-letter moves: the DELETE frame
 * names the seqs). Returns how many were deleted.
 */
export function deleteSeqs(inst: TopicInstance, seqs: readonly number[], replaying = false): number {
  let deleted = 0;
  for (const s of seqs) {
    if (s > inst.index.last || inst.index.state(s) !== SlotState.LIVE) continue;
    removeLive(inst, s, SlotState.DELETED);
    deleted++;
  }
  if (deleted > 0) {
    inst.hasDeletes = true;
    if (!replaying) inst.index.dropBelow(inst.earliest());
  }
  return deleted;
}

/** Deleted seq ranges at or above `from`, run-length encoded (for snapshots). */
export function deletedRanges(inst: TopicInstance): [number, number][] {
  const out: [number, number][] = [];
  if (!inst.hasDeletes) return out;
  let start = -1;
  for (let s = inst.earliest(); s <= inst.index.last + 1; s++) {
    const dead = s <= inst.index.last && inst.index.state(s) === SlotState.DELETED;
    if (dead && start < 0) start = s;
    if (!dead && start >= 0) {
      out.push([start, s - 1]);
      start = -1;
    }
  }
  return out;
}

/** The retention state a snapshot part keeps, or undefined for a topic that never lost or deleted a record. */
export function retentionFields(
  inst: TopicInstance,
): { evict_floor: number; ledger: LossRun[]; dead_below: number; deleted: [number, number][] } | undefined {
  if (inst.evictFloor === 1 && !inst.hasDeletes && inst.ledger.runs.length === 0) return undefined;
  return { evict_floor: inst.evictFloor, ledger: inst.ledger.runs, dead_below: inst.earliest(), deleted: deletedRanges(inst) };
}
