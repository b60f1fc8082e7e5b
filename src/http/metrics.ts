// /v0/metrics (docs/API.md "Health, readiness, metrics"): Prometheus text via prom-client, or JSON with Accept
// application/json. Topic figures come from the workers over rpc when scraped; request
// metrics (requestMetrics.ts) and histograms are counted as things happen, with a fixed size
// whether or not anyone scrapes. Default process and event-loop metrics come from prom-client.
// Prometheus conventions (docs/OPERATIONS.md "Metrics"): durations and ages in seconds with a
// `_seconds` suffix (measured in ms or µs, converted when rendered), anything that only grows a
// `counter` named `_total`, everything else a gauge.
import client from 'prom-client';
import { FixedHistogram, LabeledHistogram } from './fixedHistogram.js';
import { RequestMetrics } from './requestMetrics.js';
import { FSYNC_BUCKETS_US, GROUP_FRAMES_BUCKETS } from '../core/latencyBuckets.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import { emptyTotals, type StatsTotals, type TopicStats } from '../protocol/messages/rpc.js';
import type { RouterStats } from '../protocol/messages/router.js';
import type { WalStats } from '../wal/groupCommit.js';
import { storageStateName } from '../storage/storageState.js';
import { RouterMetrics, sortRouterStats } from './routerMetrics.js';

const TOPIC_SERIES_MAX = 1000;
/** Per-topic families, reset before every scrape so deleted topics disappear. */
const PER_TOPIC = [
  'spool_topic_head_seq',
  'spool_topic_earliest_seq',
  'spool_topic_records_live',
  'spool_topic_bytes_live',
  'spool_topic_queue_ready',
  'spool_topic_queue_in_flight',
  'spool_topic_queue_oldest_ready_age_seconds',
  'spool_topic_watch_lag',
];

const CLASSES = ['ephemeral', 'memory', 'disk', 'fsync'] as const;

/**
 * One scrape's figures. Workers send totals and only their first TOPIC_SERIES_MAX topics by
 * name, so a scrape costs the same whether there are a thousand topics or a million.
 */
export interface Snapshot {
  totals: StatsTotals;
  /** The first TOPIC_SERIES_MAX topics by name over all workers. */
  topics: TopicStats[];
  routers: RouterStats[];
  wal: WalStats | undefined;
}

const byTopic = (a: TopicStats, b: TopicStats) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0);

function addTotals(sum: StatsTotals, t: StatsTotals): void {
  sum.topics += t.topics;
  for (const c of CLASSES) sum.byClass[c] += t.byClass[c];
  sum.records += t.records;
  sum.bytes += t.bytes;
  sum.queueTopics += t.queueTopics;
  sum.leasesInFlight += t.leasesInFlight;
  sum.actors += t.actors;
  sum.sleeping += t.sleeping;
  sum.keptLineBytes += t.keptLineBytes;
  sum.compactBytesReclaimed += t.compactBytesReclaimed;
  sum.compactSegmentsRewritten += t.compactSegmentsRewritten;
  sum.compactLiveBytes += t.compactLiveBytes;
  sum.compactStoredBytes += t.compactStoredBytes;
}

/** Live share of the sealed segments compaction last looked at (1 when it looked at none). */
function liveRatio(t: StatsTotals): number {
  return t.compactStoredBytes > 0 ? Math.round((t.compactLiveBytes / t.compactStoredBytes) * 1000) / 1000 : 1;
}

