// Scope x route matrix over HTTP (docs/API.md "Authentication", "Which error wins"): every route with no key, a
// wrong key, a key lacking each scope it needs (the 403 names it), a key outside the allowlist
// (the 403 names the prefixes it has), `?token=` on a non-SSE route; then that no secret ever
// shows in an error body or in the server's output.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, req, Server, Resp } from '../helpers/server.js';
import { openStream } from '../helpers/sse.js';

const SECRETS = {
  all: 'sk-all-5fA9',
  noRead: 'sk-noread-11',
  noWrite: 'sk-nowrite-22',
  noDelete: 'sk-nodel-33',
  noAdmin: 'sk-noadm-44',
  tenant: 'sk-tenant-55',
};
const KEYS = [
  SECRETS.all,
  `${SECRETS.noRead}:w+d+a`,
  `${SECRETS.noWrite}:r+del+admin`,
  `${SECRETS.noDelete}:rw+a`,
  `${SECRETS.noAdmin}:read+write+delete`,
  `${SECRETS.tenant}::t42.|shared.`,
].join(', ');
const TENANT_PREFIXES = ['t42.', 'shared.'];
const MISSING: Record<string, string> = { read: SECRETS.noRead, write: SECRETS.noWrite, delete: SECRETS.noDelete, admin: SECRETS.noAdmin };

let srv: Server;
const bodies: string[] = [];
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Resp> {
  const r = await req(srv.url, method, path, body, headers);
  bodies.push(r.text);
  return r;
}

/** A stream GET: the status, the body of a refusal; a stream that opened is closed at once. */
async function callStream(path: string, headers: Record<string, string> = {}, query?: Record<string, string>): Promise<{ status: number; body: any }> {
  const s = await openStream(srv.url, '', { path, headers, query });
  if (s.status === 200) await s.close();
  else bodies.push(s.text);
  return { status: s.status, body: s.body };
}

before(async () => {
  srv = await startServer({ env: { SERVICE_API_KEYS: KEYS, SERVICE_WORKERS: '2' } });
  const a = bearer(SECRETS.all);
  assert.equal((await call('PUT', '/v0/topics/m.log', {}, a)).status, 201);
  assert.equal((await call('PUT', '/v0/topics/m.q', { type: 'queue' }, a)).status, 201);
  assert.equal((await call('PUT', '/v0/topics/t42.q', { type: 'queue' }, a)).status, 201);
  assert.equal((await call('POST', '/v0/topics/t42.q', { records: [{ data: 1 }] }, a)).status, 200);
});
after(async () => {
  await srv?.stop();
});

interface Route {
  method: string;
  path: (topic: string) => string;
  body?: unknown;
  scopes: string[];
  stream?: boolean;
}

