// The typed client: one method per route of docs/API.md, each a single HTTP exchange through the
// Transport (retries included), plus the long-running helpers built on them: `watch` (SSE with
// resume), `follow` (long-poll diff), `worker` (queue jobs with lease keeping). Browser-safe: it
// uses only fetch, AbortController, TextDecoder, crypto.getRandomValues, atob/btoa and timers.
import { Transport, type Call, type TransportOptions } from './transport.js';
import { decodeJson, encodeJson } from './json.js';
import { WatchStream, type WatchOptions } from './watch.js';
import { follow, type FollowOptions } from './follow.js';
import { openWork, type WorkStreamOptions, type WorkEvent } from './work.js';
import { Worker, type JobHandler, type WorkerOptions } from './worker.js';
import { randomHex } from './ids.js';
import type * as T from './types.js';

export interface SpoolOptions<M extends T.Int64Mode = 'number'> extends TransportOptions {
  /**
   * 'number' (default): seqs are JS numbers, and a seq above 2^53 − 1 is a SpoolError
   * `seq_out_of_range`, never a rounded number. 'bigint': every seq is a bigint, and integers
   * above 2^53 − 1 inside data are bigints too.
   */
  int64?: M;
}

type Raw = { raw: true };
type NotRaw = { raw?: false };

const path = (topic: string, tail = '') => `/v0/topics/${encodeURIComponent(topic)}${tail}`;
const routerPath = (router: string) => `/v0/routers/${encodeURIComponent(router)}`;

export class Spool<M extends T.Int64Mode = 'number'> {
  readonly transport: Transport;
  readonly bigint: boolean;
  private readonly retriesOn: boolean;

  constructor(opts: SpoolOptions<M>) {
    this.transport = new Transport(opts);
    this.bigint = opts.int64 === 'bigint';
    this.retriesOn = opts.retry !== false && (opts.retry?.retries ?? 1) > 0;
  }

  /** Decodes a JSON text from this server under the client's int64 mode. */
  decode<V>(text: string, raw = false, topIsRecord = false): V {
    return decodeJson(text, { bigint: this.bigint, raw, topIsRecord }) as V;
  }

  private async json<V>(call: Call, raw = false): Promise<V> {
    const a = await this.transport.request(call);
    return this.decode<V>(a.text, raw);
  }

  // ---- probes -----------------------------------------------------------------------------

  health(opts: { signal?: AbortSignal } = {}): Promise<T.Health> {
    return this.json({ method: 'GET', path: '/v0/health', idempotent: true, signal: opts.signal });
  }

  /** GET /v0/ready: resolves when ready; a 503 (recovering, draining) is retried, then thrown. */
  ready(opts: { signal?: AbortSignal; retries?: number } = {}): Promise<T.Ready> {
    return this.json({ method: 'GET', path: '/v0/ready', idempotent: true, signal: opts.signal, retries: opts.retries });
  }

  /** GET /v0/metrics as Prometheus text. */
  async metrics(opts: { signal?: AbortSignal } = {}): Promise<string> {
    const a = await this.transport.request({
      method: 'GET',
      path: '/v0/metrics',
      idempotent: true,
      signal: opts.signal,
      headers: { accept: 'text/plain' },
    });
    return a.text;
  }

  /** GET /v0/metrics in its JSON form (totals only). */
  metricsJson(opts: { signal?: AbortSignal } = {}): Promise<Record<string, unknown>> {
    return this.json({ method: 'GET', path: '/v0/metrics', idempotent: true, signal: opts.signal });
  }

  // ---- topics -----------------------------------------------------------------------------

  listTopics(opts: T.ListTopicsOptions & { signal?: AbortSignal } = {}): Promise<T.TopicPage<T.SeqOf<M>>> {
    const { signal, ...query } = opts;
    return this.json({ method: 'GET', path: '/v0/topics', query: { ...query }, idempotent: true, signal });
  }

  /** Every topic (after `prefix`), following `next_cursor` page by page. */
  async *topics(opts: Omit<T.ListTopicsOptions, 'cursor'> & { signal?: AbortSignal } = {}): AsyncGenerator<T.TopicSummary<T.SeqOf<M>>> {
    let cursor: string | undefined;
    do {
      const page = await this.listTopics({ ...opts, cursor });
      yield* page.topics;
      cursor = page.next_cursor;
    } while (cursor);
  }

