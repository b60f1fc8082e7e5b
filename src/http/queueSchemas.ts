// Queue request bodies (SPEC 4.10, RESOLVED 4.5, docs/QUEUES.md), checked on the HTTP thread
// with ajv (coercion off) and then defaulted and clamped into the plain-data requests the queue
// actor takes. Every failure is a 400 naming the field; more than 1000 seqs is batch_too_large.
import { Ajv } from 'ajv';
import { LEASE_ID_SYNTAX } from '../actors/queue/leaseId.js';
import type { AckRequest, ClaimRequest, ExtendRequest, NackRequest } from '../core/messages/rpc.js';
import { HttpError } from './reply.js';
import { check } from './schemas.js';

export const QUEUE_MAX_CLAIM = 1000;
export const QUEUE_MAX_SEQS = 1000;
export const LEASE_MS_MIN = 100;
export const LEASE_MS_MAX = 86_400_000;
export const NACK_DELAY_MS_MAX = 86_400_000;
export const NODE_MAX_BYTES = 128;
/** A blocking claim waits at most this long (`wait_ms` is clamped, as on diff). */
export const CLAIM_WAIT_MS_MAX = 30_000;

const u64 = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false });

interface ClaimBody {
  node: string;
  max?: number;
  lease_ms?: number;
  wait_ms?: number;
}

interface SeqsBody {
  node: string;
  seqs: number[];
  lease_ids?: string[];
  delay_ms?: number;
  lease_ms?: number;
}

const validateClaim = ajv.compile<ClaimBody>({
  type: 'object',
  required: ['node'],
  properties: { node: { type: 'string' }, max: u64, lease_ms: u64, wait_ms: u64 },
});

const seqsBody = (required: string[]) =>
  ajv.compile<SeqsBody>({
    type: 'object',
    required,
    properties: {
      node: { type: 'string' },
      seqs: { type: 'array', items: u64 },
      lease_ids: { type: 'array', items: { type: 'string' } },
      delay_ms: u64,
      lease_ms: u64,
    },
  });
const validateAck = seqsBody(['node', 'seqs']);
const validateExtend = seqsBody(['node', 'seqs', 'lease_ms']);

export function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

/** `node`: the worker identity, 1..128 bytes of UTF-8 (RESOLVED 4.5). */
export function checkNode(node: string | undefined): string {
  if (node === undefined || node === '') throw new HttpError('invalid_request', 'node is required', { field: 'node' });
  if (Buffer.byteLength(node, 'utf8') > NODE_MAX_BYTES) throw new HttpError('invalid_request', `node is longer than ${NODE_MAX_BYTES} bytes`, { field: 'node' });
  // A lone surrogate has no UTF-8 form: the leases log would store U+FFFD and the restored lease
  // would no longer match the worker's node.
  if (Buffer.from(node, 'utf8').toString('utf8') !== node) throw new HttpError('invalid_request', 'node is not well-formed Unicode', { field: 'node' });
  return node;
}

/** `max` absent or 0 → 1, above 1000 → 1000 (claim and /work). */
export function clampMax(max: number | undefined): number {
  return max === undefined || max === 0 ? 1 : Math.min(max, QUEUE_MAX_CLAIM);
}

export function clampLeaseMs(ms: number | undefined): number | null {
  return ms === undefined ? null : clamp(ms, LEASE_MS_MIN, LEASE_MS_MAX);
}

function checkSeqs(b: SeqsBody): { seqs: number[]; leaseIds: string[] | null } {
  if (b.seqs.length === 0) throw new HttpError('invalid_request', 'seqs must name at least one seq', { field: 'seqs' });
  if (b.seqs.length > QUEUE_MAX_SEQS) throw new HttpError('batch_too_large', `at most ${QUEUE_MAX_SEQS} seqs per request`, { seqs: b.seqs.length, max: QUEUE_MAX_SEQS });
  const ids = b.lease_ids;
  if (ids === undefined) return { seqs: b.seqs, leaseIds: null };
  if (ids.length !== b.seqs.length) throw new HttpError('invalid_request', 'lease_ids must have one entry per seq', { field: 'lease_ids' });
  for (const id of ids) {
    if (id !== '' && !LEASE_ID_SYNTAX.test(id)) throw new HttpError('invalid_request', `lease_ids entries are "lease_" and lowercase hex, or ""`, { field: 'lease_ids' });
  }
  return { seqs: b.seqs, leaseIds: ids };
}

export function claimRequest(topic: string, body: unknown): ClaimRequest {
  const b = check(validateClaim, body);
  return { op: 'claim', topic, node: checkNode(b.node), max: clampMax(b.max), leaseMs: clampLeaseMs(b.lease_ms), waitMs: Math.min(b.wait_ms ?? 0, CLAIM_WAIT_MS_MAX) };
}

export function ackRequest(topic: string, body: unknown): AckRequest {
  const b = check(validateAck, body);
  const node = checkNode(b.node);
  return { op: 'ack', topic, node, ...checkSeqs(b) };
}

export function nackRequest(topic: string, body: unknown): NackRequest {
  const b = check(validateAck, body);
  const node = checkNode(b.node);
  return { op: 'nack', topic, node, ...checkSeqs(b), delayMs: clamp(b.delay_ms ?? 0, 0, NACK_DELAY_MS_MAX) };
}

export function extendRequest(topic: string, body: unknown): ExtendRequest {
  const b = check(validateExtend, body);
  const node = checkNode(b.node);
  return { op: 'extend', topic, node, ...checkSeqs(b), leaseMs: clamp(b.lease_ms!, LEASE_MS_MIN, LEASE_MS_MAX) };
}

// ---- OpenAPI descriptions of the queue routes (merged into src/http/openapi.ts's ROUTE_DOCS) ----

const doc = {
  u64: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  obj: (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, ...(required.length ? { required } : {}) }),
  topicParams: { type: 'object', properties: { topic: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' } }, required: ['topic'] },
  errors: { '4XX': { description: 'the spec error body', $ref: 'SpoolError#' }, '5XX': { description: 'the spec error body', $ref: 'SpoolError#' } },
  ok: (description: string) => ({ 200: { description, type: 'object', additionalProperties: true } }),
};

/** Route descriptions by `METHOD path`, as openapi.ts keeps them; these win over its own. */
export const QUEUE_ROUTE_DOCS: Record<string, { summary: string; tags: string[]; params?: unknown; querystring?: unknown; body?: unknown; response: Record<string, unknown> }> = {
  'POST /v0/topics/:topic/claim': {
    summary: 'Claim jobs of a queue (wait_ms: a blocking claim)',
    tags: ['queues'],
    params: doc.topicParams,
    body: doc.obj({ node: { type: 'string' }, max: doc.u64, lease_ms: doc.u64, wait_ms: { ...doc.u64, description: 'wait up to this long (clamped to 30000) for a job when none is claimable' } }, ['node']),
    response: { ...doc.ok('jobs'), ...doc.errors },
  },
};
