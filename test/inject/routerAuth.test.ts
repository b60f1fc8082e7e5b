// Routers under auth (docs/API.md "Authentication", "Which error wins"): PUT needs admin, GET read, DELETE
// delete (403 detail.required); a prefix-limited key may only name allowed source and dest
// (403 detail.topic, decided right after the body parses, before any 400 of the body), may not
// read or delete a router whose stored ends are outside its allowlist, and lists only routers
// whose name, source and dest it may see. In the fast tier: an in-process server driven through
// inject() (test/helpers/injectServer.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertOk } from '../http/util.js';

const ALL = 'sk-all-r1';
const READER = 'sk-read-r2';
const TENANT = 'sk-tenant-r3';
const KEYS = [ALL, `${READER}:read`, `${TENANT}::t1.`].join(', ');
const as = (k: string) => ({ authorization: `Bearer ${k}` });
const { srv } = injectSuite({ SERVICE_API_KEYS: KEYS }, async () => {
  assertOk(await srv.client.req('PUT', '/v0/routers/t1.r', { source: 't1.a', dest: 't1.b' }, as(ALL)), 201);
  assertOk(await srv.client.req('PUT', '/v0/routers/x.r', { source: 'x.a', dest: 'x.b' }, as(ALL)), 201);
  assertOk(await srv.client.req('PUT', '/v0/routers/t1.out', { source: 't1.a', dest: 'x.c' }, as(ALL)), 201);
});

test('scopes: PUT needs admin, DELETE delete; GET and list need read', async () => {
  assert.deepEqual(
    assertError(await srv.client.req('PUT', '/v0/routers/t1.r', { source: 't1.a', dest: 't1.b' }, as(READER)), 403, 'forbidden'),
    { required: ['admin'], missing: ['admin'] },
  );
  assertError(await srv.client.req('DELETE', '/v0/routers/t1.r', undefined, as(READER)), 403, 'forbidden');
  assertOk(await srv.client.req('GET', '/v0/routers/t1.r', undefined, as(READER)), 200);
  assertError(await srv.client.req('GET', '/v0/routers/t1.r'), 401, 'unauthorized');
});

test('allowlist: body ends, stored ends and the list', async () => {
  assert.deepEqual(
    assertError(await srv.client.req('PUT', '/v0/routers/t1.new', { source: 't1.a', dest: 'x.z' }, as(TENANT)), 403, 'forbidden'),
    { topic: 'x.z', allowed_prefixes: ['t1.'] },
  );
  // 403 for the named topic comes before the 400 of a bad guarantee.
  assertError(
    await srv.client.req('PUT', '/v0/routers/t1.new', { source: 'y.a', dest: 't1.z', guarantee: 'bad' }, as(TENANT)),
    403,
    'forbidden',
  );
  assertOk(await srv.client.req('PUT', '/v0/routers/t1.new', { source: 't1.a', dest: 't1.z' }, as(TENANT)), 201);
  assertError(await srv.client.req('GET', '/v0/routers/t1.out', undefined, as(TENANT)), 403, 'forbidden');
  assertError(await srv.client.req('DELETE', '/v0/routers/t1.out', undefined, as(TENANT)), 403, 'forbidden');
  const list = assertOk(await srv.client.req('GET', '/v0/routers', undefined, as(TENANT)), 200);
  assert.deepEqual(
    list.routers.map((r: any) => r.router),
    ['t1.new', 't1.r'],
  );
  const all = assertOk(await srv.client.req('GET', '/v0/routers', undefined, as(ALL)), 200);
  assert.deepEqual(
    all.routers.map((r: any) => r.router),
    ['t1.new', 't1.out', 't1.r', 'x.r'],
  );
});
