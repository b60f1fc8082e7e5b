// Request parsing helpers for the HTTP thread (docs/API.md "Conventions"): media type, small JSON
// bodies, query booleans and integers, topic names. Append bodies are NOT parsed here.
import type { FastifyRequest } from 'fastify';
import { isTopicName } from '../core/names.js';
import { HttpError } from './reply.js';
import { noteUnknownFields } from './bodyFields.js';
import { parseBodyObject } from '../protocol/bodySchemas.js';

export function isJsonMediaType(ct: string | undefined): boolean {
  if (!ct) return false;
  // Most requests send one of these two exactly: no split, trim or lower-casing for them.
  if (ct === 'application/json' || ct === 'application/json; charset=utf-8') return true;
  return ct.split(';')[0]!.trim().toLowerCase() === 'application/json';
}

export function rawBody(req: FastifyRequest): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

/**
 * A required JSON body: 415 without a JSON Content-Type, 400 when empty. `optional` bodies (PUT
 * topic, diff) may be empty with no Content-Type and then mean {}.
 */
export function checkBody(req: FastifyRequest, optional: boolean): Buffer {
  const body = rawBody(req);
  if (optional && body.length === 0) return body;
  if (!isJsonMediaType(req.headers['content-type'])) throw new HttpError('unsupported_media_type', 'Content-Type must be application/json');
  if (body.length === 0) throw new HttpError('invalid_request', 'request body is required');
  return body;
}

/** Parses a small JSON body (already through checkBody) that must be an object; notes its unknown fields on `req`. */
export function parseSmallBody(body: Buffer, req?: FastifyRequest): Record<string, unknown> {
  if (body.length === 0) return {};
  const parsed = parseBodyObject(body);
  if (!parsed.ok) throw HttpError.of(parsed);
  if (req) noteUnknownFields(req, parsed.body);
  return parsed.body;
}

function queryValue(req: FastifyRequest, name: string): string | undefined {
  const q = req.query as Record<string, string | string[] | undefined>;
  const v = q[name];
  return Array.isArray(v) ? v[v.length - 1] : v;
}

export function queryBool(req: FastifyRequest, name: string, dflt: boolean): boolean {
  const v = queryValue(req, name);
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  return dflt;
}

export function queryInt(req: FastifyRequest, name: string): number | undefined {
  const v = queryValue(req, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new HttpError('invalid_request', `${name} must be a non-negative integer`, { field: name });
  // A plain integer past 2^53 is a range problem like any other: clamped by the caller, never
  // refused (docs/API.md "Conventions").
  return Math.min(Number(v), Number.MAX_SAFE_INTEGER);
}

export function queryString(req: FastifyRequest, name: string): string | undefined {
  return queryValue(req, name);
}

export function topicParam(req: FastifyRequest): string {
  const topic = (req.params as { topic: string }).topic;
  if (!isTopicName(topic)) throw new HttpError('invalid_request', 'invalid topic name', { topic });
  return topic;
}
