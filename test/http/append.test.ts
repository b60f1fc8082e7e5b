// Append (docs/API.md "Append", "Topic lifecycle", "Records", "Limits") and the read-time
// record shape of docs/API.md "Records" as returned by diff.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client, Server } from '../helpers/server.js';
import { assertError, assertInvalid, assertOk, assertFullConfig, namer, rawDataTexts, rawMember, raw, JSON_CT } from './util.js';

let srv: Server;
let c: ReturnType<typeof client>;
const name = namer('app');

before(async () => {
  srv = await startServer();
  c = client(srv.url);
});
after(async () => {
  await srv?.stop();
});

async function head(t: string): Promise<number> {
  const r = await c.get(`/v0/topics/${t}?touch=false`);
  assert.equal(r.status, 200, r.text);
  return r.body.head_seq;
}

describe('append basics', () => {
  test('first append creates: 201 created:true, contiguous seqs, response fields', async () => {
    const t = name('basic');
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 'a' }, { data: 'b' }] });
    const b = assertOk(r, 201);
    assert.equal(b.topic, t);
    assert.equal(b.created, true);
    assert.equal(b.deduped, false);
    assert.equal(b.first_seq, 1);
    assert.equal(b.last_seq, 2);
    assert.deepEqual(b.seqs, [1, 2]);
    assert.equal(b.head_seq, 2);
    assert.equal(b.count, 2);
    assert.equal(typeof b.performance.wal_append_ms, 'number', 'wal_append_ms on a write path');
    assert.equal(typeof b.performance.fsync_ms, 'number', 'fsync_ms on a write path');
    assert.equal(b.performance.fsync_ms, 0, 'disk class never fsync-gated');

    const r2 = await c.post(`/v0/topics/${t}`, { records: [{ data: 'c' }, { data: 'd' }, { data: 'e' }] });
    const b2 = assertOk(r2, 200);
    assert.equal(b2.created, false);
    assert.equal(b2.deduped, false);
    assert.equal(b2.first_seq, 3);
    assert.equal(b2.last_seq, 5);
    assert.deepEqual(b2.seqs, [3, 4, 5]);
    assert.equal(b2.head_seq, 5);
    assert.equal(b2.count, 3);

    const r3 = await c.post(`/v0/topics/${t}`, { records: [{ data: 'f' }] });
    assert.deepEqual(r3.body.seqs, [6]);
    assert.equal(r3.body.first_seq, 6);
    assert.equal(r3.body.last_seq, 6);

    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.deepEqual(
      d.body.records.map((x: any) => [x.$seq, x.data]),
      [
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
        [4, 'd'],
        [5, 'e'],
        [6, 'f'],
      ],
    );
  });

  test('an append to a PUT-created topic is 200 created:false', async () => {
    const t = name('put');
    await c.put(`/v0/topics/${t}`);
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    assertOk(r, 200);
    assert.equal(r.body.created, false);
    assert.deepEqual(r.body.seqs, [1]);
  });

  test('concurrent appends get disjoint contiguous seq ranges', async () => {
    const t = name('conc');
    await c.put(`/v0/topics/${t}`);
    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => c.post(`/v0/topics/${t}`, { records: Array.from({ length: 5 }, (_, j) => ({ data: [i, j] })) })));
    const all: number[] = [];
    for (const r of rs) {
      assertOk(r, 200);
      assert.deepEqual(r.body.seqs, [0, 1, 2, 3, 4].map((k) => r.body.first_seq + k));
      all.push(...r.body.seqs);
    }
    all.sort((a, b) => a - b);
    assert.deepEqual(
      all,
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    const d = await c.post(`/v0/topics/${t}/diff`, { limit: 1000 });
    for (const r of rs) {
      const i = r.body.first_seq;
      const batch = d.body.records.slice(i - 1, i + 4).map((x: any) => x.data);
      assert.deepEqual(
        batch.map((x: any) => x[1]),
        [0, 1, 2, 3, 4],
        'records of one batch are in array order',
      );
      assert.ok(batch.every((x: any) => x[0] === batch[0][0]), 'one batch is contiguous');
    }
  });

  test('return_seqs=false omits seqs (also on creation)', async () => {
    const t = name('noseqs');
    const r = await c.post(`/v0/topics/${t}?return_seqs=false`, { records: [{ data: 1 }, { data: 2 }] });
    const b = assertOk(r, 201);
    assert.equal('seqs' in b, false);
    assert.equal(b.first_seq, 1);
    assert.equal(b.last_seq, 2);
    assert.equal(b.created, true);
    const r2 = await c.post(`/v0/topics/${t}?return_seqs=false`, { records: [{ data: 3 }] });
    assert.equal('seqs' in r2.body, false);
    assert.equal(r2.body.first_seq, 3);
  });
});

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
    const r = await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], config: { durable: true, priority: 7, ttl_ms: 3600000, lease_ms: 1 } });
    assertOk(r, 201);
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(st.body.config, { durable: true, durability: 'fsync', priority: 7, ttl_ms: 3600000, lease_ms: 100 }, 'config resolved and clamped as in docs/API.md "PUT /v0/topics/:topic"');
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
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: '\u00e9'.repeat(256) }), 200, '256 non-ascii chars (512 bytes)');
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: 'k'.repeat(257) }), 'idempotency_key', '257 body');
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }], idempotency_key: '\u00e9'.repeat(257) }), 'idempotency_key', '257 non-ascii body');
    assertOk(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }, { 'Idempotency-Key': 'h'.repeat(256) }), 200, '256 header');
    assertInvalid(await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] }, { 'Idempotency-Key': 'h'.repeat(257) }), 'idempotency_key', '257 header');
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
    assertInvalid(await raw(srv.url, 'POST', `/v0/topics/${t}`, { headers: JSON_CT, body: badUtf8 }), undefined, 'invalid UTF-8 in a string');
    assert.equal(await head(t), 1);
  });
});

