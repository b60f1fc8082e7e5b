// Auth where it needs a real socket (docs/API.md "Authentication"), on a spawned server: the
// scope x route matrix of the stream route (/work: a refusal, or a stream that opens), a watch
// stream that opens only with the creating key, `?token=` on the SSE GETs, one keep-alive
// connection switching keys; then that no secret shows in an error body or the server's stderr.
// The matrix of every plain route runs in the fast tier: test/inject/authMatrix.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { req, Resp } from '../helpers/server.js';
import { openStream } from '../helpers/sse.js';
import { KEYS, ROUTES, SECRETS, bearer, routeMatrix, routePath, seedTopics, type Route } from './authCases.js';
import { httpSuite } from '../support/httpSuite.js';

const { srv } = httpSuite({ SERVICE_API_KEYS: KEYS, SERVICE_WORKERS: '2' }, () => seedTopics(call));
const bodies: string[] = [];

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Resp> {
  const r = await req(srv.url, method, path, body, headers);
  bodies.push(r.text);
  return r;
}

/** A stream GET: the status, the body of a refusal; a stream that opened is closed at once. */
async function callStream(
  path: string,
  headers: Record<string, string> = {},
  query?: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const s = await openStream(srv.url, '', { path, headers, query });
  if (s.status === 200) await s.close();
  else bodies.push(s.text);
  return { status: s.status, body: s.body };
}

async function hit(r: Route, topic: string, headers: Record<string, string>, query?: Record<string, string>) {
  if (r.stream) return callStream(r.path(topic), headers, query);
  return call(r.method, routePath(r, topic, query), r.body, headers);
}

describe('every route', () => {
  routeMatrix(
    ROUTES.filter((r) => r.stream),
    hit,
  );
});

test('watch: the stream opens only with the creating key; ?token= works there', async () => {
  const t = bearer(SECRETS.tenant);
  const x = await call('POST', '/v0/watch', { topics: { 't42.q': {} } }, t);
  assert.equal(x.status, 200);
  const wid = x.body.wid;
  for (const h of [{}, bearer(SECRETS.all), bearer(SECRETS.noAdmin), bearer('sk-wrong')]) {
    const s = await callStream(`/v0/watch/${wid}`, h);
    assert.equal(s.status, 401, JSON.stringify(Object.keys(h)));
    assert.equal(s.body.error.code, 'unauthorized');
  }
  // docs/API.md "Which error wins": 404 for an unknown wid comes before 401.
  assert.equal((await callStream('/v0/watch/wid_nope')).status, 404);
  const ok = await openStream(srv.url, wid, { headers: t });
  assert.equal(ok.status, 200);
  const f = await ok.nextEvent('record', 5000);
  assert.equal(f.data.topic, 't42.q');
  await ok.close();
  const q = await openStream(srv.url, wid, { query: { token: SECRETS.tenant } });
  assert.equal(q.status, 200);
  await q.close();
});

test('/work accepts ?token= and checks read+write and the allowlist', async () => {
  const s = await callStream('/v0/topics/t42.q/work', {}, { node: 'n9', token: SECRETS.tenant });
  assert.equal(s.status, 200);
  assert.equal((await callStream('/v0/topics/t42.q/work', {}, { node: 'n9', token: SECRETS.noWrite })).status, 403);
  // A bearer header wins over ?token=: a wrong header is 401 whatever the query says.
  assert.equal((await callStream('/v0/topics/t42.q/work', bearer('sk-wrong'), { node: 'n9', token: SECRETS.tenant })).status, 401);
});

test('a path name far past the limit is 401 without a key, then 400 naming it: never a routing error', async () => {
  const long = 'a'.repeat(5000);
  for (const path of [`/v0/topics/${long}`, `/v0/routers/${long}`]) {
    const anon = await call('GET', path);
    assert.equal(anon.status, 401, `${path.slice(0, 12)}: ${anon.text.slice(0, 200)}`);
    const r = await call('GET', path, undefined, bearer(SECRETS.all));
    assert.equal(r.status, 400, r.text.slice(0, 200));
    assert.equal(r.body.error.code, 'invalid_request');
    assert.equal(r.body.error.detail.topic ?? r.body.error.detail.router, long);
  }
});

test('one keep-alive connection switching keys is judged per request', async () => {
  const http = await import('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  const get = (k: string) =>
    new Promise<number>((resolve, reject) => {
      const r = http.get(`${srv.url}/v0/topics/m.log`, { agent, headers: bearer(k) }, (res) => {
        sockets.add(res.socket);
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      r.on('error', reject);
    });
  try {
    for (const [k, want] of [
      [SECRETS.all, 200],
      [SECRETS.noRead, 403],
      ['sk-wrong', 401],
      [SECRETS.all, 200],
      [SECRETS.tenant, 403],
    ] as const) {
      assert.equal(await get(k), want, k);
    }
    assert.equal(sockets.size, 1, 'all on one connection');
  } finally {
    agent.destroy();
  }
});

test('no configured secret appears in any error body or in the server output', async () => {
  // The plain routes' refusals (over 100 bodies) are checked in test/inject/authMatrix.test.ts.
  assert.ok(bodies.length > 15, `collected ${bodies.length} bodies`);
  const out = srv.stderr();
  for (const secret of Object.values(SECRETS)) {
    for (const b of bodies) assert.ok(!b.includes(secret), `a body holds a secret: ${b.slice(0, 200)}`);
    assert.ok(!out.includes(secret), 'server output holds a secret');
  }
  const metrics = await call('GET', '/v0/metrics', undefined, bearer(SECRETS.all));
  for (const secret of Object.values(SECRETS)) assert.ok(!metrics.text.includes(secret));
});