  getTopic(topic: string, opts: { touch?: boolean; signal?: AbortSignal } = {}): Promise<T.TopicState<T.SeqOf<M>>> {
    return this.json({ method: 'GET', path: path(topic), query: { touch: opts.touch }, idempotent: true, signal: opts.signal });
  }

  /** PUT: create (201, `created: true`) or replace the config (a full replacement, docs/API.md "PUT /v0/topics/:topic"). */
  putTopic(topic: string, config: T.TopicConfig = {}, opts: { signal?: AbortSignal } = {}): Promise<T.PutTopicResult> {
    return this.json({ method: 'PUT', path: path(topic), body: encodeJson(config), idempotent: true, signal: opts.signal });
  }

  deleteTopic(topic: string, opts: { if_empty?: boolean; signal?: AbortSignal } = {}): Promise<T.DeleteTopicResult> {
    return this.json({ method: 'DELETE', path: path(topic), query: { if_empty: opts.if_empty }, idempotent: true, signal: opts.signal });
  }

  // ---- records ----------------------------------------------------------------------------

  /**
   * Appends a batch atomically. With retries on (the default), a batch without an
   * `idempotency_key` gets a generated one, so a retry after a lost answer is answered with the
   * original seqs (`deduped: true`) instead of appending twice, within the topic's
   * idempotency_window_ms (default 120 s).
   */
  append(topic: string, records: T.RecordInput[], opts: T.AppendOptions = {}): Promise<T.AppendResult<T.SeqOf<M>>> {
    const { signal, return_seqs, ...fields } = opts;
    const body = encodeJson({ records, ...fields });
    return this.appendRaw(topic, body, {
      signal,
      return_seqs,
      idempotency_key: fields.idempotency_key,
      keyInBody: fields.idempotency_key !== undefined,
    });
  }

  /**
   * Appends with a ready-made request body (the JSON text of `{"records":[...], ...}`), sent as
   * is: the CLI builds bodies from NDJSON lines without parsing them. A generated idempotency key
   * goes in the `Idempotency-Key` header (a key in the body wins, docs/API.md "Append").
   */
  async appendRaw(
    topic: string,
    body: string,
    opts: { idempotency_key?: string; return_seqs?: boolean; signal?: AbortSignal; keyInBody?: boolean } = {},
  ): Promise<T.AppendResult<T.SeqOf<M>>> {
    const key = opts.idempotency_key ?? (this.retriesOn ? `idem_${randomHex(16)}` : undefined);
    const headers: Record<string, string> = key !== undefined && !opts.keyInBody ? { 'idempotency-key': key } : {};
    return this.json({
      method: 'POST',
      path: path(topic),
      query: { return_seqs: opts.return_seqs === false ? false : undefined },
      body,
      headers,
      idempotent: key !== undefined,
      signal: opts.signal,
    });
  }

  diff(topic: string, opts?: T.DiffOptions<T.SeqOf<M>> & NotRaw): Promise<T.DiffResult<T.SeqOf<M>>>;
  diff(topic: string, opts: T.DiffOptions<T.SeqOf<M>> & Raw): Promise<T.DiffResult<T.SeqOf<M>, T.RawRecord<T.SeqOf<M>>>>;
  diff(topic: string, opts: T.DiffOptions<T.SeqOf<M>> = {}): Promise<T.DiffResult<T.SeqOf<M>, unknown>> {
    const { signal, raw, ...fields } = opts;
    return this.json(
      {
        method: 'POST',
        path: path(topic, '/diff'),
        body: encodeJson(fields),
        idempotent: true,
        signal,
        extraTimeoutMs: fields.wait_ms ?? 0,
      },
      raw === true,
    );
  }

  /** Permanent, silent delete by seq prefix and/or tag (docs/API.md "Record delete"). */
  deleteRecords(topic: string, opts: T.DeleteRecordsOptions<T.SeqOf<M>>): Promise<T.DeleteRecordsResult<T.SeqOf<M>>> {
    const { signal, ...fields } = opts;
    // Not resent after a lost answer: a tag match is point-in-time, a second call could reach
    // records appended since. 429/503 are still retried (nothing was applied).
    return this.json({ method: 'POST', path: path(topic, '/delete'), body: encodeJson(fields), idempotent: false, signal });
  }

  // ---- watch and follow --------------------------------------------------------------------

