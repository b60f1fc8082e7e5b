// Scope x route matrix (docs/API.md "Authentication") on an in-process server through inject():
// every plain route with no key, a wrong key, a key lacking each scope it needs (the 403 names
// it), a key outside the allowlist (the 403 names the prefixes it has), `?token=` on a non-SSE
// route; the order of 401, 403, 404 and 405; names in bodies; then that no secret ever shows in
// an error body or in what the server logged. The stream routes (/work, a watch stream, ?token=
// there) and keep-alive need a real socket: test/http/authMatrix.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Resp } from '../helpers/server.js';
import { injectSuite } from '../support/injectSuite.js';
import { KEYS, ROUTES, SECRETS, TENANT_PREFIXES, bearer, routeMatrix, routePath, seedTopics, type Route } from '../http/authCases.js';

const { srv } = injectSuite({ SERVICE_API_KEYS: KEYS, SERVICE_WORKERS: '2' }, () => seedTopics(call));
const bodies: string[] = [];

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Resp> {
  const r = await srv.client.req(method, path, body, headers);
  bodies.push(r.text);
  return r;
}

async function hit(r: Route, topic: string, headers: Record<string, string>, query?: Record<string, string>) {
  return call(r.method, routePath(r, topic, query), r.body, headers);
}

describe('every route', () => {
  routeMatrix(
    ROUTES.filter((r) => !r.stream),
    hit,
  );
});

test('a backup holds every topic: a key with name prefixes is refused, even with every scope', async () => {
  const x = await call('GET', '/v0/backup', undefined, bearer(SECRETS.tenant));
  assert.equal(x.status, 403);
  assert.equal(x.body.error.code, 'forbidden');
  assert.match(x.body.error.message, /needs a key without name prefixes/);
  assert.deepEqual(x.body.error.detail, { allowed_prefixes: TENANT_PREFIXES });
});

