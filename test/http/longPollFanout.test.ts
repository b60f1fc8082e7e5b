// Many long-polls woken by one append (docs/API.md diff `wait_ms`), through HTTP: every waiter gets
// the same records and the same headers a lone diff gets, gzip where it asked for it and the body
// is big enough, and the append that woke them is answered before the fan-out, while the server
// keeps answering other requests (docs/ARCHITECTURE.md "Thread crossings").
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import zlib from 'node:zlib';
import { namer, sleep } from './util.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('lpfan');
const { srv, c } = httpSuite();

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** hrtime (ns) when the whole reply was read. */
  doneNs: bigint;
}

/** One request on its own connection (no agent), the reply read raw. */
function rawRequest(method: string, p: string, body?: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: '127.0.0.1',
        port: srv.port,
        method,
        path: p,
        agent: false,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), doneNs: process.hrtime.bigint() }),
        );
        res.on('error', reject);
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}

const diff = (t: string, fromSeq: number, headers: Record<string, string> = {}) =>
  rawRequest('POST', `/v0/topics/${t}/diff`, JSON.stringify({ from_seq: fromSeq, wait_ms: 20000 }), headers);

/** The body without its per-request performance block. */
function withoutPerf(b: Buffer): Record<string, unknown> {
  const j = JSON.parse(b.toString('utf8')) as Record<string, unknown>;
  assert.equal(typeof (j.performance as { server_total_ms?: unknown })?.server_total_ms, 'number');
  delete j.performance;
  return j;
}

/** Header names and the values that do not vary per request. */
function headerShape(h: http.IncomingHttpHeaders): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h)) out[k] = k === 'x-request-id' || k === 'date' || k === 'content-length' ? typeof v : v;
  return out;
}

/**
 * Time for the server to read and park every long-poll sent (there is no count of parked
 * long-polls to wait on); one not parked yet would answer the append's record at once.
 */
const parked = () => sleep(1500);

/** `spool_long_polls_waiting` on /v0/metrics. */
async function waiting(): Promise<number> {
  const r = await rawRequest('GET', '/v0/metrics');
  const m = /^spool_long_polls_waiting (\d+)$/m.exec(r.body.toString('utf8'));
  assert.ok(m, 'spool_long_polls_waiting is reported');
  return Number(m[1]);
}

/** Polls `f` every 50 ms until it is true; false after `ms`. */
async function within(ms: number, f: () => Promise<boolean>): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(50)) if (await f()) return true;
  return f();
}

