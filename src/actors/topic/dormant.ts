// Dormant topics (docs/ARCHITECTURE.md "Dormant topics"). A topic that is quiet and
// holds nothing a restart would not rebuild (its records all in the pack files, nothing in
// flight, no lease, router or parked read) can be kept by its worker as one DormantTopic
// record instead of an actor, an instance and a seq index: the worker's housekeeping puts such
// topics to sleep, and the next request of the name wakes the topic again with the inputs
// recovery uses ('wake', then its packed frames, then 'finish'), so a trace replays a wake
// exactly. The record has the snapshot part's shape plus the watermarks a list, a state read or
// a wake needs without the index.
// Pure: what may sleep, the record, and the reports of a sleeping topic.
import type { StatsTotals, TopicStats, TopicSummary } from '../../protocol/messages/rpc.js';
import type { DormantTopic, TopicPart } from '../../format/topicPart.js';
import type { TopicInstance } from './instance.js';
import { retentionFields } from './retention.js';
import { priorityOf } from './topicState.js';
import { queuePart } from '../queue/leasesLog.js';

export type { DormantTopic };

/**
 * A topic sleeps only while what a wake reads back (and CRC-checks and indexes) is at most this
 * large: its packed segment, and at most one own segment file after it. Beyond, its index and
 * actor are small next to what it holds, and it stays awake.
 */
export const SLEEP_BYTES_MAX = 1024 * 1024;

/** What the worker's stores hold of a topic, as dormantOf needs it (the host asks them). */
export interface StoredFrames {
  /** Logical bytes of its packed segment already whole in a pack (PackMap), -1 without packs. */
  packedWritten: number;
  /** Every frame of its own segment files is written and no unlink of one is pending. */
  ownSettled: boolean;
}

/**
 * A sleeping TTL topic is woken this long before its first live record expires (dormancy.ts),
 * so its list and metrics figures, which a sleeping topic computes from its record alone, stay
 * exact: a record knows when its first and last records expire, not the ones between.
 */
export const TTL_WAKE_AHEAD_MS = 1000;

/**
 * Whether a topic may sleep at `now`: its record; 'later' while something is in flight (pending
 * or unsynced batches, gates, unwritten frames, a queue's leases, delays or streams); 'no' while
 * its kind or state keeps it awake (a router on either side, ephemeral records, more on disk
 * than a wake should read: SLEEP_BYTES_MAX, TTL expiry under way: see ttlAwakeUntil) until a
 * later step changes it.
 */
export function dormantOf(inst: TopicInstance, stored: StoredFrames, now: number): DormantTopic | 'later' | 'no' {
  const c = inst.config;
  if (inst.recovery !== undefined || inst.routing || inst.applied || inst.provenance) return 'no';
  // Ephemeral records live only in memory.
  if (c.durability === 'ephemeral' || inst.holdsUnwritten) return 'no';
  const files = wakeReads(inst, stored.packedWritten);
  if (files === undefined) return 'no';
  if (ttlSleepAt(inst, now) !== undefined) return 'no';
  if (inst.pending.length > 0 || inst.unsynced.length > 0 || inst.gates.length > 0 || inst.floorsDirty || inst.head !== inst.assigned)
    return 'later';
  // A sealed segment wholly below the first live seq waits for a checkpoint to reclaim it, and
  // checkpoints reclaim only awake topics: asleep, its file or pack runs would stay.
  const segs = inst.segment.firstSeqs;
  const k = inst.segment.reclaimed;
  if (k < segs.length - 1 && segs[k + 1]! <= inst.earliest()) return 'later';
  if (files.own ? !stored.ownSettled : stored.packedWritten !== inst.segment.size) return 'later';
  // A queue sleeps with no lease or delay under way: its record keeps the delivery counts and
  // the dead-letter counter (the part a snapshot keeps), and a wake loads them as recovery does.
  if (inst.queue && !inst.queue.quiet()) return 'later';
  const rec: DormantTopic = {
    id: inst.id,
    name: inst.name,
    config: inst.config,
    created_ms: inst.createdAtMs,
    reserved: Math.max(inst.reserve.durable, inst.assigned),
    head: inst.head,
    count: inst.count,
    bytes: inst.bytes,
    earliest: inst.earliest(),
    last_ts_ms: inst.lastTsMs,
    first_ts_ms: firstLiveTs(inst),
    last_write_ms: inst.lastWriteTsMs,
    last_read_ms: inst.lastReadTsMs,
    last_consumed_ms: inst.lastConsumedMs,
    packed_bytes: files.packed,
  };
  if (files.own) {
    rec.own_first_seq = inst.segment.firstSeq;
    rec.own_bytes = inst.segment.size;
  }
  // Only topics that lost or deleted records carry retention state (most records share one shape).
  const retention = retentionFields(inst);
  if (retention) {
    rec.evict_floor = retention.evict_floor;
    rec.ledger = retention.ledger;
    rec.dead_below = retention.dead_below;
    rec.deleted = retention.deleted;
  }
  if (inst.queue) rec.queue = queuePart(inst.queue);
  return rec;
}

