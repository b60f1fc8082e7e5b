// Queue request bodies checked on the HTTP thread (docs/API.md "Queues"; docs/QUEUES.md): nack,
// extend, term, redrive and the lease list, checked with ajv (coercion off) and then defaulted
// and clamped into the plain-data requests the queue actor takes. Every failure is a 400 naming
// the field; more than 1000 seqs is batch_too_large. Claim and ack bodies cross to the topic
// worker unparsed and are checked there (src/protocol/queueBodies.ts, which holds the checks
// all of them share).
import { Ajv } from 'ajv';
import type { ExtendRequest, LeasesRequest, NackRequest, RedriveRequest, TermRequest } from '../protocol/messages/rpc.js';
import { isTopicName } from '../core/names.js';
import { parseMatch } from './schemas.js';
import { bodySchema } from '../protocol/bodySchemas.js';
import type { RedriveBody } from '../protocol/wireQueues.js';
import { DEAD_LETTER_REASON_BYTES_MAX } from '../actors/topic/appendRecord.js';
import { HttpError } from './reply.js';
import { check } from './schemas.js';
import {
  type AnySeqsBody,
  LEASE_MS_MAX,
  LEASE_MS_MIN,
  QUEUE_MAX_SEQS,
  nodeFailure,
  seqsBodyValidator,
  seqsFailure,
} from '../protocol/queueBodies.js';

export const NACK_DELAY_MS_MAX = 86_400_000;
/** Lease list page size: default and most (docs/QUEUES.md "Leases"). */
export const LEASES_PAGE_DEFAULT = 100;
export const LEASES_PAGE_MAX = 1000;

const u64 = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false });

const validateSeqs = seqsBodyValidator(['node', 'seqs']);
const validateExtend = seqsBodyValidator(['node', 'seqs', 'lease_ms']);

export function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

/** `node`: the worker identity, 1..128 bytes of UTF-8 (docs/API.md "Queues"). */
export function checkNode(node: string | undefined): string {
  const bad = nodeFailure(node);
  if (bad) throw HttpError.of(bad);
  return node!;
}

function checkSeqs(b: AnySeqsBody): { seqs: number[]; leaseIds: string[] | null } {
  const bad = seqsFailure(b);
  if (bad) throw HttpError.of(bad);
  return { seqs: b.seqs, leaseIds: b.lease_ids ?? null };
}

export function nackRequest(topic: string, body: unknown): NackRequest {
  const b = check(validateSeqs, body);
  const node = checkNode(b.node);
  return { op: 'nack', topic, node, ...checkSeqs(b), delayMs: clamp(b.delay_ms ?? 0, 0, NACK_DELAY_MS_MAX) };
}

/** A term's `reason`: well-formed Unicode, at most 1024 bytes of UTF-8 (it is stamped into meta). */
function checkReason(reason: string | undefined): string | null {
  if (reason === undefined) return null;
  if (Buffer.byteLength(reason, 'utf8') > DEAD_LETTER_REASON_BYTES_MAX)
    throw new HttpError('invalid_request', `reason is longer than ${DEAD_LETTER_REASON_BYTES_MAX} bytes`, { field: 'reason' });
  if (Buffer.from(reason, 'utf8').toString('utf8') !== reason)
    throw new HttpError('invalid_request', 'reason is not well-formed Unicode', { field: 'reason' });
  return reason;
}

export function termRequest(topic: string, body: unknown): TermRequest {
  const b = check(validateSeqs, body);
  const node = checkNode(b.node);
  return { op: 'term', topic, node, ...checkSeqs(b), reason: checkReason(b.reason) };
}

export function extendRequest(topic: string, body: unknown): ExtendRequest {
  const b = check(validateExtend, body);
  const node = checkNode(b.node);
  return { op: 'extend', topic, node, ...checkSeqs(b), leaseMs: clamp(b.lease_ms!, LEASE_MS_MIN, LEASE_MS_MAX) };
}

/** Redrive: at most this many jobs per call, and at most this many named seqs. */
export const REDRIVE_MAX = 10_000;

/** A redrive body as ajv leaves it: `match` is checked by parseMatch. */
type RedriveChecked = Omit<RedriveBody, 'match'> & { match?: unknown };

const validateRedrive = ajv.compile<RedriveChecked>(
  bodySchema<RedriveChecked>({
    type: 'object',
    properties: { from: { type: 'string' }, seqs: { type: 'array', items: u64 }, match: {}, max: u64 },
  }),
);

/**
 * POST …/redrive: `from` (a topic name; default the queue's dead_letter), `seqs` (1..10000 seqs of
 * that topic), `match` (a tag tuple, as record delete), `max` (0 or absent → 10000, above → 10000).
 * `prefixes`: the key's allowlist, for a `from` the actor takes from the config.
 */
export function redriveRequest(topic: string, body: unknown, prefixes: readonly string[] | null): RedriveRequest {
  const b = check(validateRedrive, body);
  if (b.from !== undefined && !isTopicName(b.from))
    throw new HttpError('invalid_request', 'from is not a valid topic name', { field: 'from' });
  let seqs: number[] | null = null;
  if (b.seqs !== undefined) {
    if (b.seqs.length === 0) throw new HttpError('invalid_request', 'seqs must name at least one seq', { field: 'seqs' });
    if (b.seqs.length > REDRIVE_MAX)
      throw new HttpError('batch_too_large', `at most ${REDRIVE_MAX} seqs per request`, { seqs: b.seqs.length, max: REDRIVE_MAX });
    seqs = [...new Set(b.seqs)].sort((x, y) => x - y);
  }
  const match = b.match === undefined ? null : parseMatch(b.match);
  const max = b.max === undefined || b.max === 0 ? REDRIVE_MAX : Math.min(b.max, REDRIVE_MAX);
  return { op: 'redrive', topic, from: b.from ?? null, seqs, match, max, prefixes };
}

