// HTTP protocol conformance: routing (404/405 + Allow), error envelope (docs/API.md "Errors"),
// media types, error precedence ("Which error wins"), name validation on every topic route,
// query booleans/integers, big integers, unknown fields, gzip both ways (docs/API.md
// "Conventions") and the performance block on every JSON response (docs/API.md "Conventions").
// In the fast tier: an in-process server driven through inject() (test/helpers/injectServer.ts);
// Node's own parser errors need a real socket (test/http/malformed.test.ts).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertInvalid, assertOk, assertPerf, getHeader, namer, JSON_CT, type RawOptions } from '../http/util.js';

const { srv, c } = injectSuite();
const name = namer('proto');

function allowSet(v: string | undefined): Set<string> {
  return new Set(
    (v ?? '')
      .split(',')
      .map((s) => s.trim().toUpperCase())
      .filter(Boolean),
  );
}

describe('routing', () => {
  test('unknown paths are 404 not_found with the error envelope', async () => {
    for (const [m, p] of [
      ['GET', '/index.html'], // `/` itself is the status page (docs/OPERATIONS.md)
      ['GET', '/v0'],
      ['GET', '/v0/nope'],
      ['GET', '/v1/topics'],
      ['GET', '/v0/ws'],
      ['POST', '/v0/topics/a/unknown'],
      ['GET', '/v0/topics/a/diff/extra'],
      ['GET', '/v0/topics/a/b/c'],
    ] as const) {
      const r = await srv.raw(m, p);
      const d = assertError(r, 404, 'not_found', `${m} ${p}`);
      assert.equal(d, undefined, `${m} ${p}: not_found carries no detail (docs/API.md "Errors")`);
    }
  });

  test('known path with wrong method is 405 method_not_allowed with Allow', async () => {
    const cases: [string, string, string[], string][] = [
      ['PATCH', '/v0/topics/x', ['GET', 'PUT', 'POST', 'DELETE'], 'PATCH'],
      ['GET', '/v0/topics/x/diff', ['POST'], 'GET'],
      ['PUT', '/v0/topics/x/diff', ['POST'], 'PUT'],
      ['DELETE', '/v0/topics/x/diff', ['POST'], 'DELETE'],
      ['POST', '/v0/topics', ['GET'], 'POST'],
      ['DELETE', '/v0/topics', ['GET'], 'DELETE'],
      ['POST', '/v0/health', ['GET'], 'POST'],
      ['POST', '/healthz', ['GET'], 'POST'],
      ['DELETE', '/v0/ready', ['GET'], 'DELETE'],
      ['PUT', '/readyz', ['GET'], 'PUT'],
      ['POST', '/v0/metrics', ['GET'], 'POST'],
    ];
    for (const [m, p, allowed, notAllowed] of cases) {
      const r = await srv.raw(m, p, m === 'GET' || m === 'DELETE' ? {} : { headers: JSON_CT, body: '{}' });
      const d = assertError(r, 405, 'method_not_allowed', `${m} ${p}`);
      assert.equal(d, undefined, `${m} ${p}: method_not_allowed carries no detail (docs/API.md "Errors")`);
      const allow = allowSet(getHeader(r, 'allow'));
      for (const a of allowed) assert.ok(allow.has(a), `${m} ${p}: Allow "${getHeader(r, 'allow')}" should list ${a}`);
      assert.ok(!allow.has(notAllowed), `${m} ${p}: Allow must not list ${notAllowed}`);
    }
  });

  test('405 wins over an invalid topic name (docs/API.md "Which error wins": routing before 400)', async () => {
    const r = await srv.raw('PATCH', '/v0/topics/-bad');
    assertError(r, 405, 'method_not_allowed');
    assert.ok(getHeader(r, 'allow'));
  });
});

