// The queue push stream, `GET /v0/topics/:q/work` (docs/QUEUES.md "GET /v0/topics/:q/work";
// docs/API.md "Queues", "SSE frame formats", "Work frames", "Errors", "Conventions", "Which error wins", "Topic lifecycle", "Error frames", "Limits"; docs/ARCHITECTURE.md "Startup and shutdown"):
// - Accept: 406 when absent or not matching; text/event-stream, text/* and */* accepted;
// - establishment errors in order 406, 400 (node missing/empty/over 128 bytes, max or lease_ms
//   not a non-negative integer), 404, 409, 429 (SSE connection cap, on a second server);
// - max (absent/0 → 1, above 1000 → 1000) and lease_ms (default the topic's, clamped);
// - response headers; `retry: 2000`, then `: hb`, then job frames;
// - job frames: `id:` = $seq, event `job`, the payload fields (meta/$tag/$node when present);
// - the stream keeps `max` jobs leased: a POST ack or nack (same node) brings a replacement;
//   jobs appended later are pushed;
// - closing the connection releases the stream's leases at once (not those of a POST claim);
// - deleting the topic ends the stream with the terminal 409 `not_a_queue` frame (no id);
// - SIGTERM: terminal 503 `shutting_down` frame, exit 0, the stream's jobs ready after restart
//   while a durable claim lease survives.
import { test, before, after, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, client, tempDir, Server } from '../helpers/server.js';
import { openWork, WorkStream, workPath } from '../helpers/workStream.js';
import type { Frame } from '../helpers/sse.js';
import { assertError, assertOk, namer } from './util.js';
import {
  ack,
  appendJobs,
  assertDeadline,
  checkJobShape,
  claim,
  counters,
  eventually,
  extend,
  mkQueue,
  nack,
  seqsOf,
  type Api,
} from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('qw');
const LONG = 60_000;
const DAY = 86_400_000;
const { srv, c } = httpSuite({ SERVICE_WORKERS: '2' });

