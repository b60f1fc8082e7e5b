// Limits (docs/API.md "Limits", "Errors"): batch size, per-record caps with detail.index/limit and
// atomic rejection, the raw body cap (413, decided before parsing) on a second server with a
// small SERVICE_MAX_BODY_BYTES, and the SERVICE_MAX_LIMIT diff clamp. In the fast tier: in-process
// servers driven through inject() (test/helpers/injectServer.ts).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertOk, namer, JSON_CT } from '../http/util.js';

const name = namer('lim');
const SMALL_BODY = 4096;
const SMALL_LIMIT = 5;
const { srv, c } = injectSuite();
const { srv: small, c: s } = injectSuite({ SERVICE_MAX_BODY_BYTES: String(SMALL_BODY), SERVICE_MAX_LIMIT: String(SMALL_LIMIT) });

async function head(t: string): Promise<number> {
  const r = await c.get(`/v0/topics/${t}?touch=false`);
  assert.equal(r.status, 200, r.text);
  return r.body.head_seq;
}

describe('batch size', () => {
  test('10000 records is accepted, 10001 is 400 batch_too_large {count, max}', async () => {
    const t = name('batch');
    const ok = await c.post(`/v0/topics/${t}`, { records: Array.from({ length: 10000 }, (_, i) => ({ data: i })) });
    assertOk(ok, 201, '10000 records');
    assert.equal(ok.body.count, 10000);
    assert.equal(ok.body.first_seq, 1);
    assert.equal(ok.body.last_seq, 10000);
    assert.equal(ok.body.seqs.length, 10000);
    const tooMany = await c.post(`/v0/topics/${t}`, { records: Array.from({ length: 10001 }, (_, i) => ({ data: i })) });
    const d = assertError(tooMany, 400, 'batch_too_large');
    assert.deepEqual(d, { count: 10001, max: 10000 });
    assert.equal(await head(t), 10000, 'nothing appended');
    const t2 = name('batch');
    assertError(
      await c.post(`/v0/topics/${t2}`, { records: Array.from({ length: 10001 }, () => ({ data: 0 })) }),
      400,
      'batch_too_large',
      'absent topic',
    );
    assertError(await c.get(`/v0/topics/${t2}`), 404, 'topic_not_found', 'not created');
  });
});

