// The schemas compiled at boot skip Ajv's meta-schema check (validateSchema: false, a boot-time
// cost); this is where they are checked against JSON Schema's meta-schema instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import { CONFIG_SCHEMA } from '../../src/protocol/topicConfig.js';
import { ENV_SCHEMA } from '../../src/configSchema.js';
import { ROUTER_SCHEMA } from '../../src/http/routerSchemas.js';

test('the topic config, settings and router schemas are valid JSON Schemas', () => {
  const ajv = new Ajv({ strict: true });
  for (const [name, schema] of Object.entries({ CONFIG_SCHEMA, ENV_SCHEMA, ROUTER_SCHEMA })) {
    assert.equal(ajv.validateSchema(schema as object), true, `${name}: ${ajv.errorsText(ajv.errors)}`);
  }
  // And the check can fail: a schema with a wrong type for a keyword.
  assert.equal(ajv.validateSchema({ type: 'object', required: 'source' }), false);
});
