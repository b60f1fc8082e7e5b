// Rendering of responses: the spec's error envelope (SPEC 7) and success bodies with the
// performance block (SPEC 2.9). Wire names stay snake_case here and nowhere else on main.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_STATUS, ErrorCode, ErrorResult } from '../core/errors.js';
import type { PerfFields, TopicResult } from '../core/messages/rpc.js';
import { nowMs, roundMs } from '../core/stopwatch.js';

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
  const body: Record<string, unknown> = { error };
  if (withPerf) body.performance = perfBlock(req);
  if (status === 429 || status === 503) {
    // Whole seconds, at least 1 (RESOLVED 0.5, G16): from detail.retry_after_ms when given.
    const ms = e.detail?.retry_after_ms;
    reply.header('retry-after', String(typeof ms === 'number' ? Math.max(1, Math.ceil(ms / 1000)) : 1));
  }
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

export function sendJson(req: FastifyRequest, reply: FastifyReply, status: number, body: Record<string, unknown>, perf: PerfFields = {}): FastifyReply {
  body.performance = perfBlock(req, perf);
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

/** A worker's reply: its JSON object (without the closing brace) plus the performance block. */
export function sendResult(req: FastifyRequest, reply: FastifyReply, r: TopicResult): FastifyReply {
  if (!r.ok) return sendError(req, reply, r);
  const tail = Buffer.from(`,"performance":${JSON.stringify(perfBlock(req, r.perf))}}`, 'utf8');
  const head = Buffer.from(r.json.buffer, r.json.byteOffset, r.json.byteLength);
  return reply.code(r.status).header('content-type', 'application/json; charset=utf-8').send(Buffer.concat([head, tail]));
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