describe('error envelope and performance', () => {
  test('handler errors carry performance.server_total_ms next to error (docs/API.md "Errors")', async () => {
    const a = await c.get(`/v0/topics/${name('absent')}`);
    assertError(a, 404, 'topic_not_found');
    assertPerf(a.body, 'GET absent topic');
    const b = await c.post(`/v0/topics/${name()}`, { records: [] });
    assertError(b, 400, 'invalid_request');
    assertPerf(b.body, 'append with empty records');
    const d = await c.post(`/v0/topics/${name()}/diff`, { from_seq: 'x' });
    assertError(d, 400, 'invalid_request');
    assertPerf(d.body, 'diff bad type');
  });

  test('every JSON success response carries performance.server_total_ms', async () => {
    const t = name('perf');
    assertOk(await c.get('/v0/health'), 200, 'health');
    assertOk(await c.get('/healthz'), 200, 'healthz');
    assertOk(await c.get('/v0/ready'), 200, 'ready');
    assertOk(await c.get('/readyz'), 200, 'readyz');
    assertOk(await c.get('/v0/metrics', { accept: 'application/json' }), 200, 'metrics json');
    assertOk(await c.put(`/v0/topics/${t}`), 201, 'PUT');
    assertOk(await c.put(`/v0/topics/${t}`, {}), 200, 'PUT identical');
    assertOk(await c.get(`/v0/topics/${t}`), 200, 'GET state');
    assertOk(await c.get(`/v0/topics`), 200, 'list');
    const ap = assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }), 200, 'append');
    assert.equal(typeof ap.performance.wal_append_ms, 'number', 'append performance.wal_append_ms');
    assert.equal(typeof ap.performance.fsync_ms, 'number', 'append performance.fsync_ms');
    const df = assertOk(await c.post(`/v0/topics/${t}/diff`, {}), 200, 'diff');
    assert.equal(typeof df.performance.records_scanned, 'number', 'diff performance.records_scanned');
    assertOk(await c.del(`/v0/topics/${t}`), 200, 'DELETE');
    assertOk(await c.del(`/v0/topics/${t}`), 200, 'DELETE absent');
  });
});

