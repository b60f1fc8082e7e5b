// Resource caps of docs/API.md "Limits" over HTTP, at and past the edge: SERVICE_MAX_TOPICS,
// SERVICE_MAX_TOTAL_BYTES, SERVICE_MAX_INFLIGHT_PER_KEY, SERVICE_MAX_SSE_CONNECTIONS_PER_KEY.
// A refusal is 429 throttled, Retry-After: 1, detail {limit, max}, and applies nothing.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { req, Resp } from '../helpers/server.js';
import { openStream, SseStream } from '../helpers/sse.js';
import { httpSuite } from '../support/httpSuite.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function assertCap(r: { status: number; body: any; headers?: Headers | Record<string, unknown> }, limit: string, max: number): void {
  assert.equal(r.status, 429, JSON.stringify(r.body));
  assert.equal(r.body.error.code, 'throttled');
  assert.deepEqual(r.body.error.detail, { limit, max });
  const h =
    r.headers instanceof Headers ? r.headers.get('retry-after') : (r.headers as Record<string, unknown> | undefined)?.['retry-after'];
  assert.equal(h, '1');
}

describe('dev mode caps', () => {
  const { srv } = httpSuite({ SERVICE_MAX_TOPICS: '2', SERVICE_MAX_TOTAL_BYTES: '1000', SERVICE_WORKERS: '2' });
  const c = (m: string, p: string, b?: unknown): Promise<Resp> => req(srv.url, m, p, b);

  test('max_topics: the cap-th topic is created, the next is not; updates still work', async () => {
    assert.equal((await c('PUT', '/v0/topics/cap.a', {})).status, 201);
    assert.equal((await c('PUT', '/v0/topics/cap.b', {})).status, 201);
    assertCap(await c('PUT', '/v0/topics/cap.c', {}), 'max_topics', 2);
    assertCap(await c('POST', '/v0/topics/cap.c', { records: [{ data: 1 }] }), 'max_topics', 2);
    assert.equal((await c('GET', '/v0/topics/cap.c')).status, 404, 'nothing created');
    assert.equal((await c('PUT', '/v0/topics/cap.a', { cap_records: 10 })).status, 200, 'an update at the cap');
    assert.equal((await c('DELETE', '/v0/topics/cap.b')).status, 200);
    assert.equal((await c('PUT', '/v0/topics/cap.c', {})).status, 201, 'a freed slot is reused');
  });

  test('max_total_bytes: appends are refused once live bytes reach the cap, nothing applied', async () => {
    const data = 'x'.repeat(598); // 600 bytes as stored JSON text
    assert.equal((await c('POST', '/v0/topics/cap.a', { records: [{ data }] })).status, 200);
    await sleep(300); // the workers' sample
    assert.equal((await c('POST', '/v0/topics/cap.a', { records: [{ data: 'y'.repeat(398) }] })).status, 200, '600 < 1000: accepted');
    await sleep(300);
    const head = (await c('GET', '/v0/topics/cap.a?touch=false')).body.head_seq;
    assertCap(await c('POST', '/v0/topics/cap.a', { records: [{ data: 1 }] }), 'max_total_bytes', 1000);
    assertCap(await c('POST', '/v0/topics/cap.c', { records: [{ data: 1 }], disable_backpressure: true }), 'max_total_bytes', 1000);
    assert.equal((await c('GET', '/v0/topics/cap.a?touch=false')).body.head_seq, head, 'nothing applied');
    assert.equal((await c('POST', '/v0/topics/cap.a/delete', { before_seq: head })).status, 200);
    await sleep(300);
    assert.equal((await c('POST', '/v0/topics/cap.a', { records: [{ data: 1 }] })).status, 200, 'room again after a delete');
  });
});

describe('per-key caps', () => {
  const A = { authorization: 'Bearer cap-key-a' };
  const B = { authorization: 'Bearer cap-key-b' };
  const streams: SseStream[] = [];
  // Registered before the server's hooks, so it runs first: the streams close before the server stops.
  after(async () => {
    await Promise.all(streams.map((s) => s.close()));
  });
  const env = {
    SERVICE_API_KEYS: 'cap-key-a, cap-key-b',
    SERVICE_MAX_INFLIGHT_PER_KEY: '2',
    SERVICE_MAX_SSE_CONNECTIONS_PER_KEY: '1',
    SERVICE_WORKERS: '1',
  };
  const { srv } = httpSuite(env, async () => {
    assert.equal((await req(srv.url, 'PUT', '/v0/topics/pk.log', {}, A)).status, 201);
    assert.equal((await req(srv.url, 'PUT', '/v0/topics/pk.q', { type: 'queue' }, A)).status, 201);
  });

  test('max_inflight_per_key: two long-polls of key A hold its slots; B is not affected', async () => {
    const polls = [1, 2].map(() => req(srv.url, 'POST', '/v0/topics/pk.log/diff', { wait_ms: 1500 }, A));
    await sleep(300);
    const refused = await req(srv.url, 'GET', '/v0/topics/pk.log', undefined, A);
    assertCap(refused, 'max_inflight_per_key', 2);
    assert.equal((await req(srv.url, 'GET', '/v0/topics/pk.log', undefined, B)).status, 200);
    for (const p of await Promise.all(polls)) assert.equal(p.status, 200);
    assert.equal((await req(srv.url, 'GET', '/v0/topics/pk.log', undefined, A)).status, 200, 'slots freed when the requests end');
  });

  test('max_sse_connections_per_key: watch streams charged to the creating key, /work to the opener', async () => {
    const w1 = await req(srv.url, 'POST', '/v0/watch', { topics: { 'pk.log': {} } }, A);
    const w2 = await req(srv.url, 'POST', '/v0/watch', { topics: { 'pk.log': {} } }, A);
    const s1 = await openStream(srv.url, w1.body.wid, { headers: A });
    streams.push(s1);
    assert.equal(s1.status, 200);
    assertCap(await openStream(srv.url, w2.body.wid, { headers: A }), 'max_sse_connections_per_key', 1);
    assertCap(
      await openStream(srv.url, '', { path: '/v0/topics/pk.q/work', query: { node: 'n1' }, headers: A }),
      'max_sse_connections_per_key',
      1,
    );
    const sb = await openStream(srv.url, '', { path: '/v0/topics/pk.q/work', query: { node: 'n2' }, headers: B });
    streams.push(sb);
    assert.equal(sb.status, 200, 'key B has its own count');
    assert.equal((await req(srv.url, 'GET', '/v0/topics/pk.log', undefined, A)).status, 200, 'streams are not inflight requests');
    await s1.close();
    await sleep(100);
    const again = await openStream(srv.url, w2.body.wid, { headers: A });
    streams.push(again);
    assert.equal(again.status, 200, 'the slot came back when the stream closed');
  });
});
