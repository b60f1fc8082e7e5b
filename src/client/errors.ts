// The client's one error type. Every failure a caller can see is a SpoolError: a server error
// body (docs/API.md "Errors") keeps its `code`, HTTP `status` and `detail`; failures that never got an answer
// from the server have status 0 and one of the client codes below. Runs anywhere (Node, browser).

/** Codes the client produces itself (status 0); every other code is the server's (docs/API.md "Errors"). */
export const CLIENT_CODES = {
  /** The request never got an HTTP answer: connection refused or reset, DNS, CORS. */
  network_error: 'network_error',
  /** No answer within `timeoutMs`. */
  timeout: 'timeout',
  /** The caller's AbortSignal fired. */
  aborted: 'aborted',
  /** The server answered something that is not the JSON it should have. */
  bad_response: 'bad_response',
  /** A seq the server sent does not fit a JS number exactly; use `int64: 'bigint'`. */
  seq_out_of_range: 'seq_out_of_range',
  /** A stream skipped records without a tombstone (a server bug; never silently ignored). */
  stream_gap: 'stream_gap',
} as const;

export interface SpoolErrorInit {
  code: string;
  message: string;
  status?: number;
  detail?: Record<string, unknown>;
  retryAfterMs?: number;
  cause?: unknown;
}

export class SpoolError extends Error {
  /** Stable snake_case code: the server's `error.code`, or one of CLIENT_CODES. */
  readonly code: string;
  /** HTTP status; 0 when no response was received (or for an SSE error frame, its `code`). */
  readonly status: number;
  readonly detail: Record<string, unknown> | undefined;
  /** How long the server asked us to wait (detail.retry_after_ms, else Retry-After), if it did. */
  readonly retryAfterMs: number | undefined;

  constructor(init: SpoolErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'SpoolError';
    this.code = init.code;
    this.status = init.status ?? 0;
    this.detail = init.detail;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** True for conditions that go away by waiting: 429, 503, and no answer at all. */
  get transient(): boolean {
    return this.status === 429 || this.status === 503 || this.code === CLIENT_CODES.network_error || this.code === CLIENT_CODES.timeout;
  }
}

/** Parses a Retry-After header (delta seconds or an HTTP date) into ms; undefined if absent or bad. */
export function retryAfterHeaderMs(value: string | null, nowMs: number): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** A SpoolError from a non-2xx response's status, headers and body text. */
export function errorFromResponse(status: number, retryAfter: string | null, text: string, nowMs: number): SpoolError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const e = (body as { error?: { code?: unknown; message?: unknown; detail?: unknown } } | undefined)?.error;
  const detail = e && typeof e.detail === 'object' && e.detail !== null ? (e.detail as Record<string, unknown>) : undefined;
  const fromDetail = typeof detail?.retry_after_ms === 'number' ? detail.retry_after_ms : undefined;
  return new SpoolError({
    code: typeof e?.code === 'string' ? e.code : `http_${status}`,
    message: typeof e?.message === 'string' ? e.message : `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`,
    status,
    detail,
    retryAfterMs: fromDetail ?? retryAfterHeaderMs(retryAfter, nowMs),
  });
}

/** Wraps whatever fetch threw (or an abort) into a SpoolError with status 0. */
export function errorFromThrown(err: unknown, why: 'aborted' | 'timeout' | undefined): SpoolError {
  if (err instanceof SpoolError) return err;
  if (why === 'aborted') return new SpoolError({ code: CLIENT_CODES.aborted, message: 'the request was aborted', cause: err });
  if (why === 'timeout') return new SpoolError({ code: CLIENT_CODES.timeout, message: 'no answer from the server in time', cause: err });
  const msg = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return new SpoolError({ code: CLIENT_CODES.network_error, message: `${msg}${cause}`, cause: err });
}
