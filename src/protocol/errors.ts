// The one table of error codes (docs/API.md "Errors") and the value type that carries an
// operating error across threads. Workers return ErrorResult values and never throw; only the
// HTTP layer renders the envelope.
import type { RequestStamps } from '../core/stageClock.js';

export const ERROR_STATUS = {
  invalid_request: 400,
  batch_too_large: 400,
  record_too_large: 400,
  unauthorized: 401,
  forbidden: 403,
  topic_not_found: 404,
  router_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  router_cycle: 409,
  topic_exists_incompatible: 409,
  topic_not_empty: 409,
  not_a_queue: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  topic_full: 422,
  throttled: 429,
  internal: 500,
  not_ready: 503,
  shutting_down: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorResult {
  ok: false;
  status: number;
  code: ErrorCode;
  message: string;
  detail?: Record<string, unknown>;
  /** Request fields the worker ignored (a claim or ack body it parsed), for the Warning header. */
  unknownFields?: string[];
  /** Stage clock only (debug): where the request's time went. */
  stamps?: Partial<RequestStamps>;
}

export function fail(code: ErrorCode, message: string, detail?: Record<string, unknown>): ErrorResult {
  const r: ErrorResult = { ok: false, status: ERROR_STATUS[code], code, message };
  if (detail !== undefined) r.detail = detail;
  return r;
}

/**
 * The disk is full (storage FULL): a resource cap clients already retry, so 429 throttled with
 * detail.limit "disk_space" (the catalog is closed, docs/API.md "Errors"; docs/ARCHITECTURE.md).
 */
export function diskFull(): ErrorResult {
  return fail('throttled', 'the disk is full; writes resume once space is freed', { limit: 'disk_space' });
}

/** A write or fsync failed (storage FAILED): writes are refused until a restart; reads go on. */
export function storageFailed(): ErrorResult {
  return fail('internal', 'a storage write failed; writes are refused until the server restarts (reads still work)');
}

/** docs/API.md "Limits" max_total_bytes is reached: appends are refused (router forwards wait and retry). */
export function totalBytesReached(max: number): ErrorResult {
  return fail('throttled', 'the service holds its maximum of live bytes', { limit: 'max_total_bytes', max });
}

/**
 * The WAL credit is exhausted (docs/ARCHITECTURE.md "Other decisions"): appends, record deletes and acks are refused, nothing applied.
 * detail.limit names the cause, as for the caps: it is the `cause` of spool_http_throttled_total (docs/OPERATIONS.md "Metrics").
 */
export function walBehind(): ErrorResult {
  return fail('throttled', 'the WAL is behind; retry shortly', { limit: 'wal_inflight', retry_after_ms: 1000 });
}

export function assertNever(x: never): never {
  throw new Error(`unexpected variant: ${JSON.stringify(x)}`);
}
