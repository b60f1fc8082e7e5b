// Queue request rules at and past every edge (docs/QUEUES.md "Requests"; docs/API.md "Queues", "Errors", "Limits";
// docs/API.md "Conventions", "Which error wins", "Topic lifecycle", "PUT /v0/topics/:topic"):
// - claim `max` (absent/0 → 1, 1000, 1001 → 1000, bad types), `lease_ms` (default the topic's,
//   clamped to [100, 86400000], bad types);
// - `node` on every route: required, non-empty string, at most 128 bytes counted in UTF-8;
// - `seqs` on ack/nack/extend: required, 1..1000 (1001 → batch_too_large {seqs, max}), integers
//   in [0, 2^53−1]; `lease_ids`: same length, `lease_` + lowercase hex or ""; extend's required
//   `lease_ms` and its clamp; nack's `delay_ms` and its clamp;
// - 404 topic_not_found (never creating the topic) and 409 not_a_queue, both with detail.topic,
//   on every queue route including /work;
// - 415, empty and non-object bodies, 405 with Allow, invalid topic names (detail.topic), and
//   which error wins when several apply;
// - `performance` on every reply, errors after routing included;
// - the queue config fields of a PUT, clamped and echoed (docs/API.md "PUT /v0/topics/:topic").
// In the fast tier: an in-process server driven through inject() (test/helpers/injectServer.ts);
// a /work refusal is a plain reply there, a stream that opens needs a real socket (test/http).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Resp } from '../helpers/server.js';
import { injectSuite } from '../support/injectSuite.js';
import { workPath } from '../helpers/workStream.js';
import { assertError, assertFullConfig, assertOk, assertPerf, getHeader, namer, JSON_CT, type RawResp } from '../http/util.js';
import { appendJobs, assertDeadline, claim, counters, extend, mkQueue, nack, qstate, seqsOf } from '../http/queueUtil.js';

const { srv, c } = injectSuite({ SERVICE_WORKERS: '2' });
const name = namer('qe');

/** A /work request as a stream client sends it; its refusals are plain replies (no stream opens). */
const SSE = { headers: { accept: 'text/event-stream' } };
const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 - 1
const DAY = 86_400_000;
const ROUTES = ['claim', 'ack', 'nack', 'extend'] as const;
type Route = (typeof ROUTES)[number];

/** A valid body for each route (extend needs lease_ms; ack/nack/extend need seqs). */
function validBody(route: Route, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> =
    route === 'claim' ? { node: 'w-a' } : route === 'extend' ? { node: 'w-a', seqs: [1], lease_ms: 1000 } : { node: 'w-a', seqs: [1] };
  return { ...base, ...extra };
}

function without(o: Record<string, unknown>, k: string): Record<string, unknown> {
  const r = { ...o };
  delete r[k];
  return r;
}

/** An error raised after routing: the error envelope plus performance (docs/API.md "Errors"). */
function err(r: Resp | RawResp, status: number, code: string, what: string): any {
  const d = assertError(r, status, code, what);
  assertPerf(r.body, what);
  return d;
}

/** 400 invalid_request; with `field`, detail.field must be exactly that. */
function invalid(r: Resp | RawResp, what: string, field?: string): any {
  const d = err(r, 400, 'invalid_request', what);
  if (field !== undefined) assert.equal(d?.field, field, `${what}: detail.field must be ${field} (detail ${JSON.stringify(d)})`);
  return d;
}

/** 400 invalid_request; detail.field, when present, names `field` (docs/API.md "Conventions": "when known"). */
function invalidMaybe(r: Resp | RawResp, what: string, field: string): void {
  const d = err(r, 400, 'invalid_request', what);
  if (d && 'field' in d) assert.equal(d.field, field, `${what}: detail.field`);
}

async function queue(config: Record<string, unknown> = {}, label = 'q'): Promise<string> {
  const t = name(label);
  await mkQueue(c, t, config);
  return t;
}

// ---- claim ------------------------------------------------------------------------------------

