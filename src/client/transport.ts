// One HTTP exchange with the server, over the global `fetch` (Node >= 20 and browsers): URL and
// headers, bearer key, per-attempt timeout, the caller's AbortSignal, error bodies turned into
// SpoolError, and retries. A 429 or 503 means nothing was applied (docs/API.md "Errors"; docs/ARCHITECTURE.md "Startup and shutdown"),
// so it is retried for every request, after the server's Retry-After; a lost answer (network
// error, timeout) is retried only for requests that are safe to repeat (`idempotent`).
import { backoffMs, retryDelayMs, sleep, type BackoffPolicy } from './backoff.js';
import { CLIENT_CODES, SpoolError, errorFromResponse, errorFromThrown } from './errors.js';

export interface RetryOptions {
  /** Retries after the first attempt (default 4; 0 turns retrying off). */
  retries?: number;
  /** First backoff delay, ms (default 100). */
  baseMs?: number;
  /** Largest backoff delay, ms (default 5000). */
  maxMs?: number;
  /** Called before each retry, e.g. to log it. */
  onRetry?: (err: SpoolError, attempt: number, delayMs: number) => void;
}

export interface TransportOptions {
  /** Base URL, e.g. `http://127.0.0.1:4000` (a path prefix is kept). */
  url: string;
  /** API key, sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** Per-attempt timeout in ms, until the whole answer is read (default 60000; 0 = none). */
  timeoutMs?: number;
  retry?: RetryOptions | false;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /**
   * Called with each warning the server attached to a reply (`Warning: 299 - "…"`), such as
   * `unknown field "ttl"` for a field it ignored: typos surface instead of silently doing nothing.
   */
  onWarning?: (message: string) => void;
}

