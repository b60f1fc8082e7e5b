// The direct send of a JSON reply (HTTP thread): the response head and body written to the
// socket at once, without Fastify's reply pipeline (its onSend hook chain, the compress plugin's
// check, payload handling), which a profile of single-record appends at 64 clients put at ~1/3 of
// the HTTP thread's own work per request. Only replies the compress plugin would leave alone
// take it, so nothing changes on the wire: the same status, the headers the reply already has,
// the common ones (responseHeaders.ts), the same bytes. The plugin leaves alone a reply below
// its threshold, and any reply to a request without `Accept-Encoding` or with
// `X-No-Compression` (a claim of 10 jobs, ~3 KiB, to a node:http client is one). onResponse
// hooks still run on the response's finish (metrics, logs): Fastify listens there for every
// request.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { setCommonHeaders } from './responseHeaders.js';

/** Replies from this size on may be gzipped by the compress plugin (server.ts registers it so). */
export const COMPRESS_THRESHOLD_BYTES = 1024;

/** The compress plugin would not gzip this request's reply whatever its size. */
export function neverCompressed(req: FastifyRequest): boolean {
  const h = req.headers;
  return h['accept-encoding'] === undefined || h['x-no-compression'] !== undefined;
}

/** Sends `body` directly when the compress plugin would leave it alone; false (nothing done) when Fastify must send it. */
export function sendDirectJson(req: FastifyRequest, reply: FastifyReply, status: number, body: Buffer): boolean {
  if (body.length >= COMPRESS_THRESHOLD_BYTES && !neverCompressed(req)) return false;
  const headers = reply.getHeaders() as Record<string, string | number | string[]>;
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = body.length;
  setCommonHeaders(req, (k, v) => (headers[k] = v));
  reply.hijack();
  reply.raw.writeHead(status, headers);
  reply.raw.end(body);
  return true;
}