describe('per-record caps (docs/API.md "Limits", "Errors")', () => {
  // Each case: a record at the limit (must pass) and one just past it (must fail with `limit`).
  const cases: { what: string; limit: string; ok: Record<string, unknown> | string; bad: Record<string, unknown> | string }[] = [
    { what: 'tag 256 bytes (ascii)', limit: 'tag_bytes', ok: { data: 1, tag: 't'.repeat(256) }, bad: { data: 1, tag: 't'.repeat(257) } },
    {
      what: 'tag 256 bytes (2-byte chars)',
      limit: 'tag_bytes',
      ok: { data: 1, tag: '\u00e9'.repeat(128) },
      bad: { data: 1, tag: '\u00e9'.repeat(128) + 'a' },
    },
    {
      what: 'node 128 bytes (ascii)',
      limit: 'node_bytes',
      ok: { data: 1, node: 'n'.repeat(128) },
      bad: { data: 1, node: 'n'.repeat(129) },
    },
    {
      what: 'node 128 bytes (2-byte chars)',
      limit: 'node_bytes',
      ok: { data: 1, node: '\u00fc'.repeat(64) },
      bad: { data: 1, node: '\u00fc'.repeat(64) + 'x' },
    },
    {
      what: 'meta 64 keys',
      limit: 'meta_keys',
      ok: { data: 1, meta: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, i])) },
      bad: { data: 1, meta: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])) },
    },
    // compact meta text `{"k":"xxx…"}` is n + 8 bytes
    {
      what: 'meta 16 KiB',
      limit: 'meta_bytes',
      ok: { data: 1, meta: { k: 'x'.repeat(16384 - 8) } },
      bad: { data: 1, meta: { k: 'x'.repeat(16384 - 7) } },
    },
    // compact data text `"xxx…"` is n + 2 bytes
    { what: 'data 1 MiB', limit: 'record_bytes', ok: { data: 'd'.repeat(1048576 - 2) }, bad: { data: 'd'.repeat(1048576 - 1) } },
    // data + meta: meta `{"k":"v"}` is 9 bytes
    {
      what: 'data+meta 1 MiB',
      limit: 'record_bytes',
      ok: { data: 'd'.repeat(1048576 - 9 - 2), meta: { k: 'v' } },
      bad: { data: 'd'.repeat(1048576 - 9 - 1), meta: { k: 'v' } },
    },
  ];

  for (const cs of cases) {
    test(`${cs.what}: at the limit ok, one past is 400 record_too_large {index, limit}`, async () => {
      const t = name('cap');
      await c.post(`/v0/topics/${t}`, { records: [{ data: 'seed' }] });
      const okR = await c.post(`/v0/topics/${t}`, { records: [cs.ok] });
      assertOk(okR, 200, `${cs.what} at the limit`);
      const before = await head(t);
      const bad = await c.post(`/v0/topics/${t}`, { records: [{ data: 'fine-0' }, { data: 'fine-1' }, cs.bad, { data: 'fine-3' }] });
      const d = assertError(bad, 400, 'record_too_large', `${cs.what} past the limit`);
      assert.equal(d?.index, 2, `${cs.what}: detail.index`);
      assert.equal(d?.limit, cs.limit, `${cs.what}: detail.limit`);
      assert.equal(await head(t), before, `${cs.what}: nothing of the batch appended`);
    });
  }

  test('meta size is measured on the compact text (whitespace outside strings removed)', async () => {
    const t = name('metaws');
    // compact: {"k":"<16376 x>"} = 16384 bytes; sent with lots of insignificant whitespace
    const body = `{"records":[{"data":1,"meta":{   "k"   :   "${'x'.repeat(16376)}"   }}]}`;
    assertOk(await c.post(`/v0/topics/${t}`, body), 201, 'whitespace-padded meta at the limit');
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.equal(d.body.records[0].meta.k.length, 16376);
  });

  test('the first offending record is reported', async () => {
    const t = name('first');
    await c.put(`/v0/topics/${t}`);
    const bad = await c.post(`/v0/topics/${t}`, {
      records: [{ data: 0 }, { data: 1, tag: 'x'.repeat(300) }, { data: 2, node: 'y'.repeat(300) }],
    });
    const d = assertError(bad, 400, 'record_too_large');
    assert.equal(d?.index, 1);
    assert.equal(d?.limit, 'tag_bytes');
    assert.equal(await head(t), 0);
  });

  test('a batch-level node over 128 bytes is rejected', async () => {
    const t = name('bnode');
    await c.put(`/v0/topics/${t}`);
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], node: 'b'.repeat(128) }), 200, 'batch node 128 bytes');
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], node: 'b'.repeat(129) });
    assert.equal(r.status, 400, `batch node 129 bytes: ${r.text}`);
    assert.ok(['record_too_large', 'invalid_request'].includes(r.body.error?.code), r.text);
    assert.equal(await head(t), 1);
  });

  test('a rejected first append creates nothing', async () => {
    const t = name('capnew');
    assertError(await c.post(`/v0/topics/${t}`, { records: [{ data: 1, tag: 'x'.repeat(257) }] }), 400, 'record_too_large');
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
  });
});

describe('nesting depth (docs/API.md "Limits")', () => {
  test('data and meta nest up to the body limit of 512 levels; one more is 400 max_depth, nothing appended', async () => {
    const t = name('deep');
    // The envelope takes three levels (body, records, record): a value may nest 509 more.
    const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const body = (data: string, meta = '{}') => `{"records":[{"data":${data},"meta":${meta}}]}`;
    assertOk(await srv.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body: body(nest(509)) }), 201, 'data at the limit');
    assertOk(
      await srv.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body: body('1', `{"m":${nest(508)}}`) }),
      200,
      'meta at the limit',
    );
    for (const [what, b] of [
      ['data', body(nest(510))],
      ['meta', body('1', `{"m":${nest(509)}}`)],
    ] as const) {
      const r = await srv.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body: b });
      const d = assertError(r, 400, 'invalid_request', `${what} one level past`);
      assert.deepEqual(d, { limit: 'max_depth', max: 512 });
      assert.match(r.body.error.message, /^body nests deeper than 512 levels/);
    }
    assert.equal(await head(t), 2, 'nothing of the refused appends');
  });
});

describe('one limit, one message', () => {
  test('a node over 128 bytes gets the same message on an append and on a queue claim', async () => {
    const t = name('onenode');
    const q = name('onenodeq');
    await c.put(`/v0/topics/${q}`, { type: 'queue' });
    const append = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], node: 'n'.repeat(129) });
    assertError(append, 400, 'record_too_large', 'append');
    const claim = await c.post(`/v0/topics/${q}/claim`, { node: 'n'.repeat(129) });
    assertError(claim, 400, 'invalid_request', 'claim');
    assert.equal(claim.body.error.message, append.body.error.message);
    assert.equal(append.body.error.message, 'node is longer than 128 bytes');
  });

  test('an idempotency key over 256 characters gets the same message in the body and in the header', async () => {
    const t = name('oneidem');
    const key = 'k'.repeat(257);
    const inBody = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: key });
    assertError(inBody, 400, 'invalid_request', 'body key');
    const inHeader = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }, { 'idempotency-key': key });
    assertError(inHeader, 400, 'invalid_request', 'header key');
    assert.equal(inHeader.body.error.message, inBody.body.error.message);
    assert.equal(inBody.body.error.detail?.field, 'idempotency_key');
    assert.equal(inHeader.body.error.detail?.field, 'idempotency_key');
  });
});

