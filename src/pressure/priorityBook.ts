// Effective priority of each topic as the HTTP thread sees it (docs/API.md "GET /v0/topics/:topic"), for the pressure
// gate, which must order requests before they reach a worker. Pure: time comes in as arguments.
//
// Decision: main keeps its own small copy instead of asking the owning actor per request (a
// round trip is exactly what pressure cannot afford). It learns `priority` / `auto_priority` from
// every topic PUT answer and from the topic list at boot, and consumption from the routes that
// consume (diff, state with touch, list with touch, watch POST, each watch delivery pass). Recency clocks
// are not persisted (docs/API.md "GET /v0/topics/:topic"), so after a restart only manual priorities are known, as in the actor.
import { LRUCache } from 'lru-cache';

const AUTO_WINDOW_MS = 300_000;
const AUTO_HALF_LIFE_MS = 30_000;
const AUTO_PEAK = 500;

interface Entry {
  priority: number | null;
  auto: boolean;
  consumedAtMs: number | null;
}

export class PriorityBook {
  private readonly entries: LRUCache<string, Entry>;

  constructor(maxTopics: number) {
    // Bounded by count through maxSize (every entry has size 1), not `max`: with `max` the cache
    // allocates all its slots up front, ~130-260 ms of the boot before recovery at a million.
    this.entries = new LRUCache({ maxSize: Math.max(1024, Math.min(maxTopics || 1_000_000, 1_000_000)), sizeCalculation: () => 1 });
  }

  private entry(topic: string): Entry {
    let e = this.entries.get(topic);
    if (!e) this.entries.set(topic, (e = { priority: null, auto: true, consumedAtMs: null }));
    return e;
  }

  configured(topic: string, priority: number | null, auto: boolean): void {
    const e = this.entry(topic);
    e.priority = priority;
    e.auto = auto;
  }

  consumed(topic: string, nowMs: number): void {
    this.entry(topic).consumedAtMs = nowMs;
  }

  forget(topic: string): void {
    this.entries.delete(topic);
  }

  /** effective_priority (docs/API.md "GET /v0/topics/:topic"): manual, else auto from recency of consumption, else 0. */
  effective(topic: string, nowMs: number): number {
    const e = this.entries.peek(topic);
    if (!e) return 0;
    if (e.priority !== null) return e.priority;
    if (!e.auto || e.consumedAtMs === null) return 0;
    const idle = nowMs - e.consumedAtMs;
    if (idle >= AUTO_WINDOW_MS) return 0;
    return Math.round(AUTO_PEAK * 2 ** (-Math.max(0, idle) / AUTO_HALF_LIFE_MS));
  }
}
