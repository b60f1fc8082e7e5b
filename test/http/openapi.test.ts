// GET /v0/openapi.json: an OpenAPI 3.1 document (checked structurally: info, paths, operations
// with responses and descriptions, every $ref resolving) that documents every route the server
// has, and every route it documents exists (requested, it is never "no route" nor 405); its
// component schemas are named, and every operation states the bearer key and scopes it needs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTE_DOCS } from '../../src/http/openapi.js';
import { ROUTE_TABLE } from '../../src/http/errorHandlers.js';
import { ROUTE_RULES } from '../../src/http/admission.js';
import { httpSuite } from '../support/httpSuite.js';

const { srv } = httpSuite({}, async () => {
  await fetch(`${srv.url}/v0/topics/oa.q`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"type":"queue"}' });
});

interface Op {
  summary?: string;
  responses: Record<string, { description?: string }>;
  security?: Record<string, string[]>[];
  requestBody?: { content: Record<string, { schema: unknown }> };
}

interface Doc {
  openapi: string;
  info: { title: string; version: string };
  components?: {
    schemas?: Record<string, unknown>;
    securitySchemes?: Record<string, { type: string; scheme?: string; in?: string; name?: string }>;
  };
  paths: Record<string, Record<string, Op>>;
}

function refs(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) v.forEach((x) => refs(x, out));
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else refs(x, out);
    }
  }
  return out;
}

test('the document is OpenAPI 3.1 and well formed', async () => {
  const r = await fetch(`${srv.url}/v0/openapi.json`);
  assert.equal(r.status, 200);
  const doc = (await r.json()) as Doc;
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.title, 'spool');
  assert.match(doc.info.version, /^\d+\.\d+\.\d+/);
  let ops = 0;
  for (const [p, item] of Object.entries(doc.paths)) {
    assert.match(p, /^\//);
    for (const [method, op] of Object.entries(item)) {
      assert.ok(['get', 'put', 'post', 'delete', 'head'].includes(method), `${method} ${p}`);
      assert.ok(op.summary, `${method} ${p} has a summary`);
      assert.ok(Object.keys(op.responses).length > 0, `${method} ${p} has responses`);
      for (const [code, resp] of Object.entries(op.responses)) assert.ok(resp.description, `${method} ${p} ${code} has a description`);
      if (method !== 'head') ops++;
    }
  }
  for (const ref of refs(doc)) {
    const m = /^#\/components\/schemas\/(.+)$/.exec(ref);
    assert.ok(m && doc.components?.schemas?.[m[1]!], `$ref ${ref} resolves`);
  }
  assert.equal(ops, Object.keys(ROUTE_DOCS).length, 'every documented route is in the document');
  const errors = doc.paths['/v0/topics/{topic}']!.put!.responses['4XX'];
  assert.ok(errors, 'errors are documented');
});

test("every route of the server's route table is documented", () => {
  const documented = Object.keys(ROUTE_DOCS).map((k) => {
    const [method, p] = k.split(' ');
    return { method: method!, path: p!.replace(/:[a-z]+/g, 'x') };
  });
  for (const [re, methods] of ROUTE_TABLE) {
    for (const m of methods.filter((x) => x !== 'HEAD')) {
      assert.ok(
        documented.some((d) => d.method === m && re.test(d.path)),
        `${m} ${re} has a row in ROUTE_DOCS (src/http/openapi.ts)`,
      );
    }
  }
});

test('every documented route exists', async () => {
  const doc = (await (await fetch(`${srv.url}/v0/openapi.json`)).json()) as Doc;
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item).filter((m) => m !== 'head')) {
      const url = srv.url + p.replace('{topic}', 'oa.q').replace('{wid}', 'w_absent');
      const ctl = new AbortController();
      const hasBody = method === 'put' || method === 'post';
      const r = await fetch(url, {
        method: method.toUpperCase(),
        headers: {
          ...(hasBody ? { 'content-type': 'application/json' } : {}),
          ...(p.endsWith('/work') ? { accept: 'text/event-stream' } : {}),
        },
        body: hasBody ? '{}' : undefined,
        signal: ctl.signal,
      });
      assert.notEqual(r.status, 405, `${method} ${p}`);
      if (r.status === 404) {
        const body = (await r.json()) as { error: { message: string } };
        assert.doesNotMatch(body.error.message, /^no route/, `${method} ${p} exists`);
      }
      ctl.abort(); // SSE streams and the backup tar are not read to the end
    }
  }
});

test('component schemas are named, and the routes refer to them', async () => {
  const doc = (await (await fetch(`${srv.url}/v0/openapi.json`)).json()) as Doc;
  const names = Object.keys(doc.components?.schemas ?? {});
  for (const n of names) assert.match(n, /^[A-Z][A-Za-z]+$/, `a named schema, not ${n}`);
  for (const n of [
    'SpoolError',
    'TopicConfig',
    'AppendRecord',
    'Record',
    'Tombstone',
    'TopicState',
    'AppendResult',
    'DiffRequest',
    'WatchRequest',
    'RouterConfig',
    'Router',
  ]) {
    assert.ok(names.includes(n), `components.schemas.${n}`);
  }
  const body = (p: string, m: string) => JSON.stringify(doc.paths[p]![m]!.requestBody?.content['application/json']?.schema);
  assert.equal(body('/v0/topics/{topic}', 'put'), '{"$ref":"#/components/schemas/TopicConfig"}');
  assert.match(body('/v0/topics/{topic}', 'post'), /"items":\{"\$ref":"#\/components\/schemas\/AppendRecord"\}/);
  assert.match(JSON.stringify(doc.paths['/v0/topics/{topic}/diff']!.post!.responses['200']), /#\/components\/schemas\/Record"/);
});

test('the bearer key is a security scheme, and each operation needs the scopes its admission rule does', async () => {
  const doc = (await (await fetch(`${srv.url}/v0/openapi.json`)).json()) as Doc;
  const schemes = doc.components?.securitySchemes ?? {};
  assert.deepEqual({ type: schemes.bearerKey?.type, scheme: schemes.bearerKey?.scheme }, { type: 'http', scheme: 'bearer' });
  assert.deepEqual(
    { type: schemes.tokenQuery?.type, in: schemes.tokenQuery?.in, name: schemes.tokenQuery?.name },
    { type: 'apiKey', in: 'query', name: 'token' },
  );
  for (const [key, rule] of Object.entries(ROUTE_RULES)) {
    if (rule.debugOnly) continue; // only with a debug setting (the stage clock), not described
    const [method, p] = key.split(' ') as [string, string];
    const op = doc.paths[p.replace(/:([a-z]+)/g, '{$1}')]?.[method.toLowerCase()];
    assert.ok(op, `${key} is documented`);
    const scopes = [...rule.scopes];
    if (rule.kind === 'public') {
      assert.deepEqual(op.security, [{}], key);
      assert.equal(op.responses['401'], undefined, `${key}: never 401`);
      continue;
    }
    const want =
      rule.kind === 'probe'
        ? [{}, { bearerKey: [] }]
        : rule.kind === 'watchStream'
          ? [{ bearerKey: [] }, { tokenQuery: [] }]
          : rule.kind === 'stream'
            ? [{ bearerKey: scopes }, { tokenQuery: scopes }]
            : [{ bearerKey: scopes }];
    assert.deepEqual(op.security, want, key);
    assert.ok(op.responses['401'], `${key}: 401 documented`);
    if (scopes.length > 0)
      assert.match(op.responses['403']?.description ?? '', new RegExp(scopes.join(' \\+ ')), `${key}: the 403 names the scopes`);
  }
});
