// The rules of router definitions (docs/API.md "Routers") on an in-process server through
// inject(): every 400 of a PUT with its detail, re-point and fan-in 409, cycle 409 with its path,
// create_dest false on an absent dest 404, GET of an absent router 404 and a bad name 400, 405
// with Allow, and the router cap (429 before any auto-create). Routers as such, and across
// restarts: test/http/routers.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startInjectServer } from '../helpers/injectServer.js';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertInvalid, assertOk, namer } from '../http/util.js';

const { srv, c } = injectSuite();
const name = namer('rt');
const enc = encodeURIComponent;

const put = (r: string, body: unknown) => c.put(`/v0/routers/${enc(r)}`, body);

describe('PUT /v0/routers/:router', () => {
  test('400s: body, names, required fields, source = dest, filter, types', async () => {
    const s = name('s');
    assertInvalid(await put('ok', { dest: 'x' }), 'source');
    assertInvalid(await put('ok', { source: s }), 'dest');
    assertInvalid(await put('ok', { source: s, dest: s }), 'dest');
    assertInvalid(await put('ok', { source: s, dest: 'y', guarantee: 'twice' }), 'guarantee');
    assertInvalid(await put('ok', { source: s, dest: 'y', preserve_tag: 'yes' }), 'preserve_tag');
    for (const filter of [['tag', 'Eq'], ['node', 'Eq', 'x'], ['tag', 'Like', 'x'], ['tag', 'Glob', 'x'], ['tag', 'Glob', 'a*b*'], 7]) {
      assertInvalid(await put('ok', { source: s, dest: 'y', filter }), 'filter', JSON.stringify(filter));
    }
    assert.deepEqual(assertInvalid(await put('ok', { source: '.bad', dest: 'y' })), { topic: '.bad' });
    assert.deepEqual(assertInvalid(await put('>bad', { source: s, dest: 'y' })), { router: '>bad' });
    assertInvalid(await put('ok', [1]));
    const noCt = await srv.raw('PUT', '/v0/routers/ok', { body: '{}' });
    assertError(noCt, 415, 'unsupported_media_type');
    const empty = await srv.raw('PUT', '/v0/routers/ok', { body: '', headers: { 'content-type': 'application/json' } });
    assertInvalid(empty);
    // Nothing was created by any of these.
    assertError(await c.get(`/v0/topics/${s}`), 404, 'topic_not_found');
    assertError(await c.get('/v0/routers/ok'), 404, 'router_not_found');
  });

  test('re-pointing is 409 router_repoint_forbidden with the existing ends', async () => {
    const [s, d, x] = [name('s'), name('d'), name('x')];
    const r = name('r');
    assertOk(await put(r, { source: s, dest: d }), 201);
    const detail = assertError(await put(r, { source: s, dest: x }), 409, 'topic_exists_incompatible');
    assert.deepEqual(detail, { router: r, reason: 'router_repoint_forbidden', existing_source: s, existing_dest: d });
    assertError(await put(r, { source: x, dest: d }), 409, 'topic_exists_incompatible');
  });

  test('fan-in from another source is 409 router_dest_fan_in; a second router from the same source is fine', async () => {
    const [a, b, d] = [name('a'), name('b'), name('d')];
    assertOk(await put(name('r'), { source: a, dest: d }), 201);
    assert.deepEqual(assertError(await put(name('r'), { source: b, dest: d }), 409, 'topic_exists_incompatible'), {
      topic: d,
      reason: 'router_dest_fan_in',
    });
    assertOk(await put(name('r'), { source: a, dest: d, filter: 'x' }), 201);
  });

  test('a cycle is 409 router_cycle with the path (docs/API.md "Routers"), unless allow_cycle', async () => {
    const [a, b, cc] = [name('a'), name('b'), name('c')];
    assertOk(await put(name('r'), { source: a, dest: b }), 201);
    assertOk(await put(name('r'), { source: b, dest: cc }), 201);
    const r = name('r');
    assert.deepEqual(assertError(await put(r, { source: cc, dest: a }), 409, 'router_cycle'), { cycle: [cc, a, b, cc] });
    assertError(await c.get(`/v0/routers/${r}`), 404, 'router_not_found');
    assertOk(await put(r, { source: cc, dest: a, allow_cycle: true }), 201);
    // Turning allow_cycle off on a router inside a cycle is refused the same way.
    assertError(await put(r, { source: cc, dest: a, allow_cycle: false }), 409, 'router_cycle');
    // A router of the cycle that never had allow_cycle (the cycle was closed by another) may still
    // be changed: its PUT closes nothing.
    const first = await c.get(`/v0/routers?source=${enc(a)}`);
    const ab = assertOk(first, 200).routers[0].router as string;
    assert.equal(assertOk(await put(ab, { source: a, dest: b, filter: ['tag', 'Glob', 'x*'] }), 200).created, false);
    assert.equal(assertOk(await put(ab, { source: a, dest: b, guarantee: 'exactly_once' }), 200).created, false);
  });

  test('a chain of more than 64 routers is refused (409 router_chain_too_long); within it, copies reach the end', async () => {
    const t = Array.from({ length: 66 }, (_, i) => name(`h${i}`));
    // Built from both ends towards the middle, so the refused router joins two chains.
    for (let i = 0; i < 32; i++) assertOk(await put(name('r'), { source: t[i], dest: t[i + 1] }), 201);
    for (let i = 33; i < 65; i++) assertOk(await put(name('r'), { source: t[i], dest: t[i + 1] }), 201);
    const r = name('r');
    const d = assertError(await put(r, { source: t[32], dest: t[33] }), 409, 'topic_exists_incompatible');
    assert.equal(d.reason, 'router_chain_too_long');
    assert.equal(d.max, 64);
    assert.deepEqual(d.chain, t);
    assertError(await c.get(`/v0/routers/${enc(r)}`), 404, 'router_not_found');
    // Without the chain's last router the join is 64 routers: allowed, and a record written at
    // the head reaches the end (read-your-writes drains the chain).
    const last = assertOk(await c.get(`/v0/routers?source=${enc(t[64]!)}`), 200).routers[0].router as string;
    assertOk(await c.del(`/v0/routers/${enc(last)}`), 200);
    assertOk(await put(r, { source: t[32], dest: t[33] }), 201);
    assertOk(await c.post(`/v0/topics/${t[0]}`, { records: [{ data: 'far' }] }), 200);
    const end = assertOk(await c.post(`/v0/topics/${t[64]}/diff`, {}), 200);
    assert.deepEqual(
      end.records.map((x: { data: unknown }) => x.data),
      ['far'],
    );
  });

  test('create_dest false with an absent dest is 404 topic_not_found and creates nothing', async () => {
    const [s, d] = [name('s'), name('d')];
    assert.deepEqual(assertError(await put(name('r'), { source: s, dest: d, create_dest: false }), 404, 'topic_not_found'), { topic: d });
    assertError(await c.get(`/v0/topics/${s}`), 404, 'topic_not_found');
    assertOk(await c.put(`/v0/topics/${d}`, {}), 201);
    assertOk(await put(name('r'), { source: s, dest: d, create_dest: false }), 201);
  });
});

