// SERVICE_* settings (README.md "Settings"), read once at process start on the main thread. The
// environment is first validated against the one schema in configSchema.ts: every problem is
// reported at once (SettingsError, exit 2), booleans are exactly 1/0/true/false.
import os from 'node:os';
import { validateEnv, type LOG_LEVELS } from './configSchema.js';

/**
 * After the grace, the connections still open are closed and the drain goes on (the WAL flush,
 * the final checkpoint); this is how much longer it may take before the process exits 1. Small,
 * so a grace set under a supervisor's stop timeout (the image's 8 s under Docker's 10) stays under it.
 */
export const DRAIN_AFTER_GRACE_MS = 1000;

export interface Settings {
  host: string;
  port: number;
  portFile: string | undefined;
  dataDir: string;
  apiKeys: string | undefined;
  allowInsecureNoAuth: boolean;
  probeAuth: boolean;
  maxBodyBytes: number;
  maxLimit: number;
  maxTopics: number;
  /** Router-count cap (docs/API.md "Limits"); 0 = unlimited. */
  maxRouters: number;
  workers: number;
  walSyncIntervalMs: number;
  walFileBytes: number;
  /** Zero-fill WAL files at creation (the space reserve and cheap fdatasyncs); on by default. */
  walPreallocate: boolean;
  walInflightBytes: number;
  checkpointMs: number;
  checkpointWalBytes: number;
  segmentCacheBytes: number;
  /**
   * Old-generation size (MiB) below which the topic worker threads' V8 heaps (and the WAL
   * thread's, started after them) skip full collections (V8's --initial-old-space-size, set
   * before they start; 0: V8's own sizing).
   */
  workerHeapFloorMb: number;
  segmentBytes: number;
  /** Segment files each worker keeps open for writing (least recently written closed first). */
  segmentOpenFiles: number;
  /** How long segment and pack frames may wait to share one write (0: written at once). */
  segmentWriteDelayMs: number;
  /** A topic's first segment lives in shared pack files until it would pass this size (0: never). */
  packBytes: number;
  /** A pack file is sealed (and a new one started) at about this size. */
  packFileBytes: number;
  /** A sealed segment whose live records take less than this % of it is compacted (0: never). */
  compactLivePercent: number;
  /** A compaction copies at most this many bytes of the old file a second (0: unpaced). */
  compactBytesPerSec: number;
  /** A quiet topic sleeps (a small record instead of an actor, docs/ARCHITECTURE.md "Dormant topics") after this long without a step (0: never). */
  topicSleepMs: number;
  /** Awake topics per worker at most: the least recently used beyond it sleep first (0: no bound). */
  topicsAwakeMax: number;
  /** Recovery keeps topics that were quiet at the last checkpoint asleep (false: every topic loads, every pack is scanned). */
  lazyRecovery: boolean;
  recoveryTruncate: boolean;
  shutdownGraceMs: number;
  /** How long a request's head and body may take to arrive (then 400, connection closed). */
  requestTimeoutMs: number;
  watchSessionTtlMs: number;
  maxWatchSessions: number;
  maxSseConnections: number;
  maxSseConnectionsPerKey: number;
  maxInflightPerKey: number;
  /** Live bytes over all topics (docs/API.md "Limits" max_total_bytes); 0 = no cap. */
  maxTotalBytes: number;
  /** docs/ARCHITECTURE.md "Admission" pressure: thresholds, the park bound and the scheduler under pressure. */
  pressureElu: number;
  pressureLagMs: number;
  pressureWalQueueBytes: number;
  pressureParkMs: number;
  pressureMaxParked: number;
  pressureInflight: number;
  pressureWindowMs: number;
  pressureAgingPerS: number;
  /** Pacing tick of SSE streams of low-priority topics under pressure. */
  pressurePaceMs: number;
  /** Test hook: pressure is always on, so ordering and shedding are deterministic. */
  pressureForce: boolean;
  traceDir: string | undefined;
  traceOutputs: boolean;
  /** Stamp every stage of a request (debug; GET /v0/debug/stages). */
  stageClock: boolean;
  traceTopics: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /** Test hook: recovery starts this much later, so the readiness gate can be observed. */
  testRecoveryDelayMs: number;
}

export class SettingsError extends Error {}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function bool(env: Env, name: string): boolean {
  const v = str(env, name);
  return v === '1' || v === 'true';
}

// validateEnv has checked every value against the schema (pattern, range) before this reads
// them (ints and fractions alike), so it only converts.
function num(env: Env, name: string, dflt: number): number {
  const v = str(env, name);
  return v === undefined ? dflt : Number(v.trim());
}

export function defaultWorkers(): number {
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.min(8, Math.max(1, cores - 1));
}

