// Dormant topics (issue 15, docs/ARCHITECTURE.md "Dormant topics"). A topic that is quiet and
// holds nothing a restart would not rebuild (its records all in the pack files, nothing in
// flight, no queue, router, TTL or parked read) can be kept by its worker as one DormantTopic
// record instead of an actor, an instance and a seq index: the worker's housekeeping puts such
// topics to sleep, and the next request of the name wakes the topic again with the inputs
// recovery uses ('wake', then its packed frames, then 'finish'), so a trace replays a wake
// exactly. The record has the snapshot part's shape plus the watermarks a list, a state read or
// a wake needs without the index.
// Pure: what may sleep, the record, and the reports of a sleeping topic.
import type { StatsTotals, TopicStats, TopicSummary } from '../../core/messages/rpc.js';
import type { DormantTopic, TopicPart } from '../../storage/snapshot.js';
import type { TopicInstance } from './instance.js';
import { retentionFields } from './retention.js';
import { priorityOf } from './topicState.js';

export type { DormantTopic };

/**
 * A topic sleeps only while its packed segment is at most this large: a wake reads it all back
 * (and CRC-checks and indexes every frame), so this bounds a wake's cost as the pack threshold
 * did when it was 64 KiB. Larger packed topics stay awake, as topics with own files always do.
 */
export const SLEEP_PACKED_BYTES_MAX = 64 * 1024;

/**
 * Whether a topic may sleep: its record; 'later' while something is in flight (pending or unsynced
 * batches, gates, unwritten pack frames); 'no' while its kind or state keeps it awake (a queue, a
 * router on either side, TTL, ephemeral records, own segment files, a packed segment past
 * SLEEP_PACKED_BYTES_MAX) until a later step changes it.
 * `packedWritten`: the logical bytes of its packed segment already whole in a pack (PackMap).
 */
export function dormantOf(inst: TopicInstance, packedWritten: number): DormantTopic | 'later' | 'no' {
  const c = inst.config;
  if (inst.recovery !== undefined || inst.queue || inst.routing || inst.applied || inst.provenance) return 'no';
  // Ephemeral records live only in memory; TTL expiry is lazy (a sleeping topic would never expire).
  if (c.durability === 'ephemeral' || inst.holdsUnwritten || c.ttl_ms > 0) return 'no';
  const seg = inst.segment;
  if (!seg.packed || seg.ordinal !== 0 || seg.size > SLEEP_PACKED_BYTES_MAX) return 'no';
  if (inst.pending.length > 0 || inst.unsynced.length > 0 || inst.gates.length > 0 || inst.floorsDirty || inst.head !== inst.assigned) return 'later';
  if (packedWritten !== seg.size) return 'later';
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
    last_write_ms: inst.lastWriteTsMs,
    last_read_ms: inst.lastReadTsMs,
    last_consumed_ms: inst.lastConsumedMs,
    packed_bytes: seg.size,
  };
  // Only topics that lost or deleted records carry retention state (most records share one shape).
  const retention = retentionFields(inst);
  if (retention) {
    rec.evict_floor = retention.evict_floor;
    rec.ledger = retention.ledger;
    rec.dead_below = retention.dead_below;
    rec.deleted = retention.deleted;
  }
  return rec;
}

/** The snapshot part inside a sleeping topic's record (`reserved`: the ceiling to record, by default its own). */
export function partOf(d: DormantTopic, reserved = d.reserved): TopicPart {
  const part: TopicPart = { id: d.id, name: d.name, config: d.config, created_ms: d.created_ms, reserved };
  if (d.evict_floor !== undefined) Object.assign(part, { evict_floor: d.evict_floor, ledger: d.ledger, dead_below: d.dead_below, deleted: d.deleted });
  return part;
}

export function dormantSummary(d: DormantTopic, now: number): TopicSummary {
  return { topic: d.name, head_seq: d.head, earliest_seq: d.earliest, count: d.count, bytes: d.bytes, durable: d.config.durable, effective_priority: priorityOf(d.config, d.last_consumed_ms, now) };
}

export function dormantStats(d: DormantTopic): TopicStats {
  return { topic: d.name, type: d.config.type, durability: d.config.durability, head_seq: d.head, earliest_seq: d.earliest, count: d.count, bytes: d.bytes };
}

export function addDormantStats(t: StatsTotals, d: Pick<DormantTopic, 'config' | 'count' | 'bytes'>): void {
  t.topics++;
  t.byClass[d.config.durability]++;
  t.records += d.count;
  t.bytes += d.bytes;
}