describe('claim: max', () => {
  test('absent → 1, 0 → 1, 1000 → 1000, 1001 → clamped to 1000', async () => {
    const q = await queue({ lease_ms: 60_000 });
    // one append of 2005 records
    const seqs = await appendJobs(c, q, 2005);
    assert.equal(seqs.length, 2005);
    const dflt = await claim(c, q, { node: 'w-a' });
    assert.deepEqual(seqsOf(dflt.body.claimed), [1], 'max absent → 1');
    const zero = await claim(c, q, { node: 'w-a', max: 0 });
    assert.deepEqual(seqsOf(zero.body.claimed), [2], 'max 0 → 1');
    const one = await claim(c, q, { node: 'w-a', max: 1 });
    assert.deepEqual(seqsOf(one.body.claimed), [3]);
    const k = await claim(c, q, { node: 'w-a', max: 1000 });
    assert.equal(k.body.count, 1000, 'max 1000');
    assert.deepEqual(
      seqsOf(k.body.claimed),
      Array.from({ length: 1000 }, (_, i) => 4 + i),
    );
    assert.equal(k.body.ready, 1002);
    const over = await claim(c, q, { node: 'w-a', max: 1001 });
    assert.equal(over.body.count, 1000, 'max 1001 is clamped to 1000, not rejected');
    assert.deepEqual(
      seqsOf(over.body.claimed),
      Array.from({ length: 1000 }, (_, i) => 1004 + i),
    );
    assert.equal(over.body.ready, 2);
    const huge = await claim(c, q, { node: 'w-a', max: MAX_SAFE });
    assert.deepEqual(seqsOf(huge.body.claimed), [2004, 2005], 'max 2^53-1 is clamped too');
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 2005, dead_lettered: 0 });
  });

  test('max that is not a non-negative integer → 400 (nothing claimed)', async () => {
    const q = await queue();
    await appendJobs(c, q, 2);
    for (const v of ['5', -1, 1.5, true, [], {}, MAX_SAFE + 1]) {
      invalidMaybe(await c.post(`/v0/topics/${q}/claim`, { node: 'w-a', max: v }), `max ${JSON.stringify(v)}`, 'max');
    }
    const big = await srv.raw('POST', `/v0/topics/${q}/claim`, { headers: JSON_CT, body: '{"node":"w-a","max":18446744073709551615}' });
    invalidMaybe(big, 'max 2^64-1', 'max');
    assert.deepEqual(await counters(c, q), { ready: 2, in_flight: 0, dead_lettered: 0 }, 'a rejected claim leases nothing');
  });
});

describe('claim: lease_ms', () => {
  test('absent → the topic lease_ms (default 30000)', async () => {
    const q1 = await queue();
    await appendJobs(c, q1, 1);
    const a = await claim(c, q1, { node: 'w-a' });
    assertDeadline(a.body.claimed[0].deadline, a.t0, a.t1, 30_000, 'default topic lease_ms 30000');
    const q2 = await queue({ lease_ms: 45_000 });
    await appendJobs(c, q2, 1);
    const b = await claim(c, q2, { node: 'w-a' });
    assertDeadline(b.body.claimed[0].deadline, b.t0, b.t1, 45_000, 'topic lease_ms 45000');
  });

  test('clamped to [100, 86400000]', async () => {
    const cases: [number, number][] = [
      [50, 100],
      [1, 100],
      [0, 100],
      [99, 100],
      [100, 100],
      [101, 101],
      [DAY, DAY],
      [DAY + 1, DAY],
      [MAX_SAFE, DAY],
    ];
    const q = await queue();
    await appendJobs(c, q, cases.length);
    for (const [given, effective] of cases) {
      const r = await claim(c, q, { node: 'w-a', lease_ms: given });
      assert.equal(r.body.count, 1);
      // tight slack on the low side: an unclamped 50 would give a deadline ~50 ms early
      assertDeadline(r.body.claimed[0].deadline, r.t0, r.t1, effective, `lease_ms ${given} → ${effective}`, 15);
    }
  });

  test('lease_ms that is not a non-negative integer → 400', async () => {
    const q = await queue();
    await appendJobs(c, q, 1);
    for (const v of ['1000', -1, 1.5, false, [1000], MAX_SAFE + 1]) {
      invalidMaybe(await c.post(`/v0/topics/${q}/claim`, { node: 'w-a', lease_ms: v }), `lease_ms ${JSON.stringify(v)}`, 'lease_ms');
    }
    assert.deepEqual(await counters(c, q), { ready: 1, in_flight: 0, dead_lettered: 0 });
  });
});

// ---- node -------------------------------------------------------------------------------------