describe('idempotency keys at their edges (docs/API.md "Append")', () => {
  test('256 characters are 256 code points: 256 emoji pass, 257 do not', async () => {
    const t = name('idemchars');
    assertOk(
      await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: '😀'.repeat(256) }),
      201,
      '256 emoji (512 UTF-16 units)',
    );
    const over = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: '😀'.repeat(257) });
    assertError(over, 400, 'invalid_request', '257 emoji');
    assert.equal(over.body.error.message, 'idempotency_key is longer than 256 characters');
    const inHeader = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }, { 'idempotency-key': 'é'.repeat(257) });
    assertError(inHeader, 400, 'invalid_request', '257 two-byte characters in the header');
    assert.equal(await head(t), 1, 'only the first append applied');
  });

  test('the body key wins: an over-long header next to a valid body key is not looked at', async () => {
    const t = name('idemwins');
    const r1 = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 'b' }, { 'idempotency-key': 'k'.repeat(300) });
    assertOk(r1, 201, 'body key with a long header');
    const r2 = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 'b' }, { 'idempotency-key': 'other' });
    assertOk(r2, 200, 'deduped by the body key');
    assert.equal(r2.body.deduped, true);
  });

  test('an empty key is 400, in the body and in the header, and appends nothing', async () => {
    const t = name('idemempty');
    const inBody = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: '' }, { 'idempotency-key': 'h' });
    assertError(inBody, 400, 'invalid_request', 'empty body key (the header does not stand in for it)');
    assert.equal(inBody.body.error.message, 'idempotency_key must not be empty');
    assert.equal(inBody.body.error.detail?.field, 'idempotency_key');
    const inHeader = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }, { 'idempotency-key': '' });
    assertError(inHeader, 400, 'invalid_request', 'empty header key');
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
  });
});

describe("an append's config", () => {
  test('a malformed config is 400 on a live topic too, where a valid one is ignored', async () => {
    const t = name('cfglive');
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }), 201, 'create');
    const bad = await c.post(`/v0/topics/${t}`, { records: [{ data: 2 }], config: { discard: 'drop' } });
    assertError(bad, 400, 'invalid_request', 'unknown discard on a live topic');
    assertError(
      await c.post(`/v0/topics/${t}`, { records: [{ data: 2 }], config: { cap_records: -1 } }),
      400,
      'invalid_request',
      'negative cap',
    );
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 2 }], config: { cap_records: 1 } }), 200, 'a valid config is ignored');
    assert.equal(await head(t), 2, 'the refused appends wrote nothing');
    const st = await c.get(`/v0/topics/${t}`);
    assert.equal(st.body.config.cap_records, 0, 'the live config is unchanged');
  });
});

describe('one condition, one message, one style', () => {
  test('an empty, a non-object and a malformed body get the same message on an append as on a claim', async () => {
    const t = name('onebody');
    assertOk(await c.put(`/v0/topics/${t}`, { type: 'queue' }), 201, 'create');
    for (const [body, want] of [
      ['', /^request body is required$/],
      ['[1]', /^body must be a JSON object$/],
      ['{"records": [', /^body is not valid JSON/],
    ] as const) {
      const append = await srv.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body });
      const claim = await srv.raw('POST', `/v0/topics/${t}/claim`, { headers: JSON_CT, body });
      assertError(append, 400, 'invalid_request', `append ${JSON.stringify(body)}`);
      assertError(claim, 400, 'invalid_request', `claim ${JSON.stringify(body)}`);
      assert.match(append.body.error.message, want);
      assert.match(claim.body.error.message, want);
    }
  });

  test('messages start in lower case and end without a period', async () => {
    const t = name('style');
    const bad = [
      await c.post(`/v0/topics/${t}`, { records: [] }),
      await c.post(`/v0/topics/${t}`, { records: [{}] }),
      await c.post(`/v0/topics/${t}`, { records: Array.from({ length: 10001 }, () => ({ data: 1 })) }),
      await c.post(`/v0/topics/${t}`, { records: [{ data: 1, tag: 5 }] }),
    ];
    for (const r of bad) {
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error.message, /^[a-z]/, r.body.error.message);
      assert.doesNotMatch(r.body.error.message, /\.$/, r.body.error.message);
    }
  });
});