test('metrics show a key with name prefixes only the topics and routers it may name', async () => {
  const a = bearer(SECRETS.all);
  assert.equal((await call('PUT', '/v0/topics/t42.src', {}, a)).status, 201);
  assert.equal((await call('PUT', '/v0/routers/t42.in', { source: 't42.src', dest: 't42.q' }, a)).status, 201);
  assert.equal((await call('PUT', '/v0/routers/m.out', { source: 'm.log', dest: 'm.q' }, a)).status, 201);
  const t = bearer(SECRETS.tenant);
  const text = (await call('GET', '/v0/metrics', undefined, t)).text;
  assert.match(text, /^spool_topic_head_seq\{topic="t42\.q"\} \d+$/m, 'its own topic');
  assert.match(text, /^spool_router_forwarded_total\{router="t42\.in"\}/m, 'its own router');
  assert.doesNotMatch(text, /"m\.(log|q|out)"/, 'no other name in any series');
  assert.match(text, /^# TYPE spool_topic_head_seq gauge$/m, 'the families are all there');
  assert.match(text, /^spool_topics \d+$/m, 'server-wide series stay');
  const full = (await call('GET', '/v0/metrics', undefined, a)).text;
  assert.match(full, /^spool_topic_head_seq\{topic="m\.log"\}/m, 'a key without prefixes sees everything');
  const json = (await call('GET', '/v0/metrics', undefined, { ...t, accept: 'application/json' })).body;
  assert.deepEqual(
    (json.router_stats as { router: string }[]).map((r) => r.router),
    ['t42.in'],
  );
  assert.equal((await call('DELETE', '/v0/routers/m.out', undefined, a)).status, 200);
  assert.equal((await call('DELETE', '/v0/routers/t42.in', undefined, a)).status, 200);
});

test('a redrive names its dead-letter topic inside the allowlist: from in the body, or from the config', async () => {
  const a = bearer(SECRETS.all);
  assert.equal((await call('PUT', '/v0/topics/t42.q2', { type: 'queue', dead_letter: 'other.dlq' }, a)).status, 201);
  const t = bearer(SECRETS.tenant);
  let x = await call('POST', '/v0/topics/t42.q/redrive', { from: 'other.dlq' }, t);
  assert.equal(x.status, 403);
  assert.deepEqual(x.body.error.detail, { topic: 'other.dlq', allowed_prefixes: TENANT_PREFIXES });
  x = await call('POST', '/v0/topics/t42.q2/redrive', {}, t);
  assert.equal(x.status, 403, JSON.stringify(x.body));
  assert.deepEqual(x.body.error.detail, { topic: 'other.dlq', allowed_prefixes: TENANT_PREFIXES });
  x = await call('POST', '/v0/topics/t42.q2/redrive', {}, a);
  assert.equal(x.status, 404, 'the all-prefix key passes; the dead-letter topic does not exist');
});

test('scope is checked before existence: a read-only key deleting an absent topic gets 403', async () => {
  const x = await call('DELETE', '/v0/topics/nowhere', undefined, bearer(SECRETS.noDelete));
  assert.equal(x.status, 403);
  assert.deepEqual(x.body.error.detail, { required: ['delete'], missing: ['delete'] });
});

test('401 comes before 404 and 405; 403 comes after them', async () => {
  assert.equal((await call('GET', '/v0/nope')).status, 401);
  assert.equal((await call('PATCH', '/v0/topics/m.log')).status, 401);
  assert.equal((await call('GET', '/v0/nope', undefined, bearer(SECRETS.noRead))).status, 404);
  assert.equal((await call('PATCH', '/v0/topics/m.log', undefined, bearer(SECRETS.noRead))).status, 405);
});

test('a refused request applies nothing', async () => {
  const a = bearer(SECRETS.all);
  const before = (await call('GET', '/v0/topics/m.log?touch=false', undefined, a)).body.head_seq;
  assert.equal((await call('POST', '/v0/topics/m.log', { records: [{ data: 1 }] }, bearer(SECRETS.noWrite))).status, 403);
  assert.equal((await call('GET', '/v0/topics/m.log?touch=false', undefined, a)).body.head_seq, before);
});

test('body names: watch topics, PUT dead_letter and append config.dead_letter are checked', async () => {
  const t = bearer(SECRETS.tenant);
  let x = await call('POST', '/v0/watch', { topics: { 't42.q': {}, 'm.log': {} } }, t);
  assert.equal(x.status, 403);
  assert.deepEqual(x.body.error.detail, { topic: 'm.log', allowed_prefixes: TENANT_PREFIXES });
  x = await call('PUT', '/v0/topics/t42.dl', { type: 'queue', dead_letter: 'other.dlq' }, t);
  assert.equal(x.status, 403);
  assert.deepEqual(x.body.error.detail, { topic: 'other.dlq', allowed_prefixes: TENANT_PREFIXES });
  x = await call('POST', '/v0/topics/t42.dl2', { records: [{ data: 1 }], config: { type: 'queue', dead_letter: 'other.dlq' } }, t);
  assert.equal(x.status, 403);
  assert.deepEqual(
    x.body.error.detail,
    { topic: 'other.dlq', allowed_prefixes: TENANT_PREFIXES },
    'decided by the topic actor, in the same words',
  );
  assert.match(x.body.error.message, /^this key may not name topic "other\.dlq": its names must start with "t42\." or "shared\."$/);
  assert.equal((await call('GET', '/v0/topics/t42.dl2', undefined, t)).status, 404, 'nothing was created');
  x = await call('PUT', '/v0/topics/t42.dl', { type: 'queue', dead_letter: 'shared.dlq' }, t);
  assert.equal(x.status, 201);
});

test('append: write alone auto-creates; creating with a config also needs admin', async () => {
  const w = bearer(SECRETS.noAdmin);
  let x = await call('POST', '/v0/topics/ap.plain', { records: [{ data: 1 }] }, w);
  assert.equal(x.status, 201);
  x = await call('POST', '/v0/topics/ap.cfg', { records: [{ data: 1 }], config: { cap_records: 5 } }, w);
  assert.equal(x.status, 403);
  assert.deepEqual(x.body.error.detail, { required: ['write', 'admin'], missing: ['admin'] });
  assert.equal(x.body.error.message, 'this key lacks the admin scope (creating a topic with a config needs write and admin)');
  assert.equal((await call('GET', '/v0/topics/ap.cfg', undefined, bearer(SECRETS.all))).status, 404);
  // On an existing topic the config is not applied, so write is enough.
  x = await call('POST', '/v0/topics/ap.plain', { records: [{ data: 2 }], config: { cap_records: 5 } }, w);
  assert.equal(x.status, 200);
  x = await call('POST', '/v0/topics/ap.cfg', { records: [{ data: 1 }], config: { cap_records: 5 } }, bearer(SECRETS.all));
  assert.equal(x.status, 201);
});

test('GET /v0/topics is filtered by the allowlist, prefix and pagination included', async () => {
  const a = bearer(SECRETS.all);
  for (const n of ['shared.a', 'shared.b', 't42.x', 'zz.hidden', 't4', 'shared']) await call('PUT', `/v0/topics/${n}`, {}, a);
  const t = bearer(SECRETS.tenant);
  const names = async (q: string) => {
    const out: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const r = await call('GET', `/v0/topics?page_size=2${q}${cursor ? `&cursor=${cursor}` : ''}`, undefined, t);
      assert.equal(r.status, 200);
      out.push(...r.body.topics.map((x: { topic: string }) => x.topic));
      cursor = r.body.next_cursor;
      if (!cursor) return out;
    }
  };
  const all = await names('');
  assert.ok(all.length > 0);
  for (const n of all) assert.ok(n.startsWith('t42.') || n.startsWith('shared.'), n);
  assert.ok(all.includes('shared.a') && all.includes('t42.x') && all.includes('t42.q'));
  assert.deepEqual(all, [...all].sort());
  assert.deepEqual(
    await names('&prefix=shared'),
    ['shared.a', 'shared.b', 'shared.dlq'].filter((n) => all.includes(n)),
  );
  assert.deepEqual(await names('&prefix=zz'), []);
  assert.deepEqual(await names('&prefix=t42.x'), ['t42.x']);
});

test('no configured secret appears in any error body or in the server output', async () => {
  assert.ok(bodies.length > 100, `collected ${bodies.length} bodies`);
  const out = srv.logs();
  for (const secret of Object.values(SECRETS)) {
    for (const b of bodies) assert.ok(!b.includes(secret), `a body holds a secret: ${b.slice(0, 200)}`);
    assert.ok(!out.includes(secret), 'server output holds a secret');
  }
  const metrics = await call('GET', '/v0/metrics', undefined, bearer(SECRETS.all));
  for (const secret of Object.values(SECRETS)) assert.ok(!metrics.text.includes(secret));
});
