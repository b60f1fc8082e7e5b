// Topic create/configure (PUT, docs/API.md "PUT /v0/topics/:topic"), topic state (GET, docs/API.md "GET /v0/topics/:topic"), delete (docs/API.md "DELETE /v0/topics/:topic"), the
// topic lifecycle (docs/API.md "Topic lifecycle") and the topic list (docs/API.md "GET /v0/topics"), on a spawned server. Their rules (409s, clamps,
// 400s, 404, query flags, the page_size clamp) run in the fast tier: test/inject/topicRules.test.ts.
import { test, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk, assertFullConfig, namer } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('top');
const { c } = httpSuite();

const SUMMARY_KEYS = ['bytes', 'count', 'durable', 'earliest_seq', 'effective_priority', 'head_seq', 'topic'];
const STATE_KEYS = [
  'topic',
  'type',
  'head_seq',
  'earliest_seq',
  'next_seq',
  'count',
  'bytes',
  'config',
  'effective_priority',
  'last_write_ts',
  'last_read_ts',
  'performance',
];

describe('PUT /v0/topics/:topic (docs/API.md "PUT /v0/topics/:topic")', () => {
  test('PUT creates: 201, created:true, full 17-key default config', async () => {
    const t = name('create');
    const r = await c.put(`/v0/topics/${t}`);
    const b = assertOk(r, 201, 'PUT new');
    assert.equal(b.topic, t);
    assert.equal(b.created, true);
    assertFullConfig(b.config, {}, 'PUT new');
    const r2 = await c.put(`/v0/topics/${name('create')}`, {});
    assertOk(r2, 201, 'PUT {} new');
    assertFullConfig(r2.body.config, {}, 'PUT {}');
  });

  test('identical PUT is 200 created:false; changed PUT is 200 with the new config; PUT is a full replacement', async () => {
    const t = name('upsert');
    assertOk(await c.put(`/v0/topics/${t}`, { cap_records: 10, discard: 'reject' }), 201);
    const same = await c.put(`/v0/topics/${t}`, { discard: 'reject', cap_records: 10 });
    assertOk(same, 200, 'identical PUT');
    assert.equal(same.body.created, false);
    assertFullConfig(same.body.config, { cap_records: 10, discard: 'reject' }, 'identical PUT');
    const changed = await c.put(`/v0/topics/${t}`, { cap_records: 20, ttl_ms: 60000 });
    assertOk(changed, 200, 'changed PUT');
    assert.equal(changed.body.created, false);
    assertFullConfig(changed.body.config, { cap_records: 20, ttl_ms: 60000 }, 'changed PUT: omitted discard back to default');
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(st.body.config, { cap_records: 20, ttl_ms: 60000 }, 'GET after changed PUT');
    const reset = await c.put(`/v0/topics/${t}`);
    assertOk(reset, 200, 'empty PUT on existing');
    assertFullConfig(reset.body.config, {}, 'empty PUT resets to defaults');
  });

  test('PUT preserves records of an existing topic', async () => {
    const t = name('keep');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }] });
    assertOk(await c.put(`/v0/topics/${t}`, { durability: 'fsync' }), 200);
    const st = await c.get(`/v0/topics/${t}`);
    assert.equal(st.body.head_seq, 2);
    assert.equal(st.body.count, 2);
  });

  test('durability resolution: durable true → fsync, false → disk, explicit durability wins', async () => {
    const a = await c.put(`/v0/topics/${name('dur')}`, { durable: true });
    assertFullConfig(a.body.config, { durable: true, durability: 'fsync' }, 'durable:true');
    const b = await c.put(`/v0/topics/${name('dur')}`, { durable: false });
    assertFullConfig(b.body.config, { durable: false, durability: 'disk' }, 'durable:false');
    const m = await c.put(`/v0/topics/${name('dur')}`, { durable: true, durability: 'memory' });
    assertFullConfig(m.body.config, { durable: false, durability: 'memory' }, 'explicit memory wins over durable:true');
    const e = await c.put(`/v0/topics/${name('dur')}`, { durability: 'ephemeral' });
    assertFullConfig(e.body.config, { durable: false, durability: 'ephemeral' }, 'ephemeral');
    const f = await c.put(`/v0/topics/${name('dur')}`, { durable: false, durability: 'fsync' });
    assertFullConfig(f.body.config, { durable: true, durability: 'fsync' }, 'explicit fsync wins over durable:false');
    const d = await c.put(`/v0/topics/${name('dur')}`, { durability: 'disk' });
    assertFullConfig(d.body.config, {}, 'disk');
  });

  test('{"durable":true} and {"durability":"fsync"} are identical PUTs', async () => {
    const t = name('ident');
    assertOk(await c.put(`/v0/topics/${t}`, { durable: true }), 201);
    const r = await c.put(`/v0/topics/${t}`, { durability: 'fsync' });
    assertOk(r, 200);
    assert.equal(r.body.created, false);
    assertFullConfig(r.body.config, { durable: true, durability: 'fsync' });
  });
});