export function readSettings(env: Env = process.env): Settings {
  const problems = validateEnv(env);
  if (problems.length > 0) throw new SettingsError(problems.join('; '));
  return {
    host: str(env, 'SERVICE_HOST') ?? '127.0.0.1',
    port: num(env, 'SERVICE_PORT', 4000),
    portFile: str(env, 'SERVICE_PORT_FILE'),
    dataDir: str(env, 'SERVICE_DATA_DIR') ?? './data',
    apiKeys: str(env, 'SERVICE_API_KEYS'),
    allowInsecureNoAuth: bool(env, 'SERVICE_ALLOW_INSECURE_NO_AUTH'),
    probeAuth: bool(env, 'SERVICE_PROBE_AUTH'),
    maxBodyBytes: num(env, 'SERVICE_MAX_BODY_BYTES', 64 * 1024 * 1024),
    maxLimit: num(env, 'SERVICE_MAX_LIMIT', 1000),
    maxTopics: num(env, 'SERVICE_MAX_TOPICS', 100_000),
    maxRouters: num(env, 'SERVICE_MAX_ROUTERS', 10_000),
    workers: num(env, 'SERVICE_WORKERS', defaultWorkers()),
    walSyncIntervalMs: num(env, 'SERVICE_WAL_SYNC_INTERVAL_MS', 200),
    walFileBytes: num(env, 'SERVICE_WAL_FILE_BYTES', 64 * 1024 * 1024),
    walPreallocate: str(env, 'SERVICE_WAL_PREALLOCATE') === undefined ? true : bool(env, 'SERVICE_WAL_PREALLOCATE'),
    walInflightBytes: num(env, 'SERVICE_WAL_INFLIGHT_BYTES', 64 * 1024 * 1024),
    checkpointMs: num(env, 'SERVICE_CHECKPOINT_MS', 60_000),
    checkpointWalBytes: num(env, 'SERVICE_CHECKPOINT_WAL_BYTES', 256 * 1024 * 1024),
    segmentCacheBytes: num(env, 'SERVICE_SEGMENT_CACHE_BYTES', 128 * 1024 * 1024),
    workerHeapFloorMb: num(env, 'SERVICE_WORKER_HEAP_FLOOR_MB', 128),
    segmentBytes: num(env, 'SERVICE_SEGMENT_BYTES', 64 * 1024 * 1024),
    segmentOpenFiles: num(env, 'SERVICE_SEGMENT_OPEN_FILES', 1024),
    segmentWriteDelayMs: num(env, 'SERVICE_SEGMENT_WRITE_DELAY_MS', 5),
    packBytes: num(env, 'SERVICE_PACK_BYTES', 1024 * 1024),
    packFileBytes: num(env, 'SERVICE_PACK_FILE_BYTES', 16 * 1024 * 1024),
    compactLivePercent: num(env, 'SERVICE_COMPACT_LIVE_PERCENT', 50),
    compactBytesPerSec: num(env, 'SERVICE_COMPACT_BYTES_PER_SEC', 8 * 1024 * 1024),
    topicSleepMs: num(env, 'SERVICE_TOPIC_SLEEP_MS', 10_000),
    topicsAwakeMax: num(env, 'SERVICE_TOPICS_AWAKE', 10_000),
    lazyRecovery: str(env, 'SERVICE_LAZY_RECOVERY') === undefined ? true : bool(env, 'SERVICE_LAZY_RECOVERY'),
    recoveryTruncate: bool(env, 'SERVICE_RECOVERY_TRUNCATE'),
    shutdownGraceMs: num(env, 'SERVICE_SHUTDOWN_GRACE_MS', 10_000),
    requestTimeoutMs: num(env, 'SERVICE_REQUEST_TIMEOUT_MS', 300_000),
    watchSessionTtlMs: num(env, 'SERVICE_WATCH_SESSION_TTL_MS', 300_000),
    maxWatchSessions: num(env, 'SERVICE_MAX_WATCH_SESSIONS', 10_000),
    maxSseConnections: num(env, 'SERVICE_MAX_SSE_CONNECTIONS', 10_000),
    maxSseConnectionsPerKey: num(env, 'SERVICE_MAX_SSE_CONNECTIONS_PER_KEY', 1000),
    maxInflightPerKey: num(env, 'SERVICE_MAX_INFLIGHT_PER_KEY', 1000),
    maxTotalBytes: num(env, 'SERVICE_MAX_TOTAL_BYTES', 0),
    pressureElu: num(env, 'SERVICE_PRESSURE_ELU', 0.9),
    pressureLagMs: num(env, 'SERVICE_PRESSURE_LAG_MS', 50),
    pressureWalQueueBytes: num(env, 'SERVICE_PRESSURE_WAL_QUEUE_BYTES', 32 * 1024 * 1024),
    pressureParkMs: num(env, 'SERVICE_PRESSURE_PARK_MS', 1000),
    pressureMaxParked: num(env, 'SERVICE_PRESSURE_MAX_PARKED', 10_000),
    pressureInflight: num(env, 'SERVICE_PRESSURE_INFLIGHT', 64),
    pressureWindowMs: num(env, 'SERVICE_PRESSURE_WINDOW_MS', 2),
    pressureAgingPerS: num(env, 'SERVICE_PRESSURE_AGING_PER_S', 1000),
    pressurePaceMs: num(env, 'SERVICE_PRESSURE_PACE_MS', 1000),
    pressureForce: bool(env, 'SERVICE_PRESSURE_FORCE'),
    traceDir: str(env, 'SERVICE_TRACE_DIR'),
    traceOutputs: bool(env, 'SERVICE_TRACE_OUTPUTS'),
    stageClock: bool(env, 'SERVICE_STAGE_CLOCK'),
    traceTopics: str(env, 'SERVICE_TRACE_TOPICS') ?? '',
    logLevel: (str(env, 'SERVICE_LOG_LEVEL') ?? 'info') as Settings['logLevel'],
    testRecoveryDelayMs: num(env, 'SERVICE_TEST_RECOVERY_DELAY_MS', 0),
  };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The settings in effect, for the start-up log line: secrets masked, and no key field when none are set. */
export function effectiveSettings(s: Settings): Record<string, unknown> {
  const { apiKeys, ...rest } = s;
  return apiKeys === undefined ? rest : { ...rest, apiKeys: '***' };
}