describe('node (every route)', () => {
  const bad: [string, unknown][] = [
    ['missing', undefined],
    ['empty', ''],
    ['129 ascii bytes', 'n'.repeat(129)],
    ['129 bytes of 2-byte chars (65 chars)', '\u00fc'.repeat(64) + 'x'],
    ['129 bytes with 4-byte chars (33 chars)', '\u{1F600}'.repeat(32) + 'x'],
    ['a lone surrogate (no UTF-8 form)', 'w\ud800'],
    ['a lone low surrogate', '\udc00w'],
    ['a number', 5],
    ['an array', ['w-a']],
    ['null', null],
  ];
  const good: [string, string][] = [
    ['128 ascii bytes', 'n'.repeat(128)],
    ['128 bytes of 2-byte chars (64 chars)', '\u00fc'.repeat(64)],
    ['128 bytes of 4-byte chars (32 chars)', '\u{1F600}'.repeat(32)],
    ['1 char', 'w'],
  ];

  for (const route of ROUTES) {
    test(`${route}: missing, empty, over 128 bytes, not well-formed Unicode or not a string → 400 detail.field "node"; 128 bytes ok`, async () => {
      const q = await queue();
      await appendJobs(c, q, good.length);
      for (const [what, v] of bad) {
        const body = v === undefined ? without(validBody(route), 'node') : validBody(route, { node: v });
        invalid(await c.post(`/v0/topics/${q}/${route}`, body), `${route} node ${what}`, 'node');
      }
      assert.deepEqual(await counters(c, q), { ready: good.length, in_flight: 0, dead_lettered: 0 }, 'nothing happened');
      for (const [what, v] of good) {
        if (route === 'claim') {
          const r = await claim(c, q, { node: v });
          assert.equal(r.body.count, 1, `claim node ${what}`);
          // the holder's node is this exact string: it can ack with it
          const a = await c.post(`/v0/topics/${q}/ack`, { node: v, seqs: [r.body.claimed[0].$seq] });
          assert.equal(assertOk(a, 200, `ack node ${what}`).acked, 1, `ack as ${what}`);
        } else {
          assertOk(await c.post(`/v0/topics/${q}/${route}`, validBody(route, { node: v })), 200, `${route} node ${what}`);
        }
      }
    });
  }
});

// ---- seqs and lease_ids -------------------------------------------------------------------------

describe('seqs (ack, nack, extend)', () => {
  for (const route of ['ack', 'nack', 'extend'] as const) {
    test(`${route}: missing, empty, not an array, or a bad entry → 400; [0, 2^53-1] accepted`, async () => {
      const q = await queue();
      invalidMaybe(await c.post(`/v0/topics/${q}/${route}`, without(validBody(route), 'seqs')), `${route} seqs missing`, 'seqs');
      invalidMaybe(await c.post(`/v0/topics/${q}/${route}`, validBody(route, { seqs: [] })), `${route} seqs []`, 'seqs');
      for (const v of [1, '1', {}, null, true]) {
        invalidMaybe(await c.post(`/v0/topics/${q}/${route}`, validBody(route, { seqs: v })), `${route} seqs ${JSON.stringify(v)}`, 'seqs');
      }
      for (const v of ['1', -1, 1.5, MAX_SAFE + 1, null, true, [1], {}]) {
        invalidMaybe(
          await c.post(`/v0/topics/${q}/${route}`, validBody(route, { seqs: [1, v] })),
          `${route} seqs [1, ${JSON.stringify(v)}]`,
          'seqs',
        );
      }
      const big = await srv.raw('POST', `/v0/topics/${q}/${route}`, {
        headers: JSON_CT,
        body: JSON.stringify(validBody(route, { seqs: [] })).replace('"seqs":[]', '"seqs":[18446744073709551615]'),
      });
      invalidMaybe(big, `${route} seq 2^64-1`, 'seqs');
      // the edges of the range are valid seqs (nothing is leased: skipped)
      const ok = assertOk(
        await c.post(`/v0/topics/${q}/${route}`, validBody(route, { seqs: [0, MAX_SAFE] })),
        200,
        `${route} seqs [0, 2^53-1]`,
      );
      assert.deepEqual(ok.skipped, [0, MAX_SAFE]);
    });

    test(`${route}: 1000 seqs ok, 1001 → 400 batch_too_large {seqs: 1001, max: 1000}`, async () => {
      const q = await queue();
      const thousand = Array.from({ length: 1000 }, (_, i) => i + 1);
      const ok = assertOk(await c.post(`/v0/topics/${q}/${route}`, validBody(route, { seqs: thousand })), 200, `${route} 1000 seqs`);
      assert.deepEqual(ok.skipped, thousand, 'none held: all skipped, in request order');
      const r = await c.post(`/v0/topics/${q}/${route}`, validBody(route, { seqs: [...thousand, 1001] }));
      assert.deepEqual(err(r, 400, 'batch_too_large', `${route} 1001 seqs`), { seqs: 1001, max: 1000 });
      const r2 = await c.post(`/v0/topics/${q}/${route}`, validBody(route, { seqs: Array.from({ length: 5000 }, (_, i) => i) }));
      assert.deepEqual(err(r2, 400, 'batch_too_large', `${route} 5000 seqs`), { seqs: 5000, max: 1000 });
    });
  }

  test('1000 held seqs are acked in one request', async () => {
    const q = await queue({ lease_ms: 60_000 });
    await appendJobs(c, q, 1000);
    const cl = await claim(c, q, { node: 'w-a', max: 1000 });
    const a = assertOk(
      await c.post(`/v0/topics/${q}/ack`, {
        node: 'w-a',
        seqs: seqsOf(cl.body.claimed),
        lease_ids: cl.body.claimed.map((j: any) => j.lease_id),
      }),
      200,
      'ack 1000',
    );
    assert.equal(a.acked, 1000);
    assert.deepEqual(a.skipped, []);
    assert.equal((await qstate(c, q)).count, 0);
  });
});