describe('stored record shape (docs/API.md "Records")', () => {
  test('data is kept verbatim: number forms, escapes, key order, duplicate keys, whitespace', async () => {
    const t = name('verbatim');
    const body = String.raw`{"records":[
      {"data":1e400},
      {"data":12345678901234567890},
      {"data":-0},
      {"data":1.50},
      {"data":"\u00e9"},
      {"data":{"b":1,"a":2,"b":3}},
      {"data": { "x" : [ 1 , 2.0 , -1E+2 ] , "s" : "a  b\t c" , "n" : null } },
      {"data":"plain é ü"},
      {"data":[]},
      {"data":{}},
      {"data":true},
      {"data":null},
      {"data":"\"quoted\" \\ \/ \n"},
      {"data":"\ud800 lone surrogate escape"}
    ]}`;
    const a = await c.post(`/v0/topics/${t}`, body);
    assertOk(a, 201);
    const expected = [
      '1e400',
      '12345678901234567890',
      '-0',
      '1.50',
      String.raw`"\u00e9"`,
      '{"b":1,"a":2,"b":3}',
      String.raw`{"x":[1,2.0,-1E+2],"s":"a  b\t c","n":null}`,
      '"plain é ü"',
      '[]',
      '{}',
      'true',
      'null',
      String.raw`"\"quoted\" \\ \/ \n"`,
      String.raw`"\ud800 lone surrogate escape"`,
    ];
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.equal(d.status, 200, d.text);
    assert.deepEqual(rawDataTexts(d.text), expected);
    assert.equal(expected[4]!.length, 8, '"\\u00e9" is six characters between the quotes');
    const st = await c.get(`/v0/topics/${t}`);
    assert.equal(st.body.bytes, expected.reduce((n, s) => n + Buffer.byteLength(s), 0), 'bytes measure uses the stored (compact) text');
  });

  test('meta is kept verbatim and omitted when absent', async () => {
    const t = name('meta');
    await c.post(`/v0/topics/${t}`, String.raw`{"records":[{"data":1,"meta":{ "z" : 1.0, "a" : "\u0041", "z" : [ ] }},{"data":2}]}`);
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.equal(d.status, 200);
    const m = rawMember(d.text, 'meta');
    assert.equal(m?.value, String.raw`{"z":1.0,"a":"\u0041","z":[]}`);
    assert.equal('meta' in d.body.records[1], false, 'meta omitted (not null) when absent');
    assert.equal(d.body.records[1].meta, undefined);
  });

  test('$node from batch node or per-record node; omitted when absent', async () => {
    const t = name('node');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2, node: 'rec-node' }], node: 'batch-node' });
    await c.post(`/v0/topics/${t}`, { records: [{ data: 3 }, { data: 4, node: 'solo' }] });
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    const recs = d.body.records;
    assert.equal(recs[0].$node, 'batch-node');
    assert.equal(recs[1].$node, 'rec-node', 'per-record node overrides batch node');
    assert.equal('$node' in recs[2], false, '$node omitted when absent');
    assert.equal(recs[3].$node, 'solo');
  });

  test('$tag only with include_tags; omitted when absent', async () => {
    const t = name('tag');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1, tag: 'order:1' }, { data: 2 }] });
    const plain = await c.post(`/v0/topics/${t}/diff`, {});
    for (const r of plain.body.records) assert.equal('$tag' in r, false, 'no $tag without include_tags');
    const tagged = await c.post(`/v0/topics/${t}/diff`, { include_tags: true });
    assert.equal(tagged.body.records[0].$tag, 'order:1');
    assert.equal('$tag' in tagged.body.records[1], false, 'no $tag on an untagged record');
    const off = await c.post(`/v0/topics/${t}/diff`, { include_tags: false });
    for (const r of off.body.records) assert.equal('$tag' in r, false);
  });

  test('record keys: $seq, $ts (integer ms near now), data always present (null allowed)', async () => {
    const t = name('shape');
    const before = Date.now();
    await c.post(`/v0/topics/${t}`, { records: [{ data: null }, { data: { k: 1 }, meta: { m: 'v' }, tag: 'x', node: 'n' }] });
    const after = Date.now();
    const d = await c.post(`/v0/topics/${t}/diff`, { include_tags: true });
    const [r1, r2] = d.body.records;
    assert.deepEqual(Object.keys(r1).sort(), ['$seq', '$ts', 'data']);
    assert.equal(r1.data, null);
    assert.deepEqual(Object.keys(r2).sort(), ['$node', '$seq', '$tag', '$ts', 'data', 'meta']);
    for (const r of [r1, r2]) {
      assert.ok(Number.isInteger(r.$ts));
      assert.ok(r.$ts >= before - 1000 && r.$ts <= after + 1000, `$ts ${r.$ts} near now`);
    }
    assert.deepEqual(r2.meta, { m: 'v' });
  });
});