/** The texts of the `299` warnings of a `Warning` header value. */
export function parseWarnings(header: string | null): string[] {
  if (!header) return [];
  return [...header.matchAll(/299 [^ ]+ "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1'));
}

export type Query = Record<string, string | number | bigint | boolean | undefined>;

export interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Query;
  /** A JSON text; sent with `Content-Type: application/json; charset=utf-8`. */
  body?: string;
  /** Safe to send again when the answer was lost (reads, upserts, idempotency-keyed appends). */
  idempotent: boolean;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Added to the timeout (a long-poll's wait_ms). */
  extraTimeoutMs?: number;
  /** Overrides the client's retry count for this call. */
  retries?: number;
}

export interface Answer {
  status: number;
  text: string;
  headers: Headers;
}

const DEFAULT_RETRIES = 4;
const DEFAULT_TIMEOUT_MS = 60_000;

export class Transport {
  readonly base: string;
  private readonly policy: BackoffPolicy;
  private readonly retries: number;
  private readonly fetchFn: typeof fetch;
  private readonly timeoutMs: number;

  constructor(private readonly opts: TransportOptions) {
    if (!opts.url) throw new SpoolError({ code: 'invalid_request', message: 'a server URL is required' });
    this.base = opts.url.replace(/\/+$/, '');
    const r = opts.retry === false ? { retries: 0 } : (opts.retry ?? {});
    this.retries = r.retries ?? DEFAULT_RETRIES;
    this.policy = { baseMs: r.baseMs ?? 100, maxMs: r.maxMs ?? 5000 };
    this.fetchFn = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  get backoff(): BackoffPolicy {
    return this.policy;
  }

  url(path: string, query?: Query): string {
    let u = this.base + path;
    if (query) {
      const q = Object.entries(query)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
      if (q.length) u += `?${q.join('&')}`;
    }
    return u;
  }

  headers(extra: Record<string, string> = {}, body: boolean): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', ...this.opts.headers, ...extra };
    if (body) h['content-type'] = 'application/json; charset=utf-8';
    if (this.opts.key) h.authorization = `Bearer ${this.opts.key}`;
    return h;
  }

  /** Sends a call, retrying as described above; resolves with a 2xx answer or throws SpoolError. */
  async request(call: Call): Promise<Answer> {
    const retries = call.retries ?? this.retries;
    for (let attempt = 0; ; attempt++) {
      let err: SpoolError;
      try {
        const a = await this.once(call);
        if (this.opts.onWarning) for (const w of parseWarnings(a.headers.get('warning'))) this.opts.onWarning(w);
        if (a.status >= 200 && a.status < 300) return a;
        err = errorFromResponse(a.status, a.headers.get('retry-after'), a.text, Date.now());
      } catch (e) {
        err = e as SpoolError;
        if (err.code === CLIENT_CODES.aborted) throw err;
      }
      const answered = err.status !== 0;
      const retryable = answered ? err.status === 429 || err.status === 503 : call.idempotent && err.transient;
      if (!retryable || attempt >= retries) throw err;
      const delay = answered ? retryDelayMs(this.policy, attempt, err) : backoffMs(this.policy, attempt);
      if (this.opts.retry !== false) this.opts.retry?.onRetry?.(err, attempt + 1, delay);
      await sleep(delay, call.signal);
    }
  }

  /** One attempt: the whole answer is read within the timeout. */
  private async once(call: Call): Promise<Answer> {
    const limit = this.timeoutMs > 0 ? this.timeoutMs + (call.extraTimeoutMs ?? 0) : 0;
    return this.withAbort(call.signal, limit, async (signal) => {
      const res = await this.fetchFn(this.url(call.path, call.query), {
        method: call.method,
        headers: this.headers(call.headers, call.body !== undefined),
        body: call.body,
        signal,
      });
      return { status: res.status, text: await res.text(), headers: res.headers };
    });
  }

  /**
   * Opens a streaming GET (SSE). One attempt, no retry: stream owners reconnect themselves.
   * Resolves with the 200 response (its body still unread); the timeout covers only the wait for
   * the response head. `signal` aborts the stream at any time.
   */
  async openStream(path: string, query: Query | undefined, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
    if (signal.aborted) throw errorFromThrown(signal.reason, 'aborted');
    // The caller's signal goes to fetch as is (combined with the head timeout), so it keeps
    // aborting the body after the head arrived, and nothing stays registered on it afterwards.
    const head = new AbortController();
    const timer = this.timeoutMs > 0 ? setTimeout(() => head.abort(), this.timeoutMs) : undefined;
    let res: Response;
    try {
      res = await this.fetchFn(this.url(path, query), {
        method: 'GET',
        headers: this.headers({ ...headers, accept: 'text/event-stream' }, false),
        signal: AbortSignal.any([signal, head.signal]),
      });
    } catch (e) {
      throw errorFromThrown(e, signal.aborted ? 'aborted' : head.signal.aborted ? 'timeout' : undefined);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
    if (res.status === 200) return res;
    const text = await res.text().catch(() => '');
    throw errorFromResponse(res.status, res.headers.get('retry-after'), text, Date.now());
  }

  /**
   * Runs `fn` with a signal that fires on the caller's abort or after `timeoutMs` (0 = never);
   * both the timer and the link to the caller's signal end when `fn` settles.
   */
  private async withAbort<T>(outer: AbortSignal | undefined, timeoutMs: number, fn: (s: AbortSignal) => Promise<T>): Promise<T> {
    if (outer?.aborted) throw errorFromThrown(outer.reason, 'aborted');
    const ctl = new AbortController();
    let why: 'aborted' | 'timeout' | undefined;
    const onAbort = () => {
      why ??= 'aborted';
      ctl.abort(outer?.reason);
    };
    outer?.addEventListener('abort', onAbort, { once: true });
    const timer = timeoutMs > 0 ? setTimeout(() => ((why ??= 'timeout'), ctl.abort()), timeoutMs) : undefined;
    try {
      return await fn(ctl.signal);
    } catch (e) {
      throw errorFromThrown(e, why);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    }
  }
}