describe('raw body cap (SERVICE_MAX_BODY_BYTES, 413)', () => {
  function appendBody(total: number): string {
    const base = '{"records":[{"data":""}]}';
    const s2 = `{"records":[{"data":"${'z'.repeat(total - base.length)}"}]}`;
    assert.equal(Buffer.byteLength(s2), total);
    return s2;
  }

  test('a body exactly at the cap is accepted', async () => {
    const t = name('at');
    const r = await small.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body: appendBody(SMALL_BODY) });
    assertOk(r, 201, 'append of exactly SERVICE_MAX_BODY_BYTES');
    const put = await small.raw('PUT', `/v0/topics/${name('at')}`, {
      headers: JSON_CT,
      body: `{"cap_records":1${' '.repeat(SMALL_BODY - 17)}}`,
    });
    assert.equal(Buffer.byteLength(`{"cap_records":1${' '.repeat(SMALL_BODY - 17)}}`), SMALL_BODY);
    assertOk(put, 201, 'PUT of exactly SERVICE_MAX_BODY_BYTES');
    const diffBody = `{"from_seq":0${' '.repeat(SMALL_BODY - 14)}}`;
    assert.equal(Buffer.byteLength(diffBody), SMALL_BODY);
    assertOk(await small.raw('POST', `/v0/topics/${t}/diff`, { headers: JSON_CT, body: diffBody }), 200, 'diff of exactly the cap');
  });

  test('one byte past the cap is 413 payload_too_large {max}', async () => {
    const t = name('past');
    const r = await small.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body: appendBody(SMALL_BODY + 1) });
    const d = assertError(r, 413, 'payload_too_large');
    assert.deepEqual(d, { max: SMALL_BODY });
    assertError(await s.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'nothing created');
    const put = await small.raw('PUT', `/v0/topics/${t}`, { headers: JSON_CT, body: `{"cap_records":1${' '.repeat(SMALL_BODY - 16)}}` });
    assertError(put, 413, 'payload_too_large', 'PUT');
    await s.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    const df = await small.raw('POST', `/v0/topics/${t}/diff`, { headers: JSON_CT, body: `{"from_seq":0${' '.repeat(SMALL_BODY - 13)}}` });
    assertError(df, 413, 'payload_too_large', 'diff');
  });

  test('413 is decided before parsing and before media type and name checks', async () => {
    const big = appendBody(SMALL_BODY + 1);
    assertError(
      await small.raw('POST', `/v0/topics/${name()}`, { headers: { 'content-type': 'text/plain' }, body: big }),
      413,
      'payload_too_large',
      'wrong content type',
    );
    assertError(await small.raw('POST', `/v0/topics/${name()}`, { body: big }), 413, 'payload_too_large', 'no content type');
    assertError(
      await small.raw('POST', `/v0/topics/${name()}`, { headers: JSON_CT, body: '{' + 'x'.repeat(SMALL_BODY) }),
      413,
      'payload_too_large',
      'malformed JSON',
    );
    assertError(
      await small.raw('POST', `/v0/topics/-bad-name`, { headers: JSON_CT, body: big }),
      413,
      'payload_too_large',
      'invalid topic name',
    );
    assertError(
      await small.raw('POST', `/v0/topics/${name()}`, { headers: JSON_CT, body: `{"records":[${'{"data":1},'.repeat(500)}{"data":1}]}` }),
      413,
      'payload_too_large',
      'over cap and batch fine',
    );
  });

  test('the default cap allows large bodies (64 MiB default)', async () => {
    const t = name('bigbody');
    const r = await c.post(`/v0/topics/${t}`, { records: Array.from({ length: 8 }, () => ({ data: 'q'.repeat(1000000) })) });
    assertOk(r, 201, '8 MB body on the default server');
  });
});

describe('SERVICE_MAX_LIMIT', () => {
  test('diff limit is clamped to the configured max', async () => {
    const t = name('maxlimit');
    await s.post(`/v0/topics/${t}`, { records: Array.from({ length: 20 }, (_, i) => ({ data: i })) });
    const r = await s.post(`/v0/topics/${t}/diff`, { limit: 100 });
    assertOk(r, 200);
    assert.equal(r.body.records.length, SMALL_LIMIT);
    assert.equal(r.body.next_from_seq, SMALL_LIMIT);
    assert.equal(r.body.caught_up, false);
    const d = await s.post(`/v0/topics/${t}/diff`, {});
    assert.equal(d.body.records.length, SMALL_LIMIT, 'the default 256 is clamped too');
    const l3 = await s.post(`/v0/topics/${t}/diff`, { limit: 3 });
    assert.equal(l3.body.records.length, 3);
  });
});
