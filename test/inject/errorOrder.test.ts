// docs/API.md "Which error wins", where it was not kept: 404 and 405 come before 413 (an unknown
// path or a wrong method is answered before Fastify judges the body's size), and a 403 for a
// topic named in a watch or redrive body comes right after the parse, before the body's other
// 400s, as on a router or topic PUT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError } from '../http/util.js';

const KEY = 'sk-order-81';
const { srv } = injectSuite({ SERVICE_API_KEYS: `sk-order-root, ${KEY}::a.`, SERVICE_MAX_BODY_BYTES: '1000' });
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
const big = JSON.stringify({ x: 'y'.repeat(3000) });

test('404 and 405 before 413; 401 still first', async () => {
  assertError(await srv.raw('POST', '/v0/nope', { headers, body: big }), 404, 'not_found');
  const r = await srv.raw('PATCH', '/v0/topics/a.t', { headers, body: big });
  assertError(r, 405, 'method_not_allowed');
  assert.match(String(r.headers['allow'] ?? ''), /PUT/);
  assertError(await srv.raw('POST', '/v0/topics/a.t', { headers, body: big }), 413, 'payload_too_large');
  assertError(await srv.raw('POST', '/v0/nope', { headers: { 'content-type': 'application/json' }, body: big }), 401, 'unauthorized');
});

test("a topic outside the key named in a watch or redrive body is 403 before that body's 400s", async () => {
  for (const body of [{ topics: { 'c.secret': {} }, limit: -1 }, { topics: { 'c y': {} } }]) {
    const r = await srv.raw('POST', '/v0/watch', { headers, body: JSON.stringify(body) });
    assertError(r, 403, 'forbidden', JSON.stringify(body));
  }
  const r = await srv.raw('POST', '/v0/topics/a.q/redrive', { headers, body: JSON.stringify({ from: 'c.dlq', max: -1 }) });
  assertError(r, 403, 'forbidden');
});
