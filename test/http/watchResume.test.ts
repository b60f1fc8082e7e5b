// Watch resume and session lifecycle (docs/WATCH.md "Resume"; docs/API.md
// "Watch", "Watch frames", "Error frames", "Limits"; docs/ARCHITECTURE.md "Startup and shutdown"):
// - a reconnect starts at the session's server-side cursor (no duplicates, no loss), a
//   Last-Event-ID only rewinds (min rule), a garbage one is ignored; a frame id works as the
//   POST `cursor` of a new session;
// - idle sessions are collected lazily after session_ttl_ms, never while a stream is open;
// - SIGTERM sends every stream a terminal `error` frame (no id) and exits 0; after a restart
//   every wid is 404;
// - the spool_sse_connections / spool_watch_sessions gauges, and the max_watch_sessions /
//   max_sse_connections caps (429 throttled with detail {limit, max} and Retry-After).
import { test, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client, killServersAfterFile, tempDir } from '../helpers/server.js';
import { openStream, SseStream, CursorTracker, decodeCursor, encodeCursor } from '../helpers/sse.js';
import { assertError, assertInvalid, assertOk, namer, raw, sleep } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

killServersAfterFile();

const name = namer('wr');
const { srv } = httpSuite({ SERVICE_WORKERS: '1' });