/** The gauges, set per scrape from the workers' figures and main's own counts. */
const GAUGES: readonly (readonly [name: string, help: string, labelNames?: readonly string[]])[] = [
  ['spool_topics', 'Live topics.'],
  ['spool_topics_by_class', 'Topics per durability class.', ['class']],
  ['spool_routers', 'Routers.'],
  ['spool_records_live', 'Live records, all topics.'],
  ['spool_bytes_live', 'Live payload bytes, all topics.'],
  ['spool_queue_topics', 'Topics of type queue.'],
  ['spool_topic_actors', 'Topic actors held by the workers: awake topics plus names with a request or frame still pending.'],
  ['spool_topics_sleeping', 'Live topics asleep: kept as a small record, woken by their next request.'],
  [
    'spool_compaction_live_ratio',
    "Live share of the sealed segments compaction's last look covered (topics with dead records; 1 when none).",
  ],
  [
    'spool_checkpoint_kept_bytes',
    "Memory holding sleeping topics' snapshot lines between checkpoints (re-encoded only when their block of rows changes).",
  ],
  ['spool_queue_leases_in_flight', 'Active leases, all queues.'],
  ['spool_sse_connections', 'Open watch and /work streams.'],
  ['spool_long_polls_waiting', 'Diffs with wait_ms not answered yet (parked, or on their way to or from their worker).'],
  ['spool_watch_sessions', 'Watch sessions in the registry.'],
  ['spool_ready', '1 when ready, else 0.'],
  [
    'spool_storage_state',
    'Storage: 0 ok, 1 disk full (writes refused with 429 disk_space until space returns), 2 failed (a write or fsync failed; writes refused until a restart).',
  ],
  ['spool_storage_writable', '1 when writes are accepted (storage ok), else 0.'],
  ['spool_recovery_progress', 'Recovery progress, 0 to 1; 1 once ready.'],
  ['spool_uptime_seconds', 'Process uptime in seconds.'],
  // The interface's own name (its metric list), beside the Prometheus-style one above.
  ['spool_uptime_ms', "Process uptime in milliseconds (the interface's name; spool_uptime_seconds is the same)."],
  ['spool_topic_head_seq', 'Head seq of each topic.', ['topic']],
  ['spool_topic_earliest_seq', 'Earliest live seq of each topic.', ['topic']],
  ['spool_topic_records_live', 'Live records of each topic.', ['topic']],
  ['spool_topic_bytes_live', 'Live payload bytes of each topic.', ['topic']],
  ['spool_topic_queue_ready', 'Claimable jobs of each queue topic.', ['topic']],
  ['spool_topic_queue_in_flight', 'Live leases of each queue topic.', ['topic']],
  [
    'spool_topic_queue_oldest_ready_age_seconds',
    'Age in seconds (by $ts) of the oldest claimable job of each queue topic; absent when none is ready.',
    ['topic'],
  ],
  ['spool_topic_watch_lag', 'Largest lag (head − cursor, in seqs) of the open watch streams following each topic.', ['topic']],
  ['spool_topic_metrics_truncated', '1 when per-topic series were cut at 1000 topics.'],
  ['spool_wal_queue_depth', 'Submissions waiting for the WAL writer at the last flush.'],
];

export class Metrics {
  readonly registry = new client.Registry();
  private readonly started = Date.now();
  private readonly g: Record<string, client.Gauge<string>> = {};
  private readonly walCounters: Record<string, client.Counter<string>> = {};
  /** Compaction's totals since start, summed over the workers per scrape. */
  private readonly compactCounters: Record<string, client.Counter<string>> = {};
  /** Jobs dead-lettered per queue topic: a count kept by the queue, copied in per scrape. */
  private readonly deadLettered: client.Counter<string>;
  readonly fsyncLatency: FixedHistogram;
  /** The same counts under the interface's own name and unit (microseconds). */
  private readonly fsyncLatencyUs: FixedHistogram;
  readonly groupFrames: FixedHistogram;
  readonly appendLatency: LabeledHistogram;
  readonly requests: RequestMetrics;
  readonly diffLatency: LabeledHistogram;
  /** Long-polls (diffs with wait_ms) sent to their worker and not yet answered; the diff route counts them. */
  longPollsWaiting = 0;
  readonly watchLatency: client.Histogram<string>;
  private readonly routerMetrics: RouterMetrics;
  /** More top-level keys of the JSON form, computed per scrape (e.g. `pressure`). */
  readonly jsonExtras: Record<string, () => unknown> = {};