describe('media types and bodies (docs/API.md "Conventions")', () => {
  test('append without Content-Type is 415', async () => {
    const t = name();
    const r = await srv.raw('POST', `/v0/topics/${t}`, { body: '{"records":[{"data":1}]}' });
    const d = assertError(r, 415, 'unsupported_media_type');
    assert.equal(d, undefined, 'unsupported_media_type carries no detail (docs/API.md "Errors")');
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'nothing created');
  });

  test('append with a non-JSON Content-Type is 415', async () => {
    const t = name();
    for (const ct of [
      'text/plain',
      'text/plain; charset=utf-8',
      'application/xml',
      'application/x-www-form-urlencoded',
      'application/json-patch+json',
      'application/jsonx',
    ]) {
      const r = await srv.raw('POST', `/v0/topics/${t}`, { headers: { 'content-type': ct }, body: '{"records":[{"data":1}]}' });
      assertError(r, 415, 'unsupported_media_type', `content-type ${ct}`);
    }
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'nothing created');
  });

  test('Content-Type media type is case-insensitive and parameters are optional', async () => {
    const t = name();
    for (const ct of [
      'application/json',
      'Application/JSON',
      'APPLICATION/JSON; CHARSET=UTF-8',
      'application/json;charset=utf-8',
      'application/json; charset=utf-8',
    ]) {
      const r = await srv.raw('POST', `/v0/topics/${t}`, { headers: { 'content-type': ct }, body: '{"records":[{"data":1}]}' });
      assertOk(r, [200, 201], `content-type ${ct}`);
    }
  });

  test('415 wins over a malformed body (docs/API.md "Which error wins")', async () => {
    const r1 = await srv.raw('POST', `/v0/topics/${name()}`, { headers: { 'content-type': 'text/plain' }, body: '{not json' });
    assertError(r1, 415, 'unsupported_media_type');
  });

  test('415 wins over an invalid topic name (docs/API.md "Which error wins": 415 is step 6, names are step 7)', async () => {
    const r2 = await srv.raw('POST', `/v0/topics/-bad`, { headers: { 'content-type': 'text/plain' }, body: '{"records":[{"data":1}]}' });
    assertError(r2, 415, 'unsupported_media_type', 'append');
    const r3 = await srv.raw('PUT', `/v0/topics/-bad`, { headers: { 'content-type': 'text/plain' }, body: '{}' });
    assertError(r3, 415, 'unsupported_media_type', 'PUT');
    const r4 = await srv.raw('POST', `/v0/topics/-bad/diff`, { headers: { 'content-type': 'text/plain' }, body: '{}' });
    assertError(r4, 415, 'unsupported_media_type', 'diff');
  });

  test('append with JSON Content-Type and an empty body is 400', async () => {
    const t = name();
    const r = await srv.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body: '' });
    assertInvalid(r);
    const r2 = await srv.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT });
    assertInvalid(r2);
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'nothing created');
  });

  test('append without Content-Type and without a body is 415', async () => {
    const r = await srv.raw('POST', `/v0/topics/${name()}`, { body: '' });
    assertError(r, 415, 'unsupported_media_type');
  });

  test('PUT accepts an empty body without Content-Type (and with one)', async () => {
    const t1 = name();
    const r = await srv.raw('PUT', `/v0/topics/${t1}`);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.created, true);
    const t2 = name();
    const r2 = await srv.raw('PUT', `/v0/topics/${t2}`, { body: '' });
    assert.equal(r2.status, 201, r2.text);
    const t3 = name();
    const r3 = await srv.raw('PUT', `/v0/topics/${t3}`, { headers: JSON_CT, body: '' });
    assert.equal(r3.status, 201, `PUT with JSON Content-Type and empty body means {}: ${r3.text}`);
  });

  test('PUT with a body needs a JSON Content-Type (415)', async () => {
    const t = name();
    const r = await srv.raw('PUT', `/v0/topics/${t}`, { body: '{"cap_records":5}' });
    assertError(r, 415, 'unsupported_media_type', 'no content-type');
    const r2 = await srv.raw('PUT', `/v0/topics/${t}`, { headers: { 'content-type': 'text/plain' }, body: '{}' });
    assertError(r2, 415, 'unsupported_media_type', 'text/plain');
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'nothing created');
  });

  test('diff accepts an empty body without Content-Type (and with one); a body needs JSON', async () => {
    const t = name();
    await c.post(`/v0/topics/${t}`, { records: [{ data: 'a' }] });
    const r = await srv.raw('POST', `/v0/topics/${t}/diff`);
    assertOk(r, 200, 'diff no body');
    assert.equal(r.body.records.length, 1);
    const r2 = await srv.raw('POST', `/v0/topics/${t}/diff`, { body: '' });
    assertOk(r2, 200, 'diff empty body');
    const r3 = await srv.raw('POST', `/v0/topics/${t}/diff`, { headers: JSON_CT, body: '' });
    assertOk(r3, 200, 'diff empty body with JSON content-type');
    const r4 = await srv.raw('POST', `/v0/topics/${t}/diff`, { headers: { 'content-type': 'text/plain' }, body: '{}' });
    assertError(r4, 415, 'unsupported_media_type', 'diff text/plain');
    const r5 = await srv.raw('POST', `/v0/topics/${t}/diff`, { body: '{"from_seq":0}' });
    assertError(r5, 415, 'unsupported_media_type', 'diff body without content-type');
  });

  test('bodies that are not a JSON object are 400 invalid_request', async () => {
    const t = name();
    await c.put(`/v0/topics/${t}`);
    for (const b of [
      '{',
      '[]',
      '"s"',
      '42',
      'null',
      'true',
      '{"records":[{"data":1}]} x',
      '{"records":[{"data":1}],}',
      "{'records':[]}",
      '\u00ff',
    ]) {
      assertInvalid(await c.post(`/v0/topics/${t}`, b), undefined, `append body ${JSON.stringify(b)}`);
      assertInvalid(await c.post(`/v0/topics/${t}/diff`, b), undefined, `diff body ${JSON.stringify(b)}`);
      assertInvalid(await c.put(`/v0/topics/${t}`, b), undefined, `PUT body ${JSON.stringify(b)}`);
    }
    const st = await c.get(`/v0/topics/${t}?touch=false`);
    assert.equal(st.body.head_seq, 0, 'nothing appended');
  });

  test('unknown request fields are ignored', async () => {
    const t = name();
    const p = await c.put(`/v0/topics/${t}`, { cap_records: 3, some_future_field: { x: 1 } });
    assertOk(p, 201, 'PUT with unknown field');
    assert.equal(p.body.config.some_future_field, undefined);
    const a = await c.post(`/v0/topics/${t}`, { records: [{ data: 1, future: 'x' }], future_batch: [1, 2] });
    assertOk(a, 200, 'append with unknown fields');
    const d = await c.post(`/v0/topics/${t}/diff`, { from_seq: 0, future: true });
    assertOk(d, 200, 'diff with unknown field');
    assert.equal(d.body.records.length, 1);
    assert.equal(d.body.records[0].future, undefined, 'unknown record fields are not stored');
  });
});