  /** POST /v0/watch: a session only (use `watch()` to stream it). */
  createWatch(
    req: T.WatchRequest<T.SeqOf<M>>,
    opts: { lenient?: boolean; signal?: AbortSignal } = {},
  ): Promise<T.WatchSession<T.SeqOf<M>>> {
    return this.json({
      method: 'POST',
      path: '/v0/watch',
      query: { lenient: opts.lenient || undefined },
      body: encodeJson(req),
      idempotent: true,
      signal: opts.signal,
    });
  }

  /**
   * A multiplexed watch over SSE: `for await (const ev of spool.watch({topics: {t: {}}}))`.
   * Resumes after any disconnect from the last event it handed out, re-creates a collected
   * session from that cursor, never yields a record twice (docs/CLIENT.md).
   */
  watch(opts: WatchOptions<T.SeqOf<M>> & NotRaw): WatchStream<T.SeqOf<M>, T.LogRecord<T.SeqOf<M>>>;
  watch(opts: WatchOptions<T.SeqOf<M>> & Raw): WatchStream<T.SeqOf<M>, T.RawRecord<T.SeqOf<M>>>;
  watch(opts: WatchOptions<T.SeqOf<M>>): WatchStream<T.SeqOf<M>, unknown> {
    return new WatchStream(this, opts);
  }

  /** One topic by long-poll diff, from `from_seq` (or the time `from_ts`) on, forever (or until `signal`). */
  follow(topic: string, opts?: FollowOptions<T.SeqOf<M>> & NotRaw): AsyncGenerator<T.WatchEvent<T.SeqOf<M>>>;
  follow(topic: string, opts: FollowOptions<T.SeqOf<M>> & Raw): AsyncGenerator<T.WatchEvent<T.SeqOf<M>, T.RawRecord<T.SeqOf<M>>>>;
  follow(topic: string, opts: FollowOptions<T.SeqOf<M>> = {}): AsyncGenerator<T.WatchEvent<T.SeqOf<M>, unknown>> {
    return follow(this, topic, opts);
  }

  // ---- routers ----------------------------------------------------------------------------

  /** PUT: create (201, `created: true`) or reconfigure; `source` and `dest` cannot change (409). */
  putRouter(router: string, config: T.RouterConfig, opts: { signal?: AbortSignal } = {}): Promise<T.PutRouterResult> {
    return this.json({ method: 'PUT', path: routerPath(router), body: encodeJson(config), idempotent: true, signal: opts.signal });
  }

  getRouter(router: string, opts: { signal?: AbortSignal } = {}): Promise<T.RouterInfo> {
    return this.json({ method: 'GET', path: routerPath(router), idempotent: true, signal: opts.signal });
  }

  /** Idempotent: `deleted` is false when the router was absent. */
  deleteRouter(router: string, opts: { signal?: AbortSignal } = {}): Promise<T.DeleteRouterResult> {
    return this.json({ method: 'DELETE', path: routerPath(router), idempotent: true, signal: opts.signal });
  }

  listRouters(opts: T.ListRoutersOptions & { signal?: AbortSignal } = {}): Promise<T.RouterPage> {
    const { signal, ...query } = opts;
    return this.json({ method: 'GET', path: '/v0/routers', query: { ...query }, idempotent: true, signal });
  }

  /** Every router (matching the filters), following `next_cursor` page by page. */
  async *routers(opts: Omit<T.ListRoutersOptions, 'cursor'> & { signal?: AbortSignal } = {}): AsyncGenerator<T.RouterSummary> {
    let cursor: string | undefined;
    do {
      const page = await this.listRouters({ ...opts, cursor });
      yield* page.routers;
      cursor = page.next_cursor;
    } while (cursor);
  }

  // ---- queues -----------------------------------------------------------------------------

  claim(queue: string, opts: T.ClaimOptions & NotRaw): Promise<T.ClaimResult<T.SeqOf<M>>>;
  claim(queue: string, opts: T.ClaimOptions & Raw): Promise<T.ClaimResult<T.SeqOf<M>, T.RawJob<T.SeqOf<M>>>>;
  claim(queue: string, opts: T.ClaimOptions): Promise<T.ClaimResult<T.SeqOf<M>, unknown>> {
    const { signal, raw, ...fields } = opts;
    // A lost claim answer is not resent: its leases simply expire and the jobs come back.
    // A blocking claim may take `wait_ms` before it answers: the timeout allows for it.
    return this.json(
      {
        method: 'POST',
        path: path(queue, '/claim'),
        body: encodeJson(fields),
        idempotent: false,
        signal,
        extraTimeoutMs: fields.wait_ms ?? 0,
      },
      raw === true,
    );
  }

