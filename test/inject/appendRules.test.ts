// The rules of append (docs/API.md "Append"): create rules, idempotency keys and their length,
// request validation of the batch and of every record, on an in-process server through inject().
// Appends as such and the stored record shape: test/http/append.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertInvalid, assertOk, assertFullConfig, namer, JSON_CT } from '../http/util.js';

const { srv, c } = injectSuite();
const name = namer('app');

async function head(t: string): Promise<number> {
  const r = await c.get(`/v0/topics/${t}?touch=false`);
  assert.equal(r.status, 200, r.text);
  return r.body.head_seq;
}

describe('create rules (docs/API.md "Topic lifecycle")', () => {
  test('create:false on an absent topic is 404 topic_not_found and creates nothing', async () => {
    const t = name('nocreate');
    const d = assertError(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], create: false }), 404, 'topic_not_found');
    assert.deepEqual(d, { topic: t });
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
  });

  test('create:false on an existing topic appends', async () => {
    const t = name('nocreate');
    await c.put(`/v0/topics/${t}`);
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], create: false });
    assertOk(r, 200);
    assert.deepEqual(r.body.seqs, [1]);
  });

  test('body config.auto_create:false on an absent topic is 404', async () => {
    const t = name('noauto');
    assertError(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], config: { auto_create: false } }), 404, 'topic_not_found');
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
  });

  test('create:true overrides config.auto_create:false and applies the config', async () => {
    const t = name('forcecreate');
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], create: true, config: { auto_create: false, cap_records: 50 } });
    assertOk(r, 201);
    assert.equal(r.body.created, true);
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(st.body.config, { auto_create: false, cap_records: 50 });
  });

  test('config is applied on create', async () => {
    const t = name('cfg');
    const r = await c.post(`/v0/topics/${t}`, {
      records: [{ data: 1 }],
      config: { durable: true, priority: 7, ttl_ms: 3600000, lease_ms: 1 },
    });
    assertOk(r, 201);
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(
      st.body.config,
      { durable: true, durability: 'fsync', priority: 7, ttl_ms: 3600000, lease_ms: 100 },
      'config resolved and clamped as in docs/API.md "PUT /v0/topics/:topic"',
    );
    assert.equal(st.body.effective_priority, 7);
  });

  test('config is ignored on an existing topic', async () => {
    const t = name('cfgignored');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], config: { durability: 'memory' } });
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 2 }], config: { durability: 'fsync', cap_records: 1, type: 'queue' } });
    assertOk(r, 200);
    assert.equal(r.body.created, false);
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(st.body.config, { durability: 'memory' });
    assert.equal(st.body.count, 2);
  });

  test('an invalid config is 400 and creates nothing', async () => {
    for (const config of [{ discard: 'drop' }, { durability: 'sometimes' }, { ttl_ms: -1 }, { dead_letter: '-bad' }, 'x', [1]]) {
      const t = name('badcfg');
      assertInvalid(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], config }), undefined, `config ${JSON.stringify(config)}`);
      assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', `config ${JSON.stringify(config)}: nothing created`);
    }
  });
});

describe('idempotency (docs/API.md "Append")', () => {
  test('replay of a body idempotency_key returns the original seqs, deduped:true, appends nothing', async () => {
    const t = name('idem');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 'pre' }] });
    const r1 = await c.post(`/v0/topics/${t}`, { records: [{ data: 'x' }, { data: 'y' }], idempotency_key: 'k1' });
    assertOk(r1, 200);
    assert.deepEqual(r1.body.seqs, [2, 3]);
    assert.equal(r1.body.deduped, false);
    const r2 = await c.post(`/v0/topics/${t}`, { records: [{ data: 'x' }, { data: 'y' }], idempotency_key: 'k1' });
    assertOk(r2, 200);
    assert.equal(r2.body.deduped, true);
    assert.deepEqual(r2.body.seqs, [2, 3]);
    assert.equal(r2.body.first_seq, 2);
    assert.equal(r2.body.last_seq, 3);
    assert.equal(r2.body.created, false);
    assert.equal(await head(t), 3, 'nothing appended');
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.equal(d.body.records.length, 3);
  });

  test('replay on the creating call: first 201 created:true, replay 200 deduped', async () => {
    const t = name('idemc');
    const r1 = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 'first' });
    assertOk(r1, 201);
    const r2 = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 'first' });
    assertOk(r2, 200);
    assert.equal(r2.body.deduped, true);
    assert.deepEqual(r2.body.seqs, [1]);
    assert.equal(await head(t), 1);
  });

  test('Idempotency-Key header dedupes too', async () => {
    const t = name('idemh');
    const r1 = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }] }, { 'Idempotency-Key': 'hk' });
    assert.deepEqual(r1.body.seqs, [1, 2]);
    const r2 = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }] }, { 'Idempotency-Key': 'hk' });
    assertOk(r2, 200);
    assert.equal(r2.body.deduped, true);
    assert.deepEqual(r2.body.seqs, [1, 2]);
    assert.equal(await head(t), 2);
    const viaBody = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }], idempotency_key: 'hk' });
    assert.equal(viaBody.body.deduped, true, 'same key space for header and body');
    assert.deepEqual(viaBody.body.seqs, [1, 2]);
  });

  test('body idempotency_key wins over the header', async () => {
    const t = name('idemw');
    const a = await c.post(`/v0/topics/${t}`, { records: [{ data: 'a' }], idempotency_key: 'body-1' });
    assert.deepEqual(a.body.seqs, [1]);
    // header differs but body matches → deduped on the body key
    const b = await c.post(`/v0/topics/${t}`, { records: [{ data: 'a' }], idempotency_key: 'body-1' }, { 'Idempotency-Key': 'hdr-1' });
    assert.equal(b.body.deduped, true);
    assert.deepEqual(b.body.seqs, [1]);
    // new body key with a header: appended under the body key only
    const c1 = await c.post(`/v0/topics/${t}`, { records: [{ data: 'c' }], idempotency_key: 'body-2' }, { 'Idempotency-Key': 'hdr-2' });
    assert.equal(c1.body.deduped, false);
    assert.deepEqual(c1.body.seqs, [2]);
    const c2 = await c.post(`/v0/topics/${t}`, { records: [{ data: 'c' }] }, { 'Idempotency-Key': 'hdr-2' });
    assert.equal(c2.body.deduped, false, 'the header key was not recorded when the body key won');
    assert.deepEqual(c2.body.seqs, [3]);
    assert.equal(await head(t), 3);
  });

  test('keys are scoped to the topic', async () => {
    const t1 = name('idems');
    const t2 = name('idems');
    await c.post(`/v0/topics/${t1}`, { records: [{ data: 1 }], idempotency_key: 'shared' });
    await c.post(`/v0/topics/${t2}`, { records: [{ data: 0 }] });
    const r = await c.post(`/v0/topics/${t2}`, { records: [{ data: 1 }], idempotency_key: 'shared' });
    assert.equal(r.body.deduped, false);
    assert.deepEqual(r.body.seqs, [2]);
  });

  test('idempotency_key length: 256 chars ok, 257 is 400 (body and header)', async () => {
    const t = name('idemlen');
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 'k'.repeat(256) }), 201, '256 ascii');
    assertOk(
      await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: '\u00e9'.repeat(256) }),
      200,
      '256 non-ascii chars (512 bytes)',
    );
    assertInvalid(
      await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 'k'.repeat(257) }),
      'idempotency_key',
      '257 body',
    );
    assertInvalid(
      await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: '\u00e9'.repeat(257) }),
      'idempotency_key',
      '257 non-ascii body',
    );
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }, { 'Idempotency-Key': 'h'.repeat(256) }), 200, '256 header');
    assertInvalid(
      await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }, { 'Idempotency-Key': 'h'.repeat(257) }),
      'idempotency_key',
      '257 header',
    );
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 5 }), 'idempotency_key', 'number key');
    assert.equal(await head(t), 3);
  });
});

