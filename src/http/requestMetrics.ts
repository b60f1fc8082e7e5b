// Request metrics (main thread): every answered request by route template, method and status,
// every error reply by route and spec error code, 429s by cause, request duration by route.
// Label values are bounded: route templates (or "unmatched"), methods Fastify accepts, status
// codes and the spec's error codes.
import client from 'prom-client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { nowMs } from '../core/stopwatch.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by sendError: the spec error code and, for a 429, its cause (detail.limit). */
    spoolError?: { code: string; cause?: string };
  }
}

export class RequestMetrics {
  private readonly requests: client.Counter<'route' | 'method' | 'code'>;
  private readonly errors: client.Counter<'route' | 'code'>;
  private readonly throttled: client.Counter<'cause'>;
  private readonly duration: client.Histogram<'route'>;
  readonly totals = { requests: 0, client_errors: 0, server_errors: 0 };

  constructor(registry: client.Registry) {
    const registers = [registry];
    this.requests = new client.Counter({ name: 'spool_http_requests_total', help: 'Answered HTTP requests by route template, method and status code.', labelNames: ['route', 'method', 'code'], registers });
    this.errors = new client.Counter({ name: 'spool_http_errors_total', help: 'Error replies by route template and spec error code.', labelNames: ['route', 'code'], registers });
    this.throttled = new client.Counter({ name: 'spool_http_throttled_total', help: '429 replies by cause (detail.limit, or the error code).', labelNames: ['cause'], registers });
    this.duration = new client.Histogram({
      name: 'spool_http_request_duration_ms',
      help: 'Time from request to reply in ms, by route template (SSE streams: until the stream ends).',
      labelNames: ['route'],
      buckets: [0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000, 5000, 30000],
      registers,
    });
  }

  /** The route template, or "unmatched" (404/405 and requests refused before routing). */
  static route(req: FastifyRequest): string {
    return req.routeOptions?.url ?? 'unmatched';
  }

  observe(req: FastifyRequest, reply: FastifyReply): void {
    const route = RequestMetrics.route(req);
    const status = reply.statusCode;
    this.requests.inc({ route, method: req.method, code: String(status) });
    this.totals.requests++;
    if (status >= 500) this.totals.server_errors++;
    else if (status >= 400) this.totals.client_errors++;
    if (req.spoolError) {
      this.errors.inc({ route, code: req.spoolError.code });
      if (status === 429) this.throttled.inc({ cause: req.spoolError.cause ?? req.spoolError.code });
    }
    if (req.startedAt !== undefined) this.duration.observe({ route }, nowMs() - req.startedAt);
  }
}