describe('integers (docs/API.md "Conventions")', () => {
  test('integers above 2^53-1 are 400, written literally in the JSON text', async () => {
    const t = name();
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    assertInvalid(await c.post(`/v0/topics/${t}/diff`, '{"from_seq":9007199254740993}'), 'from_seq', 'diff from_seq 2^53+1');
    assertInvalid(await c.post(`/v0/topics/${t}/diff`, '{"from_seq":18446744073709551615}'), 'from_seq', 'diff from_seq u64 max');
    assertInvalid(await c.post(`/v0/topics/${t}/diff`, '{"limit":9007199254740993}'), 'limit', 'diff limit 2^53+1');
    assertInvalid(await c.post(`/v0/topics/${t}/diff`, '{"wait_ms":9007199254740993}'), 'wait_ms', 'diff wait_ms 2^53+1');
    assertInvalid(await c.put(`/v0/topics/${t}`, '{"ttl_ms":9007199254740993}'), 'ttl_ms', 'PUT ttl_ms 2^53+1');
    assertInvalid(await c.put(`/v0/topics/${name()}`, '{"cap_records":1e30}'), 'cap_records', 'PUT cap_records 1e30');
    assertInvalid(
      await c.post(`/v0/topics/${name()}`, '{"records":[{"data":1}],"config":{"cap_bytes":9007199254740993}}'),
      'cap_bytes',
      'append config cap_bytes 2^53+1',
    );
  });

  test('2^53-1 itself is accepted', async () => {
    const t = name();
    const r = await c.put(`/v0/topics/${t}`, '{"idempotency_window_ms":9007199254740991}');
    assertOk(r, 201, 'PUT with 2^53-1');
    assert.equal(r.body.config.idempotency_window_ms, 9007199254740991);
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    const d = await c.post(`/v0/topics/${t}/diff`, '{"from_seq":0,"wait_ms":0,"limit":9007199254740991}');
    assertOk(d, 200, 'diff limit 2^53-1 (clamped)');
    assert.equal(d.body.records.length, 1);
  });
});

describe('query parameters (docs/API.md "Conventions")', () => {
  test('booleans: true/1 are true, false/0 false, anything else the default', async () => {
    const t = name();
    const seqs = async (q: string) => {
      const r = await c.post(`/v0/topics/${t}${q}`, { records: [{ data: 1 }] });
      assertOk(r, [200, 201], q);
      return 'seqs' in r.body;
    };
    assert.equal(await seqs(''), true, 'default return_seqs=true');
    assert.equal(await seqs('?return_seqs=false'), false, 'return_seqs=false');
    assert.equal(await seqs('?return_seqs=0'), false, 'return_seqs=0');
    assert.equal(await seqs('?return_seqs=true'), true, 'return_seqs=true');
    assert.equal(await seqs('?return_seqs=1'), true, 'return_seqs=1');
    assert.equal(await seqs('?return_seqs=no'), true, 'return_seqs=no -> default');
    assert.equal(await seqs('?return_seqs='), true, 'return_seqs= -> default');
  });

  test('integers: non-decimal page_size is 400', async () => {
    for (const v of ['abc', '-1', '1.5', '1e3', '0x10', ' 5']) {
      assertInvalid(await c.get(`/v0/topics?page_size=${encodeURIComponent(v)}`), 'page_size', `page_size=${v}`);
    }
    assertOk(await c.get('/v0/topics?page_size=7'), 200, 'page_size=7');
  });
});