describe('GET /v0/topics/:topic (docs/API.md "GET /v0/topics/:topic")', () => {
  test('a fresh PUT topic reads head 0, earliest 1, next 1, count 0, bytes 0, last_write_ts null', async () => {
    const t = name('state');
    await c.put(`/v0/topics/${t}`);
    const r = await c.get(`/v0/topics/${t}`);
    const b = assertOk(r, 200);
    for (const k of STATE_KEYS) assert.ok(k in b, `state has ${k}`);
    assert.equal(b.queue, undefined, 'no queue object on a log topic');
    assert.equal(b.topic, t);
    assert.equal(b.type, 'log');
    assert.equal(b.head_seq, 0);
    assert.equal(b.earliest_seq, 1);
    assert.equal(b.next_seq, 1);
    assert.equal(b.count, 0);
    assert.equal(b.bytes, 0);
    assert.equal(b.last_write_ts, null);
    assertFullConfig(b.config);
    assert.equal(b.effective_priority, 500, 'touch default true: read recorded before computing');
    assert.equal(typeof b.last_read_ts, 'number');
    assert.ok(Math.abs(b.last_read_ts - Date.now()) < 5000, 'last_read_ts is a ms epoch near now');
  });

  test('touch=false on a never-read topic: effective_priority 0, last_read_ts null, and changes nothing', async () => {
    const t = name('untouched');
    await c.put(`/v0/topics/${t}`);
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    for (const q of ['?touch=false', '?touch=0', '?touch=false']) {
      const b = assertOk(await c.get(`/v0/topics/${t}${q}`), 200, q);
      assert.equal(b.effective_priority, 0, `${q}: appends do not count as consumption`);
      assert.equal(b.last_read_ts, null, q);
    }
    const touched = await c.get(`/v0/topics/${t}?touch=1`);
    assert.equal(touched.body.effective_priority, 500);
    const after = await c.get(`/v0/topics/${t}?touch=false`);
    assert.equal(after.body.last_read_ts, touched.body.last_read_ts, 'touch=false keeps last_read_ts');
    assert.ok(
      after.body.effective_priority >= 490 && after.body.effective_priority <= 500,
      `decays slowly: ${after.body.effective_priority}`,
    );
  });

  test('manual priority overrides; auto_priority false gives 0', async () => {
    const p = name('prio');
    await c.put(`/v0/topics/${p}`, { priority: 42 });
    assert.equal((await c.get(`/v0/topics/${p}`)).body.effective_priority, 42);
    assert.equal((await c.get(`/v0/topics/${p}?touch=false`)).body.effective_priority, 42);
    const neg = name('prio');
    await c.put(`/v0/topics/${neg}`, { priority: -7 });
    assert.equal((await c.get(`/v0/topics/${neg}`)).body.effective_priority, -7);
    const off = name('prio');
    await c.put(`/v0/topics/${off}`, { auto_priority: false });
    assert.equal((await c.get(`/v0/topics/${off}`)).body.effective_priority, 0);
  });

  test('head/earliest/next/count/bytes/last_write_ts after appends', async () => {
    const t = name('counts');
    // stored texts (whitespace outside strings removed): data `{"a":1}` (7), `"é x"` (6), `[1,2]` (5);
    // meta `{"m":"é"}` (10)
    const body = '{"records":[{"data": {"a" : 1}},{"data":"é x","meta":{ "m" : "é" }},{"data":[1, 2]}]}';
    const a = await c.post(`/v0/topics/${t}`, body);
    assertOk(a, 201);
    const b = assertOk(await c.get(`/v0/topics/${t}`), 200);
    assert.equal(b.head_seq, 3);
    assert.equal(b.earliest_seq, 1);
    assert.equal(b.next_seq, 4);
    assert.equal(b.count, 3);
    assert.equal(b.bytes, 7 + 6 + 10 + 5, 'bytes = UTF-8 bytes of stored data text + meta text');
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.equal(b.last_write_ts, d.body.records[2].$ts, 'last_write_ts = $ts of the latest append');
    assert.equal(typeof b.last_write_ts, 'number');
  });
});