describe('request validation', () => {
  test('records missing, empty, or not an array is 400', async () => {
    const t = name('val');
    await c.put(`/v0/topics/${t}`);
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: [] }), 'records', 'empty records');
    assertInvalid(await c.post(`/v0/topics/${t}`, {}), 'records', 'missing records');
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: { data: 1 } }), 'records', 'records object');
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: null }), 'records', 'records null');
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: 'x' }), 'records', 'records string');
    assert.equal(await head(t), 0);
    const t2 = name('val');
    assertInvalid(await c.post(`/v0/topics/${t2}`, { records: [] }), 'records', 'empty records on absent topic');
    assertError(await c.get(`/v0/topics/${t2}`), 404, 'topic_not_found', 'a rejected append creates nothing');
  });

  test('bad record entries and field types are 400, nothing of the batch appended', async () => {
    const t = name('val');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 0 }] });
    const cases: [string, unknown][] = [
      ['record not object', { records: [{ data: 1 }, 5] }],
      ['record array', { records: [{ data: 1 }, [1]] }],
      ['record null', { records: [null] }],
      ['missing data', { records: [{ data: 1 }, { meta: { a: 1 } }] }],
      ['tag number', { records: [{ data: 1, tag: 5 }] }],
      ['tag null', { records: [{ data: 1, tag: null }] }],
      ['record node number', { records: [{ data: 1, node: 5 }] }],
      ['batch node number', { records: [{ data: 1 }], node: 5 }],
      ['batch node array', { records: [{ data: 1 }], node: ['a'] }],
      ['meta array', { records: [{ data: 1, meta: [1] }] }],
      ['meta string', { records: [{ data: 1, meta: 'x' }] }],
      ['meta null', { records: [{ data: 1, meta: null }] }],
      ['meta number', { records: [{ data: 1, meta: 3 }] }],
      ['create string', { records: [{ data: 1 }], create: 'yes' }],
      ['disable_backpressure string', { records: [{ data: 1 }], disable_backpressure: 'no' }],
    ];
    for (const [what, body] of cases) assertInvalid(await c.post(`/v0/topics/${t}`, body), undefined, what);
    assert.equal(await head(t), 1, 'nothing appended');
  });

  test('malformed JSON in data is 400 (the scanner validates without building)', async () => {
    const t = name('val');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 0 }] });
    for (const body of [
      '{"records":[{"data":01}]}',
      '{"records":[{"data":NaN}]}',
      '{"records":[{"data":tru}]}',
      '{"records":[{"data":"unterminated}]}',
      '{"records":[{"data":1},{"data":[1,]}]}',
      '{"records":[{"data":{"a":1,}}]}',
      '{"records":[{"data":"bad \\x escape"}]}',
      '{"records":[{"data":+1}]}',
      '{"records":[{"data":.5}]}',
      '{"records":[{"data":1.}]}',
      '{"records":[{"data":"ctl \u0001 char"}]}',
      '{"records":[{"data":1}]',
    ]) {
      assertInvalid(await c.post(`/v0/topics/${t}`, body), undefined, body);
    }
    const badUtf8 = Buffer.concat([Buffer.from('{"records":[{"data":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]);
    assertInvalid(await srv.raw('POST', `/v0/topics/${t}`, { headers: JSON_CT, body: badUtf8 }), undefined, 'invalid UTF-8 in a string');
    assert.equal(await head(t), 1);
  });
});
