// Fastify's options for the front end (main thread): pino through lazy child loggers, request
// ids, the body limit, and the spec's error body for what Fastify and Node reject before any
// route runs (a malformed URL, a malformed or oversized request head).
import crypto from 'node:crypto';
import type { Socket } from 'node:net';
import type { Server } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyHttpOptions } from 'fastify';
import { fail } from '../protocol/errors.js';
import { sendError } from './reply.js';
import { lazyChildLogger } from './lazyLogger.js';

function clientErrorResponse(status: number, reason: string, message: string): string {
  const body = JSON.stringify({ error: { code: status === 413 ? 'payload_too_large' : 'invalid_request', message } });
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** An `x-request-id` from the client is used (and echoed) when it is this short and plain. */
const REQUEST_ID_RE = /^[\w.:@/+=-]{1,128}$/;

/**
 * Our own ids: a random prefix per process and a counter, unique within the process's logs.
 * (8 random bytes per request cost ~7% of the HTTP thread on small reads: randomFillSync was
 * the third frame of a 16-reader random-diff profile.)
 */
const ID_PREFIX = crypto.randomBytes(4).toString('hex');
let idCounter = 0;

function requestId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const h = req.headers['x-request-id'];
  if (typeof h === 'string' && REQUEST_ID_RE.test(h)) return h;
  return `${ID_PREFIX}-${(++idCounter).toString(36)}`;
}

/** The options `buildServer` makes its Fastify instance with. */
export function fastifyOptions(
  maxBodyBytes: number,
  requestTimeoutMs: number,
  logger: FastifyBaseLogger | undefined,
): FastifyHttpOptions<Server> {
  return {
    // pino (src/log.ts); Fastify's own per-request lines are off, onResponse below logs one.
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'req_id' }),
    // A request's child logger is made when it first writes a line, not for every request.
    childLoggerFactory: lazyChildLogger,
    genReqId: requestId,
    // Errors Fastify raises before routing (a bad percent-escape in the path): the spec's body.
    frameworkErrors(err, req, reply) {
      reply.header('x-request-id', req.id);
      sendError(req, reply, fail('invalid_request', err.code === 'FST_ERR_BAD_URL' ? `malformed URL: ${req.url}` : err.message), false);
    },
    bodyLimit: maxBodyBytes,
    // Topic names are up to 255 chars, up to 3x that percent-encoded; longer ones must still
    // reach authentication (401 first) and the name check (400 with detail.topic), not
    // Fastify's own refusal: above node's 16 KiB header limit, so no path that parses is cut.
    routerOptions: { maxParamLength: 65_536 },
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // A request whose head and body have not all arrived within SERVICE_REQUEST_TIMEOUT_MS is
    // answered 400 and its connection closed (Node's own default, 300 s, which Fastify's 0 turns
    // off): a client that stalls mid-body would otherwise hold its connection, and its key's
    // in-flight slot, for ever. Requests received whole (a long-poll, a stream) are not affected.
    // Node looks at its connections every connectionsCheckingInterval, so that is kept a
    // fraction of the timeout; and it times nothing at all while headersTimeout (60 s) is longer
    // than requestTimeout, so the head's limit is never more than the whole request's.
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(60_000, requestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(requestTimeoutMs / 4))),
    },
    clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket) {
      if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT')
        return socket.end(clientErrorResponse(400, 'Bad Request', `the request did not arrive whole within ${requestTimeoutMs} ms`));
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
      socket.end(
        clientErrorResponse(
          tooLarge ? 431 : 400,
          tooLarge ? 'Request Header Fields Too Large' : 'Bad Request',
          `malformed HTTP request (${err.code ?? 'error'})`,
        ),
      );
    },
  };
}