describe('DELETE /v0/topics/:topic (docs/API.md "DELETE /v0/topics/:topic", "Topic lifecycle")', () => {
  test('delete a live topic: deleted:true, routers_removed:[]; then absent', async () => {
    const t = name('del');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    const r = await c.del(`/v0/topics/${t}`);
    const b = assertOk(r, 200);
    assert.equal(b.topic, t);
    assert.equal(b.deleted, true);
    assert.deepEqual(b.routers_removed, []);
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
    assertError(await c.post(`/v0/topics/${t}/diff`, {}), 404, 'topic_not_found');
  });

  test('delete an absent topic: 200 deleted:false, routers_removed:[] (also with if_empty)', async () => {
    const t = name('delabsent');
    for (const q of ['', '?if_empty=true']) {
      const b = assertOk(await c.del(`/v0/topics/${t}${q}`), 200, `DELETE absent${q}`);
      assert.equal(b.topic, t);
      assert.equal(b.deleted, false);
      assert.deepEqual(b.routers_removed, []);
    }
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'delete never creates');
  });

  test('if_empty=true on an empty live topic deletes it', async () => {
    const t = name('ifempty0');
    await c.put(`/v0/topics/${t}`);
    const b = assertOk(await c.del(`/v0/topics/${t}?if_empty=true`), 200);
    assert.equal(b.deleted, true);
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
  });

  test('a recreated topic is a new instance: seq 1, config of recreation, no old idempotency keys', async () => {
    const t = name('recreate');
    await c.put(`/v0/topics/${t}`, { cap_records: 99, durability: 'memory' });
    const first = await c.post(`/v0/topics/${t}`, { records: [{ data: 'a' }, { data: 'b' }, { data: 'c' }], idempotency_key: 'k1' });
    assert.deepEqual(first.body.seqs, [1, 2, 3]);
    assert.equal((await c.del(`/v0/topics/${t}`)).body.deleted, true);
    const again = await c.post(`/v0/topics/${t}`, { records: [{ data: 'new' }], idempotency_key: 'k1' });
    assertOk(again, 201, 'append recreates');
    assert.equal(again.body.created, true);
    assert.equal(again.body.deduped, false, 'old idempotency memory dropped');
    assert.deepEqual(again.body.seqs, [1]);
    const st = await c.get(`/v0/topics/${t}`);
    assert.equal(st.body.head_seq, 1);
    assert.equal(st.body.count, 1);
    assertFullConfig(st.body.config, {}, 'config of the recreation (defaults), not of the old instance');
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.deepEqual(
      d.body.records.map((r: any) => r.data),
      ['new'],
    );
    const t2 = name('recreate');
    await c.post(`/v0/topics/${t2}`, { records: [{ data: 1 }, { data: 2 }] });
    await c.del(`/v0/topics/${t2}`);
    const p = await c.put(`/v0/topics/${t2}`, { cap_records: 5 });
    assertOk(p, 201, 'PUT recreates');
    assert.equal(p.body.created, true);
    const st2 = await c.get(`/v0/topics/${t2}`);
    assert.equal(st2.body.head_seq, 0);
    assert.equal(st2.body.earliest_seq, 1);
    assert.equal(st2.body.count, 0);
    assert.equal(st2.body.bytes, 0);
  });
});

