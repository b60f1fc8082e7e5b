// src/client/types.ts spells the server's enums, config keys and watch body again on purpose (the client
// must not import server code): this file fails to compile when the two drift apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as C from '../../src/client/types.js';
import { CONFIG_SCHEMA, CONFIG_FIELDS } from '../../src/protocol/topicConfig.js';
import type { WatchBody } from '../../src/http/schemas.js';

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
