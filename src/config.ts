// SERVICE_* settings (RESOLVED 1.1), read once at process start on the main thread.
// A malformed numeric setting is a startup error naming the variable.
import os from 'node:os';

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
  /** Router-count cap (G15); 0 = unlimited. */
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
  segmentBytes: number;
  recoveryTruncate: boolean;
  shutdownGraceMs: number;
  watchSessionTtlMs: number;
  maxWatchSessions: number;
  maxSseConnections: number;
  traceDir: string | undefined;
  traceOutputs: boolean;
  traceTopics: string;
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
  return v === '1' || v?.toLowerCase() === 'true';
}

function int(env: Env, name: string, dflt: number): number {
  const v = str(env, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v.trim())) throw new SettingsError(`${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  const n = Number(v.trim());
  if (!Number.isSafeInteger(n)) throw new SettingsError(`${name} is too large`);
  return n;
}

export function defaultWorkers(): number {
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.min(8, Math.max(1, cores - 1));
}

export function readSettings(env: Env = process.env): Settings {
  const workers = int(env, 'SERVICE_WORKERS', defaultWorkers());
  return {
    host: str(env, 'SERVICE_HOST') ?? '127.0.0.1',
    port: int(env, 'SERVICE_PORT', 4000),
    portFile: str(env, 'SERVICE_PORT_FILE'),
    dataDir: str(env, 'SERVICE_DATA_DIR') ?? './data',
    apiKeys: str(env, 'SERVICE_API_KEYS'),
    allowInsecureNoAuth: bool(env, 'SERVICE_ALLOW_INSECURE_NO_AUTH'),
    probeAuth: bool(env, 'SERVICE_PROBE_AUTH'),
    maxBodyBytes: int(env, 'SERVICE_MAX_BODY_BYTES', 64 * 1024 * 1024),
    maxLimit: Math.max(1, int(env, 'SERVICE_MAX_LIMIT', 1000)),
    maxTopics: int(env, 'SERVICE_MAX_TOPICS', 100_000),
    maxRouters: int(env, 'SERVICE_MAX_ROUTERS', 10_000),
    workers: Math.max(1, workers),
    walSyncIntervalMs: int(env, 'SERVICE_WAL_SYNC_INTERVAL_MS', 200),
    walFileBytes: Math.max(1 << 20, int(env, 'SERVICE_WAL_FILE_BYTES', 64 * 1024 * 1024)),
    walPreallocate: str(env, 'SERVICE_WAL_PREALLOCATE') === undefined ? true : bool(env, 'SERVICE_WAL_PREALLOCATE'),
    walInflightBytes: int(env, 'SERVICE_WAL_INFLIGHT_BYTES', 64 * 1024 * 1024),
    checkpointMs: int(env, 'SERVICE_CHECKPOINT_MS', 60_000),
    checkpointWalBytes: int(env, 'SERVICE_CHECKPOINT_WAL_BYTES', 256 * 1024 * 1024),
    segmentCacheBytes: int(env, 'SERVICE_SEGMENT_CACHE_BYTES', 128 * 1024 * 1024),
    segmentBytes: Math.max(1 << 16, int(env, 'SERVICE_SEGMENT_BYTES', 64 * 1024 * 1024)),
    recoveryTruncate: bool(env, 'SERVICE_RECOVERY_TRUNCATE'),
    shutdownGraceMs: int(env, 'SERVICE_SHUTDOWN_GRACE_MS', 10_000),
    watchSessionTtlMs: int(env, 'SERVICE_WATCH_SESSION_TTL_MS', 300_000),
    maxWatchSessions: int(env, 'SERVICE_MAX_WATCH_SESSIONS', 10_000),
    maxSseConnections: int(env, 'SERVICE_MAX_SSE_CONNECTIONS', 10_000),
    traceDir: str(env, 'SERVICE_TRACE_DIR'),
    traceOutputs: bool(env, 'SERVICE_TRACE_OUTPUTS'),
    traceTopics: str(env, 'SERVICE_TRACE_TOPICS') ?? '',
    testRecoveryDelayMs: int(env, 'SERVICE_TEST_RECOVERY_DELAY_MS', 0),
  };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