describe('GET /v0/topics (docs/API.md "GET /v0/topics")', () => {
  const pfx = `lst${Date.now().toString(36)}.`;
  const names: string[] = [];

  before(async () => {
    for (let i = 0; i < 105; i++) names.push(`${pfx}${String(i).padStart(3, '0')}`);
    // shuffled creation order; durability fsync for one to check summary `durable`
    const order = [...names].sort(() => Math.random() - 0.5);
    for (let i = 0; i < order.length; i += 25) {
      await Promise.all(order.slice(i, i + 25).map((n) => c.put(`/v0/topics/${n}`, n.endsWith('000') ? { durable: true } : {})));
    }
    names.sort();
  });

  test('summaries have exactly the docs/API.md "GET /v0/topics" keys and list in ascending order', async () => {
    const r = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}&page_size=1000`);
    const b = assertOk(r, 200);
    assert.deepEqual(
      b.topics.map((s: any) => s.topic),
      names,
    );
    assert.equal(b.next_cursor, undefined, 'no next_cursor when everything fits');
    for (const s of b.topics) assert.deepEqual(Object.keys(s).sort(), SUMMARY_KEYS, `summary keys of ${s.topic}`);
    const first = b.topics[0];
    assert.equal(first.durable, true, 'durable from an fsync topic');
    assert.equal(first.head_seq, 0);
    assert.equal(first.earliest_seq, 1);
    assert.equal(first.count, 0);
    assert.equal(first.bytes, 0);
    assert.equal(b.topics[1].durable, false);
    const all = await c.get('/v0/topics?page_size=1000');
    const allNames = all.body.topics.map((s: any) => s.topic);
    assert.deepEqual(allNames, [...allNames].sort(), 'whole list ascending');
  });

  test('summary values match the topic state', async () => {
    const t = `${pfx}zz-values`;
    await c.post(`/v0/topics/${t}`, '{"records":[{"data":"abc"},{"data":{"k": [1, 2]},"meta":{"x":1}}]}');
    const r = await c.get(`/v0/topics?prefix=${encodeURIComponent(t)}`);
    assert.equal(r.body.topics.length, 1);
    const s = r.body.topics[0];
    assert.deepEqual(
      { ...s },
      { topic: t, head_seq: 2, earliest_seq: 1, count: 2, bytes: 5 + 11 + 7, durable: false, effective_priority: 0 },
    );
    await c.del(`/v0/topics/${t}`);
  });

  test('page_size default 100 and 0 means 100; next_cursor only when more pages', async () => {
    for (const q of ['', '&page_size=0']) {
      const p1 = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}${q}`);
      assertOk(p1, 200);
      assert.equal(p1.body.topics.length, 100, `first page size${q}`);
      assert.equal(typeof p1.body.next_cursor, 'string', 'next_cursor present');
      const p2 = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}${q}&cursor=${encodeURIComponent(p1.body.next_cursor)}`);
      assertOk(p2, 200);
      assert.deepEqual(
        p2.body.topics.map((s: any) => s.topic),
        names.slice(100),
      );
      assert.equal('next_cursor' in p2.body, false, 'no next_cursor on the last page');
    }
  });

  test('exact-fit page has no next_cursor', async () => {
    const r = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}&page_size=105`);
    assert.equal(r.body.topics.length, 105);
    assert.equal('next_cursor' in r.body, false);
  });

  test('walking all pages returns every topic exactly once, in order', async () => {
    for (const size of [1, 7, 50]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const r = await c.get(
          `/v0/topics?prefix=${encodeURIComponent(pfx)}&page_size=${size}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assertOk(r, 200);
        assert.ok(r.body.topics.length <= size);
        seen.push(...r.body.topics.map((s: any) => s.topic));
        cursor = r.body.next_cursor;
        assert.ok(++pages <= 200);
      } while (cursor);
      assert.deepEqual(seen, names, `page_size ${size}`);
    }
  });

  test('cursor stays valid when topics are created or deleted between pages', async () => {
    const p = `cur${Date.now().toString(36)}.`;
    for (const n of ['b', 'd', 'f', 'h']) await c.put(`/v0/topics/${p}${n}`);
    const p1 = await c.get(`/v0/topics?prefix=${p}&page_size=2`);
    assert.deepEqual(
      p1.body.topics.map((s: any) => s.topic),
      [`${p}b`, `${p}d`],
    );
    await c.del(`/v0/topics/${p}d`);
    await c.put(`/v0/topics/${p}e`);
    await c.put(`/v0/topics/${p}a`);
    const p2 = await c.get(`/v0/topics?prefix=${p}&page_size=10&cursor=${encodeURIComponent(p1.body.next_cursor)}`);
    assert.deepEqual(
      p2.body.topics.map((s: any) => s.topic),
      [`${p}e`, `${p}f`, `${p}h`],
    );
  });

  test('prefix filter is case-sensitive and byte-wise', async () => {
    const up = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx.toUpperCase())}`);
    assert.deepEqual(up.body.topics, []);
    const sub = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx + '01')}`);
    assert.deepEqual(
      sub.body.topics.map((s: any) => s.topic),
      names.filter((n) => n.startsWith(pfx + '01')),
    );
    const none = await c.get(`/v0/topics?prefix=${encodeURIComponent('no-such-prefix-' + pfx)}`);
    assertOk(none, 200);
    assert.deepEqual(none.body.topics, []);
    assert.equal('next_cursor' in none.body, false);
  });

  test('malformed cursor is 400 with detail.field "cursor"; empty cursor means absent', async () => {
    const bad = [
      '!!!',
      'not base64 at all',
      Buffer.from('[1]').toString('base64url'),
      Buffer.from('{"after":5}').toString('base64url'),
      Buffer.from('"x"').toString('base64url'),
      Buffer.from('{"before":"a"}').toString('base64url'),
      Buffer.from('{"after":').toString('base64url'),
    ];
    for (const cur of bad) {
      const d = assertError(await c.get(`/v0/topics?cursor=${encodeURIComponent(cur)}`), 400, 'invalid_request', `cursor ${cur}`);
      assert.equal(d?.field, 'cursor', `cursor ${cur}: detail.field`);
    }
    const r = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}&page_size=3&cursor=`);
    assertOk(r, 200, 'empty cursor');
    assert.deepEqual(
      r.body.topics.map((s: any) => s.topic),
      names.slice(0, 3),
    );
  });

  test('a cursor of the documented format is accepted', async () => {
    const cur = Buffer.from(JSON.stringify({ after: names[101] })).toString('base64url');
    const r = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}&cursor=${cur}`);
    assertOk(r, 200);
    assert.deepEqual(
      r.body.topics.map((s: any) => s.topic),
      names.slice(102),
    );
  });

  test('list touch=true records consumption (effective_priority) but not last_read_ts', async () => {
    const t = `tch${Date.now().toString(36)}`;
    await c.put(`/v0/topics/${t}`);
    const l0 = await c.get(`/v0/topics?prefix=${t}`);
    assert.equal(l0.body.topics[0].effective_priority, 0, 'default touch=false on list');
    await c.get(`/v0/topics?prefix=${t}&touch=true`);
    const st = await c.get(`/v0/topics/${t}?touch=false`);
    assert.ok(st.body.effective_priority >= 490, `consumed by list touch: ${st.body.effective_priority}`);
    assert.equal(st.body.last_read_ts, null, 'list touch does not set last_read_ts');
  });
});
