// The claim and ack bodies (docs/API.md "Queues"), parsed and checked on the topic worker that owns
// the queue: the HTTP thread sends them unparsed (docs/ARCHITECTURE.md "Thread crossings"), after
// the media-type, empty-body and topic-name checks, so it does no JSON.parse, ajv or clone for
// them. The request channel's worker end turns each into the ClaimRequest or AckRequest the
// queue actor takes, or into the 400 the HTTP thread would have answered, before any actor sees
// it. The checks nack, extend and term share with ack are here too (queueSchemas.ts runs those
// on the HTTP thread), so the two threads cannot word an error differently. Pure; ajv with
// coercion off, compiled once per thread.
import { Ajv, type ValidateFunction } from 'ajv';
import { collectUnknown } from '../core/unknownFields.js';
import { fail, type ErrorResult } from './errors.js';
import { ajvFailure, bodySchema, fieldsOf, parseBodyObject } from './bodySchemas.js';
import { NODE_MAX_BYTES, nodeTooLongMessage } from './limits.js';
import type { AckRequest, ClaimRequest, QueueBodyRequest } from './messages/rpc.js';
import type { ClaimBody, ExtendBody, NackBody, SeqsBody, TermBody } from './wireQueues.js';

export const QUEUE_MAX_CLAIM = 1000;
export const QUEUE_MAX_SEQS = 1000;
export const LEASE_MS_MIN = 100;
export const LEASE_MS_MAX = 86_400_000;
/** A blocking claim waits at most this long (`wait_ms` is clamped, as on diff). */
export const CLAIM_WAIT_MS_MAX = 30_000;
/**
 * The syntax docs/API.md "Queues" accepts in `lease_ids` ("" means no token, checked apart);
 * the ids src/actors/queue/leaseId.ts makes have it.
 */
export const LEASE_ID_SYNTAX = /^lease_[0-9a-f]+$/;

/** The bodies of ack, nack, extend and term: one schema, each route's required fields. */
export type AnySeqsBody = SeqsBody & Pick<NackBody, 'delay_ms'> & Partial<Pick<ExtendBody, 'lease_ms'>> & Pick<TermBody, 'reason'>;

const u64 = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false });

const validateClaim = ajv.compile<ClaimBody>(
  bodySchema<ClaimBody>({
    type: 'object',
    required: ['node'],
    properties: { node: { type: 'string' }, max: u64, lease_ms: u64, wait_ms: u64 },
  }),
);

/** A validator of the seqs bodies with `required` fields. */
export function seqsBodyValidator(required: (keyof AnySeqsBody)[]): ValidateFunction<AnySeqsBody> {
  return ajv.compile<AnySeqsBody>(
    bodySchema<AnySeqsBody>({
      type: 'object',
      required,
      properties: {
        node: { type: 'string' },
        seqs: { type: 'array', items: u64 },
        lease_ids: { type: 'array', items: { type: 'string' } },
        delay_ms: u64,
        lease_ms: u64,
        reason: { type: 'string' },
      },
    }),
  );
}
const validateAck = seqsBodyValidator(['node', 'seqs']);

/** The field names claim and ack know, for the unknown-field warnings (docs/API.md "Conventions"). */
const CLAIM_FIELDS = fieldsOf<ClaimBody>({ node: true, max: true, lease_ms: true, wait_ms: true });
const ACK_FIELDS = fieldsOf<SeqsBody>({ node: true, seqs: true, lease_ids: true });

/** `node`, the worker identity: 1..128 bytes of well-formed UTF-8; the 400 when it is not. */
export function nodeFailure(node: string | undefined): ErrorResult | undefined {
  if (node === undefined || node === '') return fail('invalid_request', 'node is required', { field: 'node' });
  if (isShortAscii(node)) return undefined; // the usual node ("worker-7"): no UTF-8 encoding to check it
  if (Buffer.byteLength(node, 'utf8') > NODE_MAX_BYTES) return fail('invalid_request', nodeTooLongMessage(), { field: 'node' });
  // A lone surrogate has no UTF-8 form: the leases log would store U+FFFD and the restored lease
  // would no longer match the worker's node.
  if (Buffer.from(node, 'utf8').toString('utf8') !== node)
    return fail('invalid_request', 'node is not well-formed Unicode', { field: 'node' });
  return undefined;
}

/** True when `s` is ASCII and at most NODE_MAX_BYTES long: its UTF-8 is itself, well-formed and short enough. */
function isShortAscii(s: string): boolean {
  if (s.length > NODE_MAX_BYTES) return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The 400 of a seqs body whose `seqs` or `lease_ids` break the rules (after its validator passed). */
export function seqsFailure(b: SeqsBody): ErrorResult | undefined {
  if (b.seqs.length === 0) return fail('invalid_request', 'seqs must name at least one seq', { field: 'seqs' });
  if (b.seqs.length > QUEUE_MAX_SEQS)
    return fail('batch_too_large', `at most ${QUEUE_MAX_SEQS} seqs per request`, { seqs: b.seqs.length, max: QUEUE_MAX_SEQS });
  const ids = b.lease_ids;
  if (ids === undefined) return undefined;
  if (ids.length !== b.seqs.length) return fail('invalid_request', 'lease_ids must have one entry per seq', { field: 'lease_ids' });
  for (const id of ids) {
    if (id !== '' && !LEASE_ID_SYNTAX.test(id))
      return fail('invalid_request', `lease_ids entries are "lease_" and lowercase hex, or ""`, { field: 'lease_ids' });
  }
  return undefined;
}

/** `max` absent or 0 → 1, above 1000 → 1000 (claim and /work). */
export function clampMax(max: number | undefined): number {
  return max === undefined || max === 0 ? 1 : Math.min(max, QUEUE_MAX_CLAIM);
}

export function clampLeaseMs(ms: number | undefined): number | null {
  return ms === undefined ? null : Math.min(Math.max(ms, LEASE_MS_MIN), LEASE_MS_MAX);
}

/**
 * The request a claim or ack body makes, or its 400, in the order the HTTP thread checks a small
 * body (docs/API.md "Which error wins"): JSON, an object, the schema, `node`, then `seqs` and
 * `lease_ids`. The names of fields the route does not know are added to `unknown` (also when the
 * body is refused: the Warning header goes on the error too).
 */
export function queueRequestOf(r: QueueBodyRequest, unknown: string[]): ClaimRequest | AckRequest | ErrorResult {
  const parsed = parseBodyObject(r.body);
  if (!parsed.ok) return parsed;
  const v = parsed.body;
  if (r.op === 'claimBody') {
    collectUnknown(unknown, v, CLAIM_FIELDS);
    if (!validateClaim(v)) return ajvFailure(validateClaim);
    const bad = nodeFailure(v.node);
    if (bad) return bad;
    return {
      op: 'claim',
      topic: r.topic,
      node: v.node,
      max: clampMax(v.max),
      leaseMs: clampLeaseMs(v.lease_ms),
      waitMs: Math.min(v.wait_ms ?? 0, CLAIM_WAIT_MS_MAX),
      ...(r.waitId !== undefined ? { waitId: r.waitId } : {}),
    };
  }
  collectUnknown(unknown, v, ACK_FIELDS);
  if (!validateAck(v)) return ajvFailure(validateAck);
  const bad = nodeFailure(v.node) ?? seqsFailure(v);
  if (bad) return bad;
  return { op: 'ack', topic: r.topic, node: v.node, seqs: v.seqs, leaseIds: v.lease_ids ?? null };
}