describe('GET, list and DELETE', () => {
  test('GET of an absent router is 404 router_not_found with detail.router; a bad name 400', async () => {
    assert.deepEqual(assertError(await c.get('/v0/routers/nope-%3Enothing'), 404, 'router_not_found'), { router: 'nope->nothing' });
    assert.deepEqual(assertInvalid(await c.get('/v0/routers/-x')), { router: '-x' });
  });

  test('405 with Allow on the router paths', async () => {
    const r = await c.post('/v0/routers/x', {});
    assertError(r, 405, 'method_not_allowed');
    assert.match(r.headers.get('allow') ?? '', /PUT/);
  });
});

describe('limits and restarts', () => {
  test('SERVICE_MAX_ROUTERS: 429 throttled {limit, max} with Retry-After, checked before any auto-create', async () => {
    const s2 = await startInjectServer({ SERVICE_MAX_ROUTERS: '1' });
    try {
      const c2 = s2.client;
      assertOk(await c2.put('/v0/routers/one', { source: 'a', dest: 'b' }), 201);
      const r = await c2.put('/v0/routers/two', { source: 'x', dest: 'y' });
      assert.deepEqual(assertError(r, 429, 'throttled'), { limit: 'max_routers', max: 1 });
      assert.equal(r.headers.get('retry-after'), '1');
      assertError(await c2.get('/v0/topics/x'), 404, 'topic_not_found');
      assertError(await c2.get('/v0/topics/y'), 404, 'topic_not_found');
      // Updating the existing one still works at the cap.
      assertOk(await c2.put('/v0/routers/one', { source: 'a', dest: 'b', preserve_tag: false }), 200);
    } finally {
      await s2.stop();
    }
  });

  test('SERVICE_MAX_TOPICS: a PUT whose topics do not all fit is 429 max_topics and makes none of them', async () => {
    const s2 = await startInjectServer({ SERVICE_MAX_TOPICS: '2' });
    try {
      const c2 = s2.client;
      assertOk(await c2.put('/v0/topics/a', {}), 201);
      // Two new topics for one slot: refused before the source is made.
      const r = await c2.put('/v0/routers/r1', { source: 'x', dest: 'y' });
      assert.deepEqual(assertError(r, 429, 'throttled'), { limit: 'max_topics', max: 2 });
      assertError(await c2.get('/v0/topics/x'), 404, 'topic_not_found');
      assertError(await c2.get('/v0/topics/y'), 404, 'topic_not_found');
      assert.deepEqual(assertOk(await c2.get('/v0/routers'), 200).routers, []);
      // One new topic fits.
      assertOk(await c2.put('/v0/routers/r2', { source: 'a', dest: 'y' }), 201);
      assertOk(await c2.get('/v0/topics/y'), 200);
    } finally {
      await s2.stop();
    }
  });
});
