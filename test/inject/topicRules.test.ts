// The rules of the topic routes (docs/API.md "Topics") on an in-process server through inject():
// a PUT changing the type is 409, queue and priority fields are clamped, a bad dead_letter or a
// wrong type, negative, fraction or enum value is 400 and creates or changes nothing; GET of an
// absent topic is 404, an unrecognised `touch` or `if_empty` means the default; DELETE
// ?if_empty=true on a non-empty topic is 409; page_size past 1000 is clamped. Topics as such:
// test/http/topics.test.ts.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { injectSuite } from '../support/injectSuite.js';
import { assertError, assertInvalid, assertOk, assertFullConfig, namer } from '../http/util.js';

const { c } = injectSuite();
const name = namer('top');

describe('PUT /v0/topics/:topic (docs/API.md "PUT /v0/topics/:topic")', () => {
  test('changing type is 409 topic_exists_incompatible with detail {topic, existing_type, requested_type}', async () => {
    const t = name('type');
    await c.put(`/v0/topics/${t}`, { cap_records: 7 });
    const r = await c.put(`/v0/topics/${t}`, { type: 'queue', cap_records: 7 });
    const d = assertError(r, 409, 'topic_exists_incompatible');
    assert.deepEqual(d, { topic: t, existing_type: 'log', requested_type: 'queue' });
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(st.body.config, { cap_records: 7 }, 'config unchanged after 409');
  });

  test('PUT {} on a queue topic resolves type log and is 409', async () => {
    const t = name('queue');
    const q = await c.put(`/v0/topics/${t}`, { type: 'queue' });
    assertOk(q, 201, 'PUT queue');
    assertFullConfig(q.body.config, { type: 'queue' });
    const r = await c.put(`/v0/topics/${t}`, {});
    const d = assertError(r, 409, 'topic_exists_incompatible');
    assert.deepEqual(d, { topic: t, existing_type: 'queue', requested_type: 'log' });
  });

  test('lease_ms, claim_jitter_ms and priority are clamped and stored clamped', async () => {
    const lo = await c.put(`/v0/topics/${name('clamp')}`, { lease_ms: 5, claim_jitter_ms: 0, priority: -5000 });
    assertOk(lo, 201);
    assertFullConfig(lo.body.config, { lease_ms: 100, priority: -1000 }, 'low clamps');
    const hi = await c.put(`/v0/topics/${name('clamp')}`, { lease_ms: 100000000000, claim_jitter_ms: 99999, priority: 5000 });
    assertOk(hi, 201);
    assertFullConfig(hi.body.config, { lease_ms: 86400000, claim_jitter_ms: 5000, priority: 1000 }, 'high clamps');
    const mid = await c.put(`/v0/topics/${name('clamp')}`, {
      lease_ms: 1234,
      claim_jitter_ms: 17,
      priority: -3,
      max_deliveries: 4,
      leases_durable: true,
    });
    assertFullConfig(
      mid.body.config,
      { lease_ms: 1234, claim_jitter_ms: 17, priority: -3, max_deliveries: 4, leases_durable: true },
      'in range',
    );
    const t = name('clamp');
    await c.put(`/v0/topics/${t}`, { priority: 1000 });
    const same = await c.put(`/v0/topics/${t}`, { priority: 2000 });
    assert.equal(same.status, 200);
    assert.equal(same.body.created, false);
    assert.equal(same.body.config.priority, 1000, 'clamped value compared and stored');
  });

  test('dead_letter is validated as a topic name', async () => {
    const ok = await c.put(`/v0/topics/${name('dl')}`, { dead_letter: 'dlq.valid-1' });
    assertOk(ok, 201);
    assert.equal(ok.body.config.dead_letter, 'dlq.valid-1');
    for (const bad of ['-bad', 'has space', 'x'.repeat(256), '']) {
      const t = name('dl');
      const d = assertInvalid(
        await c.put(`/v0/topics/${t}`, { dead_letter: bad }),
        undefined,
        `dead_letter ${JSON.stringify(bad).slice(0, 20)}`,
      );
      assert.equal(d?.dead_letter, bad, 'detail.dead_letter names the bad value');
      assert.equal(d?.field, 'dead_letter', 'detail.field names the field (docs/API.md "Errors")');
      assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'not created');
    }
    assertInvalid(await c.put(`/v0/topics/${name('dl')}`, { dead_letter: 5 }), 'dead_letter', 'dead_letter number');
    const q = name('dlq');
    const self = assertInvalid(
      await c.put(`/v0/topics/${q}`, { type: 'queue', dead_letter: q }),
      undefined,
      'queue dead_letter equal to itself',
    );
    assert.deepEqual(self, { field: 'dead_letter', dead_letter: q });
    const nul = await c.put(`/v0/topics/${name('dl')}`, { dead_letter: null });
    assertOk(nul, 201);
    assert.equal(nul.body.config.dead_letter, null);
  });

  test('wrong types, negatives, fractions and unknown enum values are 400', async () => {
    const cases: [string, unknown][] = [
      ['type', 'stream'],
      ['type', 1],
      ['ttl_ms', '5'],
      ['ttl_ms', -1],
      ['ttl_ms', 1.5],
      ['cap_records', true],
      ['cap_bytes', -10],
      ['discard', 'drop'],
      ['discard', null],
      ['durable', 'yes'],
      ['durable', 1],
      ['durability', 'sometimes'],
      ['durability', 'FSYNC'],
      ['priority', 1.5],
      ['priority', 'high'],
      ['auto_priority', 0],
      ['auto_create', 'true'],
      ['idempotency_window_ms', -1],
      ['dedupe_node', null],
      ['lease_ms', 'long'],
      ['lease_ms', -100],
      ['claim_jitter_ms', 2.5],
      ['max_deliveries', -1],
      ['leases_durable', 'no'],
    ];
    for (const [field, value] of cases) {
      const t = name('bad');
      assertInvalid(await c.put(`/v0/topics/${t}`, { [field]: value }), field, `PUT ${field}=${JSON.stringify(value)}`);
      assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', `${field}: nothing created`);
    }
  });

  test('invalid config on an existing topic leaves it unchanged', async () => {
    const t = name('keepcfg');
    await c.put(`/v0/topics/${t}`, { cap_records: 3 });
    assertInvalid(await c.put(`/v0/topics/${t}`, { cap_records: 5, discard: 'drop' }), 'discard');
    const st = await c.get(`/v0/topics/${t}`);
    assertFullConfig(st.body.config, { cap_records: 3 });
  });
});