describe('lease_ids (ack, nack, extend)', () => {
  for (const route of ['ack', 'nack', 'extend'] as const) {
    test(`${route}: same length as seqs; each "lease_" + lowercase hex or ""`, async () => {
      const q = await queue({ lease_ms: 60_000 });
      await appendJobs(c, q, 2);
      const cl = await claim(c, q, { node: 'w-a', max: 2 });
      const [j1, j2] = cl.body.claimed;
      const post = (b: Record<string, unknown>) => c.post(`/v0/topics/${q}/${route}`, validBody(route, b));
      invalidMaybe(await post({ seqs: [1, 2], lease_ids: [j1.lease_id] }), `${route} lease_ids shorter than seqs`, 'lease_ids');
      invalidMaybe(await post({ seqs: [1], lease_ids: [j1.lease_id, j2.lease_id] }), `${route} lease_ids longer than seqs`, 'lease_ids');
      invalidMaybe(await post({ seqs: [1], lease_ids: [] }), `${route} lease_ids []`, 'lease_ids');
      for (const v of [j1.lease_id, null, 5, {}])
        invalidMaybe(await post({ seqs: [1], lease_ids: v }), `${route} lease_ids ${JSON.stringify(v)}`, 'lease_ids');
      for (const v of [
        'lease_XYZ',
        'foo',
        'lease_ABCDEF',
        'LEASE_abc',
        'lease-abc',
        ' lease_abc',
        'lease_abc ',
        'lease_12g',
        5,
        null,
        true,
        ['lease_abc'],
      ]) {
        invalidMaybe(await post({ seqs: [1], lease_ids: [v] }), `${route} lease_ids [${JSON.stringify(v)}]`, 'lease_ids');
      }
      // none of that touched the leases
      assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 2, dead_lettered: 0 });
      // well-formed tokens that are not the current lease: skipped (hex of any length)
      for (const v of ['lease_abc', 'lease_' + '0'.repeat(24), 'lease_' + 'f'.repeat(40)]) {
        const r = assertOk(await post({ seqs: [1], lease_ids: [v] }), 200, `${route} lease_ids [${v}]`);
        assert.deepEqual(r.skipped, [1], `${route} with token ${v}: skipped`);
      }
      // "" means "no token for this seq": acted on; the real token works too
      const r = assertOk(await post({ seqs: [1, 2], lease_ids: ['', j2.lease_id] }), 200, `${route} lease_ids ["", current]`);
      assert.deepEqual(r.skipped, []);
      assert.equal(r[route === 'ack' ? 'acked' : route === 'nack' ? 'nacked' : 'extended'], 2);
    });
  }
});

// ---- extend lease_ms, nack delay_ms -----------------------------------------------------------

describe('extend: lease_ms', () => {
  test('required; clamped to [100, 86400000]; bad types → 400', async () => {
    const cases: [number, number][] = [
      [50, 100],
      [0, 100],
      [100, 100],
      [5000, 5000],
      [DAY + 1, DAY],
      [MAX_SAFE, DAY],
    ];
    const q = await queue({ lease_ms: 60_000 });
    await appendJobs(c, q, cases.length);
    const cl = await claim(c, q, { node: 'w-a', max: cases.length });
    assert.equal(cl.body.count, cases.length);
    invalidMaybe(await c.post(`/v0/topics/${q}/extend`, { node: 'w-a', seqs: [1] }), 'extend without lease_ms', 'lease_ms');
    for (const v of ['1000', -1, 1.5, null, true, MAX_SAFE + 1]) {
      invalidMaybe(
        await c.post(`/v0/topics/${q}/extend`, { node: 'w-a', seqs: [1], lease_ms: v }),
        `extend lease_ms ${JSON.stringify(v)}`,
        'lease_ms',
      );
    }
    // one job per case, each still under its 60 s claim lease
    for (const [i, [given, effective]] of cases.entries()) {
      const seq = i + 1;
      const e = await extend(c, q, { node: 'w-a', seqs: [seq], lease_ms: given });
      assert.equal(e.body.extended, 1, `extend lease_ms ${given}`);
      assertDeadline(e.body.deadlines[String(seq)], e.t0, e.t1, effective, `extend lease_ms ${given} → ${effective}`, 15);
    }
  });
});

