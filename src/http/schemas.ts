// ajv schemas for the small request bodies parsed on the HTTP thread, compiled once at startup.
// Coercion is off: a wrong JSON type is a 400. Integers are bounded by 2^53-1 (RESOLVED 0.2).
import { Ajv, type ValidateFunction } from 'ajv';
import { HttpError } from './reply.js';

const u64 = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false });

export interface DiffBody {
  from_seq?: number;
  limit?: number;
  node?: string | string[];
  include_tags?: boolean;
  include_meta?: boolean;
  wait_ms?: number;
  max_batch_bytes?: number;
}

export const validateDiff = ajv.compile<DiffBody>({
  type: 'object',
  properties: {
    from_seq: u64,
    limit: u64,
    node: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    include_tags: { type: 'boolean' },
    include_meta: { type: 'boolean' },
    wait_ms: u64,
    max_batch_bytes: u64,
  },
});

/** Runs a validator; on failure throws a 400 naming the first bad field. */
export function check<T>(validate: ValidateFunction<T>, body: unknown): T {
  if (validate(body)) return body;
  const err = validate.errors?.[0];
  const field = err?.instancePath.replace(/^\//, '').split('/')[0] || undefined;
  throw new HttpError('invalid_request', `invalid ${field ?? 'body'}: ${err?.message ?? 'bad value'}`, field ? { field } : undefined);
}
