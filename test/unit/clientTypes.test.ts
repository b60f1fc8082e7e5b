// The client's types and the server's checks describe the same bodies: the client re-exports the
// wire types of src/protocol/wire.ts, which the server's ajv schemas are tied to by bodySchema
// (src/protocol/bodySchemas.ts), as are the unknown-field lists by fieldsOf (the same file). This
// file fails to compile when the config enums and keys, the watch body, or a schema or field list
// and its body type drift apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as C from '../../src/client/types.js';
import { CONFIG_SCHEMA, CONFIG_FIELDS } from '../../src/protocol/topicConfig.js';
import type { WatchBody } from '../../src/protocol/wire.js';
import { bodySchema, fieldsOf } from '../../src/protocol/bodySchemas.js';

/** true only when A and B are the same set of types. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type P = typeof CONFIG_SCHEMA.properties;

const durability: Same<C.Durability, P['durability']['enum'][number]> = true;
const type: Same<NonNullable<C.TopicConfig['type']>, P['type']['enum'][number]> = true;
const discard: Same<NonNullable<C.TopicConfig['discard']>, P['discard']['enum'][number]> = true;
const keys: Same<keyof C.TopicConfig, keyof P> = true;
const watchKeys: Same<keyof C.WatchRequest, keyof WatchBody> = true;
const consistency: Same<C.WatchRequest['consistency'], WatchBody['consistency']> = true;

test("the client's config and watch types have the server's keys and enum values", () => {
  // The checks above are compile-time; this keeps them referenced and checks the key count too.
  assert.deepEqual([durability, type, discard, keys, watchKeys, consistency], [true, true, true, true, true, true]);
  assert.equal(CONFIG_FIELDS.size, 17);
});

interface TwoFields {
  a: number;
  b?: string;
}
const u64 = { type: 'integer', minimum: 0 };

test('bodySchema: a schema must name every field of its body type and no other', () => {
  const whole = bodySchema<TwoFields>({ type: 'object', required: ['a'], properties: { a: u64, b: { type: 'string' } } });
  // @ts-expect-error a field of the type missing from the schema
  const missing = bodySchema<TwoFields>({ type: 'object', properties: { a: u64 } });
  // @ts-expect-error a field in the schema the type lacks
  const extra = bodySchema<TwoFields>({ type: 'object', properties: { a: u64, b: { type: 'string' }, c: u64 } });
  // @ts-expect-error a required name the type lacks
  const required = bodySchema<TwoFields>({ type: 'object', required: ['c'], properties: { a: u64, b: { type: 'string' } } });
  assert.deepEqual(Object.keys(whole.properties), ['a', 'b']);
  assert.deepEqual(
    [missing, extra, required].map((s) => s.type),
    ['object', 'object', 'object'],
  );
});

test('fieldsOf: the unknown-field lists name every field of their body type and no other', () => {
  const whole = fieldsOf<TwoFields>({ a: true, b: true });
  // @ts-expect-error a field of the type missing from the list
  const missing = fieldsOf<TwoFields>({ a: true });
  // @ts-expect-error a field in the list the type lacks
  const extra = fieldsOf<TwoFields>({ a: true, b: true, c: true });
  assert.deepEqual([...whole], ['a', 'b']);
  assert.deepEqual([missing.size, extra.size], [1, 3]);
});
