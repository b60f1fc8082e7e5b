// Names outside a key's prefixes never appear in a router answer (docs/API.md "Authentication"):
// not in a router PUT's graph refusals (the cycle path, the chain of a too-long chain, the fan-in
// message), not in a re-point refusal (the stored ends are checked first, as on GET and DELETE),
// and not in a topic delete's `routers_removed` (the routers still go with the topic).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertOk } from '../http/util.js';

const ROOT = 'sk-root-71';
const TENANT = 'sk-tenant-72';
const { c } = injectSuite({ SERVICE_API_KEYS: `${ROOT}, ${TENANT}::a.` });
const as = (k: string) => ({ authorization: `Bearer ${k}` });
const put = (k: string, r: string, body: unknown) => c.put(`/v0/routers/${encodeURIComponent(r)}`, body, as(k));
const hidden = (text: string) => assert.doesNotMatch(text, /c\.\w+/, `a name outside a. shows: ${text}`);

test('graph refusals show no name outside the key: cycle path, chain, fan-in message', async () => {
  assertOk(await put(ROOT, 'c.r1', { source: 'a.c1', dest: 'c.mid' }), 201);
  assertOk(await put(ROOT, 'c.r2', { source: 'c.mid', dest: 'a.c2' }), 201);
  const cyc = await put(TENANT, 'a.loop', { source: 'a.c2', dest: 'a.c1' });
  assert.deepEqual(assertError(cyc, 409, 'router_cycle'), { cycle: ['a.c2', 'a.c1', null, 'a.c2'] });
  hidden(cyc.text);
  // The same refusal to a key without prefixes names every topic.
  assert.deepEqual(assertError(await put(ROOT, 'a.loop', { source: 'a.c2', dest: 'a.c1' }), 409, 'router_cycle'), {
    cycle: ['a.c2', 'a.c1', 'c.mid', 'a.c2'],
  });

  const fan = await put(TENANT, 'a.fan', { source: 'a.other', dest: 'a.c2' });
  assertError(fan, 409, 'topic_exists_incompatible');
  hidden(fan.text);

  for (let i = 0; i < 64; i++) assertOk(await put(ROOT, `c.h${i}`, { source: i === 0 ? 'a.h0' : `c.h${i}`, dest: `c.h${i + 1}` }), 201);
  const long = await put(TENANT, 'a.head', { source: 'a.hx', dest: 'a.h0' });
  const d = assertError(long, 409, 'topic_exists_incompatible');
  assert.equal(d.reason, 'router_chain_too_long');
  assert.deepEqual(d.chain.slice(0, 2), ['a.hx', 'a.h0']);
  assert.ok(d.chain.slice(2).every((t: unknown) => t === null));
  hidden(long.text);
});

test('a PUT of a router whose stored end is outside the key is 403, as GET is, not a re-point 409', async () => {
  assertOk(await put(ROOT, 'a.fromc', { source: 'c.secret', dest: 'a.t3' }), 201);
  const r = await put(TENANT, 'a.fromc', { source: 'a.t1', dest: 'a.t3' });
  assert.deepEqual(assertError(r, 403, 'forbidden'), assertError(await c.get('/v0/routers/a.fromc', as(TENANT)), 403, 'forbidden'));
});

test("a topic delete's routers_removed names only the routers the key could list; all of them go", async () => {
  assertOk(await c.put('/v0/topics/a.t9', {}, as(ROOT)), 201);
  assertOk(await put(ROOT, 'a.mine', { source: 'a.t9', dest: 'a.t10' }), 201);
  assertOk(await put(ROOT, 'c.theirs', { source: 'a.t9', dest: 'c.secret9' }), 201);
  const del = assertOk(await c.del('/v0/topics/a.t9', as(TENANT)), 200);
  assert.deepEqual(del.routers_removed, ['a.mine']);
  assertError(await c.get('/v0/routers/c.theirs', as(ROOT)), 404, 'router_not_found');
});