/**
 * What a wake of the topic would read back (the segments a restart would index, as recovery does:
 * its packed segment unless reclaimed, then its own files not reclaimed), or undefined when that
 * is more than SLEEP_BYTES_MAX or more than one own file. `packed`: the packed bytes to read.
 */
function wakeReads(inst: TopicInstance, packedWritten: number): { packed: number; own: boolean } | undefined {
  const seg = inst.segment;
  // The active segment is the packed one: it alone holds the topic's frames.
  if (seg.ordinal === 0 && seg.packed) return seg.size <= SLEEP_BYTES_MAX ? { packed: seg.size, own: false } : undefined;
  // Own files: the active one must be the only one not reclaimed (a packed first segment may
  // still live before it, whole in its pack since the topic rolled over).
  const packedLive = seg.packed && seg.reclaimed === 0;
  const firstOwn = seg.packed ? Math.max(1, seg.reclaimed) : seg.reclaimed;
  if (seg.ordinal !== firstOwn) return undefined;
  const packed = packedLive ? Math.max(0, packedWritten) : 0;
  return packed + seg.size <= SLEEP_BYTES_MAX ? { packed, own: true } : undefined;
}

/**
 * TTL expiry is lazy (a request expires records; lists and metrics count as if it had), and a
 * sleeping topic's record knows the $ts of its first live record and the last $ts, not those
 * between. So a topic whose expiry has begun and not ended (or begins within TTL_WAKE_AHEAD_MS)
 * stays awake: returns the time after which every live record has expired (it may sleep then), or
 * undefined when it may sleep now (no TTL, no records, all expired, or none expiring soon).
 */
export function ttlAwakeUntil(ttlMs: number, count: number, firstTs: number, lastTs: number, now: number): number | undefined {
  if (!expiresInSteps(ttlMs, count, firstTs, lastTs, now)) return undefined;
  return now - firstTs > ttlMs - TTL_WAKE_AHEAD_MS ? lastTs + ttlMs + 1 : undefined;
}

/**
 * Whether live records are still to expire in more than one step: TTL, records of two $ts or
 * more, not all expired. Records that share one $ts (a topic written once, the usual
 * many-topics case) expire together, from none to all, which a record's figures follow.
 */
function expiresInSteps(ttlMs: number, count: number, firstTs: number, lastTs: number, now: number): boolean {
  return ttlMs > 0 && count > 0 && firstTs < lastTs && now - lastTs <= ttlMs;
}

/**
 * When a topic going to sleep at `now` must wake (its first live record expires soon), or
 * undefined when never (expiresInSteps is false).
 */
export function ttlWakeAt(d: Pick<DormantTopic, 'config' | 'count' | 'first_ts_ms' | 'last_ts_ms'>, now: number): number | undefined {
  const ttl = d.config.ttl_ms;
  return expiresInSteps(ttl, d.count, d.first_ts_ms, d.last_ts_ms, now) ? d.first_ts_ms + ttl - TTL_WAKE_AHEAD_MS : undefined;
}