// every stream a test opens is closed after it, pass or fail
const open: WorkStream[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function queue(config: Record<string, unknown> = {}, label = 'q', api: Api = c): Promise<string> {
  const t = name(label);
  await mkQueue(api, t, { lease_ms: LONG, ...config });
  return t;
}

/** Opens a work stream expecting 200; registers it for closing. */
async function work(
  q: string,
  query: Record<string, string>,
  opts: Parameters<typeof openWork>[2] = {},
  base = srv.url,
): Promise<WorkStream> {
  const s = await openWork(base, q, { query, ...opts });
  open.push(s);
  assert.equal(s.status, 200, `GET ${workPath(q, query)}: ${s.status} ${s.text.slice(0, 300)}`);
  return s;
}

const isJob = (f: Frame) => f.kind === 'event' && f.event === 'job';
const sorted = (a: number[]): number[] => [...a].sort((x, y) => x - y);

/** Checks a job frame (id, event, one data line, payload keys) and returns its payload. */
function jobOf(f: Frame, q: string, what = 'job frame'): any {
  assert.equal(f.event, 'job', `${what}: event`);
  const d = f.data;
  assert.ok(d && typeof d === 'object' && !Array.isArray(d), `${what}: payload is a JSON object: ${f.dataText}`);
  assert.equal(f.lines.filter((l) => l.startsWith('data:')).length, 1, `${what}: one data: line`);
  assert.equal(f.id, String(d.$seq), `${what}: id is the job's $seq`);
  assert.equal(d.topic, q, `${what}: topic`);
  checkJobShape(d, what, ['topic']);
  return d;
}

/** The next n job frames, as payloads. */
async function jobs(s: WorkStream, q: string, n: number, ms = 5000): Promise<any[]> {
  const out: any[] = [];
  for (let i = 0; i < n; i++) out.push(jobOf(await s.nextJob(ms, `job frame ${i + 1} of ${n}`), q));
  return out;
}

/** Asserts that no job frame arrives within ms. */
async function noMoreJobs(s: WorkStream, ms: number, what: string): Promise<void> {
  const extra = (await s.collect(ms)).filter(isJob);
  assert.deepEqual(
    extra.map((f) => f.data?.$seq),
    [],
    `${what}: no further job frame expected`,
  );
}

// ---- establishment ---------------------------------------------------------------------------------

describe('establishment', () => {
  test('Accept: absent or not matching → 406; text/event-stream, text/* and */* open the stream', async () => {
    const q = await queue();
    for (const accept of [null, 'application/json', 'text/html', 'text/event-stream;q=0', 'application/*', 'text/event-stream;q=0, */*']) {
      const s = await openWork(srv.url, q, { query: { node: 'w-a' }, headers: { accept } });
      const d = assertError(s as any, 406, 'not_acceptable', `Accept ${accept}`);
      assert.equal(d, undefined, 'not_acceptable carries no detail (docs/API.md "Errors")');
    }
    for (const accept of [
      'text/event-stream',
      '*/*',
      'text/*',
      'application/json, text/event-stream',
      'TEXT/EVENT-STREAM',
      'text/event-stream; charset=utf-8',
    ]) {
      const s = await work(q, { node: 'w-a' }, { headers: { accept } });
      await s.next((f) => f.kind === 'comment', 5000, `the opening heartbeat (Accept ${accept})`);
      await s.close();
    }
  });

  test('errors before the stream opens come in the order 406, 400, 404, 409', async () => {
    const q = await queue();
    const absent = name('absent');
    const log = name('log');
    await appendJobs(c, log, 1);
    const get = (t: string, query: Record<string, string>, accept: string | null = 'text/event-stream') =>
      openWork(srv.url, t, { query, headers: { accept } });
    // 406 first
    assertError((await get(absent, {}, null)) as any, 406, 'not_acceptable', 'no Accept, no node, absent topic');
    assertError((await get(log, { max: 'x' }, 'application/json')) as any, 406, 'not_acceptable', 'bad Accept, bad max, log topic');
    assertError(
      (await openWork(srv.url, '-bad', { path: '/v0/topics/-bad/work', headers: { accept: null } })) as any,
      406,
      'not_acceptable',
      'no Accept, bad name',
    );
    // then 400
    for (const t of [absent, log, q]) {
      const d = assertError((await get(t, {})) as any, 400, 'invalid_request', `node missing on ${t}`);
      assert.equal(d?.field, 'node', 'detail.field node');
      assert.equal(assertError((await get(t, { node: '' })) as any, 400, 'invalid_request', `node "" on ${t}`)?.field, 'node');
      assert.equal(
        assertError((await get(t, { node: '\u00fc'.repeat(64) + 'x' })) as any, 400, 'invalid_request', `node of 129 bytes on ${t}`)?.field,
        'node',
      );
      for (const max of ['abc', '-1', '1.5', '1e3', '', ' 1', '0x10', '+1']) {
        const d2 = assertError((await get(t, { node: 'w-a', max })) as any, 400, 'invalid_request', `max=${max} on ${t}`);
        if (d2 && 'field' in d2) assert.equal(d2.field, 'max');
      }
      for (const leaseMs of ['abc', '-5', '2.5']) {
        const d3 = assertError(
          (await get(t, { node: 'w-a', lease_ms: leaseMs })) as any,
          400,
          'invalid_request',
          `lease_ms=${leaseMs} on ${t}`,
        );
        if (d3 && 'field' in d3) assert.equal(d3.field, 'lease_ms');
      }
    }
    const bad = await openWork(srv.url, 'bad name', { path: '/v0/topics/bad%20name/work?node=w-a' });
    assert.deepEqual(assertError(bad as any, 400, 'invalid_request', 'bad name'), { topic: 'bad name' });
    // then 404 and 409
    assert.deepEqual(assertError((await get(absent, { node: 'w-a' })) as any, 404, 'topic_not_found', 'absent'), { topic: absent });
    assert.deepEqual(assertError((await get(log, { node: 'w-a' })) as any, 409, 'not_a_queue', 'log topic'), { topic: log });
    assertError(await c.get(`/v0/topics/${absent}`), 404, 'topic_not_found', 'the stream did not create the topic');
    // 128 bytes of node is fine
    const s = await work(q, { node: '\u00fc'.repeat(64) });
    await s.next((f) => f.kind === 'comment', 5000, 'the opening heartbeat');
  });

  test('max: absent → 1, 0 → 1', async () => {
    const queries: Record<string, string>[] = [{ node: 'w-a' }, { node: 'w-a', max: '0' }];
    for (const query of queries) {
      const q = await queue();
      await appendJobs(c, q, 3);
      const s = await work(q, query);
      const [j] = await jobs(s, q, 1);
      assert.equal(j.$seq, 1);
      await noMoreJobs(s, 600, `max ${query.max ?? 'absent'}`);
      assert.deepEqual(await counters(c, q), { ready: 2, in_flight: 1, dead_lettered: 0 });
    }
  });

  test('max above 1000 → 1000', async () => {
    const q = await queue();
    await appendJobs(c, q, 1003);
    const s = await work(q, { node: 'w-a', max: '5000' });
    const got = await jobs(s, q, 1000, 10_000);
    assert.equal(new Set(got.map((j) => j.$seq)).size, 1000);
    await noMoreJobs(s, 700, 'max 5000 is clamped to 1000');
    assert.deepEqual(await counters(c, q), { ready: 3, in_flight: 1000, dead_lettered: 0 });
  });

  test('lease_ms: absent → the topic lease_ms; given → clamped to [100, 86400000]', async () => {
    const cases: [Record<string, string>, number][] = [
      [{}, 45_000],
      [{ lease_ms: '5000' }, 5000],
      [{ lease_ms: '50' }, 100],
      [{ lease_ms: '0' }, 100],
      [{ lease_ms: String(DAY + 1) }, DAY],
      [{ lease_ms: String(Number.MAX_SAFE_INTEGER) }, DAY],
    ];
    for (const [query, effective] of cases) {
      const q = await queue({ lease_ms: 45_000 });
      await appendJobs(c, q, 1);
      const t0 = Date.now();
      const s = await work(q, { node: 'w-a', ...query });
      const f = await s.nextJob(5000);
      const j = jobOf(f, q);
      assertDeadline(j.deadline, t0, f.at, effective, `work lease_ms ${query.lease_ms ?? 'absent'} → ${effective}`, 15);
      await s.close();
    }
  });
});

// ---- the stream ---------------------------------------------------------------------------------------

describe('stream', () => {
  test('headers; `retry: 2000`, then `: hb`, then jobs', async () => {
    const q = await queue();
    await appendJobs(c, q, 1);
    const s = await work(q, { node: 'w-a' });
    assert.match(s.headers['content-type'] ?? '', /^text\/event-stream/i, 'content-type');
    assert.equal(s.headers['cache-control'], 'no-store');
    assert.equal(s.headers['x-accel-buffering'], 'no');
    await s.nextJob(5000);
    const text = s.text;
    assert.match(text, /^retry: 2000\r?\n/, `the stream starts with retry: 2000 (got ${JSON.stringify(text.slice(0, 80))})`);
    const hb = text.search(/(^|\n): ?hb\r?\n/);
    const job = text.indexOf('event: job');
    assert.ok(hb >= 0, 'a `: hb` comment is sent');
    assert.ok(hb < job, `the heartbeat comes before the first job (${JSON.stringify(text.slice(0, 200))})`);
    assert.equal(s.frames.filter((f) => f.kind === 'retry' && f.retry === 2000).length, 1, 'one retry block');
  });

  test('x-request-id: the client\'s own echoed, else one made up (docs/API.md "Conventions")', async () => {
    const q = await queue();
    const own = await work(q, { node: 'w-a' }, { headers: { 'x-request-id': 'work-req.1' } });
    assert.equal(own.headers['x-request-id'], 'work-req.1');
    await own.close();
    const made = await work(q, { node: 'w-a' });
    assert.match(made.headers['x-request-id'] ?? '', /^[0-9a-f]{8}-[0-9a-z]+$/);
  });

  test('job frames: id = $seq, event job, the job with lease_id, deadline, deliveries', async () => {
    const q = await queue();
    await appendJobs(c, q, [
      { data: { task: 'resize', id: 17 }, tag: 'img', node: 'producer-1', meta: { trace: 't-1' } },
      { data: 'bare' },
      { data: null },
    ]);
    const t0 = Date.now();
    const s = await work(q, { node: 'w-a', max: '3' });
    const frames: Frame[] = [];
    for (let i = 0; i < 3; i++) frames.push(await s.nextJob(5000));
    const t1 = Math.max(...frames.map((f) => f.at));
    const got = frames.map((f) => jobOf(f, q)).sort((a, b) => a.$seq - b.$seq);
    assert.deepEqual(seqsOf(got), [1, 2, 3]);
    const [j1, j2, j3] = got;
    assert.deepEqual(j1.data, { task: 'resize', id: 17 });
    assert.equal(j1.$tag, 'img');
    assert.equal(j1.$node, 'producer-1');
    assert.deepEqual(j1.meta, { trace: 't-1' });
    assert.equal(j2.data, 'bare');
    for (const k of ['$tag', '$node', 'meta']) assert.ok(!(k in j2), `${k} absent when the job has none`);
    assert.equal(j3.data, null);
    assert.ok('data' in j3, 'data null is present');
    for (const j of got) {
      assert.equal(j.deliveries, 1);
      assertDeadline(j.deadline, t0, t1, LONG, `seq ${j.$seq}`);
    }
    assert.equal(new Set(got.map((j) => j.lease_id)).size, 3, 'distinct lease ids');
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 3, dead_lettered: 0 });
    // the stream's leases are acked with the POST route, same node
    const other = await ack(c, q, { node: 'w-b', seqs: [1, 2, 3] });
    assert.deepEqual(other.skipped, [1, 2, 3], 'another node cannot ack the stream jobs');
    const a = await ack(c, q, { node: 'w-a', seqs: seqsOf(got), lease_ids: got.map((j) => j.lease_id) });
    assert.deepEqual([a.acked, a.skipped], [3, []]);
  });

  test('max=2 with 5 jobs: two in flight; an ack brings a third; a nack brings a replacement', async () => {
    const q = await queue();
    await appendJobs(c, q, 5);
    const s = await work(q, { node: 'w-a', max: '2' });
    const first = await jobs(s, q, 2);
    assert.deepEqual(sorted(seqsOf(first)), [1, 2]);
    await noMoreJobs(s, 600, 'max=2');
    assert.deepEqual(await counters(c, q), { ready: 3, in_flight: 2, dead_lettered: 0 });
    const lease = new Map<number, string>(first.map((j) => [j.$seq, j.lease_id]));

    // ack one → the third job
    const a = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [lease.get(1)] });
    assert.equal(a.acked, 1);
    const [j3] = await jobs(s, q, 1);
    assert.equal(j3.$seq, 3, 'the replacement after an ack');
    lease.set(3, j3.lease_id);
    await noMoreJobs(s, 400, 'still two in flight');

    // nack with a long delay → a fresh job (the nacked one is delayed)
    const n = await nack(c, q, { node: 'w-a', seqs: [2], lease_ids: [lease.get(2)], delay_ms: LONG });
    assert.equal(n.nacked, 1);
    const [j4] = await jobs(s, q, 1);
    assert.equal(j4.$seq, 4, 'the replacement after a delayed nack');
    lease.set(4, j4.lease_id);

    // nack without delay → the nacked job is ready again and reclaimed first (deliveries 2)
    const n2 = await nack(c, q, { node: 'w-a', seqs: [3], lease_ids: [lease.get(3)] });
    assert.equal(n2.nacked, 1);
    const [again] = await jobs(s, q, 1);
    assert.equal(again.$seq, 3, 'reclaimed jobs are served before fresh ones (job 5)');
    assert.equal(again.deliveries, 2);
    assert.notEqual(again.lease_id, lease.get(3));
    await noMoreJobs(s, 400, 'still two in flight');
    assert.deepEqual(await counters(c, q), { ready: 1, in_flight: 2, dead_lettered: 0 }, 'job 5 ready, job 2 delayed');

    // extend works on stream leases too
    const e = await extend(c, q, { node: 'w-a', seqs: [4], lease_ids: [j4.lease_id], lease_ms: 5000 });
    assert.equal(e.body.extended, 1);
  });

  test('jobs appended after the stream opened are pushed', async () => {
    const q = await queue();
    const s = await work(q, { node: 'w-a', max: '5' });
    await s.next((f) => f.kind === 'comment', 5000, 'the opening heartbeat');
    await noMoreJobs(s, 300, 'an empty queue');
    await appendJobs(c, q, [{ data: 'late-1' }, { data: 'late-2' }]);
    const got = await jobs(s, q, 2);
    assert.deepEqual(sorted(seqsOf(got)), [1, 2]);
    assert.deepEqual(got.map((j) => j.data).sort(), ['late-1', 'late-2']);
    await appendJobs(c, q, [{ data: 'late-3' }]);
    const [j3] = await jobs(s, q, 1);
    assert.equal(j3.data, 'late-3');
  });

  test('closing the connection releases its leases at once; leases of a POST claim by the same node survive', async () => {
    const q = await queue();
    await appendJobs(c, q, 4);
    const s = await work(q, { node: 'w-a', max: '3' });
    const streamed = await jobs(s, q, 3);
    assert.deepEqual(sorted(seqsOf(streamed)), [1, 2, 3]);
    const cl = await claim(c, q, { node: 'w-a', max: 5 });
    assert.deepEqual(seqsOf(cl.body.claimed), [4]);
    await s.close();
    // the leases run for 60 s: getting the jobs now proves they were released, not expired
    const got = new Map<number, any>();
    await eventually(
      async () => {
        const r = await claim(c, q, { node: 'w-b', max: 10 });
        for (const j of r.body.claimed) {
          assert.ok(!got.has(j.$seq), `seq ${j.$seq} handed to w-b twice`);
          got.set(j.$seq, j);
        }
        return got.size >= 3 || `got ${[...got.keys()].join(',')}`;
      },
      5000,
      'the stream jobs to be released after the close',
    );
    assert.deepEqual(sorted([...got.keys()]), [1, 2, 3], 'exactly the stream jobs; the claimed job 4 stays leased');
    for (const j of got.values()) assert.equal(j.deliveries, 2, `seq ${j.$seq}: second delivery`);
    const late = await ack(c, q, { node: 'w-a', seqs: seqsOf(streamed), lease_ids: streamed.map((j) => j.lease_id) });
    assert.equal(late.acked, 0, 'the closed stream lost its leases');
    const a = await ack(c, q, { node: 'w-a', seqs: [4], lease_ids: [cl.body.claimed[0].lease_id] });
    assert.equal(a.acked, 1, 'the POST claim lease survived the close');
  });

  test('deleting the topic ends the stream with a terminal 409 not_a_queue frame without id', async () => {
    const q = await queue();
    await appendJobs(c, q, 1);
    const s = await work(q, { node: 'w-a' });
    await jobs(s, q, 1);
    assertOk(await c.del(`/v0/topics/${q}`), 200, 'DELETE');
    const e = await s.nextEvent('error', 5000);
    assert.equal(e.id, undefined, 'the error frame has no id');
    assert.ok(!e.lines.some((l) => l.startsWith('id:')), 'no id line');
    assert.deepEqual(Object.keys(e.data).sort(), ['code', 'error', 'message', 'terminal', 'topic'], `keys of ${e.dataText}`);
    assert.equal(e.data.code, 409);
    assert.equal(e.data.error, 'not_a_queue');
    assert.equal(typeof e.data.message, 'string');
    assert.equal(e.data.terminal, true);
    assert.equal(e.data.topic, q);
    await s.waitClosed(5000);
    const after = s.frames.slice(s.frames.indexOf(e) + 1).filter((f) => f.kind === 'event');
    assert.deepEqual(after, [], 'nothing after the terminal error');
  });
});