describe('nack: delay_ms', () => {
  test('default 0 (ready at once); huge values are clamped, not rejected; bad types → 400', async () => {
    const q = await queue({ lease_ms: 60_000 });
    await appendJobs(c, q, 3);
    await claim(c, q, { node: 'w-a', max: 3 });
    for (const v of ['10', -1, 1.5, null, true, MAX_SAFE + 1]) {
      invalidMaybe(
        await c.post(`/v0/topics/${q}/nack`, { node: 'w-a', seqs: [1], delay_ms: v }),
        `nack delay_ms ${JSON.stringify(v)}`,
        'delay_ms',
      );
    }
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 3, dead_lettered: 0 }, 'rejected nacks changed nothing');
    const n0 = await nack(c, q, { node: 'w-a', seqs: [1] });
    assert.deepEqual([n0.nacked, n0.ready, n0.in_flight], [1, 1, 2], 'no delay_ms: ready at once');
    const n1 = await nack(c, q, { node: 'w-a', seqs: [2], delay_ms: MAX_SAFE });
    assert.deepEqual([n1.nacked, n1.ready, n1.in_flight], [1, 1, 1], 'delay_ms 2^53-1 accepted (clamped to a day): delayed');
    const n2 = await nack(c, q, { node: 'w-a', seqs: [3], delay_ms: DAY + 1 });
    assert.deepEqual([n2.nacked, n2.ready, n2.in_flight], [1, 1, 0], 'delay_ms 86400001 accepted: delayed');
    const cl = await claim(c, q, { node: 'w-b', max: 10 });
    assert.deepEqual(seqsOf(cl.body.claimed), [1], 'only the undelayed job is claimable');
    assert.equal((await qstate(c, q)).count, 3, 'delayed jobs are still live records');
  });
});

// ---- topic state errors -------------------------------------------------------------------------

describe('absent topic and log topic', () => {
  test('404 topic_not_found with detail.topic on every queue route; the topic is not created', async () => {
    const t = name('absent');
    for (const route of ROUTES) {
      const d = err(await c.post(`/v0/topics/${t}/${route}`, validBody(route)), 404, 'topic_not_found', `${route} on an absent topic`);
      assert.deepEqual(d, { topic: t });
    }
    const w = await srv.raw('GET', workPath(t, { node: 'w-a' }), SSE);
    assert.deepEqual(err(w, 404, 'topic_not_found', 'work on an absent topic'), { topic: t });
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'still absent');
    // a deleted queue is absent too
    const q = await queue();
    await appendJobs(c, q, 1);
    assertOk(await c.del(`/v0/topics/${q}`), 200, 'DELETE queue');
    for (const route of ROUTES) {
      assert.deepEqual(
        err(await c.post(`/v0/topics/${q}/${route}`, validBody(route)), 404, 'topic_not_found', `${route} on a deleted queue`),
        { topic: q },
      );
    }
    assertError(await c.get(`/v0/topics/${q}`), 404, 'topic_not_found', 'not recreated');
  });

  test('409 not_a_queue with detail.topic on a log topic; the log is untouched', async () => {
    const t = name('log');
    await appendJobs(c, t, 3); // auto-created log topic
    for (const route of ROUTES) {
      const d = err(await c.post(`/v0/topics/${t}/${route}`, validBody(route)), 409, 'not_a_queue', `${route} on a log topic`);
      assert.deepEqual(d, { topic: t });
    }
    const w = await srv.raw('GET', workPath(t, { node: 'w-a' }), SSE);
    assert.deepEqual(err(w, 409, 'not_a_queue', 'work on a log topic'), { topic: t });
    const s = await qstate(c, t);
    assert.equal(s.type, 'log');
    assert.equal(s.count, 3);
    assert.equal(s.head_seq, 3);
    assert.ok(!('queue' in s));
  });
});

// ---- media type, bodies ---------------------------------------------------------------------------