/** GET …/leases: `from_seq` (exclusive cursor), `limit` (0 or absent → 100, above 1000 → 1000), `node`. */
export function leasesRequest(
  topic: string,
  fromSeq: number | undefined,
  limit: number | undefined,
  node: string | undefined,
): LeasesRequest {
  return {
    op: 'leases',
    topic,
    afterSeq: fromSeq ?? 0,
    limit: limit === undefined || limit === 0 ? LEASES_PAGE_DEFAULT : Math.min(limit, LEASES_PAGE_MAX),
    node: node === undefined ? null : checkNode(node),
  };
}

// ---- OpenAPI descriptions of the queue routes (merged into src/http/openapi.ts's ROUTE_DOCS) ----

const doc = {
  u64: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  obj: (properties: Record<string, unknown>, required: string[] = []) => ({
    type: 'object',
    properties,
    ...(required.length ? { required } : {}),
  }),
  topicParams: {
    type: 'object',
    properties: { topic: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' } },
    required: ['topic'],
  },
  errors: {
    '4XX': { description: 'the spec error body', $ref: 'SpoolError#' },
    '5XX': { description: 'the spec error body', $ref: 'SpoolError#' },
  },
  ok: (description: string) => ({ 200: { description, type: 'object', additionalProperties: true } }),
};

/** Route descriptions by `METHOD path`, as openapi.ts keeps them; these win over its own. */
export const QUEUE_ROUTE_DOCS: Record<
  string,
  { summary: string; tags: string[]; params?: unknown; querystring?: unknown; body?: unknown; response: Record<string, unknown> }
> = {
  'POST /v0/topics/:topic/claim': {
    summary: 'Claim jobs of a queue (wait_ms: a blocking claim)',
    tags: ['queues'],
    params: doc.topicParams,
    body: doc.obj(
      {
        node: { type: 'string' },
        max: doc.u64,
        lease_ms: doc.u64,
        wait_ms: { ...doc.u64, description: 'wait up to this long (clamped to 30000) for a job when none is claimable' },
      },
      ['node'],
    ),
    response: { ...doc.ok('jobs'), ...doc.errors },
  },
  'POST /v0/topics/:topic/term': {
    summary: 'Fail jobs for good: straight to the dead-letter topic, whatever their deliveries',
    tags: ['queues'],
    params: doc.topicParams,
    body: doc.obj(
      {
        node: { type: 'string' },
        seqs: { type: 'array', items: doc.u64, minItems: 1, maxItems: QUEUE_MAX_SEQS },
        lease_ids: { type: 'array', items: { type: 'string' } },
        reason: { type: 'string', description: `stamped as $dead_letter_reason; at most ${DEAD_LETTER_REASON_BYTES_MAX} bytes` },
      },
      ['node', 'seqs'],
    ),
    response: {
      200: {
        description: 'moved (or, with no dead_letter topic, released)',
        ...doc.obj({
          topic: { type: 'string' },
          terminated: doc.u64,
          released: doc.u64,
          skipped: { type: 'array', items: doc.u64 },
          dead_letter: { type: ['string', 'null'] },
          ready: doc.u64,
          in_flight: doc.u64,
          performance: { type: 'object' },
        }),
      },
      ...doc.errors,
    },
  },
  'POST /v0/topics/:topic/redrive': {
    summary: 'Move dead-lettered jobs back into their queue (all, by seq, or by tag)',
    tags: ['queues'],
    params: doc.topicParams,
    body: doc.obj({
      from: { type: 'string', description: "the dead-letter topic (default: the queue's dead_letter)" },
      seqs: { type: 'array', items: doc.u64, minItems: 1, maxItems: REDRIVE_MAX, description: 'seqs in the dead-letter topic' },
      match: { description: 'a tag match tuple (as record delete)' },
      max: { ...doc.u64, description: `jobs moved at most (default and clamp ${REDRIVE_MAX})` },
    }),
    response: {
      200: {
        description: 'jobs moved back (new seqs at the end of the queue)',
        ...doc.obj({
          topic: { type: 'string' },
          from: { type: 'string' },
          redriven: doc.u64,
          skipped: { type: 'array', items: doc.u64 },
          more: { type: 'boolean' },
          ready: doc.u64,
          in_flight: doc.u64,
          performance: { type: 'object' },
        }),
      },
      ...doc.errors,
    },
  },
  'GET /v0/topics/:topic/leases': {
    summary: "Who holds what: a page of the queue's live leases",
    tags: ['queues'],
    params: doc.topicParams,
    querystring: doc.obj({ from_seq: doc.u64, limit: doc.u64, node: { type: 'string' } }),
    response: {
      200: {
        description: 'leases ascending by $seq after from_seq',
        ...doc.obj({
          topic: { type: 'string' },
          leases: {
            type: 'array',
            items: doc.obj({
              $seq: doc.u64,
              node: { type: 'string' },
              deliveries: doc.u64,
              deadline: doc.u64,
              via: { enum: ['claim', 'work'] },
            }),
          },
          count: doc.u64,
          in_flight: doc.u64,
          ready: doc.u64,
          delayed: doc.u64,
          next_from_seq: { ...doc.u64, description: 'present when more leases follow' },
          performance: { type: 'object' },
        }),
      },
      ...doc.errors,
    },
  },
};
