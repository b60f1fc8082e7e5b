// Append (docs/API.md "Append") and the read-time record shape (docs/API.md "Records", data kept
// verbatim) as returned by diff, on a spawned server. The rules of append (create rules,
// idempotency, request validation) run in the fast tier: test/inject/appendRules.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { assertOk, namer, rawDataTexts, rawMember } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('app');
const { c } = httpSuite();

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
    const rs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => c.post(`/v0/topics/${t}`, { records: Array.from({ length: 5 }, (_, j) => ({ data: [i, j] })) })),
    );
    const all: number[] = [];
    for (const r of rs) {
      assertOk(r, 200);
      assert.deepEqual(
        r.body.seqs,
        [0, 1, 2, 3, 4].map((k) => r.body.first_seq + k),
      );
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
      assert.ok(
        batch.every((x: any) => x[0] === batch[0][0]),
        'one batch is contiguous',
      );
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
    assert.equal(
      st.body.bytes,
      expected.reduce((n, s) => n + Buffer.byteLength(s), 0),
      'bytes measure uses the stored (compact) text',
    );
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