describe('media type and body (docs/API.md "Conventions")', () => {
  for (const route of ROUTES) {
    test(`${route}: 415 without or with a wrong Content-Type; 400 for an empty or non-object body`, async () => {
      const q = await queue();
      const body = JSON.stringify(validBody(route));
      const p = `/v0/topics/${q}/${route}`;
      const d = err(await srv.raw('POST', p, { body }), 415, 'unsupported_media_type', `${route} without Content-Type`);
      assert.equal(d, undefined, 'unsupported_media_type carries no detail (docs/API.md "Errors")');
      err(
        await srv.raw('POST', p, { body, headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
        `${route} text/plain`,
      );
      err(
        await srv.raw('POST', p, { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
        415,
        'unsupported_media_type',
        `${route} form`,
      );
      invalid(await srv.raw('POST', p, { body: '', headers: JSON_CT }), `${route} empty body`);
      invalid(await srv.raw('POST', p, { headers: JSON_CT }), `${route} no body at all`);
      for (const b of ['[]', '1', 'null', '"x"', '{', `${body} x`, 'true']) {
        invalid(await srv.raw('POST', p, { body: b, headers: JSON_CT }), `${route} body ${b.slice(0, 30)}`);
      }
      // case-insensitive media type with parameters is fine
      const ok = await srv.raw('POST', p, { body, headers: { 'content-type': 'Application/JSON; charset=UTF-8' } });
      assertOk(ok, 200, `${route} Application/JSON; charset=UTF-8`);
      // unknown fields are ignored
      assertOk(await c.post(p, validBody(route, { future_field: { x: 1 } })), 200, `${route} with an unknown field`);
    });
  }
});

// ---- routing --------------------------------------------------------------------------------------

describe('methods (405 with Allow)', () => {
  function allowSet(v: string | undefined): Set<string> {
    return new Set(
      (v ?? '')
        .split(',')
        .map((s) => s.trim().toUpperCase())
        .filter(Boolean),
    );
  }

  test('GET, PUT, DELETE, PATCH on claim/ack/nack/extend → 405, Allow lists POST', async () => {
    const q = await queue();
    for (const route of ROUTES) {
      for (const m of ['GET', 'PUT', 'DELETE', 'PATCH']) {
        const r = await srv.raw(
          m,
          `/v0/topics/${q}/${route}`,
          m === 'GET' || m === 'DELETE' ? {} : { headers: JSON_CT, body: JSON.stringify(validBody(route)) },
        );
        const d = assertError(r, 405, 'method_not_allowed', `${m} /${route}`);
        assert.equal(d, undefined, 'method_not_allowed carries no detail (docs/API.md "Errors")');
        const allow = allowSet(getHeader(r, 'allow'));
        assert.ok(allow.has('POST'), `${m} /${route}: Allow "${getHeader(r, 'allow')}" lists POST`);
        assert.ok(!allow.has(m), `${m} /${route}: Allow does not list ${m}`);
        assert.ok(
          !allow.has('GET') && !allow.has('PUT') && !allow.has('DELETE'),
          `${m} /${route}: only POST (got "${getHeader(r, 'allow')}")`,
        );
      }
    }
  });

  test('POST, PUT, DELETE on /work → 405, Allow lists GET', async () => {
    const q = await queue();
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const r = await srv.raw(m, `/v0/topics/${q}/work?node=w-a`, { headers: { accept: 'text/event-stream', ...JSON_CT }, body: '{}' });
      assertError(r, 405, 'method_not_allowed', `${m} /work`);
      const allow = allowSet(getHeader(r, 'allow'));
      assert.ok(allow.has('GET'), `${m} /work: Allow "${getHeader(r, 'allow')}" lists GET`);
      assert.ok(!allow.has(m) && !allow.has('POST'), `${m} /work: Allow does not list ${m} or POST`);
    }
  });

  test('405 wins over an invalid topic name (routing first, docs/API.md "Which error wins")', async () => {
    const r = await srv.raw('GET', '/v0/topics/-bad/claim');
    assertError(r, 405, 'method_not_allowed');
    assert.ok(getHeader(r, 'allow'));
  });
});

describe('topic names in the path (docs/API.md "Conventions")', () => {
  const bad: [string, string][] = [
    ['-bad', '-bad'],
    ['.lead', '.lead'],
    ['bad%20name', 'bad name'],
    ['a%2Ab', 'a*b'],
    ['%C3%A9', '\u00e9'],
    ['a'.repeat(256), 'a'.repeat(256)],
  ];
  test('an invalid name is 400 with detail.topic on every queue route, /work included', async () => {
    for (const [seg, decoded] of bad) {
      for (const route of ROUTES) {
        const r = await srv.raw('POST', `/v0/topics/${seg}/${route}`, { headers: JSON_CT, body: JSON.stringify(validBody(route)) });
        const d = err(r, 400, 'invalid_request', `${route} on ${seg}`);
        assert.equal(d?.topic, decoded, `${route} on ${seg}: detail.topic`);
      }
      const w = await srv.raw('GET', `/v0/topics/${seg}/work?node=w-a`, SSE);
      const d = err(w, 400, 'invalid_request', `work on ${seg}`);
      assert.equal(d?.topic, decoded, `work on ${seg}: detail.topic`);
    }
    // the longest valid name reaches the topic lookup (404)
    const longest = 'a'.repeat(255);
    assert.deepEqual(err(await c.post(`/v0/topics/${longest}/claim`, { node: 'w-a' }), 404, 'topic_not_found', 'a 255-char name'), {
      topic: longest,
    });
  });
});

// ---- which error wins -----------------------------------------------------------------------------

describe('error order (docs/API.md "Which error wins")', () => {
  test('415 before 400 before 404/409', async () => {
    const absent = name('absent');
    const log = name('log');
    await appendJobs(c, log, 1);
    for (const route of ROUTES) {
      // 415 beats a bad body, a bad name and an absent topic
      err(
        await srv.raw('POST', `/v0/topics/${absent}/${route}`, { body: '{' }),
        415,
        'unsupported_media_type',
        `${route}: 415 before 400 and 404`,
      );
      err(
        await srv.raw('POST', `/v0/topics/-bad/${route}`, { body: JSON.stringify(validBody(route)) }),
        415,
        'unsupported_media_type',
        `${route}: 415 before a bad name`,
      );
      // 400 beats 404 and 409
      for (const t of [absent, log]) {
        invalid(
          await c.post(`/v0/topics/${t}/${route}`, without(validBody(route), 'node')),
          `${route} on ${t === log ? 'a log' : 'an absent'} topic without node: 400 first`,
          'node',
        );
        invalid(
          await c.post(`/v0/topics/${t}/${route}`, validBody(route, { node: '' })),
          `${route} on ${t === log ? 'a log' : 'an absent'} topic with node "": 400 first`,
          'node',
        );
      }
      if (route !== 'claim') {
        for (const t of [absent, log]) {
          const r = await c.post(`/v0/topics/${t}/${route}`, validBody(route, { seqs: Array.from({ length: 1001 }, (_, i) => i) }));
          assert.deepEqual(err(r, 400, 'batch_too_large', `${route} 1001 seqs on ${t}: 400 first`), { seqs: 1001, max: 1000 });
          invalidMaybe(
            await c.post(`/v0/topics/${t}/${route}`, validBody(route, { seqs: [] })),
            `${route} empty seqs on ${t}: 400 first`,
            'seqs',
          );
        }
      } else {
        invalidMaybe(
          await c.post(`/v0/topics/${absent}/claim`, { node: 'w-a', max: 'x' }),
          'claim bad max on an absent topic: 400 first',
          'max',
        );
      }
    }
    assertError(await c.get(`/v0/topics/${absent}`), 404, 'topic_not_found', 'never created');
  });
});

// ---- performance ----------------------------------------------------------------------------------

describe('performance on every reply', () => {
  test('200 replies of all four routes carry performance.server_total_ms', async () => {
    const q = await queue({ lease_ms: 60_000 });
    await appendJobs(c, q, 2);
    // claim/ack/nack/extend helpers assert performance through assertOk; spell it out once here
    for (const [route, body] of [
      ['claim', { node: 'w-a', max: 2 }],
      ['extend', { node: 'w-a', seqs: [1], lease_ms: 1000 }],
      ['nack', { node: 'w-a', seqs: [1] }],
      ['ack', { node: 'w-a', seqs: [2] }],
    ] as const) {
      const r = await c.post(`/v0/topics/${q}/${route}`, body);
      assertPerf(assertOk(r, 200, route), route);
    }
    // errors after routing: 400, 404, 409, 415 (checked by err() above); 400 batch_too_large here
    const r = await c.post(`/v0/topics/${q}/ack`, { node: 'w-a', seqs: Array.from({ length: 1001 }, (_, i) => i) });
    assertError(r, 400, 'batch_too_large');
    assertPerf(r.body, 'batch_too_large');
  });
});

// ---- queue config (docs/API.md "PUT /v0/topics/:topic") ----------------------------------------------------------------------------

describe('queue config fields in PUT (docs/API.md "PUT /v0/topics/:topic")', () => {
  test('lease_ms and claim_jitter_ms clamped and echoed; the others echoed', async () => {
    const t = name('cfg');
    const body = { type: 'queue', lease_ms: 50, claim_jitter_ms: 6000, max_deliveries: 3, dead_letter: `${t}.dlq`, leases_durable: true };
    const r = await c.put(`/v0/topics/${t}`, body);
    const b = assertOk(r, 201, 'PUT queue');
    assert.equal(b.created, true);
    const want = { type: 'queue', lease_ms: 100, claim_jitter_ms: 5000, max_deliveries: 3, dead_letter: `${t}.dlq`, leases_durable: true };
    assertFullConfig(b.config, want, 'PUT echo');
    assertFullConfig((await qstate(c, t)).config, want, 'GET state');
    // normalised before comparing: the same PUT again is a no-op 200
    const again = assertOk(await c.put(`/v0/topics/${t}`, body), 200, 'identical PUT');
    assert.equal(again.created, false);
    assertFullConfig(again.config, want);
    // upper clamps
    const t2 = name('cfg');
    const b2 = assertOk(
      await c.put(`/v0/topics/${t2}`, { type: 'queue', lease_ms: DAY + 1, claim_jitter_ms: MAX_SAFE }),
      201,
      'PUT queue, upper clamps',
    );
    assertFullConfig(b2.config, { type: 'queue', lease_ms: DAY, claim_jitter_ms: 5000 });
    const t3 = name('cfg');
    const b3 = assertOk(
      await c.put(`/v0/topics/${t3}`, { type: 'queue', lease_ms: 0, claim_jitter_ms: 0 }),
      201,
      'PUT queue, lower clamps',
    );
    assertFullConfig(b3.config, { type: 'queue', lease_ms: 100, claim_jitter_ms: 0 });
    const t4 = name('cfg');
    const b4 = assertOk(
      await c.put(`/v0/topics/${t4}`, { type: 'queue', lease_ms: DAY, claim_jitter_ms: 5000, max_deliveries: MAX_SAFE }),
      201,
      'PUT queue, at the edges',
    );
    assertFullConfig(b4.config, { type: 'queue', lease_ms: DAY, claim_jitter_ms: 5000, max_deliveries: MAX_SAFE });
  });

  test('bad queue fields → 400; dead_letter must be a valid name other than the queue; type is immutable', async () => {
    const t = name('cfg');
    for (const [k, v] of [
      ['lease_ms', '1000'],
      ['lease_ms', -1],
      ['claim_jitter_ms', 1.5],
      ['max_deliveries', -1],
      ['max_deliveries', 'x'],
      ['dead_letter', 5],
      ['leases_durable', 'yes'],
      ['type', 'stream'],
    ] as const) {
      invalidMaybe(await c.put(`/v0/topics/${t}`, { type: 'queue', [k]: v }), `${k} ${JSON.stringify(v)}`, k);
    }
    const self = await c.put(`/v0/topics/${t}`, { type: 'queue', dead_letter: t });
    assert.deepEqual(err(self, 400, 'invalid_request', 'dead_letter = own name'), { field: 'dead_letter', dead_letter: t });
    const badName = await c.put(`/v0/topics/${t}`, { type: 'queue', dead_letter: 'bad name' });
    assert.deepEqual(err(badName, 400, 'invalid_request', 'dead_letter invalid name'), { field: 'dead_letter', dead_letter: 'bad name' });
    assertError(await c.get(`/v0/topics/${t}`), 404, 'topic_not_found', 'nothing created');
    await mkQueue(c, t);
    const r = await c.put(`/v0/topics/${t}`, {});
    assert.deepEqual(err(r, 409, 'topic_exists_incompatible', 'PUT {} on a queue'), {
      topic: t,
      existing_type: 'queue',
      requested_type: 'log',
    });
  });

  test('on a log topic the queue fields are accepted, echoed and inert', async () => {
    const t = name('logcfg');
    const b = assertOk(
      await c.put(`/v0/topics/${t}`, {
        lease_ms: 50,
        claim_jitter_ms: 9000,
        max_deliveries: 2,
        dead_letter: `${t}.dlq`,
        leases_durable: true,
      }),
      201,
      'PUT log',
    );
    assertFullConfig(b.config, { lease_ms: 100, claim_jitter_ms: 5000, max_deliveries: 2, dead_letter: `${t}.dlq`, leases_durable: true });
    assertError(await c.post(`/v0/topics/${t}/claim`, { node: 'w-a' }), 409, 'not_a_queue', 'still a log');
  });
});