  constructor(
    private readonly sup: Supervisor,
    private readonly hub: { readonly registry: { readonly size: number }; watchLag(): Map<string, number> },
    /** Open SSE streams, watch and `/work`. */
    private readonly sse: { readonly open: number },
  ) {
    for (const [name, help, labelNames = []] of GAUGES) {
      this.g[name] = new client.Gauge({ name, help, labelNames: [...labelNames], registers: [this.registry] });
    }
    for (const [name, help] of [
      [
        'spool_compaction_bytes_reclaimed_total',
        'Segment file bytes given back by compaction since start (docs/ARCHITECTURE.md "Compaction").',
      ],
      [
        'spool_compaction_segments_rewritten_total',
        'Sealed segments compaction rewrote (or unlinked, when nothing of them lived) since start.',
      ],
    ] as const) {
      this.compactCounters[name] = new client.Counter({ name, help, registers: [this.registry] });
    }
    this.deadLettered = new client.Counter({
      name: 'spool_topic_queue_dead_lettered_total',
      help: 'Jobs moved to the dead-letter topic, per queue topic (since it was created).',
      labelNames: ['topic'],
      registers: [this.registry],
    });
    for (const [name, help] of [
      ['spool_wal_frames_total', 'WAL submissions written since start.'],
      ['spool_wal_batches_total', 'WAL batches written since start.'],
      ['spool_wal_fsyncs_total', 'WAL fdatasync calls since start.'],
      ['spool_wal_bytes_written_total', 'WAL bytes written since start.'],
    ] as const) {
      this.walCounters[name] = new client.Counter({ name, help, registers: [this.registry] });
    }
    this.fsyncLatency = new FixedHistogram(
      'spool_wal_fsync_latency_seconds',
      'Group-commit fsync latency in seconds.',
      FSYNC_BUCKETS_US,
      this.registry,
      1e6,
    );
    this.fsyncLatencyUs = new FixedHistogram(
      'spool_wal_fsync_latency_us',
      "Group-commit fsync latency in microseconds (the interface's name; spool_wal_fsync_latency_seconds is the same).",
      FSYNC_BUCKETS_US,
      this.registry,
    );
    this.groupFrames = new FixedHistogram(
      'spool_wal_group_frames',
      'Frames per WAL write (the size of each group commit).',
      GROUP_FRAMES_BUCKETS,
      this.registry,
    );
    this.routerMetrics = new RouterMetrics(this.registry);
    // Observed on every append and diff: LabeledHistogram (no label hashing per observation).
    // Bounds in ms, as observed; rendered in seconds.
    this.appendLatency = new LabeledHistogram(
      'spool_append_latency_seconds',
      'Append request latency (server_total_ms) in seconds, by durability class.',
      'durability',
      [0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000],
      this.registry,
      1000,
    );
    this.diffLatency = new LabeledHistogram(
      'spool_diff_latency_seconds',
      'Diff request latency in seconds; long_poll="true" when wait_ms was given (includes the wait).',
      'long_poll',
      [0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000, 5000, 30000],
      this.registry,
      1000,
    );
    this.watchLatency = new client.Histogram({
      name: 'spool_watch_delivery_latency_seconds',
      help: 'Age of each batch pushed to watch streams (now − its first record $ts) in seconds.',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers: [this.registry],
    });
    this.requests = new RequestMetrics(this.registry);
    // Its event-loop-delay histogram samples every 100 ms, not every 10: a 10 ms timer woke the idle
    // HTTP thread 100 times a second (docs/PERFORMANCE.md "An idle server"); the pressure gate's
    // own lag p99 (spool_pressure_http_lag_p99_seconds) keeps the fine one while the loop works.
    client.collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
  }

  /** For the shutdown summary: requests answered, 4xx and 5xx replies. */
  requestTotals(): Record<string, number> {
    return { ...this.requests.totals };
  }

  async snapshot(): Promise<Snapshot> {
    if (this.sup.lifecycle === 'recovering') return { totals: emptyTotals(), topics: [], routers: [], wal: undefined };
    const [parts, wal] = await Promise.all([Promise.all(this.sup.workers.map((w) => w.stats(TOPIC_SERIES_MAX))), this.sup.walStats()]);
    const totals = emptyTotals();
    for (const p of parts) addTotals(totals, p.totals);
    const topics = parts
      .flatMap((p) => p.first)
      .sort(byTopic)
      .slice(0, TOPIC_SERIES_MAX);
    return { totals, topics, routers: sortRouterStats(parts.flatMap((p) => p.routers)), wal };
  }

  private walTotals = { frames: 0, batches: 0, fsyncs: 0, bytesWritten: 0 };

  private absorb(s: Snapshot): void {
    if (!s.wal) return;
    this.fsyncLatency.update(s.wal.fsyncLatencyUs);
    this.fsyncLatencyUs.update(s.wal.fsyncLatencyUs);
    this.groupFrames.update(s.wal.groupFrames);
    this.walTotals = { frames: s.wal.frames, batches: s.wal.batches, fsyncs: s.wal.fsyncs, bytesWritten: s.wal.bytesWritten };
  }

