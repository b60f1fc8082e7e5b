// Watch sessions over HTTP (docs/API.md "Watch", "SSE frame formats", "Which error wins";
// docs/WATCH.md, which adds the rules around them):
// - POST /v0/watch: 415/400 body rules, `topics` (1..256 valid names, object values), u64 and
//   bool and enum types, the `cursor` override (malformed → 400 detail.field "cursor"), the
//   limit / max_batch_bytes / heartbeat_ms clamps (observed through the frames), 404
//   topic_not_found naming the first unknown topic in ascending order, `?lenient=true`;
// - GET /v0/watch/:wid: the four headers, `retry: 2000` first, 406 / 404 in that order,
//   `?token=` ignored, 405 on wrong methods;
// - frames: record frames contiguous with records exactly as diff returns them, verbatim data on
//   one data: line, one caught-up per topic per connect, live pushes, the composite id, the node
//   filter, heartbeats, connect-time and reconnect tombstones, silent deleted gaps, `recreated`,
//   `topic-deleted`, consistency classes.
import { test, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { client } from '../helpers/server.js';
import { openStream, SseStream, CursorTracker, Frame, decodeCursor, encodeCursor, cursorText } from '../helpers/sse.js';
import { assertError, assertInvalid, assertOk, namer, raw, sleep, JSON_CT, getHeader } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('w');
const { srv, c } = httpSuite({ SERVICE_WORKERS: '1', SERVICE_WAL_SYNC_INTERVAL_MS: '50' });

// every stream a test opens is closed after it, pass or fail
const open: SseStream[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

// ---- helpers -------------------------------------------------------------------------------

type Rec = { data: unknown; tag?: string; meta?: Record<string, unknown>; node?: string };

async function mk(config: Record<string, unknown> = {}, label = 't', cl: ReturnType<typeof client> = c): Promise<string> {
  const t = name(label);
  assertOk(await cl.put(`/v0/topics/${t}`, config), 201, `PUT ${t}`);
  return t;
}

async function append(t: string, records: Rec[], extra: Record<string, unknown> = {}, cl: ReturnType<typeof client> = c): Promise<any> {
  return assertOk(await cl.post(`/v0/topics/${t}`, { records, ...extra }), [200, 201], `append ${records.length} to ${t}`);
}

const nums = (n: number, from = 1): Rec[] => Array.from({ length: n }, (_, i) => ({ data: from + i }));

async function seeded(n: number, config: Record<string, unknown> = {}, label = 't'): Promise<string> {
  const t = await mk(config, label);
  if (n) await append(t, nums(n));
  return t;
}

/** POST /v0/watch expecting 200; returns the body. */
async function watch(body: unknown, query = '', base = srv.url): Promise<any> {
  const r = await client(base).post(`/v0/watch${query}`, body);
  return assertOk(r, 200, `POST /v0/watch${query} ${JSON.stringify(body).slice(0, 200)}`);
}

/** Opens a stream expecting 200 and registers it for closing. */
async function stream(wid: string, opts: Parameters<typeof openStream>[2] = {}, base = srv.url): Promise<SseStream> {
  const s = await openStream(base, wid, opts);
  open.push(s);
  assert.equal(s.status, 200, `GET /v0/watch/${wid}: ${s.text.slice(0, 300)}`);
  return s;
}

/** POST + GET; returns the session body, the stream and a tracker at the resolved from_seqs. */
async function session(body: Record<string, unknown>, opts: Parameters<typeof openStream>[2] = {}, base = srv.url) {
  const w = await watch(body, '', base);
  const s = await stream(w.wid, opts, base);
  const start: Record<string, number> = {};
  for (const [t, v] of Object.entries<any>(w.topics)) start[t] = v.from_seq;
  return { w, s, tr: new CursorTracker(start) };
}

async function diff(t: string, body: Record<string, unknown> = {}): Promise<any> {
  return assertOk(await c.post(`/v0/topics/${t}/diff`, body), 200, `diff ${t}`);
}

/** Every record of t from 0 via diff, with the given include flags. */
async function diffAll(t: string, flags: Record<string, unknown> = {}): Promise<any[]> {
  const out: any[] = [];
  let from = 0;
  for (;;) {
    const d = await diff(t, { from_seq: from, limit: 1000, ...flags });
    out.push(...d.records);
    from = d.next_from_seq;
    if (d.caught_up) return out;
  }
}

const recordFrames = (fs: Frame[], t?: string) => fs.filter((f) => f.event === 'record' && (t === undefined || f.data.topic === t));
const eventsOf = (fs: Frame[], ev: string, t?: string) => fs.filter((f) => f.event === ev && (t === undefined || f.data.topic === t));
const range = (a: number, b: number): number[] => (b < a ? [] : Array.from({ length: b - a + 1 }, (_, i) => a + i));
/** docs/API.md "GET /v0/topics/:topic" payload bytes of a record as returned (data text + meta text). */
const payload = (r: any) =>
  Buffer.byteLength(JSON.stringify(r.data)) + (r.meta === undefined ? 0 : Buffer.byteLength(JSON.stringify(r.meta)));

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

async function metricsJson(base = srv.url): Promise<any> {
  const r = await client(base).get('/v0/metrics', { accept: 'application/json' });
  assert.equal(r.status, 200);
  return r.body;
}

// ---- POST /v0/watch -------------------------------------------------------------------------

describe('POST /v0/watch: body rules', () => {
  test('415 without a JSON Content-Type; 400 for an empty, malformed or non-object body', async () => {
    const t = await seeded(1);
    const body = JSON.stringify({ topics: { [t]: {} } });
    assertError(
      await raw(srv.url, 'POST', '/v0/watch', { body, headers: { 'content-type': 'text/plain' } }),
      415,
      'unsupported_media_type',
      'text/plain',
    );
    assertError(await raw(srv.url, 'POST', '/v0/watch', { body }), 415, 'unsupported_media_type', 'no Content-Type');
    assertInvalid(await raw(srv.url, 'POST', '/v0/watch', { body: '', headers: JSON_CT }), undefined, 'empty body');
    assertInvalid(await raw(srv.url, 'POST', '/v0/watch', { headers: JSON_CT }), undefined, 'no body at all');
    for (const b of ['{', '[]', '1', '"x"', 'null', `{"topics":{"${t}":{}}} x`]) {
      assertInvalid(await raw(srv.url, 'POST', '/v0/watch', { body: b, headers: JSON_CT }), undefined, `body ${b}`);
    }
    // charset parameter and case are fine
    const ok = await raw(srv.url, 'POST', '/v0/watch', { body, headers: { 'content-type': 'Application/JSON; charset=UTF-8' } });
    assertOk(ok, 200, 'Application/JSON; charset=UTF-8');
  });

  test('topics: required object of 1..256 valid names with object values', async () => {
    const t = await seeded(1);
    assertInvalid(await c.post('/v0/watch', {}), undefined, 'topics missing');
    assertInvalid(await c.post('/v0/watch', { node: 'a' }), undefined, 'topics missing (other fields)');
    for (const topics of [null, [], [t], 'x', 5, true]) {
      assertInvalid(await c.post('/v0/watch', { topics }), undefined, `topics ${JSON.stringify(topics)}`);
    }
    assertInvalid(await c.post('/v0/watch', { topics: {} }), undefined, 'topics {}');
    for (const v of [5, null, [], 'x', true]) {
      assertInvalid(await c.post('/v0/watch', { topics: { [t]: v } }), undefined, `topics[t] = ${JSON.stringify(v)}`);
    }
    // 257 names: 400 even though none of them exists (400 family before 404, docs/API.md "Which error wins")
    const many: Record<string, object> = { [t]: {} };
    for (let i = 0; i < 256; i++) many[`${t}.none.${i}`] = {};
    assert.equal(Object.keys(many).length, 257);
    assertInvalid(await c.post('/v0/watch', { topics: many }), undefined, '257 topics');
    assertInvalid(await c.post('/v0/watch?lenient=true', { topics: many }), undefined, '257 topics, lenient');
    // 256 is allowed (lenient, so the 255 absent ones are left out)
    delete many[`${t}.none.255`];
    const w = await watch({ topics: many }, '?lenient=true');
    assert.deepEqual(Object.keys(w.topics), [t], 'lenient keeps only the existing topic');
  });

  test('a bad topic name is 400 with detail.topic', async () => {
    const t = await seeded(1);
    for (const bad of ['bad name', '-lead', '.lead', 'a/b', 'a'.repeat(256), 'é', 'a*', '']) {
      const r = await c.post('/v0/watch', { topics: { [t]: {}, [bad]: {} } });
      const d = assertInvalid(r, undefined, `name ${JSON.stringify(bad)}`);
      assert.equal(d?.topic, bad, `detail.topic for ${JSON.stringify(bad)}: ${r.text}`);
    }
    // a bad name wins over an unknown one, and over lenient
    const r = await c.post('/v0/watch?lenient=true', { topics: { [`${t}.absent`]: {}, 'bad name': {} } });
    assert.equal(assertInvalid(r, undefined, 'bad + unknown')?.topic, 'bad name');
    // the longest valid name is fine (lenient: it does not exist)
    const w = await watch({ topics: { [t]: {}, ['a'.repeat(255)]: {} } }, '?lenient=true');
    assert.deepEqual(Object.keys(w.topics), [t]);
  });

  test('from_seq: u64 up to 2^53-1; tail: bool starting at the head', async () => {
    const t = await seeded(5);
    for (const v of ['1', -1, 1.5, true, {}, [1], 2 ** 53, 1e300]) {
      assertInvalid(await c.post('/v0/watch', { topics: { [t]: { from_seq: v } } }), undefined, `from_seq ${JSON.stringify(v)}`);
    }
    const rawBig = await raw(srv.url, 'POST', '/v0/watch', {
      body: `{"topics":{"${t}":{"from_seq":18446744073709551615}}}`,
      headers: JSON_CT,
    });
    assertInvalid(rawBig, undefined, 'from_seq 2^64-1');
    for (const v of ['true', 1, 0]) {
      assertInvalid(await c.post('/v0/watch', { topics: { [t]: { tail: v } } }), undefined, `tail ${JSON.stringify(v)}`);
    }
    const max = await watch({ topics: { [t]: { from_seq: 2 ** 53 - 1 } } });
    assert.equal(max.topics[t].from_seq, 2 ** 53 - 1, 'from_seq 2^53-1 accepted as given');
    const dflt = await watch({ topics: { [t]: {} } });
    assert.deepEqual(dflt.topics[t], { from_seq: 0, head_seq: 5, earliest_seq: 1 });
    const given = await watch({ topics: { [t]: { from_seq: 3 } } });
    assert.equal(given.topics[t].from_seq, 3);
    const tail = await watch({ topics: { [t]: { from_seq: 1, tail: true } } });
    assert.deepEqual(tail.topics[t], { from_seq: 5, head_seq: 5, earliest_seq: 1 }, 'tail resolves to the head');
    const noTail = await watch({ topics: { [t]: { from_seq: 2, tail: false } } });
    assert.equal(noTail.topics[t].from_seq, 2);
  });

  test('cursor overrides from_seq and tail for the topics it names; others keep their options', async () => {
    const t1 = await seeded(5, {}, 'c1');
    const t2 = await seeded(3, {}, 'c2');
    const t3 = await seeded(4, {}, 'c3');
    const cur = encodeCursor({ [t1]: 2, [t2]: 1, [`${t1}.other`]: 7 });
    const w = await watch({ topics: { [t1]: { from_seq: 4 }, [t2]: { tail: true }, [t3]: { from_seq: 1 } }, cursor: cur });
    assert.deepEqual(Object.keys(w.topics).sort(), [t1, t2, t3].sort(), 'topics outside the subscription are ignored');
    assert.equal(w.topics[t1].from_seq, 2, 'cursor overrides from_seq');
    assert.equal(w.topics[t2].from_seq, 1, 'cursor overrides tail');
    assert.equal(w.topics[t3].from_seq, 1, 'a topic the cursor does not name keeps from_seq');
    // the stream starts there
    const s = await stream(w.wid);
    const tr = new CursorTracker({ [t1]: 2, [t2]: 1, [t3]: 1 });
    await tr.untilCaughtUp(s);
    assert.deepEqual(tr.seqs(t1), [3, 4, 5]);
    assert.deepEqual(tr.seqs(t2), [2, 3]);
    assert.deepEqual(tr.seqs(t3), [2, 3, 4]);
    // padding is optional
    let padded = '';
    for (let i = 0; i < 4 && !padded; i++) {
      const m = Buffer.from(JSON.stringify({ [t1]: 1, ['x'.repeat(i)]: 0 }), 'utf8').toString('base64');
      if (m.endsWith('=')) padded = m.replace(/\+/g, '-').replace(/\//g, '_');
    }
    assert.ok(padded.endsWith('='));
    const wp = await watch({ topics: { [t1]: {} }, cursor: padded });
    assert.equal(wp.topics[t1].from_seq, 1, 'padded cursor accepted');
    // an empty map is a valid cursor that names nothing
    const we = await watch({ topics: { [t1]: { from_seq: 4 } }, cursor: b64('{}') });
    assert.equal(we.topics[t1].from_seq, 4);
  });

  test('a malformed cursor is 400 with detail.field "cursor"', async () => {
    const t = await seeded(2);
    const bad: unknown[] = [
      'not base64!',
      'a+b/',
      b64('not json'),
      b64('[1,2]'),
      b64('5'),
      b64('"x"'),
      b64('null'),
      b64(`{"${t}":-1}`),
      b64(`{"${t}":1.5}`),
      b64(`{"${t}":"1"}`),
      b64(`{"${t}":null}`),
      b64(`{"${t}":9007199254740992}`),
      b64(`{"${t}":{}}`),
      123,
      true,
      {},
      [encodeCursor({ [t]: 1 })],
    ];
    for (const cursor of bad) {
      const r = await c.post('/v0/watch', { topics: { [t]: {} }, cursor });
      const d = assertInvalid(r, undefined, `cursor ${JSON.stringify(cursor)}`);
      assert.equal(d?.field, 'cursor', `detail.field for cursor ${JSON.stringify(cursor)}: ${r.text}`);
    }
  });

  test('limit, max_batch_bytes, heartbeat_ms, include_*, consistency, node: type checks', async () => {
    const t = await seeded(1);
    const base = { topics: { [t]: {} } };
    for (const f of ['limit', 'max_batch_bytes', 'heartbeat_ms']) {
      for (const v of [-1, 1.5, '5', true, [], 2 ** 53]) {
        assertInvalid(await c.post('/v0/watch', { ...base, [f]: v }), undefined, `${f} ${JSON.stringify(v)}`);
      }
    }
    for (const f of ['include_meta', 'include_tags', 'include_data']) {
      for (const v of ['true', 1, 0, {}])
        assertInvalid(await c.post('/v0/watch', { ...base, [f]: v }), undefined, `${f} ${JSON.stringify(v)}`);
    }
    for (const v of ['bogus', 1, true, '', 'Eventual']) {
      assertInvalid(await c.post('/v0/watch', { ...base, consistency: v }), undefined, `consistency ${JSON.stringify(v)}`);
    }
    for (const v of [5, [1], {}, ['a', 2], true]) {
      assertInvalid(await c.post('/v0/watch', { ...base, node: v }), undefined, `node ${JSON.stringify(v)}`);
    }
    // accepted values
    for (const extra of [
      { consistency: 'eventual' },
      { consistency: 'strong' },
      { node: 'a' },
      { node: ['a', 'b'] },
      { node: [] },
      { limit: 0, max_batch_bytes: 0, heartbeat_ms: 0 },
      { limit: 1e6, max_batch_bytes: 2 ** 40, heartbeat_ms: 10 ** 9 },
      { include_meta: false, include_tags: true, include_data: false },
      { unknown_field: { x: 1 } },
    ]) {
      await watch({ ...base, ...extra });
    }
  });

  test('404 topic_not_found names the first unknown topic in ascending order; ?lenient=true leaves them out', async () => {
    const t = await seeded(2);
    const a = `${t}.a.missing`;
    const z = `${t}.z.missing`;
    const r = await c.post('/v0/watch', { topics: { [z]: {}, [t]: {}, [a]: {} } });
    assert.deepEqual(assertError(r, 404, 'topic_not_found'), { topic: a });
    for (const q of ['?lenient=true', '?lenient=1']) {
      const w = await watch({ topics: { [z]: {}, [t]: {}, [a]: {} } }, q);
      assert.deepEqual(Object.keys(w.topics), [t], `${q}: only existing topics`);
      const s = await stream(w.wid);
      const cu = await s.nextEvent('caught-up');
      assert.deepEqual(decodeCursor(cu.id!), { [t]: 2 }, `${q}: the cursor map holds only the existing topic`);
      await s.close();
    }
    for (const q of ['?lenient=false', '?lenient=0', '?lenient=yes', '']) {
      assert.deepEqual(assertError(await c.post(`/v0/watch${q}`, { topics: { [z]: {}, [t]: {}, [a]: {} } }), 404, 'topic_not_found', q), {
        topic: a,
      });
    }
    const none = await c.post('/v0/watch?lenient=true', { topics: { [z]: {}, [a]: {} } });
    assert.deepEqual(assertError(none, 404, 'topic_not_found', 'lenient with no existing topic'), { topic: a });
    // watching never creates a topic
    assert.equal((await c.get(`/v0/topics/${a}?touch=false`)).status, 404);
  });

  test('200 body: wid, stream_url, session_ttl_ms, topics with from_seq/head_seq/earliest_seq', async () => {
    const t = await seeded(4, { cap_records: 3 });
    const e = await mk();
    const w = await watch({ topics: { [t]: {}, [e]: { from_seq: 0 } } });
    assert.deepEqual(Object.keys(w).sort(), ['performance', 'session_ttl_ms', 'stream_url', 'topics', 'wid']);
    assert.match(w.wid, /^wid_[A-Za-z0-9_-]{22}$/, 'wid_ + base64url of 16 bytes');
    assert.equal(w.stream_url, `/v0/watch/${w.wid}`);
    assert.equal(w.session_ttl_ms, 300000);
    assert.deepEqual(w.topics[t], { from_seq: 0, head_seq: 4, earliest_seq: 2 });
    assert.deepEqual(w.topics[e], { from_seq: 0, head_seq: 0, earliest_seq: 1 }, 'empty topic: earliest = head + 1');
    const w2 = await watch({ topics: { [t]: {} } });
    assert.notEqual(w2.wid, w.wid, 'every session has its own wid');
  });

  test('405 on wrong methods for /v0/watch and /v0/watch/:wid', async () => {
    const w = await watch({ topics: { [await seeded(1)]: {} } });
    for (const m of ['GET', 'PUT', 'DELETE']) {
      const r = await raw(srv.url, m, '/v0/watch', { headers: { accept: 'application/json' } });
      assertError(r, 405, 'method_not_allowed', `${m} /v0/watch`);
      assert.match(getHeader(r, 'allow') ?? '', /\bPOST\b/, `${m} /v0/watch: Allow lists POST`);
    }
    for (const m of ['POST', 'PUT', 'DELETE']) {
      const r = await raw(srv.url, m, `/v0/watch/${w.wid}`, { headers: { accept: 'text/event-stream', ...JSON_CT }, body: '{}' });
      assertError(r, 405, 'method_not_allowed', `${m} /v0/watch/:wid`);
      assert.match(getHeader(r, 'allow') ?? '', /\bGET\b/, `${m} /v0/watch/:wid: Allow lists GET`);
    }
  });
});

// ---- GET /v0/watch/:wid -----------------------------------------------------------------------

describe('GET /v0/watch/:wid: establishment', () => {
  test('200 with the four headers, uncompressed, `retry: 2000` first', async () => {
    const t = await seeded(1);
    const w = await watch({ topics: { [t]: {} } });
    const s = await stream(w.wid, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    assert.equal(s.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(s.headers['cache-control'], 'no-store');
    assert.equal(s.headers['connection'], 'keep-alive');
    assert.equal(s.headers['x-accel-buffering'], 'no');
    assert.equal(s.headers['content-encoding'], undefined, 'an event stream is never compressed (it must flush per frame)');
    assert.equal(s.headers['content-length'], undefined, 'no Content-Length on an open-ended stream');
    await s.nextEvent('caught-up');
    assert.ok(
      s.text.startsWith('retry: 2000\n\n'),
      `stream must start with "retry: 2000\\n\\n", got ${JSON.stringify(s.text.slice(0, 40))}`,
    );
    assert.equal(s.frames[0]!.kind, 'retry');
    assert.equal(s.frames.filter((f) => f.retry !== undefined).length, 1, 'retry is sent once');
  });

  test('x-request-id: the client\'s own echoed, else one made up (docs/API.md "Conventions")', async () => {
    const t = await seeded(1);
    const w = await watch({ topics: { [t]: {} } });
    const own = await stream(w.wid, { headers: { 'x-request-id': 'watch-req.1' } });
    assert.equal(own.headers['x-request-id'], 'watch-req.1');
    await own.close();
    const made = await stream(w.wid);
    assert.match(String(made.headers['x-request-id'] ?? ''), /^[0-9a-f]{8}-[0-9a-z]+$/);
  });

  test('406 not_acceptable unless Accept lists text/event-stream, text/* or */* with q != 0', async () => {
    const t = await seeded(1);
    const w = await watch({ topics: { [t]: {} } });
    for (const accept of [
      null,
      'application/json',
      'text/event-stream;q=0',
      'text/event-stream; q=0.0',
      'text/html',
      'application/*',
      'text/plain, application/json',
      // RFC 9110: the range that names the type outranks the wildcard.
      'text/event-stream;q=0, */*',
    ]) {
      const s = await openStream(srv.url, w.wid, { headers: { accept } });
      assertError(s, 406, 'not_acceptable', `Accept ${JSON.stringify(accept)}`);
    }
    for (const accept of [
      '*/*',
      'text/*',
      'text/html, text/event-stream;q=0.5',
      'text/event-stream; charset=utf-8',
      'application/json, */*;q=0.1',
      'Text/Event-Stream',
    ]) {
      const s = await openStream(srv.url, w.wid, { headers: { accept } });
      open.push(s);
      assert.equal(s.status, 200, `Accept ${accept}: ${s.text.slice(0, 200)}`);
      await s.nextEvent('caught-up');
      await s.close();
    }
    // 406 is decided before the wid lookup (docs/API.md "Which error wins")
    const s = await openStream(srv.url, 'wid_AAAAAAAAAAAAAAAAAAAAAA', { headers: { accept: 'application/json' } });
    assertError(s, 406, 'not_acceptable', 'unknown wid with a bad Accept');
  });

  test('404 not_found for an unknown wid', async () => {
    for (const wid of ['wid_AAAAAAAAAAAAAAAAAAAAAA', 'nonsense', 'wid_']) {
      const s = await openStream(srv.url, wid);
      assertError(s, 404, 'not_found', `wid ${wid}`);
    }
  });

  test('?token= is accepted and ignored in dev mode', async () => {
    const t = await seeded(2);
    const w = await watch({ topics: { [t]: {} } });
    const s = await stream(w.wid, { query: { token: 'x' } });
    const tr = new CursorTracker({ [t]: 0 });
    await tr.untilCaughtUp(s);
    assert.deepEqual(tr.seqs(t), [1, 2]);
  });
});

// ---- frames ---------------------------------------------------------------------------------

describe('record frames', () => {
  test('shape, contiguous from_seq/to_seq, head_seq, ids, records exactly as diff returns them', async () => {
    const t = await mk();
    await append(t, [
      { data: 1, tag: 'a', meta: { m: 1 } },
      { data: { x: [1, 2] }, node: 'n1' },
      { data: 'three', tag: 'b' },
      { data: null },
      { data: 5, meta: { k: 'v' }, node: 'n2', tag: 'c' },
    ]);
    await append(t, nums(5, 6), { node: 'batchnode' });
    const { w, s, tr } = await session({ topics: { [t]: {} }, limit: 3, include_tags: true });
    assert.deepEqual(w.topics[t], { from_seq: 0, head_seq: 10, earliest_seq: 1 });
    const fs = await tr.untilCaughtUp(s);
    const rf = recordFrames(fs);
    assert.deepEqual(
      rf.map((f) => [f.data.from_seq, f.data.to_seq, f.data.records.length, f.data.head_seq]),
      [
        [0, 3, 3, 10],
        [3, 6, 3, 10],
        [6, 9, 3, 10],
        [9, 10, 1, 10],
      ],
    );
    for (const f of rf) {
      assert.equal(f.data.topic, t);
      assert.deepEqual(decodeCursor(f.id!), { [t]: f.data.to_seq });
    }
    const cu = fs.at(-1)!;
    assert.equal(cu.event, 'caught-up');
    assert.deepEqual(cu.data, { topic: t, head_seq: 10 });
    assert.deepEqual(decodeCursor(cu.id!), { [t]: 10 });
    assert.deepEqual(tr.records[t], await diffAll(t, { include_tags: true }), 'records exactly as diff returns them');
    assert.equal(tr.records[t]![1].$node, 'n1');
    assert.equal(tr.records[t]![6].$node, 'batchnode');
    assert.equal('$node' in tr.records[t]![0], false, '$node omitted when absent');
  });

  test('include_tags / include_meta / include_data variants match diff', async () => {
    const t = await mk();
    await append(t, [
      { data: 1, tag: 'a', meta: { m: 1 } },
      { data: 2 },
      { data: { d: 3 }, tag: 'c', node: 'n' },
      { data: [4], meta: { z: [1] } },
    ]);
    const variants: Record<string, boolean>[] = [
      {},
      { include_tags: true },
      { include_tags: false, include_meta: true, include_data: true },
      { include_meta: false },
      { include_data: false },
      { include_tags: true, include_meta: false, include_data: false },
    ];
    for (const v of variants) {
      const { s, tr } = await session({ topics: { [t]: {} }, ...v });
      await tr.untilCaughtUp(s);
      await s.close();
      const flags: Record<string, boolean> = {};
      if ('include_tags' in v) flags.include_tags = v.include_tags!;
      if ('include_meta' in v) flags.include_meta = v.include_meta!;
      let expect = await diffAll(t, flags);
      if (v.include_data === false) expect = expect.map(({ data: _d, ...rest }) => rest);
      assert.deepEqual(tr.records[t], expect, `variant ${JSON.stringify(v)}`);
      const recs = tr.records[t]!;
      assert.equal(
        recs.some((r) => '$tag' in r),
        v.include_tags === true,
        `${JSON.stringify(v)}: $tag only with include_tags`,
      );
      assert.equal(
        recs.some((r) => 'meta' in r),
        v.include_meta !== false,
        `${JSON.stringify(v)}: meta per include_meta`,
      );
      assert.equal(
        recs.every((r) => 'data' in r),
        v.include_data !== false,
        `${JSON.stringify(v)}: data unless include_data false`,
      );
      for (const r of recs) assert.ok(Number.isInteger(r.$ts), '$ts always present');
    }
  });

  test('data and meta are verbatim on a single data: line', async () => {
    const t = await mk();
    const body =
      '{"records":[' +
      '{"data":1e400},' +
      '{"data":12345678901234567890},' +
      '{"data":"\\u00e9"},' +
      '{"data":1.50},' +
      '{"data":-0},' +
      '{"data":{"b":1,"a":2,"b":3}},' +
      '{"data":{ "k" :\n [1,\r\n\t2 ] , "s":"a b\\nc" }},' +
      '{"data":"x","meta":{"n":12345678901234567890,"e":"\\u00e9"}}' +
      ']}';
    const a = await raw(srv.url, 'POST', `/v0/topics/${t}`, { body, headers: JSON_CT });
    assertOk(a, [200, 201], 'append verbatim values');
    const { s, tr } = await session({ topics: { [t]: {} } });
    const fs = await tr.untilCaughtUp(s);
    const rf = recordFrames(fs);
    assert.equal(rf.length, 1);
    const line = rf[0]!.dataText!;
    for (const frag of [
      '"data":1e400',
      '"data":12345678901234567890',
      '"data":"\\u00e9"',
      '"data":1.50',
      '"data":-0',
      '"data":{"b":1,"a":2,"b":3}',
      '"data":{"k":[1,2],"s":"a b\\nc"}',
      '"meta":{"n":12345678901234567890,"e":"\\u00e9"}',
    ]) {
      assert.ok(line.includes(frag), `data line must contain ${frag} verbatim: ${line.slice(0, 600)}`);
    }
    assert.ok(!/[\r\n]/.test(line), 'one line');
    // the raw stream text has exactly one data: line for that frame
    assert.equal(rf[0]!.lines.filter((l) => l.startsWith('data:')).length, 1);
  });
});

describe('caught-up, tailing and ids', () => {
  test('one caught-up per topic after its backlog, also for an empty topic; live appends then arrive as record frames', async () => {
    const a = await seeded(5, {}, 'a');
    const e = await mk({}, 'e');
    const { s, tr } = await session({ topics: { [a]: {}, [e]: {} }, limit: 2 });
    const fs = await tr.untilCaughtUp(s);
    const cuA = fs.findIndex((f) => f.event === 'caught-up' && f.data.topic === a);
    const lastRecA = fs.findLastIndex((f) => f.event === 'record' && f.data.topic === a);
    assert.ok(cuA > lastRecA, 'caught-up comes after the backlog');
    assert.deepEqual(eventsOf(fs, 'caught-up', a)[0]!.data, { topic: a, head_seq: 5 });
    assert.deepEqual(eventsOf(fs, 'caught-up', e)[0]!.data, { topic: e, head_seq: 0 });
    assert.equal(recordFrames(fs, e).length, 0, 'nothing for the empty topic');
    assert.deepEqual(tr.seqs(a), [1, 2, 3, 4, 5]);
    // live
    for (let i = 0; i < 3; i++) {
      const at = Date.now();
      await append(a, [{ data: `live${i}` }]);
      const f = await tr.until(s, (x) => x.event === 'record' && x.data.topic === a, 3000, `live record ${i}`);
      assert.ok(f.at - at < 1000, `live push arrived ${f.at - at} ms after the append`);
      assert.deepEqual(
        f.data.records.map((r: any) => r.data),
        [`live${i}`],
      );
      assert.equal(f.data.head_seq, 6 + i);
    }
    await append(e, [{ data: 'e1' }, { data: 'e2' }]);
    await tr.until(s, (x) => x.event === 'record' && x.data.topic === e && x.data.to_seq === 2, 3000, 'live record on e');
    const more = await s.collect(300);
    for (const f of more) tr.apply(f);
    assert.equal(eventsOf(tr.events, 'caught-up').length, 2, 'no further caught-up while tailing');
    assert.deepEqual(tr.seqs(a), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(tr.seqs(e), [1, 2]);
  });

  test('a batch larger than limit is split into several contiguous frames while tailing', async () => {
    const t = await mk();
    const { s, tr } = await session({ topics: { [t]: {} }, limit: 4 });
    await tr.untilCaughtUp(s);
    await append(t, nums(10));
    await tr.until(s, (f) => f.event === 'record' && f.data.to_seq === 10, 3000, 'to_seq 10');
    const rf = recordFrames(tr.events);
    assert.ok(rf.length >= 3, `10 records at limit 4 need at least 3 frames, got ${rf.length}`);
    for (const f of rf) assert.ok(f.data.records.length <= 4, `frame of ${f.data.records.length} records exceeds limit 4`);
    assert.deepEqual(tr.seqs(t), range(1, 10));
  });

  test('tail: true delivers only records appended after the POST', async () => {
    const t = await seeded(5);
    const { w, s, tr } = await session({ topics: { [t]: { tail: true } } });
    assert.equal(w.topics[t].from_seq, 5);
    const fs = await tr.untilCaughtUp(s);
    assert.equal(recordFrames(fs).length, 0);
    assert.deepEqual(decodeCursor(fs.at(-1)!.id!), { [t]: 5 });
    await append(t, [{ data: 'new' }]);
    const f = await tr.until(s, (x) => x.event === 'record', 3000, 'live record');
    assert.equal(f.data.from_seq, 5);
    assert.equal(f.data.to_seq, 6);
    assert.deepEqual(tr.seqs(t), [6]);
  });

  test('several topics: every id is the whole map, compact JSON with keys ascending', async () => {
    const p = name('multi');
    const names = [`${p}.z`, `${p}.a`, `${p}.m`, `${p}.B`];
    for (const [i, n] of names.entries()) {
      assertOk(await c.put(`/v0/topics/${n}`, {}), 201);
      await append(n, nums(i + 1));
    }
    // insertion order of `topics` is not ascending on purpose
    const { s, tr } = await session({ topics: Object.fromEntries(names.map((n) => [n, {}])), limit: 1 });
    const fs = await tr.untilCaughtUp(s);
    for (const f of fs) {
      const text = cursorText(f.id!);
      const keys = Object.keys(JSON.parse(text));
      assert.deepEqual(keys, [...names].sort(), `id keys ascending: ${text}`);
      assert.equal(text, JSON.stringify(JSON.parse(text)), 'compact JSON');
      assert.ok(!f.id!.includes('='), 'no padding');
    }
    assert.deepEqual(decodeCursor(fs.at(-1)!.id!), { [names[0]!]: 1, [names[1]!]: 2, [names[2]!]: 3, [names[3]!]: 4 });
    // live appends to two topics: each frame's id carries both
    await append(names[1]!, [{ data: 'x' }]);
    await append(names[3]!, [{ data: 'y' }]);
    await tr.until(s, (f) => f.event === 'record' && f.data.topic === names[3], 3000, 'record on B');
    if (tr.cursor[names[1]!] !== 3) await tr.until(s, (f) => f.event === 'record' && f.data.topic === names[1], 3000, 'record on a');
    assert.deepEqual(tr.cursor, { [names[0]!]: 1, [names[1]!]: 3, [names[2]!]: 3, [names[3]!]: 5 });
  });

  test("node filter skips a dedupe_node topic's own records; the cursor still advances; dedupe_node false ignores it", async () => {
    const t = await mk({ dedupe_node: true });
    await append(t, [{ data: 1 }, { data: 2, node: 'b' }, { data: 3 }], { node: 'a' });
    await append(t, [{ data: 4 }, { data: 5 }], { node: 'a' });
    const { s, tr } = await session({ topics: { [t]: {} }, node: 'a' });
    const fs = await tr.untilCaughtUp(s);
    assert.deepEqual(tr.seqs(t), [2]);
    assert.deepEqual(fs.at(-1)!.data, { topic: t, head_seq: 5 });
    assert.deepEqual(decodeCursor(fs.at(-1)!.id!), { [t]: 5 }, 'a filtered tail still advances the cursor');
    assert.deepEqual(tr.records[t], await diffAll(t, { node: 'a' }), 'same records as diff with the same node');
    await s.close();

    const arr = await session({ topics: { [t]: {} }, node: ['a', 'b'] });
    await arr.tr.untilCaughtUp(arr.s);
    assert.deepEqual(arr.tr.seqs(t), [], 'node array: every record filtered');
    assert.deepEqual(decodeCursor(eventsOf(arr.tr.events, 'caught-up')[0]!.id!), { [t]: 5 });

    const t2 = await mk({ dedupe_node: false }, 'nodedupe');
    await append(t2, [{ data: 1 }, { data: 2 }], { node: 'a' });
    const off = await session({ topics: { [t2]: {} }, node: 'a' });
    await off.tr.untilCaughtUp(off.s);
    assert.deepEqual(off.tr.seqs(t2), [1, 2], 'dedupe_node false: no filtering');
  });

  test('node filter while tailing: own-node pushes never show up, and record frames stay contiguous', async () => {
    const t = await mk({ dedupe_node: true });
    await append(t, [{ data: 1 }], { node: 'c' });
    const { s, tr } = await session({ topics: { [t]: {} }, node: 'a' });
    await tr.untilCaughtUp(s);
    await append(t, [{ data: 2 }], { node: 'a' }); // filtered
    await append(t, [{ data: 3 }], { node: 'c' });
    await append(t, [{ data: 4 }, { data: 5 }], { node: 'a' }); // filtered
    await append(t, [{ data: 6 }, { data: 7, node: 'a' }, { data: 8 }], { node: 'c' });
    // the tracker checks that each record frame starts at the previous cursor (docs/WATCH.md:
    // the next frame's from_seq equals the previous frame's to_seq; filtered records inside
    // the range are skipped invisibly)
    await tr.until(s, (f) => f.event === 'record' && f.data.to_seq === 8, 3000, 'to_seq 8');
    assert.deepEqual(tr.seqs(t), [1, 3, 6, 8]);
  });
});

describe('batching: limit and max_batch_bytes', () => {
  /** Record frame sizes of a full read of t with these options. */
  async function frameSizes(t: string, opts: Record<string, unknown>): Promise<any[][]> {
    const { s, tr } = await session({ topics: { [t]: {} }, ...opts });
    const fs = await tr.untilCaughtUp(s, [t], 20000);
    await s.close();
    return recordFrames(fs).map((f) => f.data.records);
  }

  test('limit 2 → frames of at most 2 records', async () => {
    const t = await seeded(7);
    const sizes = (await frameSizes(t, { limit: 2 })).map((r) => r.length);
    assert.deepEqual(sizes, [2, 2, 2, 1]);
  });

  test('limit absent or 0 → 256; above 1000 → clamped to 1000', async () => {
    const t = await mk();
    await append(t, nums(1000));
    await append(t, nums(200, 1001));
    assert.deepEqual(
      (await frameSizes(t, {})).map((r) => r.length),
      expectSplit(1200, 256),
      'absent',
    );
    assert.deepEqual(
      (await frameSizes(t, { limit: 0 })).map((r) => r.length),
      expectSplit(1200, 256),
      'limit 0',
    );
    assert.deepEqual(
      (await frameSizes(t, { limit: 5000 })).map((r) => r.length),
      [1000, 200],
      'limit 5000 clamps to 1000',
    );
    assert.deepEqual(
      (await frameSizes(t, { limit: 1000 })).map((r) => r.length),
      [1000, 200],
      'limit 1000',
    );
  });

  function expectSplit(n: number, k: number): number[] {
    const out: number[] = [];
    for (let left = n; left > 0; left -= k) out.push(Math.min(k, left));
    return out;
  }

  /** Every frame holds as many records as fit in `budget` payload bytes (at least one). */
  function assertBudget(frames: any[][], budget: number, what: string): void {
    const all = frames.flat();
    let i = 0;
    for (const [n, recs] of frames.entries()) {
      const bytes = recs.reduce((a: number, r: any) => a + payload(r), 0);
      assert.ok(recs.length >= 1, `${what}: frame ${n} is empty`);
      if (recs.length > 1) assert.ok(bytes <= budget, `${what}: frame ${n} holds ${bytes} payload bytes > ${budget}`);
      i += recs.length;
      const nextRec = all[i];
      if (nextRec && recs.length < 256)
        assert.ok(
          bytes + payload(nextRec) > budget,
          `${what}: frame ${n} (${recs.length} records, ${bytes} bytes) stopped early; the next record would fit in ${budget}`,
        );
    }
  }

  test('max_batch_bytes: a frame stops before the budget, at least one record', async () => {
    const t = await mk();
    await append(
      t,
      Array.from({ length: 10 }, () => ({ data: 'x'.repeat(998) })),
    ); // 1000 bytes each
    assertBudget(await frameSizes(t, { max_batch_bytes: 2500 }), 2500, '2500');
    const big = await mk();
    await append(
      big,
      Array.from({ length: 3 }, () => ({ data: 'y'.repeat(4998) })),
    );
    assert.deepEqual(
      (await frameSizes(big, { max_batch_bytes: 2500 })).map((r) => r.length),
      [1, 1, 1],
      'a record above the budget still goes, alone',
    );
  });

  test('max_batch_bytes absent → 262144; 0 → 1 MiB; above 8 MiB → 8 MiB', async () => {
    const t = await mk();
    await append(
      t,
      Array.from({ length: 15 }, () => ({ data: 'z'.repeat(99998) })),
    ); // 100000 bytes each
    const dflt = await frameSizes(t, {});
    assertBudget(dflt, 262144, 'absent');
    assert.equal(dflt[0]!.length, 2);
    const zero = await frameSizes(t, { max_batch_bytes: 0 });
    assertBudget(zero, 1 << 20, '0');
    assert.equal(zero[0]!.length, 10);
    const huge = await mk();
    for (let i = 0; i < 2; i++)
      await append(
        huge,
        Array.from({ length: 5 }, () => ({ data: 'h'.repeat(999998) })),
      ); // 1e6 bytes each
    const clamped = await frameSizes(huge, { max_batch_bytes: 100 * 1024 * 1024 });
    assertBudget(clamped, 8 << 20, 'clamped');
    assert.deepEqual(
      clamped.map((r) => r.length),
      [8, 2],
    );
  });
});

describe('heartbeats', () => {
  test('`: hb` after heartbeat_ms of silence, no id, never moving the cursor', async () => {
    const t = await seeded(1);
    const { s, tr } = await session({ topics: { [t]: {} }, heartbeat_ms: 1000 });
    const fs = await tr.untilCaughtUp(s);
    const t0 = fs.at(-1)!.at;
    const hb1 = await s.next((f) => f.kind === 'comment', 2500, 'first heartbeat');
    const hb2 = await s.next((f) => f.kind === 'comment', 2500, 'second heartbeat');
    assert.equal(hb1.comment, 'hb');
    assert.equal(hb2.comment, 'hb');
    assert.ok(hb1.at - t0 >= 800, `first heartbeat ${hb1.at - t0} ms after the last frame (heartbeat_ms 1000)`);
    assert.ok(hb2.at - hb1.at >= 800 && hb2.at - hb1.at <= 2000, `heartbeat gap ${hb2.at - hb1.at} ms`);
    // no heartbeat block carries an id (or anything else)
    for (const block of s.text.split(/\n\n/)) {
      if (block.split('\n').includes(': hb')) assert.ok(!/^id:/m.test(block), `heartbeat block with an id: ${JSON.stringify(block)}`);
    }
    // the cursor did not move: a record still continues from it
    await append(t, [{ data: 2 }]);
    await tr.until(s, (f) => f.event === 'record', 3000, 'record after heartbeats');
    assert.deepEqual(tr.seqs(t), [1, 2]);
  });

  test('suppressed while data flows; heartbeat_ms below 1000 is clamped; the default is far longer', async () => {
    const t = await mk();
    const busy = await session({ topics: { [t]: {} }, heartbeat_ms: 1000 });
    const clamped = await session({ topics: { [t]: { tail: true } }, heartbeat_ms: 10 });
    const dflt = await session({ topics: { [t]: { tail: true } } });
    await busy.tr.untilCaughtUp(busy.s);
    await clamped.tr.untilCaughtUp(clamped.s);
    await dflt.tr.untilCaughtUp(dflt.s);
    const start = Date.now();
    // a record every 300 ms for 2.4 s: the busy stream never goes 1000 ms without bytes
    for (let i = 0; i < 8; i++) {
      await append(t, [{ data: i }]);
      await sleep(300);
    }
    const busyFrames = await busy.s.collect(0);
    assert.equal(
      busyFrames.filter((f) => f.kind === 'comment').length,
      0,
      `heartbeats while data flowed: ${busyFrames.filter((f) => f.kind === 'comment').length}`,
    );
    await clamped.s.collect(0);
    // the clamped stream also got the records, so it may not have needed a heartbeat: now idle
    const idleFrom = Date.now();
    const more = await clamped.s.collect(2200);
    const hbs = more.filter((f) => f.kind === 'comment');
    assert.ok(hbs.length >= 1 && hbs.length <= 3, `heartbeat_ms 10 clamps to 1000: ${hbs.length} heartbeats in 2.2 s idle`);
    assert.ok(hbs[0]!.at - idleFrom >= 500, 'not every 10 ms');
    const d = await dflt.s.collect(0);
    assert.equal(d.filter((f) => f.kind === 'comment').length, 0, `default heartbeat_ms 15000: none within ${Date.now() - start} ms`);
  });
});

describe('tombstones', () => {
  test('connect-time tombstone from_seq_too_old when records were evicted by the cap, as diff reports', async () => {
    const t = await mk({ cap_records: 5 });
    await append(t, nums(10));
    const d0 = await diff(t, { from_seq: 0 });
    assert.ok(d0.tombstone, 'diff oracle has a tombstone');
    for (const from of [0, 3]) {
      const { w, s, tr } = await session({ topics: { [t]: { from_seq: from } } });
      assert.deepEqual(w.topics[t], { from_seq: from, head_seq: 10, earliest_seq: 6 });
      const fs = await tr.untilCaughtUp(s);
      const tb = fs[0]!;
      assert.equal(tb.event, 'tombstone', `first frame is the tombstone, got ${tb.event}`);
      assert.deepEqual(tb.data, { topic: t, reason: 'from_seq_too_old', gap_from: from + 1, gap_to: 5, earliest_seq: 6, head_seq: 10 });
      assert.deepEqual(decodeCursor(tb.id!), { [t]: 5 }, 'tombstone id has the topic at gap_to');
      const od = await diff(t, { from_seq: from });
      assert.equal(tb.data.gap_from, od.tombstone.gap_from);
      assert.equal(tb.data.gap_to, od.tombstone.gap_to);
      assert.deepEqual(tr.seqs(t), [6, 7, 8, 9, 10]);
      assert.equal(recordFrames(fs)[0]!.data.from_seq, 5);
      assert.equal(eventsOf(fs, 'tombstone').length, 1);
      await s.close();
    }
    // at the floor: no tombstone
    const { s, tr } = await session({ topics: { [t]: { from_seq: 5 } } });
    const fs = await tr.untilCaughtUp(s);
    assert.equal(eventsOf(fs, 'tombstone').length, 0);
    assert.deepEqual(tr.seqs(t), [6, 7, 8, 9, 10]);
  });

  test('several topics: the connect-time tombstones are the first frames, before any records of any topic', async () => {
    const plain = await mk({});
    await append(plain, nums(4));
    const capped = await mk({ cap_records: 5 });
    await append(capped, nums(12));
    // The plain topic first: its records would otherwise be read and written first.
    const { s, tr } = await session({ topics: { [plain]: { from_seq: 0 }, [capped]: { from_seq: 2 } } });
    const fs = await tr.untilCaughtUp(s);
    const data = fs.filter((f) => f.event !== undefined);
    assert.equal(data[0]!.event, 'tombstone', `first frame ${data[0]!.event}`);
    assert.deepEqual(data[0]!.data, { topic: capped, reason: 'from_seq_too_old', gap_from: 3, gap_to: 7, earliest_seq: 8, head_seq: 12 });
    assert.deepEqual(decodeCursor(data[0]!.id!), { [plain]: 0, [capped]: 7 }, 'its id: the plain topic not yet read');
    assert.deepEqual(tr.seqs(plain), [1, 2, 3, 4]);
    assert.deepEqual(tr.seqs(capped), [8, 9, 10, 11, 12]);
    assert.equal(eventsOf(fs, 'tombstone').length, 1);
    await s.close();
  });

  test('connect-time tombstone for TTL-expired records is also from_seq_too_old', async () => {
    const t = await mk({ ttl_ms: 300 });
    await append(t, nums(3));
    await sleep(500);
    await append(t, nums(2, 4));
    const od = await diff(t, { from_seq: 0 });
    assert.ok(od.tombstone, `diff oracle: ${JSON.stringify(od)}`);
    const { s, tr } = await session({ topics: { [t]: {} } });
    const fs = await tr.untilCaughtUp(s);
    assert.equal(fs[0]!.event, 'tombstone');
    assert.deepEqual(fs[0]!.data, {
      topic: t,
      reason: 'from_seq_too_old',
      gap_from: 1,
      gap_to: od.tombstone.gap_to,
      earliest_seq: od.earliest_seq,
      head_seq: 5,
    });
    assert.deepEqual(tr.seqs(t), [4, 5]);
  });

  test('reconnect after records were evicted while idle: tombstone from_seq_too_old, then contiguous records', async () => {
    const t = await mk({ cap_records: 5 });
    await append(t, nums(5));
    const { w, s, tr } = await session({ topics: { [t]: {} } });
    await tr.untilCaughtUp(s);
    assert.deepEqual(tr.seqs(t), [1, 2, 3, 4, 5]);
    await s.close();
    await sleep(100);
    await append(t, nums(10, 6)); // head 15, earliest 11
    const s2 = await stream(w.wid);
    const fs = await tr.untilCaughtUp(s2);
    assert.equal(fs[0]!.event, 'tombstone');
    assert.deepEqual(fs[0]!.data, { topic: t, reason: 'from_seq_too_old', gap_from: 6, gap_to: 10, earliest_seq: 11, head_seq: 15 });
    assert.deepEqual(tr.seqs(t), [1, 2, 3, 4, 5, 11, 12, 13, 14, 15]);
  });

  test('a deleted gap never yields a tombstone; only the involuntary floor does', async () => {
    const t = await seeded(10);
    await assertOk(await c.post(`/v0/topics/${t}/delete`, { before_seq: 7 }), 200, 'delete');
    const { s, tr } = await session({ topics: { [t]: {} } });
    const fs = await tr.untilCaughtUp(s);
    assert.equal(eventsOf(fs, 'tombstone').length, 0, 'no tombstone for deleted records');
    assert.deepEqual(tr.seqs(t), [7, 8, 9, 10]);
    assert.equal(recordFrames(fs)[0]!.data.from_seq, 0, 'the deleted range is passed silently from the cursor');
    await s.close();

    // cap floor 3 (records 1-2 evicted), then a delete up to 6: only from_seq + 1 < 3 gets one
    const m = await mk({ cap_records: 8 });
    await append(m, nums(10));
    assertOk(await c.post(`/v0/topics/${m}/delete`, { before_seq: 6 }), 200, 'delete');
    for (const from of [0, 1]) {
      const x = await session({ topics: { [m]: { from_seq: from } } });
      const xf = await x.tr.untilCaughtUp(x.s);
      const tbs = eventsOf(xf, 'tombstone');
      assert.equal(tbs.length, 1, `from ${from}: one tombstone`);
      const od = await diff(m, { from_seq: from });
      assert.equal(tbs[0]!.data.reason, 'from_seq_too_old');
      assert.equal(tbs[0]!.data.gap_from, od.tombstone.gap_from, `from ${from}: gap_from as diff`);
      assert.equal(tbs[0]!.data.gap_to, od.tombstone.gap_to, `from ${from}: gap_to as diff`);
      assert.deepEqual(x.tr.seqs(m), [6, 7, 8, 9, 10]);
      await x.s.close();
    }
    for (const from of [2, 3, 4]) {
      const x = await session({ topics: { [m]: { from_seq: from } } });
      const xf = await x.tr.untilCaughtUp(x.s);
      assert.equal(eventsOf(xf, 'tombstone').length, 0, `from ${from}: at or above the involuntary floor, silent`);
      assert.deepEqual(x.tr.seqs(m), [6, 7, 8, 9, 10]);
      await x.s.close();
    }
  });

  test('recreated: the topic was deleted and recreated while the session was idle', async () => {
    const t = await seeded(5);
    const { w, s, tr } = await session({ topics: { [t]: {} } });
    await tr.untilCaughtUp(s);
    await s.close();
    await sleep(100);
    assertOk(await c.del(`/v0/topics/${t}`), 200, 'DELETE');
    await append(t, [{ data: 'new1' }, { data: 'new2' }]);
    const s2 = await stream(w.wid);
    const fs = await tr.untilCaughtUp(s2);
    assert.equal(fs[0]!.event, 'tombstone');
    assert.deepEqual(fs[0]!.data, { topic: t, reason: 'recreated', gap_from: 1, gap_to: 0, earliest_seq: 1, head_seq: 2 });
    assert.deepEqual(decodeCursor(fs[0]!.id!), { [t]: 0 });
    assert.deepEqual(
      tr.records[t]!.map((r) => r.data),
      ['new1', 'new2'],
    );
    assert.equal(recordFrames(fs)[0]!.data.from_seq, 0);
  });
});

describe('topic-deleted', () => {
  test('mid-stream: topic-deleted with the last head seen; the stream continues for the other topics', async () => {
    const t1 = await seeded(3, {}, 'd1');
    const t2 = await seeded(1, {}, 'd2');
    const { w, s, tr } = await session({ topics: { [t1]: {}, [t2]: {} } });
    await tr.untilCaughtUp(s);
    assertOk(await c.del(`/v0/topics/${t1}`), 200, 'DELETE t1');
    const td = await tr.until(s, (f) => f.event === 'topic-deleted', 3000, 'topic-deleted');
    assert.deepEqual(td.data, { topic: t1, head_seq: 3, reason: 'deleted' });
    assert.deepEqual(decodeCursor(td.id!), { [t1]: 3, [t2]: 1 }, 'the deleted topic stays in the map, unchanged');
    await append(t2, [{ data: 'after' }]);
    const r = await tr.until(s, (f) => f.event === 'record', 3000, 'record on t2 after the delete');
    assert.equal(r.data.topic, t2);
    assert.deepEqual(decodeCursor(r.id!), { [t1]: 3, [t2]: 2 });
    // recreating t1 does not revive it on this stream
    await append(t1, [{ data: 'reborn' }]);
    const later = await s.collect(500);
    for (const f of later) tr.apply(f);
    assert.equal(later.filter((f) => f.kind === 'event' && f.data?.topic === t1).length, 0, 'no frames for a deleted topic on this stream');
    assert.equal(s.closed, false, 'stream still open');
    // a later connect checks it again (docs/WATCH.md "GET /v0/watch/:wid"): recreated below the stored cursor → `recreated`
    await s.close();
    await sleep(100);
    const s2 = await stream(w.wid);
    const fs = await tr.untilCaughtUp(s2);
    const tb = eventsOf(fs, 'tombstone', t1);
    assert.equal(tb.length, 1, 'one tombstone for the recreated topic');
    assert.deepEqual(tb[0]!.data, { topic: t1, reason: 'recreated', gap_from: 1, gap_to: 0, earliest_seq: 1, head_seq: 1 });
    assert.deepEqual(
      tr.records[t1]!.map((r) => r.data),
      ['reborn'],
    );
    assert.deepEqual(recordFrames(fs, t2), [], 'nothing new for t2');
  });

  test('the stream ends when its only topic is deleted; a reconnect reports it again', async () => {
    const t = await seeded(2);
    const { w, s, tr } = await session({ topics: { [t]: {} } });
    await tr.untilCaughtUp(s);
    assertOk(await c.del(`/v0/topics/${t}`), 200, 'DELETE');
    const td = await tr.until(s, (f) => f.event === 'topic-deleted', 3000, 'topic-deleted');
    assert.deepEqual(td.data, { topic: t, head_seq: 2, reason: 'deleted' });
    assert.deepEqual(decodeCursor(td.id!), { [t]: 2 });
    await s.waitClosed(3000);
    const s2 = await stream(w.wid);
    const td2 = await s2.nextEvent('topic-deleted', 3000);
    assert.deepEqual(td2.data, { topic: t, head_seq: 0, reason: 'deleted' }, 'this stream observed no head');
    assert.deepEqual(decodeCursor(td2.id!), { [t]: 2 });
    await s2.waitClosed(3000);
  });
});

describe('consistency', () => {
  test('strong delivers on every durability class (disk after the periodic WAL sync)', async () => {
    for (const cl of ['ephemeral', 'memory', 'disk', 'fsync']) {
      const t = await mk({ durability: cl }, cl);
      const { s, tr } = await session({ topics: { [t]: {} }, consistency: 'strong' });
      await tr.untilCaughtUp(s);
      await append(t, nums(3));
      await tr.until(s, (f) => f.event === 'record' && f.data.to_seq === 3, 3000, `${cl}: strong records`);
      assert.deepEqual(tr.seqs(t), [1, 2, 3]);
      await s.close();
    }
  });

  describe('against a slow periodic WAL sync (SERVICE_WAL_SYNC_INTERVAL_MS=2000, 2 workers)', () => {
    const { srv: slow, c: sc } = httpSuite({ SERVICE_WORKERS: '2', SERVICE_WAL_SYNC_INTERVAL_MS: '2000' });

    test('disk: eventual arrives at once, strong only after an fsync', async () => {
      const t = await mk({ durability: 'disk' }, 'disk', sc);
      const ev = await session({ topics: { [t]: {} } }, {}, slow.url);
      const st = await session({ topics: { [t]: {} }, consistency: 'strong' }, {}, slow.url);
      await ev.tr.untilCaughtUp(ev.s);
      await st.tr.untilCaughtUp(st.s);
      const f0 = (await metricsJson(slow.url)).wal.fsyncs;
      const at = Date.now();
      await append(t, [{ data: 'd' }], {}, sc);
      const e = await ev.tr.until(ev.s, (f) => f.event === 'record', 3000, 'eventual record');
      assert.ok(e.at - at < 700, `eventual delivered ${e.at - at} ms after the append`);
      await st.tr.until(st.s, (f) => f.event === 'record', 4000, 'strong record');
      const f1 = (await metricsJson(slow.url)).wal.fsyncs;
      assert.ok(f1 > f0, `strong delivered before any WAL fsync (fsyncs ${f0} → ${f1})`);
    });

    test('memory: strong equals eventual (never waits for an fsync)', async () => {
      const t = await mk({ durability: 'memory' }, 'mem', sc);
      const st = await session({ topics: { [t]: {} }, consistency: 'strong' }, {}, slow.url);
      await st.tr.untilCaughtUp(st.s);
      for (let i = 0; i < 3; i++) {
        const at = Date.now();
        await append(t, [{ data: i }], {}, sc);
        const f = await st.tr.until(st.s, (x) => x.event === 'record', 3000, 'strong record on memory');
        assert.ok(f.at - at < 700, `memory/strong delivered ${f.at - at} ms after the append`);
      }
    });

    test('fsync: strong arrives right after the acknowledged append', async () => {
      const t = await mk({ durability: 'fsync' }, 'fs', sc);
      const st = await session({ topics: { [t]: {} }, consistency: 'strong' }, {}, slow.url);
      await st.tr.untilCaughtUp(st.s);
      await append(t, [{ data: 1 }], {}, sc);
      const acked = Date.now();
      const f = await st.tr.until(st.s, (x) => x.event === 'record', 3000, 'strong record on fsync');
      assert.ok(f.at - acked < 700, `fsync/strong delivered ${f.at - acked} ms after the ack`);
    });

    test('many topics across workers in one session', async () => {
      const ts: string[] = [];
      for (let i = 0; i < 6; i++) ts.push(await mk({}, `mw${i}`, sc));
      for (const [i, t] of ts.entries()) await append(t, nums(i + 1), {}, sc);
      const { s, tr } = await session({ topics: Object.fromEntries(ts.map((t) => [t, {}])) }, {}, slow.url);
      await tr.untilCaughtUp(s);
      for (const [i, t] of ts.entries()) assert.deepEqual(tr.seqs(t), range(1, i + 1), t);
      await Promise.all(ts.map((t) => append(t, [{ data: 'live' }], {}, sc)));
      const want = Object.fromEntries(ts.map((t, i) => [t, i + 2]));
      const deadline = Date.now() + 3000;
      while (ts.some((t) => tr.cursor[t]! < want[t]!)) {
        await tr.until(
          s,
          (f) => f.event === 'record',
          Math.max(1, deadline - Date.now()),
          `live records on every topic (cursor ${JSON.stringify(tr.cursor)})`,
        );
      }
      assert.deepEqual(tr.cursor, want);
    });
  });
});
