// What ties a request body's checks to its wire type (src/protocol/wire.ts, wireQueues.ts), for
// the bodies checked on the HTTP thread (src/http/schemas.ts, queueSchemas.ts, bodyFields.ts) and
// those checked on a topic worker (queueBodies.ts): an ajv schema and an unknown-field list that
// must name every field of the type and no other (a field added to one and not the other does not
// compile), the parse of a small body into an object, and the 400s of both, worded once. Pure.
import type { ValidateFunction } from 'ajv';
import { describeAjvError } from '../core/ajvMessage.js';
import { fail, type ErrorResult } from './errors.js';

/**
 * An object schema whose `properties` name exactly the fields of the body type T (none missing,
 * none extra) and whose `required` names only fields of T. Returns the schema unchanged.
 */
export function bodySchema<T>(schema: {
  type: 'object';
  required?: (keyof T & string)[];
  properties: { [K in keyof T]-?: object };
}): typeof schema {
  return schema;
}

/**
 * The field names of a wire body type, all of them: the object must name each field of T and no
 * other, so a field added to the type cannot be missed in the unknown-field warnings.
 */
export function fieldsOf<T>(names: { [K in keyof Required<T>]: true }): ReadonlySet<string> {
  return new Set(Object.keys(names));
}

/** The 400 of a failed validator, naming the first bad field. */
export function ajvFailure(validate: ValidateFunction): ErrorResult {
  const err = validate.errors?.[0];
  // A missing required property has an empty path; ajv names it in params.missingProperty.
  const missing = err?.keyword === 'required' ? (err.params as { missingProperty?: string }).missingProperty : undefined;
  const field = err?.instancePath.replace(/^\//, '').split('/')[0] || missing || undefined;
  // Worded as the routes that check by hand word it (docs/API.md "Errors": one message per condition).
  if (missing !== undefined && field === missing) return fail('invalid_request', `${missing} is required`, { field: missing });
  return fail('invalid_request', `invalid ${field ?? 'body'}: ${describeAjvError(err)}`, field ? { field } : undefined);
}

/** A small body parsed as a JSON object, or the 400 that says why it is not one. */
export type ParsedBody = { ok: true; body: Record<string, unknown> } | ErrorResult;

/** Parses a small request body (UTF-8 JSON) that must be an object. */
export function parseBodyObject(bytes: Uint8Array): ParsedBody {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    return fail('invalid_request', 'body is not valid JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return fail('invalid_request', 'body must be a JSON object');
  return { ok: true, body: v as Record<string, unknown> };
}