// ---- a dedicated server: the SSE connection cap, then SIGTERM ------------------------------------------

describe('SSE connection cap and shutdown (dedicated server, SERVICE_MAX_SSE_CONNECTIONS=1)', () => {
  let k: Server;
  let kc: Api;
  const dataDir = tempDir();
  const env = { SERVICE_WORKERS: '1', SERVICE_MAX_SSE_CONNECTIONS: '1' };
  before(async () => {
    k = await startServer({ dataDir, env });
    kc = client(k.url);
  });
  after(async () => {
    await k?.stop();
  });

  test('a stream over the cap is 429 throttled {limit, max} with Retry-After; 406/400/404/409 come first', async () => {
    const q = await queue({}, 'cap', kc);
    const log = name('log');
    await appendJobs(kc, log, 1);
    const first = await work(q, { node: 'w-a' }, {}, k.url);
    await first.next((f) => f.kind === 'comment', 5000, 'the opening heartbeat');
    const second = await openWork(k.url, q, { query: { node: 'w-b' } });
    assert.deepEqual(assertError(second as any, 429, 'throttled', 'second stream'), { limit: 'max_sse_connections', max: 1 });
    assert.equal(second.headers['retry-after'], '1');
    assertError(
      (await openWork(k.url, q, { query: { node: 'w-b' }, headers: { accept: null } })) as any,
      406,
      'not_acceptable',
      '406 before 429',
    );
    assertError((await openWork(k.url, q, { query: {} })) as any, 400, 'invalid_request', '400 before 429');
    assertError((await openWork(k.url, name('absent'), { query: { node: 'w-b' } })) as any, 404, 'topic_not_found', '404 before 429');
    assertError((await openWork(k.url, log, { query: { node: 'w-b' } })) as any, 409, 'not_a_queue', '409 before 429');
    await first.close();
    // the slot frees when the stream closes
    await eventually(
      async () => {
        const s = await openWork(k.url, q, { query: { node: 'w-b' } });
        if (s.status === 200) {
          open.push(s);
          await s.close();
          return true;
        }
        assertError(s as any, 429, 'throttled');
        return false;
      },
      3000,
      'a stream slot after the close',
    );
  });

  test('SIGTERM: terminal 503 shutting_down frame, exit 0; after a restart the stream job is ready, a durable claim lease is not', async () => {
    const q = await queue({ durability: 'fsync', leases_durable: true }, 'term', kc);
    await appendJobs(kc, q, 2);
    // the previous test's streams may still hold the one slot for a moment
    let s: WorkStream | undefined;
    await eventually(
      async () => {
        const x = await openWork(k.url, q, { query: { node: 'w-a', max: '1' } });
        if (x.status === 200) {
          open.push(x);
          s = x;
          return true;
        }
        assertError(x as any, 429, 'throttled');
        return false;
      },
      3000,
      'a stream slot',
    );
    const [streamed] = await jobs(s!, q, 1);
    assert.equal(streamed.$seq, 1);
    const cl = await claim(kc, q, { node: 'w-claim', max: 1 });
    assert.deepEqual(seqsOf(cl.body.claimed), [2]);
    const exit = k.stop();
    const e = await s!.nextEvent('error', 8000);
    assert.equal(e.id, undefined, 'the error frame has no id');
    assert.ok(!e.lines.some((l) => l.startsWith('id:')), 'no id line');
    assert.deepEqual(
      Object.keys(e.data).sort(),
      ['code', 'error', 'message', 'retry_after_ms', 'terminal', 'topic'],
      `keys of ${e.dataText}`,
    );
    assert.equal(e.data.code, 503);
    assert.equal(e.data.error, 'shutting_down');
    assert.equal(e.data.terminal, true);
    assert.equal(e.data.topic, q);
    assert.ok(Number.isSafeInteger(e.data.retry_after_ms) && e.data.retry_after_ms > 0, 'retry_after_ms');
    await s!.waitClosed(8000);
    assert.equal(await exit, 0, `exit code (stderr: ${k.stderr().slice(-500)})`);

    k = await startServer({ dataDir, env });
    kc = client(k.url);
    // the stream's job is ready at once (its lease was released); the POST claim's lease came back
    const r = await claim(kc, q, { node: 'w-b', max: 10 });
    assert.deepEqual(seqsOf(r.body.claimed), [1], 'only the job of the closed stream is claimable');
    assert.equal(r.body.claimed[0].deliveries, 2, 'the delivery on the stream still counts');
    const a = await ack(kc, q, { node: 'w-claim', seqs: [2], lease_ids: [cl.body.claimed[0].lease_id] });
    assert.equal(a.acked, 1, 'the durable claim lease survived the restart with its lease_id');
  });
});