const ROUTES: Route[] = [
  { method: 'GET', path: () => '/v0/metrics', scopes: ['read'] },
  { method: 'GET', path: () => '/v0/topics', scopes: ['read'] },
  { method: 'GET', path: (t) => `/v0/topics/${t}`, scopes: ['read'] },
  { method: 'PUT', path: (t) => `/v0/topics/${t}`, body: {}, scopes: ['admin'] },
  { method: 'DELETE', path: (t) => `/v0/topics/${t}x`, scopes: ['delete'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}`, body: { records: [{ data: 1 }] }, scopes: ['write'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/diff`, body: {}, scopes: ['read'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/delete`, body: { before_seq: 1 }, scopes: ['delete'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/claim`, body: { node: 'n1' }, scopes: ['read', 'write'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/ack`, body: { node: 'n1', seqs: [1] }, scopes: ['write'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/nack`, body: { node: 'n1', seqs: [1] }, scopes: ['write'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/extend`, body: { node: 'n1', seqs: [1] }, scopes: ['write'] },
  { method: 'GET', path: (t) => `/v0/topics/${t}/work?node=n1`, scopes: ['read', 'write'], stream: true },
  { method: 'GET', path: (t) => `/v0/topics/${t}/leases`, scopes: ['read'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/term`, body: { node: 'n1', seqs: [1] }, scopes: ['write'] },
  { method: 'POST', path: (t) => `/v0/topics/${t}/redrive`, body: {}, scopes: ['read', 'write', 'delete'] },
  { method: 'POST', path: () => '/v0/watch', body: { topics: { 'm.q': {} } }, scopes: ['read'] },
];

async function hit(r: Route, topic: string, headers: Record<string, string>, query?: Record<string, string>) {
  if (r.stream) return callStream(r.path(topic), headers, query);
  const path = r.path(topic) + (query ? (r.path(topic).includes('?') ? '&' : '?') + new URLSearchParams(query).toString() : '');
  return call(r.method, path, r.body, headers);
}

describe('every route', () => {
  for (const r of ROUTES) {
    const label = `${r.method} ${r.path(':t')}`;
    test(`${label}: 401 without a key, with a wrong key, and with ?token= (non-SSE)`, async () => {
      for (const h of [{}, bearer('sk-wrong'), { authorization: `Basic ${SECRETS.all}` }, { authorization: 'Bearer ' }]) {
        const x = await hit(r, 'm.q', h);
        assert.equal(x.status, 401, `${label} ${JSON.stringify(Object.keys(h))}`);
        assert.equal(x.body.error.code, 'unauthorized');
        assert.equal(x.body.error.detail, undefined);
      }
      if (!r.stream) {
        const x = await hit(r, 'm.q', {}, { token: SECRETS.all });
        assert.equal(x.status, 401, `${label}: ?token= is ignored off the SSE GETs`);
      }
    });

    test(`${label}: 403 names the missing scope, and detail.required the route's`, async () => {
      for (const s of r.scopes) {
        const x = await hit(r, 'm.q', bearer(MISSING[s]!));
        assert.equal(x.status, 403, `${label} without ${s}`);
        assert.equal(x.body.error.code, 'forbidden');
        assert.deepEqual(x.body.error.detail, { required: r.scopes, missing: [s] });
        const needs = r.scopes.length < 3 ? r.scopes.join(' and ') : `${r.scopes.slice(0, -1).join(', ')} and ${r.scopes.at(-1)}`;
        assert.equal(x.body.error.message, `this key lacks the ${s} scope (the route needs ${needs})`);
      }
    });

    test(`${label}: the all-scope key passes admission`, async () => {
      const x = await hit(r, 'm.q', bearer(SECRETS.all));
      assert.ok(x.status !== 401 && x.status !== 403, `${label}: ${x.status} ${JSON.stringify(x.body)}`);
    });

    if (r.path('T') !== r.path('U')) {
      test(`${label}: 403 detail.topic outside the allowlist, before existence`, async () => {
        const x = await hit(r, 'other.absent', bearer(SECRETS.tenant));
        assert.equal(x.status, 403);
        assert.equal(x.body.error.code, 'forbidden');
        const named = r.path('other.absent').split('/')[3]!.split('?')[0];
        assert.deepEqual(x.body.error.detail, { topic: named, allowed_prefixes: TENANT_PREFIXES });
        assert.equal(x.body.error.message, `this key may not name topic "${named}": its names must start with "t42." or "shared."`);
        const ok = await hit(r, 't42.q', bearer(SECRETS.tenant));
        assert.ok(ok.status !== 401 && ok.status !== 403, `${label} inside the allowlist: ${ok.status}`);
      });
    }
  }
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
  assert.deepEqual(x.body.error.detail, { topic: 'other.dlq', allowed_prefixes: TENANT_PREFIXES }, 'decided by the topic actor, in the same words');
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
  assert.deepEqual(await names('&prefix=shared'), ['shared.a', 'shared.b', 'shared.dlq'].filter((n) => all.includes(n)));
  assert.deepEqual(await names('&prefix=zz'), []);
  assert.deepEqual(await names('&prefix=t42.x'), ['t42.x']);
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
    for (const [k, want] of [[SECRETS.all, 200], [SECRETS.noRead, 403], ['sk-wrong', 401], [SECRETS.all, 200], [SECRETS.tenant, 403]] as const) {
      assert.equal(await get(k), want, k);
    }
    assert.equal(sockets.size, 1, 'all on one connection');
  } finally {
    agent.destroy();
  }
});

test('no configured secret appears in any error body or in the server output', async () => {
  assert.ok(bodies.length > 100, `collected ${bodies.length} bodies`);
  const out = srv.stderr();
  for (const secret of Object.values(SECRETS)) {
    for (const b of bodies) assert.ok(!b.includes(secret), `a body holds a secret: ${b.slice(0, 200)}`);
    assert.ok(!out.includes(secret), 'server output holds a secret');
  }
  const metrics = await call('GET', '/v0/metrics', undefined, bearer(SECRETS.all));
  for (const secret of Object.values(SECRETS)) assert.ok(!metrics.text.includes(secret));
});
