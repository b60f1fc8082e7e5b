// Paging of GET /v0/topics and GET /v0/routers (docs/API.md "GET /v0/topics", "Routers": the same page_size rule and
// the same opaque cursor, which carries the last name of the page as `after`).
import type { FastifyRequest } from 'fastify';
import { HttpError } from './reply.js';
import { queryInt, queryString } from './parse.js';

const PAGE_SIZE_DEFAULT = 100;
const PAGE_SIZE_MAX = 1000;

export function encodeCursor(after: string): string {
  return Buffer.from(JSON.stringify({ after }), 'utf8').toString('base64url');
}

function decodeCursor(s: string): string {
  try {
    if (!/^[A-Za-z0-9_-]*={0,2}$/.test(s)) throw new Error('not base64url');
    const v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof (v as { after?: unknown }).after === 'string')
      return (v as { after: string }).after;
  } catch {
    /* fall through */
  }
  throw new HttpError('invalid_request', 'malformed cursor', { field: 'cursor' });
}

/** The page asked for: its size (default 100, clamped to 1000) and the name it starts after. */
export function pageQuery(req: FastifyRequest): { pageSize: number; after: string } {
  const rawSize = queryInt(req, 'page_size') ?? 0;
  const cursor = queryString(req, 'cursor');
  return { pageSize: rawSize === 0 ? PAGE_SIZE_DEFAULT : Math.min(rawSize, PAGE_SIZE_MAX), after: cursor ? decodeCursor(cursor) : '' };
}
