// The keys and the scope x route matrix of the auth tests, shared by the fast tier's
// test/inject/authMatrix.test.ts (every plain route, through inject()) and the spawned
// test/http/authMatrix.test.ts (the stream route, which needs a real socket): the keys a server
// starts with, the routes with the scopes each needs, and the four tests every route gets.
// Not a test file (no `.test.` in the name).
import { test } from 'node:test';
import assert from 'node:assert/strict';

export const SECRETS = {
  all: 'sk-all-5fA9',
  noRead: 'sk-noread-11',
  noWrite: 'sk-nowrite-22',
  noDelete: 'sk-nodel-33',
  noAdmin: 'sk-noadm-44',
  tenant: 'sk-tenant-55',
};
export const KEYS = [
  SECRETS.all,
  `${SECRETS.noRead}:w+d+a`,
  `${SECRETS.noWrite}:r+del+admin`,
  `${SECRETS.noDelete}:rw+a`,
  `${SECRETS.noAdmin}:read+write+delete`,
  `${SECRETS.tenant}::t42.|shared.`,
].join(', ');
export const TENANT_PREFIXES = ['t42.', 'shared.'];
const MISSING: Record<string, string> = { read: SECRETS.noRead, write: SECRETS.noWrite, delete: SECRETS.noDelete, admin: SECRETS.noAdmin };

export const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

export interface Route {
  method: string;
  path: (topic: string) => string;
  body?: unknown;
  scopes: string[];
  stream?: boolean;
}

export const ROUTES: Route[] = [
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

/** A route called with these headers (and query): the status and the parsed body. */
export type Hit = (
  r: Route,
  topic: string,
  headers: Record<string, string>,
  query?: Record<string, string>,
) => Promise<{ status: number; body: any }>;

/**
 * The four tests of each route: 401 without a key, with a wrong one, and with `?token=` off the
 * SSE routes; 403 naming the missing scope; the all-scope key passing; and 403 detail.topic for a
 * key outside its allowlist (before existence) while a name inside it passes. The server has the
 * queues m.q and t42.q.
 */
export function routeMatrix(routes: Route[], hit: Hit): void {
  for (const r of routes) {
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
}

/** The topics every matrix runs against, made with the key that may do everything. */
export async function seedTopics(
  call: (method: string, path: string, body: unknown, headers: Record<string, string>) => Promise<{ status: number }>,
): Promise<void> {
  const a = bearer(SECRETS.all);
  assert.equal((await call('PUT', '/v0/topics/m.log', {}, a)).status, 201);
  assert.equal((await call('PUT', '/v0/topics/m.q', { type: 'queue' }, a)).status, 201);
  assert.equal((await call('PUT', '/v0/topics/t42.q', { type: 'queue' }, a)).status, 201);
  assert.equal((await call('POST', '/v0/topics/t42.q', { records: [{ data: 1 }] }, a)).status, 200);
}

/** A route's path for `topic`, with `query` appended. */
export function routePath(r: Route, topic: string, query?: Record<string, string>): string {
  const path = r.path(topic);
  return path + (query ? (path.includes('?') ? '&' : '?') + new URLSearchParams(query).toString() : '');
}