  async prometheus(): Promise<string> {
    const s = await this.snapshot();
    this.absorb(s);
    const g = this.g;
    for (const k of PER_TOPIC) g[k]!.reset();
    this.deadLettered.reset();
    g.spool_topics!.set(s.totals.topics);
    for (const c of CLASSES) g.spool_topics_by_class!.set({ class: c }, s.totals.byClass[c]);
    g.spool_routers!.set(this.sup.routers.size);
    this.routerMetrics.set(s.routers);
    g.spool_records_live!.set(s.totals.records);
    g.spool_bytes_live!.set(s.totals.bytes);
    g.spool_queue_topics!.set(s.totals.queueTopics);
    g.spool_topic_actors!.set(s.totals.actors);
    g.spool_topics_sleeping!.set(s.totals.sleeping);
    g.spool_checkpoint_kept_bytes!.set(s.totals.keptLineBytes);
    g.spool_compaction_live_ratio!.set(liveRatio(s.totals));
    g.spool_queue_leases_in_flight!.set(s.totals.leasesInFlight);
    g.spool_sse_connections!.set(this.sse.open);
    g.spool_long_polls_waiting!.set(this.longPollsWaiting);
    g.spool_watch_sessions!.set(this.hub.registry.size);
    g.spool_ready!.set(this.sup.lifecycle === 'ready' ? 1 : 0);
    g.spool_storage_state!.set(this.sup.storageState);
    g.spool_storage_writable!.set(this.sup.storageState === 0 ? 1 : 0);
    g.spool_recovery_progress!.set(this.sup.replayProgress);
    const uptimeMs = Date.now() - this.started;
    g.spool_uptime_seconds!.set(uptimeMs / 1000);
    g.spool_uptime_ms!.set(uptimeMs);
    for (const t of s.topics) {
      g.spool_topic_head_seq!.set({ topic: t.topic }, t.head_seq);
      g.spool_topic_earliest_seq!.set({ topic: t.topic }, t.earliest_seq);
      g.spool_topic_records_live!.set({ topic: t.topic }, t.count);
      g.spool_topic_bytes_live!.set({ topic: t.topic }, t.bytes);
      if (t.queue) {
        g.spool_topic_queue_ready!.set({ topic: t.topic }, t.queue.ready);
        g.spool_topic_queue_in_flight!.set({ topic: t.topic }, t.queue.in_flight);
        this.deadLettered.inc({ topic: t.topic }, t.queue.dead_lettered);
        if (t.queue.oldest_ready_age_ms !== null)
          g.spool_topic_queue_oldest_ready_age_seconds!.set({ topic: t.topic }, t.queue.oldest_ready_age_ms / 1000);
      }
    }
    let lagSeries = 0;
    for (const [topic, lag] of this.hub.watchLag()) if (lagSeries++ < TOPIC_SERIES_MAX) g.spool_topic_watch_lag!.set({ topic }, lag);
    g.spool_topic_metrics_truncated!.set(s.totals.topics > TOPIC_SERIES_MAX ? 1 : 0);
    g.spool_wal_queue_depth!.set(s.wal?.queueDepth ?? 0);
    const totals: Record<string, number> = {
      spool_wal_frames_total: this.walTotals.frames,
      spool_wal_batches_total: this.walTotals.batches,
      spool_wal_fsyncs_total: this.walTotals.fsyncs,
      spool_wal_bytes_written_total: this.walTotals.bytesWritten,
    };
    for (const [name, v] of Object.entries(totals)) {
      this.walCounters[name]!.reset();
      this.walCounters[name]!.inc(v);
    }
    const compacted: Record<string, number> = {
      spool_compaction_bytes_reclaimed_total: s.totals.compactBytesReclaimed,
      spool_compaction_segments_rewritten_total: s.totals.compactSegmentsRewritten,
    };
    for (const [name, v] of Object.entries(compacted)) {
      this.compactCounters[name]!.reset();
      this.compactCounters[name]!.inc(v);
    }
    return this.registry.metrics();
  }

  async json(): Promise<Record<string, unknown>> {
    const s = await this.snapshot();
    this.absorb(s);
    const t = s.totals;
    return {
      topics: t.topics,
      topics_ephemeral: t.byClass.ephemeral,
      topics_memory: t.byClass.memory,
      topics_disk: t.byClass.disk,
      topics_fsync: t.byClass.fsync,
      routers: this.sup.routers.size,
      router_stats: s.routers,
      records_live: t.records,
      bytes_live: t.bytes,
      queue_topics: t.queueTopics,
      queue_leases_in_flight: t.leasesInFlight,
      sse_connections: this.sse.open,
      watch_sessions: this.hub.registry.size,
      ready: this.sup.lifecycle === 'ready',
      storage: storageStateName(this.sup.storageState),
      replay_progress: this.sup.replayProgress,
      uptime_ms: Date.now() - this.started,
      http: this.requestTotals(),
      compaction: { bytes_reclaimed: t.compactBytesReclaimed, segments_rewritten: t.compactSegmentsRewritten, live_ratio: liveRatio(t) },
      wal: {
        frames: this.walTotals.frames,
        batches: this.walTotals.batches,
        fsyncs: this.walTotals.fsyncs,
        bytes_written: this.walTotals.bytesWritten,
      },
      ...Object.fromEntries(Object.entries(this.jsonExtras).map(([k, f]) => [k, f()])),
    };
  }
}
