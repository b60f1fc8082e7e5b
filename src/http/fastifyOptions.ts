// Fastify's options for the front end (main thread): pino through lazy child loggers, request
// ids, the body limit, and the spec's error body for what Fastify and Node reject before any
// route runs (a malformed URL, a malformed or oversized request head).
import crypto from 'node:crypto';
import type { Socket } from 'node:net';
import { LogController, type FastifyBaseLogger, type FastifyServerOptions } from 'fastify';
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
export function fastifyOptions(maxBodyBytes: number, logger: FastifyBaseLogger | undefined): FastifyServerOptions {
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
    clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket) {
      if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
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
