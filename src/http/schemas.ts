// ajv schemas for the small request bodies parsed on the HTTP thread, compiled once at startup.
// Coercion is off: a wrong JSON type is a 400. Integers are bounded by 2^53-1 (docs/API.md "Conventions").
// The body types are the wire types of src/protocol/wire.ts; `bodySchema` (src/protocol/bodySchemas.ts)
// ties each schema's fields to its type, so a field added to one and not the other does not compile.
import { Ajv, type ValidateFunction } from 'ajv';
import { HttpError } from './reply.js';
import { ajvFailure, bodySchema } from '../protocol/bodySchemas.js';
import type { DiffBody, RecordDeleteBody, WatchBody } from '../protocol/wire.js';

const u64 = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false });

export const validateDiff = ajv.compile<DiffBody>(
  bodySchema<DiffBody>({
    type: 'object',
    properties: {
      from_seq: u64,
      from_ts: { ...u64, description: 'read from the first record whose $ts (ms since the epoch) is at or after this; not with from_seq' },
      limit: u64,
      node: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
      include_tags: { type: 'boolean' },
      include_meta: { type: 'boolean' },
      wait_ms: u64,
      max_batch_bytes: u64,
    },
  }),
);

/** Runs a validator; on failure throws a 400 naming the first bad field. */
export function check<T>(validate: ValidateFunction<T>, body: unknown): T {
  if (validate(body)) return body;
  throw HttpError.of(ajvFailure(validate));
}

/**
 * A read starts from one place: `from_ts` (a time) excludes `from_seq`, and in a watch topic
 * `tail: true` (docs/API.md). `field` names the rejected field for `detail.field`.
 */
export function checkOneStart(b: { from_seq?: number; from_ts?: number; tail?: boolean }, field: string): void {
  if (b.from_ts === undefined) return;
  if (b.from_seq !== undefined) throw new HttpError('invalid_request', `give from_seq or from_ts, not both`, { field });
  if (b.tail === true) throw new HttpError('invalid_request', `give tail or from_ts, not both`, { field });
}

/** A record delete body as ajv leaves it: `match` is checked by parseMatch. */
export type RecordDeleteChecked = Omit<RecordDeleteBody, 'match'> & { match?: unknown };

export const validateRecordDelete = ajv.compile<RecordDeleteChecked>(
  bodySchema<RecordDeleteChecked>({
    type: 'object',
    properties: { before_seq: u64, match: {} },
  }),
);

/**
 * A delete predicate (docs/API.md "Record delete"): `["tag","Eq",x]`, `["tag","Glob","p*"]` (a literal prefix and a
 * single trailing `*`), or a bare string meaning Eq. Returns the Glob prefix without its `*`.
 */
export function parseMatch(m: unknown): { op: 'Eq' | 'Glob'; value: string } {
  const bad = (why: string) => new HttpError('invalid_request', `malformed match: ${why}`, { field: 'match' });
  if (typeof m === 'string') return { op: 'Eq', value: m };
  if (!Array.isArray(m) || m.length !== 3) throw bad('expected a tag string or a [field, op, value] tuple');
  const [field, op, value] = m as unknown[];
  if (field !== 'tag') throw bad('the only field is "tag"');
  if (typeof value !== 'string') throw bad('the value must be a string');
  if (op === 'Eq') return { op, value };
  if (op !== 'Glob') throw bad('op must be Eq or Glob');
  if (!value.endsWith('*')) throw bad('a Glob pattern is a literal prefix followed by a single trailing *');
  const prefix = value.slice(0, -1);
  if (prefix.includes('*')) throw bad('a Glob pattern may hold only one *, at the end');
  return { op, value: prefix };
}

/** POST /v0/watch (docs/API.md "POST /v0/watch"). Topic names and the 256 bound are checked by the route. */
export const validateWatch = ajv.compile<WatchBody>(
  bodySchema<WatchBody>({
    type: 'object',
    required: ['topics'],
    properties: {
      topics: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          properties: {
            from_seq: u64,
            tail: { type: 'boolean' },
            from_ts: {
              ...u64,
              description: 'start at the first record whose $ts (ms since the epoch) is at or after this; not with from_seq or tail: true',
            },
          },
        },
      },
      cursor: { type: 'string' },
      node: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
      limit: u64,
      max_batch_bytes: u64,
      heartbeat_ms: u64,
      include_meta: { type: 'boolean' },
      include_tags: { type: 'boolean' },
      include_data: { type: 'boolean' },
      consistency: { enum: ['eventual', 'strong'] },
    },
  }),
);