/** For an instance that may not sleep because its TTL expiry is under way: when it may (ttlAwakeUntil). */
export function ttlSleepAt(inst: TopicInstance, now: number): number | undefined {
  return ttlAwakeUntil(inst.config.ttl_ms, inst.count, firstLiveTs(inst), inst.lastTsMs, now);
}

/** The instance's first live record is past its TTL at `now` (an expiry step would remove it). */
export function ttlExpired(inst: TopicInstance, now: number): boolean {
  const ttl = inst.config.ttl_ms;
  return ttl > 0 && inst.count > 0 && now - firstLiveTs(inst) > ttl;
}

/** $ts of the instance's first live record, 0 when it holds none. */
function firstLiveTs(inst: TopicInstance): number {
  return inst.count > 0 ? inst.index.ts(inst.earliest()) : 0;
}

/**
 * A sleeping topic's count, bytes and earliest seq at `now`, as ttlView (topicState.ts) would give
 * them awake: all of it expired once its last record has (its woken instance expires them at its
 * next request). Expiry under way is never seen here while the wake ahead of it is on time.
 */
export function dormantFigures(
  d: Pick<DormantTopic, 'config' | 'count' | 'bytes' | 'earliest' | 'head' | 'last_ts_ms'>,
  now: number,
): { count: number; bytes: number; earliest: number } {
  const ttl = d.config.ttl_ms;
  if (ttl > 0 && d.count > 0 && now - d.last_ts_ms > ttl) return { count: 0, bytes: 0, earliest: d.head + 1 };
  return { count: d.count, bytes: d.bytes, earliest: d.earliest };
}

/** The snapshot part inside a sleeping topic's record (`reserved`: the ceiling to record, by default its own). */
export function partOf(d: DormantTopic, reserved = d.reserved): TopicPart {
  const part: TopicPart = { id: d.id, name: d.name, config: d.config, created_ms: d.created_ms, reserved };
  if (d.evict_floor !== undefined)
    Object.assign(part, { evict_floor: d.evict_floor, ledger: d.ledger, dead_below: d.dead_below, deleted: d.deleted });
  if (d.queue !== undefined) part.queue = d.queue;
  return part;
}

export function dormantSummary(d: DormantTopic, now: number): TopicSummary {
  const v = dormantFigures(d, now);
  return {
    topic: d.name,
    head_seq: d.head,
    earliest_seq: v.earliest,
    count: v.count,
    bytes: v.bytes,
    durable: d.config.durable,
    effective_priority: priorityOf(d.config, d.last_consumed_ms, now),
  };
}

export function dormantStats(d: DormantTopic, now: number): TopicStats {
  const v = dormantFigures(d, now);
  const s: TopicStats = {
    topic: d.name,
    type: d.config.type,
    durability: d.config.durability,
    head_seq: d.head,
    earliest_seq: v.earliest,
    count: v.count,
    bytes: v.bytes,
  };
  // A sleeping queue holds no lease or delay: every live job is ready, the oldest is the first.
  if (d.config.type === 'queue')
    s.queue = {
      ready: v.count,
      in_flight: 0,
      dead_lettered: d.queue?.dead_lettered ?? 0,
      oldest_ready_age_ms: v.count > 0 ? Math.max(0, now - d.first_ts_ms) : null,
    };
  return s;
}

export function addDormantStats(
  t: StatsTotals,
  d: Pick<DormantTopic, 'config' | 'count' | 'bytes' | 'earliest' | 'head' | 'last_ts_ms'>,
  now: number,
): void {
  const v = dormantFigures(d, now);
  t.topics++;
  t.byClass[d.config.durability]++;
  t.records += v.count;
  t.bytes += v.bytes;
  if (d.config.type === 'queue') t.queueTopics++;
}
