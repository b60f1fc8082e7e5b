// What answers when no route does or a route throws (main thread): 404, or 405 with Allow for a
// known path; Fastify's own errors (body too large, media type, bad content length) mapped to
// the spec's error body; a full disk met by a file main writes (meta/routers.json) the 429
// `disk_space` every write gets on a full disk; anything else a logged 500 with the URL redacted.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { diskFull, fail } from '../protocol/errors.js';
import { sendError, HttpError } from './reply.js';

/** Known paths and their methods, for 405 with Allow (Fastify only knows "not found"). */
export const ROUTE_TABLE: [RegExp, string[]][] = [
  [/^\/v0\/health$/, ['GET', 'HEAD']],
  [/^\/healthz$/, ['GET', 'HEAD']],
  [/^\/v0\/ready$/, ['GET', 'HEAD']],
  [/^\/readyz$/, ['GET', 'HEAD']],
  [/^\/v0\/metrics$/, ['GET', 'HEAD']],
  [/^\/v0\/topics$/, ['GET', 'HEAD']],
  [/^\/v0\/topics\/[^/]+$/, ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']],
  [/^\/v0\/topics\/[^/]+\/diff$/, ['POST']],
  [/^\/v0\/topics\/[^/]+\/delete$/, ['POST']],
  [/^\/v0\/topics\/[^/]+\/(claim|ack|nack|extend|term|redrive)$/, ['POST']],
  [/^\/v0\/topics\/[^/]+\/work$/, ['GET']],
  [/^\/v0\/topics\/[^/]+\/leases$/, ['GET', 'HEAD']],
  [/^\/v0\/watch$/, ['POST']],
  [/^\/v0\/watch\/[^/]+$/, ['GET']],
  [/^\/v0\/routers$/, ['GET', 'HEAD']],
  [/^\/v0\/routers\/[^/]+$/, ['GET', 'HEAD', 'PUT', 'DELETE']],
  [/^\/v0\/backup$/, ['GET', 'HEAD']],
  [/^\/v0\/openapi\.json$/, ['GET', 'HEAD']],
  [/^\/$/, ['GET', 'HEAD']],
];

/** A URL fit for a log line: a `?token=` value (an API key) never reaches stderr. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1<redacted>');
}

/** Installs the not-found and error handlers on `app`. */
export function installErrorHandlers(app: FastifyInstance, maxBodyBytes: number): void {
  const notFound = (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0]!;
    for (const [re, methods] of ROUTE_TABLE) {
      if (re.test(path)) {
        reply.header('allow', methods.join(', '));
        return sendError(req, reply, new HttpError('method_not_allowed', `${req.method} is not allowed on ${path}`), false);
      }
    }
    return sendError(req, reply, new HttpError('not_found', `no route for ${req.method} ${path}`), false);
  };
  // 404 and 405 come before 413 and 415 (docs/API.md "Which error wins"): answered in onRequest,
  // after the lifecycle gate and the 401 (hooks run in the order they were added), before Fastify
  // reads the body, whose size and type it would judge first. The handler stays for Fastify's own
  // way there (a request it routes nowhere without passing the hooks).
  app.addHook('onRequest', (req, reply, done) => {
    if (req.routeOptions.url !== undefined) return done();
    notFound(req, reply);
  });
  app.setNotFoundHandler(notFound);

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof HttpError) return sendError(req, reply, err);
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(req, reply, fail('payload_too_large', `body exceeds ${maxBodyBytes} bytes`, { max: maxBodyBytes }), false);
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendError(req, reply, fail('unsupported_media_type', 'Content-Type must be application/json'));
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendError(req, reply, fail('invalid_request', err.message));
    }
    if (err.statusCode === 413)
      return sendError(req, reply, fail('payload_too_large', `body exceeds ${maxBodyBytes} bytes`, { max: maxBodyBytes }), false);
    if (err.statusCode === 415) return sendError(req, reply, fail('unsupported_media_type', err.message));
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500)
      return sendError(req, reply, fail('invalid_request', err.message));
    if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
      req.log.warn({ req_id: req.id }, `${req.method} ${redactUrl(req.url)} refused: ${err.message}`);
      return sendError(req, reply, diskFull());
    }
    req.log.error({ err, req_id: req.id }, `internal error on ${req.method} ${redactUrl(req.url)}`);
    return sendError(req, reply, fail('internal', 'internal error'));
  });
}
