// The direct send of a small JSON reply (HTTP thread): the response head and body written to the
// socket at once, without Fastify's reply pipeline (its onSend hook chain, the compress plugin's
// check, payload handling), which a profile of single-record appends at 64 clients put at ~1/3 of
// the HTTP thread's own work per request. Only replies the compress plugin would leave alone
// (below its threshold) take it, so nothing changes on the wire: the same status, the headers
// the reply already has, the common ones (responseHeaders.ts), the same bytes. onResponse hooks
// still run on the response's finish (metrics, logs): Fastify listens there for every request.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { setCommonHeaders } from './responseHeaders.js';

/** Replies from this size on go through Fastify, whose compress plugin may gzip them. */
export const COMPRESS_THRESHOLD_BYTES = 1024;

/** Sends `body` directly when it is small; false (nothing done) when Fastify must send it. */
export function sendSmallJson(req: FastifyRequest, reply: FastifyReply, status: number, body: Buffer): boolean {
  if (body.length >= COMPRESS_THRESHOLD_BYTES) return false;
  const headers = reply.getHeaders() as Record<string, string | number | string[]>;
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = body.length;
  setCommonHeaders(req, (k, v) => (headers[k] = v));
  reply.hijack();
  reply.raw.writeHead(status, headers);
  reply.raw.end(body);
  return true;
}