describe('topic names in paths (docs/API.md "Conventions")', () => {
  const bad = [
    '-lead',
    '.lead',
    '_lead',
    ':lead',
    'a'.repeat(256),
    'sp%20ace',
    'caf%C3%A9',
    'a%2Cb',
    'a*b',
    'a%3Eb',
    'tab%09x',
    'a%40b',
    '%20',
  ];
  const decoded = (s: string) => decodeURIComponent(s);

  for (const n of bad) {
    test(`invalid name ${n.length > 40 ? n.slice(0, 12) + '…(' + n.length + ' chars)' : JSON.stringify(n)} is 400 with detail.topic on every topic route`, async () => {
      const routes: [string, string, RawOptions][] = [
        ['GET', `/v0/topics/${n}`, {}],
        ['GET', `/v0/topics/${n}?touch=false`, {}],
        ['DELETE', `/v0/topics/${n}`, {}],
        ['DELETE', `/v0/topics/${n}?if_empty=true`, {}],
        ['PUT', `/v0/topics/${n}`, {}],
        ['PUT', `/v0/topics/${n}`, { headers: JSON_CT, body: '{"cap_records":1}' }],
        ['POST', `/v0/topics/${n}`, { headers: JSON_CT, body: '{"records":[{"data":1}]}' }],
        ['POST', `/v0/topics/${n}/diff`, { headers: JSON_CT, body: '{}' }],
        ['POST', `/v0/topics/${n}/diff`, {}],
      ];
      for (const [m, p, o] of routes) {
        const d = assertInvalid(await srv.raw(m, p, o), undefined, `${m} ${p.slice(0, 60)}`);
        assert.deepEqual(d, { topic: decoded(n) }, `${m} ${p.slice(0, 60)}: detail.topic`);
      }
    });
  }

  test('no invalid topic was created', async () => {
    const list = await c.get('/v0/topics?page_size=1000');
    for (const s of list.body.topics) assert.match(s.topic, /^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$/, 'no invalid topic was created');
  });

  test('a 101-char name is valid on every route', async () => {
    const n = ('m' + Date.now().toString(36) + 'x'.repeat(101)).slice(0, 101);
    assertOk(await c.put(`/v0/topics/${n}`), 201, 'PUT 101 chars');
    assertOk(await c.post(`/v0/topics/${n}`, { records: [{ data: 1 }] }), 200, 'append 101 chars');
    assertOk(await c.get(`/v0/topics/${n}`), 200, 'GET 101 chars');
    assertOk(await c.post(`/v0/topics/${n}/diff`, {}), 200, 'diff 101 chars');
    assertOk(await c.del(`/v0/topics/${n}`), 200, 'DELETE 101 chars');
  });

  test('255-char names are valid, 256 are not', async () => {
    const n255 = 'n' + Date.now().toString(36) + 'x'.repeat(255);
    const name255 = n255.slice(0, 255);
    assert.equal(name255.length, 255);
    const r = await c.put(`/v0/topics/${name255}`);
    assertOk(r, 201, 'PUT 255 chars');
    assert.equal(r.body.topic, name255);
    assertOk(await c.post(`/v0/topics/${name255}`, { records: [{ data: 1 }] }), 200, 'append 255 chars');
    assertOk(await c.get(`/v0/topics/${name255}`), 200, 'GET 255 chars');
    assertOk(await c.post(`/v0/topics/${name255}/diff`, {}), 200, 'diff 255 chars');
    assertOk(await c.del(`/v0/topics/${name255}`), 200, 'DELETE 255 chars');
    const name256 = name255 + 'y';
    const d = assertInvalid(await c.put(`/v0/topics/${name256}`), undefined, 'PUT 256 chars');
    assert.equal(d?.topic, name256);
  });

  test('valid punctuation and percent-decoding of path segments', async () => {
    const base = `p${Date.now().toString(36)}`;
    for (const n of [`${base}.a_b:c-d`, `9${base}`, `${base}-`]) {
      const r = await c.put(`/v0/topics/${n}`);
      assertOk(r, 201, `PUT ${n}`);
      assert.equal(r.body.topic, n);
    }
    // %3A is ':' → the topic "<base>:enc"
    const r = await c.put(`/v0/topics/${base}%3Aenc`);
    assertOk(r, 201, 'PUT percent-encoded colon');
    assert.equal(r.body.topic, `${base}:enc`);
    const g = await c.get(`/v0/topics/${base}:enc`);
    assertOk(g, 200, 'GET with the decoded name');
    assert.equal(g.body.topic, `${base}:enc`);
  });

  test('names are case-sensitive', async () => {
    const n = `Case${Date.now().toString(36)}`;
    await c.put(`/v0/topics/${n}`);
    assertError(await c.get(`/v0/topics/${n.toLowerCase()}`), 404, 'topic_not_found');
    assertOk(await c.get(`/v0/topics/${n}`), 200);
  });
});

