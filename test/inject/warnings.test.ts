// Errors in the spec's shape everywhere and unknown-field warnings (docs/API.md "Conventions"): ignored
// fields stay accepted, but the reply names each in a `Warning: 299 - "unknown field \"x\""`
// header; enum errors list the allowed values; a bad percent-escape is the spec's 400. In the
// fast tier: an in-process server driven through inject() (test/helpers/injectServer.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Resp } from '../helpers/server.js';
import { injectSuite } from '../support/injectSuite.js';

const { srv } = injectSuite();

const JSON_CT = { 'content-type': 'application/json' };
const req = (method: string, path: string, body?: unknown) =>
  srv.client.req(method, path, body === undefined ? undefined : JSON.stringify(body), body === undefined ? {} : JSON_CT);

function warnings(r: Resp): string[] {
  const h = r.headers.get('warning');
  if (!h) return [];
  return [...h.matchAll(/299 - "unknown field \\"((?:[^"\\]|\\.)*)\\""/g)].map((m) => m[1]!);
}

test('unknown fields are accepted and named in a Warning header, wherever they are', async () => {
  const put = await req('PUT', '/v0/topics/warn.a', { ttl: 5000, durability: 'memory' });
  assert.equal(put.status, 201);
  assert.deepEqual(warnings(put), ['ttl']);
  assert.match(put.headers.get('warning')!, /^299 - "unknown field \\"ttl\\""$/);
  const clean = await req('PUT', '/v0/topics/warn.a', { durability: 'memory' });
  assert.equal(clean.headers.get('warning'), null, 'no warning without an unknown field');

  const app = await req('POST', '/v0/topics/warn.b', {
    records: [
      { data: 1, $tag: 'x' },
      { data: 2, $tag: 'y', tags: ['t'] },
    ],
    retrun_seqs: false,
    config: { ttl: 1 },
  });
  assert.equal(app.status, 201);
  assert.deepEqual(warnings(app).sort(), ['config.ttl', 'records[0].$tag', 'records[1].tags', 'retrun_seqs']);

  const diff = await req('POST', '/v0/topics/warn.b/diff', { from_seq: 0, include_tag: true });
  assert.equal(diff.status, 200);
  assert.deepEqual(warnings(diff), ['include_tag']);

  const watch = await req('POST', '/v0/watch', { topics: { 'warn.b': { from: 0 } }, tial: true });
  assert.ok(watch.status < 300, String(watch.status));
  assert.deepEqual(warnings(watch).sort(), ['tial', 'topics.warn.b.from']);

  const del = await req('POST', '/v0/topics/warn.b/delete', { before_seq: 2, before: 2 });
  assert.ok(del.status < 300);
  assert.deepEqual(warnings(del), ['before']);
});

test('enum errors list the allowed values', async () => {
  const put = await req('PUT', '/v0/topics/warn.c', { durability: 'fast' });
  assert.equal(put.status, 400);
  const body = put.body as { error: { code: string; message: string } };
  assert.equal(body.error.code, 'invalid_request');
  assert.match(body.error.message, /must be one of: ephemeral, memory, disk, fsync/);
  const watch = await req('POST', '/v0/watch', { topics: { 'warn.a': {} }, consistency: 'strng' });
  assert.equal(watch.status, 400);
  assert.match((watch.body as { error: { message: string } }).error.message, /must be one of: eventual, strong/);
});

test("a bad percent-escape in the path is the spec's 400, never Fastify's body", async () => {
  for (const [method, path] of [
    ['GET', '/v0/topics/a%2'],
    ['POST', '/v0/topics/a%zz/diff'],
    ['DELETE', '/v0/topics/%E0%A4%A'],
  ] as const) {
    const r = await srv.client.req(method, path);
    assert.equal(r.status, 400, `${method} ${path}`);
    const body = r.body as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ['error'], JSON.stringify(body));
    assert.equal((body.error as { code: string }).code, 'invalid_request');
    assert.ok(r.headers.get('x-request-id'));
  }
});
