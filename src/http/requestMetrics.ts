// Request metrics (main thread): every answered request by route template, method and status,
// every error reply by route and spec error code, 429s by cause, request duration by route.
// Label values are bounded: route templates (or "unmatched"), methods Fastify accepts, status
// codes and the spec's error codes.
import client from 'prom-client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { nowMs } from '../core/stopwatch.js';
import { LabeledHistogram } from './fixedHistogram.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by sendError: the spec error code and, for a 429, its cause (detail.limit). */
    spoolError?: { code: string; cause?: string };
  }
}

/**
 * A prom-client counter whose values are counted here, in a Map keyed by the joined label
 * values, and copied into prom-client only when scraped: prom-client's own inc hashes the label
 * object on every call (~2% of the HTTP thread with the duration histogram, by --cpu-prof).
 */
class CountedLabels<L extends string> {
  private readonly cells = new Map<string, { labels: Record<L, string>; n: number }>();

  constructor(name: string, help: string, labelNames: L[], registry: client.Registry) {
    const cells = this.cells;
    new client.Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const c of cells.values()) this.inc(c.labels as Partial<Record<L, string>>, c.n);
      },
    });
  }

  /** Counts one under `key`, which must join exactly the values of `labels`. */
  inc(key: string, labels: () => Record<L, string>): void {
    this.cell(key, labels).n++;
  }

  /** The cell counted under `key` (made with a count of 0 on first use); its `n` may be kept and counted directly. */
  cell(key: string, labels: () => Record<L, string>): { n: number } {
    let c = this.cells.get(key);
    if (!c) this.cells.set(key, (c = { labels: labels(), n: 0 }));
    return c;
  }
}

/**
 * The answered-requests counter, its cells found by route, method and status in nested maps:
 * no key string and no closure per request (a joined key and the labels closure were most of
 * this file's allocations per request, docs/PERFORMANCE.md "Allocations per request").
 */
class RequestCounts {
  private readonly labeled: CountedLabels<'route' | 'method' | 'code'>;
  private readonly byRoute = new Map<string, Map<string, Map<number, { n: number }>>>();

  constructor(labeled: CountedLabels<'route' | 'method' | 'code'>) {
    this.labeled = labeled;
  }

  inc(route: string, method: string, status: number): void {
    let byMethod = this.byRoute.get(route);
    if (!byMethod) this.byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    const cell = byStatus.get(status);
    if (cell) return void cell.n++;
    const made = this.labeled.cell(`${route} ${method} ${status}`, () => ({ route, method, code: String(status) }));
    made.n++;
    byStatus.set(status, made);
  }
}

export class RequestMetrics {
  private readonly requests: RequestCounts;
  private readonly errors: CountedLabels<'route' | 'code'>;
  private readonly throttled: CountedLabels<'cause'>;
  private readonly duration: LabeledHistogram;
  readonly totals = { requests: 0, client_errors: 0, server_errors: 0 };

  constructor(registry: client.Registry) {
    this.requests = new RequestCounts(
      new CountedLabels(
        'spool_http_requests_total',
        'Answered HTTP requests by route template, method and status code.',
        ['route', 'method', 'code'],
        registry,
      ),
    );
    this.errors = new CountedLabels(
      'spool_http_errors_total',
      'Error replies by route template and spec error code.',
      ['route', 'code'],
      registry,
    );
    this.throttled = new CountedLabels(
      'spool_http_throttled_total',
      '429 replies by cause (detail.limit, or the error code).',
      ['cause'],
      registry,
    );
    this.duration = new LabeledHistogram(
      'spool_http_request_duration_seconds',
      'Time from request to reply in seconds, by route template (SSE streams: until the stream ends).',
      'route',
      [0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000, 5000, 30000], // ms, as observed
      registry,
      1000,
    );
  }

  /** A readiness probe's 503: its normal answer while recovering or draining, not an error. */
  static probeNotReady(route: string, status: number): boolean {
    return status === 503 && (route === '/v0/ready' || route === '/readyz');
  }

  /** The route template, or "unmatched" (404/405 and requests refused before routing). */
  static route(req: FastifyRequest): string {
    return req.routeOptions?.url ?? 'unmatched';
  }

  observe(req: FastifyRequest, reply: FastifyReply): void {
    const route = RequestMetrics.route(req);
    const status = reply.statusCode;
    const method = req.method;
    this.requests.inc(route, method, status);
    this.totals.requests++;
    if (status >= 500) {
      if (!RequestMetrics.probeNotReady(route, status)) this.totals.server_errors++;
    } else if (status >= 400) this.totals.client_errors++;
    const err = req.spoolError;
    if (err) {
      this.errors.inc(`${route} ${err.code}`, () => ({ route, code: err.code }));
      if (status === 429) {
        const cause = err.cause ?? err.code;
        this.throttled.inc(cause, () => ({ cause }));
      }
    }
    if (req.startedAt !== undefined) this.duration.observe(route, nowMs() - req.startedAt);
  }
}