describe('long-poll fan-out', () => {
  test('300 waiters woken by one append: the same records and headers as a lone diff', async () => {
    const t = name('same');
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 'first' }] })).status, 201);
    const waiters = Array.from({ length: 300 }, () => diff(t, 1));
    await parked();
    const a = await c.post(`/v0/topics/${t}`, { records: [{ data: { n: 2 } }] });
    assert.equal(a.status, 200, a.text);
    const got = await Promise.all(waiters);
    // A diff that did not wait, for the reference body and headers.
    const lone = await rawRequest('POST', `/v0/topics/${t}/diff`, JSON.stringify({ from_seq: 1 }));
    const want = withoutPerf(lone.body);
    assert.deepEqual(
      (want.records as { $seq: number }[]).map((r) => r.$seq),
      [2],
    );
    for (const r of got) {
      assert.equal(r.status, 200);
      assert.deepEqual(withoutPerf(r.body), want);
      assert.deepEqual(headerShape(r.headers), headerShape(lone.headers));
      assert.equal(Number(r.headers['content-length']), r.body.length);
    }
    assert.equal(new Set(got.map((r) => r.headers['x-request-id'])).size, got.length, 'each reply carries its own request id');
  });

  test('a gzip-accepting waiter gets gzip when the body is over the threshold; the others plain', async () => {
    const t = name('gzip');
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 'first' }] })).status, 201);
    const zipped = Array.from({ length: 20 }, () => diff(t, 1, { 'accept-encoding': 'gzip' }));
    const plain = Array.from({ length: 20 }, () => diff(t, 1));
    await parked();
    const big = 'x'.repeat(4000);
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: big }] })).status, 200);
    for (const r of await Promise.all(zipped)) {
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-encoding'], 'gzip');
      const j = JSON.parse(zlib.gunzipSync(r.body).toString('utf8'));
      assert.equal(j.records[0].data, big);
      assert.equal(j.next_from_seq, 2);
    }
    for (const r of await Promise.all(plain)) {
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-encoding'], undefined);
      assert.equal(JSON.parse(r.body.toString('utf8')).records[0].data, big);
    }
  });

  test('a client gone while parked frees its long-poll at once, not at wait_ms', async () => {
    const t = name('gone');
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 'first' }] })).status, 201);
    const r = http.request({
      host: '127.0.0.1',
      port: srv.port,
      method: 'POST',
      path: `/v0/topics/${t}/diff`,
      agent: false,
      headers: { 'content-type': 'application/json' },
    });
    r.on('error', () => {}); // destroyed below
    r.end(JSON.stringify({ from_seq: 1, wait_ms: 20000 }));
    assert.ok(await within(5000, async () => (await waiting()) === 1), 'the long-poll is counted while parked');
    r.destroy();
    assert.ok(await within(3000, async () => (await waiting()) === 0), 'freed well before its wait_ms (20 s)');
    // The topic and the server go on: a new long-poll parks and is woken.
    const w = diff(t, 1);
    await parked();
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 'next' }] })).status, 200);
    const got = await w;
    assert.equal(got.status, 200);
    assert.equal(JSON.parse(got.body.toString('utf8')).next_from_seq, 2);
    assert.equal(await waiting(), 0);
  });

  test('a client gone while a router drain holds its diff back is not parked after the drain', async () => {
    const src = name('drainsrc');
    const dst = name('draindst');
    const r = await c.put(`/v0/routers/${name('drainr')}`, { source: src, dest: dst });
    assert.equal(r.status, 201, r.text);
    // A backlog for the router to forward: a diff on dst drains it (read-your-writes) before the
    // diff reaches dst's worker, and the client leaves meanwhile.
    const batches = 10;
    const records = Array.from({ length: 10_000 }, (_, i) => ({ data: { i, pad: 'p'.repeat(200) } }));
    const body = JSON.stringify({ records });
    const appends = await Promise.all(Array.from({ length: batches }, () => rawRequest('POST', `/v0/topics/${src}`, body)));
    for (const a of appends) assert.ok(a.status === 200 || a.status === 201, a.body.toString());
    const lastSeq = batches * records.length;
    const poll = http.request({
      host: '127.0.0.1',
      port: srv.port,
      method: 'POST',
      path: `/v0/topics/${dst}/diff`,
      agent: false,
      headers: { 'content-type': 'application/json' },
    });
    poll.on('error', () => {}); // destroyed below
    poll.end(JSON.stringify({ from_seq: lastSeq, wait_ms: 20000 }));
    // A plain diff sent with it: its answer marks the end of a drain that began with the long-poll's.
    const plain = rawRequest('POST', `/v0/topics/${dst}/diff`, JSON.stringify({ from_seq: lastSeq }));
    assert.ok(await within(2000, async () => (await waiting()) === 1), 'the long-poll reached its route');
    poll.destroy();
    const goneNs = process.hrtime.bigint();
    const p = await plain;
    assert.equal(p.status, 200);
    assert.ok(p.doneNs > goneNs, `the drain ended before the client left (${Number(goneNs - p.doneNs) / 1e6} ms): nothing tested`);
    assert.equal(JSON.parse(p.body.toString('utf8')).head_seq, lastSeq, 'the drain forwarded the whole backlog');
    assert.ok(await within(3000, async () => (await waiting()) === 0), 'freed well before its wait_ms (20 s)');
  });

  test('the waking append is answered before the fan-out, and other requests are answered during it', async () => {
    const t = name('order');
    assert.equal((await c.post(`/v0/topics/${t}`, { records: [{ data: 'first' }] })).status, 201);
    const waiters = Array.from({ length: 1000 }, () => diff(t, 1));
    await parked();
    const a = await rawRequest('POST', `/v0/topics/${t}`, JSON.stringify({ records: [{ data: 'wake' }] }));
    assert.equal(a.status, 200);
    // Sent once the ack is in, while the waiters' replies are still being written.
    const probe = await rawRequest('GET', '/v0/health');
    assert.equal(probe.status, 200);
    const done = (await Promise.all(waiters))
      .map((r) => (assert.equal(r.status, 200), r.doneNs))
      .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const median = done[done.length >> 1]!;
    assert.ok(a.doneNs < median, `the append's ack came ${Number(a.doneNs - median) / 1e6} ms after the median waiter's reply`);
    assert.ok(probe.doneNs < done[done.length - 1]!, 'a health probe sent after the ack was answered before the last waiter');
  });
});