describe('GET /v0/topics/:topic (docs/API.md "GET /v0/topics/:topic")', () => {
  test('touch with an unrecognised value means the default (true) (docs/API.md "Conventions")', async () => {
    const t = name('touchx');
    await c.put(`/v0/topics/${t}`);
    const b = assertOk(await c.get(`/v0/topics/${t}?touch=nope`), 200);
    assert.equal(b.effective_priority, 500);
    assert.equal(typeof b.last_read_ts, 'number');
  });

  test('absent topic is 404 topic_not_found with detail.topic, and GET never creates', async () => {
    const t = name('absent');
    const d = assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found');
    assert.deepEqual(d, { topic: t });
    assertError(await c.get(`/v0/topics/${t}?touch=false`), 404, 'topic_not_found');
    const list = await c.get(`/v0/topics?prefix=${t}`);
    assert.deepEqual(list.body.topics, []);
  });
});

describe('DELETE /v0/topics/:topic (docs/API.md "DELETE /v0/topics/:topic", "Topic lifecycle")', () => {
  test('if_empty=true on a non-empty topic is 409 topic_not_empty {topic, count}, nothing removed', async () => {
    const t = name('ifempty');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }, { data: 2 }, { data: 3 }] });
    for (const q of ['?if_empty=true', '?if_empty=1']) {
      const d = assertError(await c.del(`/v0/topics/${t}${q}`), 409, 'topic_not_empty', q);
      assert.deepEqual(d, { topic: t, count: 3 });
    }
    const st = await c.get(`/v0/topics/${t}`);
    assert.equal(st.body.count, 3);
    const d = await c.post(`/v0/topics/${t}/diff`, {});
    assert.equal(d.body.records.length, 3);
    const del = await c.del(`/v0/topics/${t}?if_empty=false`);
    assert.equal(del.body.deleted, true, 'if_empty=false deletes a non-empty topic');
  });

  test('if_empty with an unrecognised value means the default (false) (docs/API.md "Conventions")', async () => {
    const t = name('ifemptyx');
    await c.post(`/v0/topics/${t}`, { records: [{ data: 1 }] });
    const b = assertOk(await c.del(`/v0/topics/${t}?if_empty=maybe`), 200);
    assert.equal(b.deleted, true);
  });
});

describe('page_size clamp (docs/API.md "GET /v0/topics")', () => {
  test('page_size above 1000 is clamped to 1000', async () => {
    const pfx = `clmp${Date.now().toString(36)}.`;
    const all: string[] = [];
    for (let i = 0; i < 1003; i++) all.push(`${pfx}${String(i).padStart(4, '0')}`);
    for (let i = 0; i < all.length; i += 100) await Promise.all(all.slice(i, i + 100).map((n) => c.put(`/v0/topics/${n}`)));
    const r = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}&page_size=5000`);
    assertOk(r, 200);
    assert.equal(r.body.topics.length, 1000);
    assert.equal(typeof r.body.next_cursor, 'string');
    const r2 = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}&page_size=5000&cursor=${encodeURIComponent(r.body.next_cursor)}`);
    assert.deepEqual(
      r2.body.topics.map((s: any) => s.topic),
      all.slice(1000),
    );
    assert.equal('next_cursor' in r2.body, false);
    // Past 2^53 too: a range problem, clamped, never refused.
    const huge = await c.get(`/v0/topics?prefix=${encodeURIComponent(pfx)}&page_size=99999999999999999999`);
    assertOk(huge, 200);
    assert.equal(huge.body.topics.length, 1000);
  });
});