  /** Ack is idempotent (docs/API.md "Queues"), so it is resent after a lost answer. */
  ack(queue: string, req: T.SeqsRequest<T.SeqOf<M>>): Promise<T.AckResult<T.SeqOf<M>>> {
    const { signal, ...fields } = req;
    return this.json({ method: 'POST', path: path(queue, '/ack'), body: encodeJson(fields), idempotent: true, signal });
  }

  /** A resent nack finds the job no longer held and reports it in `skipped`: harmless. */
  nack(queue: string, req: T.SeqsRequest<T.SeqOf<M>> & { delay_ms?: number }): Promise<T.NackResult<T.SeqOf<M>>> {
    const { signal, ...fields } = req;
    return this.json({ method: 'POST', path: path(queue, '/nack'), body: encodeJson(fields), idempotent: true, signal });
  }

  /** Extend sets (not adds) the deadline, so resending it is harmless. */
  extend(queue: string, req: T.SeqsRequest<T.SeqOf<M>> & { lease_ms: number }): Promise<T.ExtendResult<T.SeqOf<M>>> {
    const { signal, ...fields } = req;
    return this.json({ method: 'POST', path: path(queue, '/extend'), body: encodeJson(fields), idempotent: true, signal });
  }

  /**
   * Fails jobs for good: held ones go to the dead-letter topic at once (with `reason`), or are
   * released when the queue has none. Resent after a lost answer: a job already moved is then
   * reported in `skipped`.
   */
  term(queue: string, req: T.TermRequest<T.SeqOf<M>>): Promise<T.TermResult<T.SeqOf<M>>> {
    const { signal, ...fields } = req;
    return this.json({ method: 'POST', path: path(queue, '/term'), body: encodeJson(fields), idempotent: true, signal });
  }

  /**
   * Moves the queue's dead-lettered jobs back into it (all, by `seqs`, by `match`, at most
   * `max`). Not resent after a lost answer (a second call may move more); 429/503 are retried.
   */
  redrive(queue: string, opts: T.RedriveOptions<T.SeqOf<M>> = {}): Promise<T.RedriveResult<T.SeqOf<M>>> {
    const { signal, ...fields } = opts;
    return this.json({ method: 'POST', path: path(queue, '/redrive'), body: encodeJson(fields), idempotent: false, signal });
  }

  /** One page of the queue's live leases (who holds what), ascending by seq. */
  leases(queue: string, opts: T.LeasesOptions<T.SeqOf<M>> = {}): Promise<T.LeasesPage<T.SeqOf<M>>> {
    const { signal, ...query } = opts;
    return this.json({ method: 'GET', path: path(queue, '/leases'), query: { ...query }, idempotent: true, signal });
  }

  /** Every live lease of the queue, following `next_from_seq` page by page. */
  async *allLeases(queue: string, opts: Omit<T.LeasesOptions<T.SeqOf<M>>, 'from_seq'> = {}): AsyncGenerator<T.LeaseInfo<T.SeqOf<M>>> {
    let from: T.SeqOf<M> | undefined;
    for (;;) {
      const page: T.LeasesPage<T.SeqOf<M>> = await this.leases(queue, { ...opts, from_seq: from });
      yield* page.leases;
      if (page.next_from_seq === undefined) return;
      from = page.next_from_seq;
    }
  }

  /** GET /v0/topics/:q/work: the jobs pushed on one connection (no reconnect; `worker()` adds that). */
  work(queue: string, opts: WorkStreamOptions): AsyncGenerator<WorkEvent<T.SeqOf<M>, unknown>> {
    return openWork(this, queue, opts);
  }

  /**
   * Runs `handler` for each job of `queue`, `concurrency` at a time: extends the lease while the
   * handler runs, acks on success (with the lease id), nacks with backoff on failure, and stops
   * gracefully on `stop()` or `signal` (docs/CLIENT.md "Workers").
   */
  worker(queue: string, handler: JobHandler<T.Job<T.SeqOf<M>>>, opts?: WorkerOptions & NotRaw): Worker<T.SeqOf<M>>;
  worker(queue: string, handler: JobHandler<T.RawJob<T.SeqOf<M>>>, opts: WorkerOptions & Raw): Worker<T.SeqOf<M>>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the implementation of both overloads above
  worker(queue: string, handler: JobHandler<any>, opts: WorkerOptions = {}): Worker<T.SeqOf<M>> {
    return new Worker<T.SeqOf<M>>(this, queue, handler, opts);
  }
}
