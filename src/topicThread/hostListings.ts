// The listings of a topic worker's topics, awake and asleep: list pages, touches, watch
// watermarks, priorities, metrics stats and the audit counts (docs/API.md "GET /v0/topics",
// docs/ARCHITECTURE.md "Many topics"). Runs on the topic worker thread; ActorHost owns the
// actors and the sleeping topics, this reads them (a touch or a metrics sweep is an input to
// the actor, through the host).
import type { Clock } from '../core/clock.js';
import type { SortedNames } from '../core/columns/sortedNames.js';
import { emptyTotals, type TopicStats, type TopicSummary, type WorkerStats } from '../protocol/messages/rpc.js';
import type { RouterStats } from '../protocol/messages/router.js';
import type { TopicActor } from '../actors/topic/topicActor.js';
import type { ActorInput } from '../actors/topic/inputs.js';
import { addDormantStats, dormantStats, dormantSummary } from '../actors/topic/dormant.js';
import { priorityOf } from '../actors/topic/topicState.js';
import type { Dormancy } from './dormancy.js';
import type { WorkerCheckpoints } from './checkpointStep.js';
import type { WorkerCompaction } from './compaction.js';

/** What the listings read of the host. */
export interface ListedHost {
  readonly actorsByName: ReadonlyMap<string, TopicActor>;
  readonly names: SortedNames;
  readonly dormancy: Dormancy;
  readonly clock: Clock;
  readonly checkpoints: WorkerCheckpoints;
  readonly compaction: WorkerCompaction;
  input(actor: TopicActor, input: ActorInput): void;
}

export class HostListings {
  constructor(private readonly host: ListedHost) {}

  /** Awake actors with a live topic, O(topics): for tests and audits only. */
  liveActorCount(): number {
    let n = 0;
    for (const a of this.host.actorsByName.values()) if (a.current) n++;
    return n;
  }

  /** Actors with no live topic kept for their lease counter (a deleted queue's: ids stay unique per boot). */
  leaseKeptActorCount(): number {
    let n = 0;
    for (const a of this.host.actorsByName.values()) if (!a.current && a.issuedLeases) n++;
    return n;
  }

  /** The same figure summed over every actor, O(topics): for tests and audits only. */
  liveBytesSummed(): number {
    let n = 0;
    for (const a of this.host.actorsByName.values()) n += a.current?.bytes ?? 0;
    this.host.dormancy.sleeping.forEach((d) => (n += d.bytes));
    return n;
  }

  /** A page of topics above `after` with `prefix`, in name order: O(log n + page), no sort. */
  list(prefix: string, after: string, limit: number): TopicSummary[] {
    const out: TopicSummary[] = [];
    if (limit <= 0) return out;
    const now = this.host.clock.now();
    this.host.names.forEachFrom(after, prefix, (n) => {
      const s = this.summaryOf(n, now);
      if (s) out.push(s);
      return out.length < limit;
    });
    return out;
  }

  /** A topic's list summary, awake or sleeping, or undefined when absent. */
  private summaryOf(name: string, now: number): TopicSummary | undefined {
    const a = this.host.actorsByName.get(name);
    if (a) return a.summary(now);
    const d = this.host.dormancy.get(name);
    return d ? dormantSummary(d, now) : undefined;
  }

  /** Topics whose effective priority is not 0, as [name, priority] (seeds main's priority book). */
  priorities(): [string, number][] {
    const out: [string, number][] = [];
    const now = this.host.clock.now();
    for (const a of this.host.actorsByName.values()) {
      const p = a.priority(now);
      if (p !== 0) out.push([a.name, p]);
    }
    this.host.dormancy.sleeping.forEach((d) => {
      const p = priorityOf(d.config, d.last_consumed_ms, now);
      if (p !== 0) out.push([d.name, p]);
    });
    return out;
  }

  /** Head and earliest seq of each named topic (null when absent), for a watch POST. */
  watermarks(names: string[]): ({ head: number; earliest: number } | null)[] {
    const now = this.host.clock.now();
    return names.map((n) => {
      const s = this.summaryOf(n, now);
      return s ? { head: s.head_seq, earliest: s.earliest_seq } : null;
    });
  }

  /**
   * The instance id of each named topic, awake or sleeping (null when absent): the router
   * registry stores them with a router and checks them at start (docs/FORMAT.md "Router definitions").
   */
  instanceIds(names: string[]): (number | null)[] {
    return names.map((n) => {
      const a = this.host.actorsByName.get(n);
      if (a) return a.current?.id ?? null;
      return this.host.dormancy.get(n)?.id ?? null;
    });
  }

  /** Records a consumption on each named topic (a list page with touch=true), then re-reports them. */
  touch(names: string[]): TopicSummary[] {
    const out: TopicSummary[] = [];
    const now = this.host.clock.now();
    for (const n of names) {
      const a = this.host.actorsByName.get(n);
      if (a) {
        this.host.input(a, { k: 'consumed' });
      } else {
        // A sleeping topic's record takes the consumption; its wake input carries it (traced there).
        this.host.dormancy.touch(n, now);
      }
      const s = this.summaryOf(n, now);
      if (s) out.push(s);
    }
    return out;
  }

  /**
   * Metrics figures: totals over every topic (no per-topic object is made for them), the stats
   * of the first `firstMax` topics by name (main keeps the first series over all workers) and
   * of every router. One pass over the actors; queues expire leases first, as a traced step.
   */
  stats(firstMax: number): WorkerStats {
    const totals = emptyTotals();
    const routers: RouterStats[] = [];
    for (const a of this.host.actorsByName.values()) {
      // Only a queue with leases or delays has anything to expire: a step on a quiet one would
      // count as use and keep it from sleeping while metrics are scraped.
      if (a.current?.queue?.table.holdsDeadlines()) this.host.input(a, { k: 'sweep' });
      a.addStats(totals, routers, this.host.clock.now());
    }
    const now = this.host.clock.now();
    this.host.dormancy.sleeping.forEach((d) => addDormantStats(totals, d, now));
    totals.actors = this.host.actorsByName.size;
    totals.sleeping = this.host.dormancy.sleepingCount;
    totals.keptLineBytes = this.host.checkpoints.lines.bytes;
    const c = this.host.compaction.stats;
    totals.compactBytesReclaimed = c.bytesReclaimed;
    totals.compactSegmentsRewritten = c.segmentsRewritten;
    totals.compactLiveBytes = c.liveBytes;
    totals.compactStoredBytes = c.storedBytes;
    const first: TopicStats[] = [];
    if (firstMax > 0) {
      this.host.names.forEachFrom('', '', (n) => {
        const a = this.host.actorsByName.get(n);
        const d = a ? undefined : this.host.dormancy.get(n);
        const s = a ? a.stats(now) : d ? dormantStats(d, now) : undefined;
        if (s) first.push(s);
        return first.length < firstMax;
      });
    }
    return { totals, first, routers };
  }
}
