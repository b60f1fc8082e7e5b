// Rendering of responses: the spec's error envelope (docs/API.md "Errors") and success bodies with the
// performance block (docs/API.md "Conventions"). Wire names stay snake_case here and nowhere else on main.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_STATUS, ErrorCode, ErrorResult } from '../protocol/errors.js';
import type { PerfFields, TopicResult } from '../protocol/messages/rpc.js';
import { nowMs, roundMs } from '../core/stopwatch.js';
import { pageCapacity, returnPage } from '../core/pagePool.js';
import { sendDirectJson } from './rawReply.js';
import { copyPerformanceTail, writePerformanceTail } from './performanceTail.js';
import './requestMetrics.js'; // FastifyRequest.spoolError
import './bodyFields.js'; // FastifyRequest.unknownFields

declare module 'fastify' {
  interface FastifyRequest {
    startedAt: number;
  }
}

export class HttpError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly detail?: Record<string, unknown>,
  ) {
    super(message);
  }
  /** The error of a check shared with the workers, which answer results, not throws. */
  static of(e: ErrorResult): HttpError {
    return new HttpError(e.code, e.message, e.detail);
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export function perfBlock(req: FastifyRequest, extra: PerfFields = {}): Record<string, number> {
  const out: Record<string, number> = { server_total_ms: roundMs(nowMs() - (req.startedAt ?? nowMs())), ...extra };
  // Parked behind the pressure gate on main, plus any wait for WAL credit in the worker.
  if (req.throttleWaitMs !== undefined) out.throttle_wait_ms = roundMs(req.throttleWaitMs + (extra.throttle_wait_ms ?? 0));
  return out;
}

export function sendError(req: FastifyRequest, reply: FastifyReply, e: ErrorResult | HttpError, withPerf = true): FastifyReply {
  const status = e.status;
  const error: Record<string, unknown> = { code: e.code, message: e.message };
  if (e.detail !== undefined) error.detail = e.detail;
  const cause = status === 429 && typeof e.detail?.limit === 'string' ? e.detail.limit : undefined;
  req.spoolError = cause === undefined ? { code: e.code } : { code: e.code, cause };
  const body: Record<string, unknown> = { error };
  if (withPerf) body.performance = perfBlock(req);
  if (status === 429 || status === 503) {
    // Whole seconds, at least 1 (docs/API.md "Errors"; docs/ARCHITECTURE.md "Admission"): from detail.retry_after_ms when given.
    const ms = e.detail?.retry_after_ms;
    reply.header('retry-after', String(typeof ms === 'number' ? Math.max(1, Math.ceil(ms / 1000)) : 1));
  }
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

export function sendJson(req: FastifyRequest, reply: FastifyReply, status: number, body: object, perf: PerfFields = {}): FastifyReply {
  (body as { performance?: unknown }).performance = perfBlock(req, perf);
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

/**
 * A worker's reply: its JSON object (without the closing brace) plus the performance block.
 * A reply page (a big read, src/core/pagePool.ts) gets the block written into its slack, so the
 * body is sent without a copy, and the page goes back to its worker once the response has
 * finished.
 */
export function sendResult(req: FastifyRequest, reply: FastifyReply, r: TopicResult): FastifyReply {
  if (r.stamps && req.stamps) Object.assign(req.stamps, r.stamps); // stage clock (debug)
  if (r.unknownFields) req.unknownFields = [...(req.unknownFields ?? []), ...r.unknownFields];
  if (!r.ok) return sendError(req, reply, r);
  const tailBytes = writePerformanceTail(req, r.perf); // ASCII, in a scratch buffer until copied
  const n = r.json.byteLength;
  const cap = pageCapacity(r.json);
  let body: Buffer;
  if (cap - n >= tailBytes) {
    const page = r.json.buffer as ArrayBuffer;
    body = Buffer.from(page, 0, n + tailBytes);
    copyPerformanceTail(body, n, tailBytes);
    reply.raw.once('finish', () => returnPage(page));
  } else {
    body = Buffer.allocUnsafe(n + tailBytes);
    body.set(r.json, 0);
    copyPerformanceTail(body, n, tailBytes);
  }
  if (sendDirectJson(req, reply, r.status, body)) return reply;
  return reply.code(r.status).header('content-type', 'application/json; charset=utf-8').send(body);
}

/** Wraps a route handler: an HttpError thrown by request checks becomes the spec's error body. */
export function withHttpErrors(fn: (req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    try {
      return await fn(req, reply);
    } catch (err) {
      if (err instanceof HttpError) return sendError(req, reply, err);
      throw err;
    }
  };
}