describe('compression', () => {
  test('gzip request bodies are accepted (Content-Encoding: gzip)', async () => {
    const t = name('gz');
    const body = zlib.gzipSync(Buffer.from(JSON.stringify({ records: [{ data: { hello: 'gzip' } }, { data: 2 }] })));
    const r = await srv.raw('POST', `/v0/topics/${t}`, { headers: { ...JSON_CT, 'content-encoding': 'gzip' }, body });
    assertOk(r, 201, 'gzip append');
    assert.deepEqual(r.body.seqs, [1, 2]);
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.deepEqual(
      d.body.records.map((x: any) => x.data),
      [{ hello: 'gzip' }, 2],
    );
    const t2 = name('gzput');
    const p = await srv.raw('PUT', `/v0/topics/${t2}`, {
      headers: { ...JSON_CT, 'content-encoding': 'gzip' },
      body: zlib.gzipSync('{"cap_records":9}'),
    });
    assertOk(p, 201, 'gzip PUT');
    assert.equal(p.body.config.cap_records, 9);
    const df = await srv.raw('POST', `/v0/topics/${t}/diff`, {
      headers: { ...JSON_CT, 'content-encoding': 'gzip' },
      body: zlib.gzipSync('{"from_seq":1}'),
    });
    assertOk(df, 200, 'gzip diff body');
    assert.deepEqual(
      df.body.records.map((x: any) => x.$seq),
      [2],
    );
  });

  test('gzip responses with Accept-Encoding: gzip, identity by default', async () => {
    const t = name('gzr');
    const records = Array.from({ length: 200 }, (_, i) => ({ data: { i, pad: 'abcdefghij'.repeat(10) } }));
    await c.post(`/v0/topics/${t}`, { records });
    const z = await srv.raw('POST', `/v0/topics/${t}/diff`, { headers: { ...JSON_CT, 'accept-encoding': 'gzip' }, body: '{}' });
    assert.equal(z.status, 200, z.text.slice(0, 200));
    assert.equal(z.headers['content-encoding'], 'gzip', 'large diff with Accept-Encoding gzip is gzip-encoded');
    assert.ok(z.raw.length < z.text.length, 'compressed bytes are smaller');
    assert.equal(z.body.records.length, 200);
    assertPerf(z.body);
    const plain = await srv.raw('POST', `/v0/topics/${t}/diff`, { headers: JSON_CT, body: '{}' });
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['content-encoding'], undefined, 'no compression without Accept-Encoding (off by default)');
    assert.equal(plain.body.records.length, 200);
    const ident = await srv.raw('POST', `/v0/topics/${t}/diff`, { headers: { ...JSON_CT, 'accept-encoding': 'identity' }, body: '{}' });
    assert.equal(ident.headers['content-encoding'], undefined, 'identity requested');
  });

  test('malformed gzip request body is a 400 error with the envelope', async () => {
    const r = await srv.raw('POST', `/v0/topics/${name()}`, {
      headers: { ...JSON_CT, 'content-encoding': 'gzip' },
      body: Buffer.from('definitely not gzip'),
    });
    assertInvalid(r);
  });
});
