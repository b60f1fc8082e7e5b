// Read-only reports of a topic instance: the topic-state body (docs/API.md "GET /v0/topics/:topic"), list summaries
// (docs/API.md "GET /v0/topics"), metrics stats, and the effective priority. Pure functions of the instance and a time.
import type { StatsTotals, TopicStats } from '../../protocol/messages/rpc.js';
import type { TopicState, TopicSummary } from '../../protocol/wire.js';
import type { RouterStats } from '../../protocol/messages/router.js';
import type { TopicInstance } from './instance.js';
import type { TopicConfig } from '../../protocol/topicConfig.js';
import { SlotState } from './seqIndex.js';
import { queueStats } from '../queue/queueSteps.js';
import { routerStats } from '../router/drain.js';

const AUTO_PRIORITY_MAX = 500;
const AUTO_PRIORITY_HALF_LIFE_MS = 30_000;
const AUTO_PRIORITY_WINDOW_MS = 300_000;

/** docs/API.md "GET /v0/topics/:topic": manual priority, else a decaying boost after the last consumption, else 0. */
export function effectivePriority(inst: TopicInstance, now: number): number {
  return priorityOf(inst.config, inst.lastConsumedMs, now);
}

/** docs/API.md "GET /v0/topics/:topic" from a config and the time of the last consumption (also for sleeping topics). */
export function priorityOf(config: TopicConfig, lastConsumedMs: number | null, now: number): number {
  if (config.priority !== null) return config.priority;
  if (!config.auto_priority || lastConsumedMs === null) return 0;
  const idle = now - lastConsumedMs;
  if (idle >= AUTO_PRIORITY_WINDOW_MS) return 0;
  return Math.round(AUTO_PRIORITY_MAX * Math.pow(2, -idle / AUTO_PRIORITY_HALF_LIFE_MS));
}

export function topicStateBody(inst: TopicInstance, now: number): TopicState {
  return {
    topic: inst.name,
    type: inst.config.type,
    head_seq: inst.head,
    earliest_seq: inst.earliest(),
    next_seq: inst.head + 1,
    count: inst.count,
    bytes: inst.bytes,
    config: inst.config,
    effective_priority: effectivePriority(inst, now),
    last_write_ts: inst.lastWriteTsMs,
    last_read_ts: inst.lastReadTsMs,
    ...(inst.queue
      ? { queue: { ready: inst.queue.ready(inst.count), in_flight: inst.queue.inFlight, dead_lettered: inst.queue.table.deadLettered } }
      : {}),
  };
}

/**
 * Counts as TTL would leave them at `now`, without changing state (lists and metrics are not
 * actor steps; the next request to the topic expires the records for real).
 */
export function ttlView(inst: TopicInstance, now: number): { count: number; bytes: number; earliest: number } {
  let count = inst.count;
  let bytes = inst.bytes;
  let s = inst.earliest();
  const ttl = inst.config.ttl_ms;
  if (ttl > 0) {
    for (; s <= inst.head && now - inst.index.ts(s) > ttl; s++) {
      if (inst.index.state(s) !== SlotState.LIVE) continue;
      count--;
      bytes -= inst.index.bytes(s);
    }
    s = inst.index.nextLive(s, inst.head);
  }
  return { count, bytes, earliest: s > inst.head ? inst.head + 1 : s };
}

export function topicSummary(inst: TopicInstance, now: number): TopicSummary {
  const v = ttlView(inst, now);
  return {
    topic: inst.name,
    head_seq: inst.head,
    earliest_seq: v.earliest,
    count: v.count,
    bytes: v.bytes,
    durable: inst.config.durable,
    effective_priority: effectivePriority(inst, now),
  };
}

/** Adds the instance to a worker's metrics totals (and its routers to `routers`), as topicStats would report it. */
export function addTopicStats(t: StatsTotals, routers: RouterStats[], inst: TopicInstance, now: number): void {
  const v = ttlView(inst, now);
  t.topics++;
  t.byClass[inst.config.durability]++;
  t.records += v.count;
  t.bytes += v.bytes;
  if (inst.queue) {
    t.queueTopics++;
    t.leasesInFlight += inst.queue.inFlight;
  }
  if (inst.routing && inst.routing.forwarders.size > 0) routers.push(...routerStats(inst));
}

export function topicStats(inst: TopicInstance, now: number): TopicStats {
  const v = ttlView(inst, now);
  return {
    topic: inst.name,
    type: inst.config.type,
    durability: inst.config.durability,
    head_seq: inst.head,
    earliest_seq: v.earliest,
    count: v.count,
    bytes: v.bytes,
    ...(inst.queue ? { queue: queueStats(inst, inst.queue, v.count, now) } : {}),
    ...(inst.routing && inst.routing.forwarders.size > 0 ? { routers: routerStats(inst) } : {}),
  };
}