const open: SseStream[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

// ---- helpers -------------------------------------------------------------------------------

const nums = (n: number, from = 1) => Array.from({ length: n }, (_, i) => ({ data: from + i }));
const range = (a: number, b: number): number[] => (b < a ? [] : Array.from({ length: b - a + 1 }, (_, i) => a + i));

async function seeded(base: string, n: number, label = 't'): Promise<string> {
  const t = name(label);
  assertOk(await client(base).put(`/v0/topics/${t}`, {}), 201, `PUT ${t}`);
  if (n) await append(base, t, n);
  return t;
}

async function append(base: string, t: string, n: number, from?: number): Promise<any> {
  const st = from ?? ((await client(base).get(`/v0/topics/${t}?touch=false`)).body.head_seq ?? 0) + 1;
  return assertOk(await client(base).post(`/v0/topics/${t}`, { records: nums(n, st) }), [200, 201], `append to ${t}`);
}

async function watch(base: string, body: unknown): Promise<any> {
  return assertOk(await client(base).post('/v0/watch', body), 200, `POST /v0/watch ${JSON.stringify(body).slice(0, 200)}`);
}

async function stream(base: string, wid: string, headers: Record<string, string | null> = {}): Promise<SseStream> {
  const s = await openStream(base, wid, { headers });
  open.push(s);
  assert.equal(s.status, 200, `GET /v0/watch/${wid}: ${s.status} ${s.text.slice(0, 300)}`);
  return s;
}

async function metrics(base: string): Promise<{ sse: number; sessions: number; prom: string }> {
  const j = await client(base).get('/v0/metrics', { accept: 'application/json' });
  assert.equal(j.status, 200);
  const p = await raw(base, 'GET', '/v0/metrics');
  return { sse: j.body.sse_connections, sessions: j.body.watch_sessions, prom: p.text };
}

function promValue(text: string, metric: string): number | undefined {
  const m = new RegExp(`^${metric} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Polls until f() holds (the server notices closed sockets asynchronously). */
async function eventually(f: () => Promise<boolean>, ms = 3000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const recordFrom = (tr: CursorTracker, t: string) => tr.events.find((f) => f.event === 'record' && f.data.topic === t)?.data.from_seq;

// ---- resume ---------------------------------------------------------------------------------

describe('resume from the server cursor', () => {
  test('reconnect without Last-Event-ID: continues after the last frame sent, nothing twice, nothing lost', async () => {
    const t = await seeded(srv.url, 10);
    const w = await watch(srv.url, { topics: { [t]: {} }, limit: 3 });
    const tr = new CursorTracker({ [t]: 0 });
    const s1 = await stream(srv.url, w.wid);
    await tr.untilCaughtUp(s1);
    await s1.close();
    await sleep(100);
    await append(srv.url, t, 5); // 11..15 while no stream is open
    const s2 = await stream(srv.url, w.wid);
    const fs = await tr.untilCaughtUp(s2);
    assert.equal(fs.find((f) => f.event === 'record')?.data.from_seq, 10, 'starts at the stored cursor');
    // live on the second stream, then a third reconnect
    await append(srv.url, t, 2);
    await tr.until(s2, (f) => f.event === 'record' && f.data.to_seq === 17, 3000, 'live 16..17');
    await s2.close();
    await sleep(100);
    await append(srv.url, t, 1);
    const s3 = await stream(srv.url, w.wid);
    await tr.untilCaughtUp(s3);
    assert.deepEqual(tr.seqs(t), range(1, 18), 'every record exactly once across three streams');
  });

  test('disconnect mid-backlog: the reconnect never repeats what was received; Last-Event-ID makes it exact', async () => {
    const t = await seeded(srv.url, 2000);
    const w = await watch(srv.url, { topics: { [t]: {} }, limit: 1 });
    const s1 = await stream(srv.url, w.wid);
    const tr1 = new CursorTracker({ [t]: 0 });
    for (let i = 0; i < 5; i++) await tr1.until(s1, (f) => f.event === 'record', 3000, `record ${i}`);
    const lastId = tr1.events.at(-1)!.id!;
    assert.deepEqual(decodeCursor(lastId), { [t]: 5 });
    await s1.close();
    await sleep(100);
    // without Last-Event-ID: at or after what we got (frames written but not read are the
    // client's loss, which Last-Event-ID covers)
    const s2 = await stream(srv.url, w.wid);
    const f2 = await s2.nextEvent('record', 3000);
    assert.ok(f2.data.from_seq >= 5, `reconnect repeated records: from_seq ${f2.data.from_seq} < 5`);
    await s2.close();
    await sleep(100);
    // with the last id received: exactly there
    const s3 = await stream(srv.url, w.wid, { 'last-event-id': lastId });
    const tr3 = new CursorTracker({ [t]: 5 });
    await tr3.untilCaughtUp(s3, [t], 15000);
    assert.deepEqual(tr3.seqs(t), range(6, 2000));
  });

  test('Last-Event-ID: an older id rewinds, a newer id never advances, a garbage id is ignored', async () => {
    const a = await seeded(srv.url, 10, 'a');
    const b = await seeded(srv.url, 4, 'b');
    const w = await watch(srv.url, { topics: { [a]: {}, [b]: {} } });
    const s0 = await stream(srv.url, w.wid);
    await new CursorTracker({ [a]: 0, [b]: 0 }).untilCaughtUp(s0);
    await s0.close();
    await sleep(50);

    /** Opens with this Last-Event-ID, expects to start at `start`, reads to caught-up, closes. */
    const reopen = async (id: string, start: Record<string, number>, what: string) => {
      const s = await stream(srv.url, w.wid, { 'last-event-id': id });
      const tr = new CursorTracker(start);
      try {
        await tr.untilCaughtUp(s);
      } catch (e) {
        throw new Error(`${what}: ${(e as Error).message}`);
      }
      await s.close();
      await sleep(50);
      return tr;
    };

    const older = await reopen(encodeCursor({ [a]: 4 }), { [a]: 4, [b]: 4 }, 'older id for a');
    assert.deepEqual(older.seqs(a), [5, 6, 7, 8, 9, 10], 'rewound a to 4');
    assert.equal(recordFrom(older, a), 4);
    assert.deepEqual(older.seqs(b), [], 'b not named: unchanged');

    const mixed = await reopen(encodeCursor({ [a]: 50, [b]: 2 }), { [a]: 10, [b]: 2 }, 'newer a, older b');
    assert.deepEqual(mixed.seqs(a), [], 'a newer id never advances past the stored cursor');
    assert.deepEqual(mixed.seqs(b), [3, 4], 'b rewound to 2');

    for (const bad of [
      'garbage!!',
      Buffer.from('[1]').toString('base64url'),
      Buffer.from(`{"${a}":-1,"${b}":1}`).toString('base64url'),
      Buffer.from(`{"${a}":"3"}`).toString('base64url'),
      Buffer.from('not json').toString('base64url'),
      '',
    ]) {
      const g = await reopen(bad, { [a]: 10, [b]: 4 }, `garbage id ${JSON.stringify(bad)}`);
      assert.deepEqual(g.seqs(a), [], `garbage id ${JSON.stringify(bad)} is ignored`);
      assert.deepEqual(g.seqs(b), [], `garbage id ${JSON.stringify(bad)} is ignored (b)`);
    }

    const other = await reopen(encodeCursor({ [`${a}.other`]: 0, [a]: 8 }), { [a]: 8, [b]: 4 }, 'id with a foreign topic');
    assert.deepEqual(other.seqs(a), [9, 10], 'foreign topics in the id are ignored; a rewinds');

    const padded = Buffer.from(JSON.stringify({ [a]: 7 }))
      .toString('base64')
      .replace(/\+/g, '-')
      .replace(/\//g, '_');
    const p = await reopen(padded, { [a]: 7, [b]: 4 }, 'padded id');
    assert.deepEqual(p.seqs(a), [8, 9, 10]);

    // after all that the session is at the head and continues live
    const s = await stream(srv.url, w.wid);
    const tr = new CursorTracker({ [a]: 10, [b]: 4 });
    await tr.untilCaughtUp(s);
    await append(srv.url, b, 1);
    await tr.until(s, (f) => f.event === 'record', 3000, 'live on b');
    assert.deepEqual(tr.seqs(b), [5]);
  });

  test('a frame id as the POST cursor of a new session resumes there', async () => {
    const t = await seeded(srv.url, 10, 'c');
    const u = await seeded(srv.url, 3, 'u');
    const w = await watch(srv.url, { topics: { [t]: {}, [u]: {} }, limit: 3 });
    const s = await stream(srv.url, w.wid);
    const tr = new CursorTracker({ [t]: 0, [u]: 0 });
    await tr.until(s, (f) => f.event === 'record' && f.data.topic === t && f.data.to_seq === 6, 3000, 't to 6');
    const id = tr.events.at(-1)!.id!;
    await s.close();
    const cur = decodeCursor(id);
    assert.equal(cur[t], 6);
    const w2 = await watch(srv.url, { topics: { [t]: { tail: true } }, cursor: id });
    assert.deepEqual(Object.keys(w2.topics), [t], 'the subscription is the topics map, not the cursor');
    assert.equal(w2.topics[t].from_seq, 6);
    const s2 = await stream(srv.url, w2.wid);
    const tr2 = new CursorTracker({ [t]: 6 });
    await tr2.untilCaughtUp(s2);
    assert.deepEqual(tr2.seqs(t), [7, 8, 9, 10]);
  });
});

// ---- metrics ----------------------------------------------------------------------------------

describe('gauges', () => {
  test('spool_sse_connections and spool_watch_sessions follow streams and sessions', async () => {
    await eventually(async () => (await metrics(srv.url)).sse === 0, 3000, 'sse_connections back to 0 after earlier tests');
    const m0 = await metrics(srv.url);
    assert.equal(promValue(m0.prom, 'spool_sse_connections'), 0);
    assert.equal(promValue(m0.prom, 'spool_watch_sessions'), m0.sessions, 'text and JSON agree');
    const t = await seeded(srv.url, 1);
    const w1 = await watch(srv.url, { topics: { [t]: {} } });
    const w2 = await watch(srv.url, { topics: { [t]: {} } });
    const m1 = await metrics(srv.url);
    assert.equal(m1.sessions, m0.sessions + 2, 'two more sessions');
    assert.equal(m1.sse, 0, 'a session alone opens no stream');
    const s1 = await stream(srv.url, w1.wid);
    const s2 = await stream(srv.url, w2.wid);
    const s3 = await stream(srv.url, w1.wid); // two GETs on one wid are allowed (docs/WATCH.md "Resume")
    await Promise.all([s1, s2, s3].map((s) => s.nextEvent('caught-up', 3000).catch(() => undefined)));
    const m2 = await metrics(srv.url);
    assert.equal(m2.sse, 3);
    assert.equal(promValue(m2.prom, 'spool_sse_connections'), 3);
    assert.equal(m2.sessions, m0.sessions + 2, 'streams are not sessions');
    await s3.close();
    await eventually(async () => (await metrics(srv.url)).sse === 2, 3000, 'sse_connections 2 after one close');
    await s1.close();
    await s2.close();
    await eventually(async () => (await metrics(srv.url)).sse === 0, 3000, 'sse_connections 0 after all closed');
    assert.equal((await metrics(srv.url)).sessions, m0.sessions + 2, 'closing streams keeps the sessions');
  });
});

// ---- idle GC ----------------------------------------------------------------------------------

describe('session GC (SERVICE_WATCH_SESSION_TTL_MS=500)', () => {
  const { srv: g } = httpSuite({ SERVICE_WORKERS: '1', SERVICE_WATCH_SESSION_TTL_MS: '500' });

  test('an idle session is collected after session_ttl_ms by the next POST; GET then answers 404', async () => {
    const t = await seeded(g.url, 1);
    const a = await watch(g.url, { topics: { [t]: {} } });
    assert.equal(a.session_ttl_ms, 500);
    const s = await stream(g.url, a.wid);
    await s.nextEvent('caught-up');
    await s.close();
    await sleep(900);
    const b = await watch(g.url, { topics: { [t]: {} } }); // runs the GC
    const m = await metrics(g.url);
    assert.equal(m.sessions, 1, 'only the new session is left');
    assertError(await openStream(g.url, a.wid), 404, 'not_found', 'collected wid');
    const sb = await stream(g.url, b.wid);
    await sb.nextEvent('caught-up');
  });

  test('a session with an open stream is never collected; its idle clock restarts when the stream closes', async () => {
    const t = await seeded(g.url, 1);
    const a = await watch(g.url, { topics: { [t]: {} } });
    const sa = new CursorTracker({ [t]: 0 });
    const s = await stream(g.url, a.wid);
    await sa.untilCaughtUp(s);
    await sleep(900);
    await watch(g.url, { topics: { [t]: {} } }); // GC pass while a's stream is open
    await append(g.url, t, 1);
    await sa.until(s, (f) => f.event === 'record', 3000, 'record on the long-open stream');
    const second = await openStream(g.url, a.wid);
    open.push(second);
    assert.equal(second.status, 200, `the session still exists: ${second.text.slice(0, 200)}`);
    await second.close();
    await s.close();
    await sleep(50);
    // created more than ttl ago, but the stream closed just now: not idle long enough
    await watch(g.url, { topics: { [t]: {} } });
    const again = await openStream(g.url, a.wid);
    open.push(again);
    assert.equal(
      again.status,
      200,
      `collected although it was idle for less than ttl since the stream closed: ${again.text.slice(0, 200)}`,
    );
    await again.close();
    await sleep(900);
    await watch(g.url, { topics: { [t]: {} } });
    assertError(await openStream(g.url, a.wid), 404, 'not_found', 'collected after ttl of idleness');
  });

  test('a stream open also runs the GC', async () => {
    const t = await seeded(g.url, 1);
    await sleep(600); // every older session idle past ttl
    const keep = await watch(g.url, { topics: { [t]: {} } }); // GC; now only `keep`
    const s1 = await stream(g.url, keep.wid);
    await s1.nextEvent('caught-up');
    const idle = await watch(g.url, { topics: { [t]: {} } });
    assert.equal((await metrics(g.url)).sessions, 2);
    await sleep(900); // idle is past ttl; keep has an open stream
    assert.equal((await metrics(g.url)).sessions, 2, 'metrics reads do not collect');
    const s2 = await stream(g.url, keep.wid); // a stream open on another session
    await s2.nextEvent('caught-up');
    assert.equal((await metrics(g.url)).sessions, 1, 'the idle session was collected by the stream open');
    assertError(await openStream(g.url, idle.wid), 404, 'not_found');
  });
});

// ---- caps -------------------------------------------------------------------------------------

describe('caps (SERVICE_MAX_WATCH_SESSIONS=2, SERVICE_MAX_SSE_CONNECTIONS=1)', () => {
  const { srv: k } = httpSuite({
    SERVICE_WORKERS: '1',
    SERVICE_MAX_WATCH_SESSIONS: '2',
    SERVICE_MAX_SSE_CONNECTIONS: '1',
    SERVICE_WATCH_SESSION_TTL_MS: '1500',
  });

  test('max_watch_sessions and max_sse_connections: 429 throttled with detail and Retry-After; slots free again', async () => {
    const t = await seeded(k.url, 1);
    const kc = client(k.url);
    const a = await watch(k.url, { topics: { [t]: {} } });
    const b = await watch(k.url, { topics: { [t]: {} } });
    const r = await kc.post('/v0/watch', { topics: { [t]: {} } });
    assert.deepEqual(assertError(r, 429, 'throttled', 'third session'), { limit: 'max_watch_sessions', max: 2 });
    assert.equal(r.headers.get('retry-after'), '1');
    assert.equal((await metrics(k.url)).sessions, 2, 'a refused POST creates nothing');
    // the 400 family and 404 come first (docs/API.md "Which error wins")
    assertInvalid(await kc.post('/v0/watch', { topics: {} }), undefined, '400 before 429');
    assertError(await kc.post('/v0/watch', { topics: { [`${t}.absent`]: {} } }), 404, 'topic_not_found', '404 before 429');

    const sa = await stream(k.url, a.wid);
    await sa.nextEvent('caught-up');
    const sb = await openStream(k.url, b.wid);
    assert.deepEqual(assertError(sb, 429, 'throttled', 'second stream'), { limit: 'max_sse_connections', max: 1 });
    assert.equal(sb.headers['retry-after'], '1');
    // 406 and 404 are decided before the cap (docs/API.md "Which error wins")
    assertError(await openStream(k.url, b.wid, { headers: { accept: 'application/json' } }), 406, 'not_acceptable', '406 before 429');
    assertError(await openStream(k.url, 'wid_AAAAAAAAAAAAAAAAAAAAAA'), 404, 'not_found', '404 before 429');
    await sa.close();
    // the slot frees when the stream closes
    let sb2: SseStream | undefined;
    await eventually(
      async () => {
        const s = await openStream(k.url, b.wid);
        if (s.status === 200) {
          open.push(s);
          sb2 = s;
          return true;
        }
        assertError(s, 429, 'throttled');
        return false;
      },
      3000,
      'a stream slot after the close',
    );
    await sb2!.nextEvent('caught-up');
    await sb2!.close();
    // idle GC frees session slots
    await sleep(1800);
    const c2 = await watch(k.url, { topics: { [t]: {} } });
    assert.match(c2.wid, /^wid_/);
    assertError(await openStream(k.url, a.wid), 404, 'not_found', 'a was collected to make room');
  });
});

// ---- shutdown -----------------------------------------------------------------------------------

describe('SIGTERM', () => {
  test('open streams get a terminal error frame without id, then close; exit 0; after a restart the wid is 404', async () => {
    const dataDir = tempDir();
    const s0 = await startServer({ dataDir, env: { SERVICE_WORKERS: '1' } });
    const t = await seeded(s0.url, 2);
    const w1 = await watch(s0.url, { topics: { [t]: {} } });
    const w2 = await watch(s0.url, { topics: { [t]: { tail: true } } });
    const st1 = await stream(s0.url, w1.wid);
    const st2 = await stream(s0.url, w2.wid);
    await st1.nextEvent('caught-up');
    await st2.nextEvent('caught-up');
    const started = Date.now();
    const exit = s0.stop();
    for (const [i, s] of [st1, st2].entries()) {
      const e = await s.nextEvent('error', 5000);
      assert.equal(e.id, undefined, `stream ${i}: the error frame has no id`);
      assert.ok(!e.lines.some((l) => l.startsWith('id:')), `stream ${i}: no id line`);
      assert.deepEqual(
        Object.keys(e.data).sort(),
        ['code', 'error', 'message', 'retry_after_ms', 'terminal'],
        `stream ${i}: keys of ${e.dataText}`,
      );
      assert.equal(e.data.code, 503);
      assert.equal(e.data.error, 'shutting_down');
      assert.equal(typeof e.data.message, 'string');
      assert.equal(e.data.terminal, true);
      assert.equal(e.data.retry_after_ms, 1000);
      await s.waitClosed(5000);
      const after = s.frames.slice(s.frames.indexOf(e) + 1).filter((f) => f.kind === 'event');
      assert.deepEqual(after, [], `stream ${i}: nothing after the terminal error`);
    }
    assert.equal(await exit, 0, `exit code (stderr: ${s0.stderr().slice(-500)})`);
    assert.ok(Date.now() - started < 8000, `shutdown took ${Date.now() - started} ms with streams open`);

    const s1 = await startServer({ dataDir, env: { SERVICE_WORKERS: '1' } });
    try {
      assertError(await openStream(s1.url, w1.wid), 404, 'not_found', 'wid after restart');
      assertError(await openStream(s1.url, w2.wid), 404, 'not_found', 'wid after restart');
      const w3 = await watch(s1.url, { topics: { [t]: {} } });
      assert.equal(w3.topics[t].head_seq, 2, 'the topic survived; only sessions are gone');
    } finally {
      await s1.stop();
    }
  });
});
