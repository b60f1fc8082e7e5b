// Blocking claims (docs/QUEUES.md "Requests", `wait_ms`) through HTTP on a real server: a claim
// that finds nothing claimable waits until a job becomes claimable (appended, nacked, its nack
// delay or another holder's lease running out, a /work stream closing) and answers as soon as
// it got one; at the end of its wait it answers with count 0. Waiting claims are served first
// come first served, with a jitter window too; a queue deleted meanwhile answers 404; a wrong
// wait_ms type is 400; an ordinary claim (no wait_ms) still answers at once. A claim whose client
// leaves while it waits (for jobs, or in a jitter window) takes no job.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { assertError, assertOk, namer, sleep } from './util.js';
import { appendJobs, claim, mkQueue, nack, seqsOf } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('cw');
const { srv, c } = httpSuite();

test('a claim with nothing claimable answers at once without wait_ms, and after wait_ms with it', async () => {
  const q = name();
  await mkQueue(c, q);
  const t0 = Date.now();
  assert.equal((await claim(c, q, { node: 'w' })).body.count, 0);
  assert.ok(Date.now() - t0 < 200, 'no wait_ms: at once');
  const w = await claim(c, q, { node: 'w', wait_ms: 400 });
  assert.equal(w.body.count, 0);
  assert.ok(w.t1 - w.t0 >= 390, `waited ${w.t1 - w.t0} ms`);
  assert.ok(w.t1 - w.t0 < 2000, `waited ${w.t1 - w.t0} ms`);
});

test('a waiting claim gets a job appended meanwhile, at once', async () => {
  const q = name();
  await mkQueue(c, q);
  const waiting = claim(c, q, { node: 'w', max: 5, wait_ms: 10_000 });
  await sleep(300);
  const appendedAt = Date.now();
  await appendJobs(c, q, [{ data: 'late' }, { data: 'later' }]);
  const r = await waiting;
  assert.deepEqual(seqsOf(r.body.claimed), [1, 2]);
  assert.deepEqual(
    r.body.claimed.map((j: any) => j.data),
    ['late', 'later'],
  );
  assert.equal(r.body.claimed[0].deliveries, 1);
  assert.ok(r.t1 - appendedAt < 1000, `answered ${r.t1 - appendedAt} ms after the append`);
});

test('nacks, nack delays, expired leases and closed /work streams wake waiting claims', async () => {
  const q = name();
  await mkQueue(c, q, { lease_ms: 600 });
  await appendJobs(c, q, 1);
  assert.deepEqual(seqsOf((await claim(c, q, { node: 'a' })).body.claimed), [1]);
  // nack (no delay) while b waits
  let waiting = claim(c, q, { node: 'b', wait_ms: 10_000 });
  await sleep(150);
  assert.equal((await nack(c, q, { node: 'a', seqs: [1] })).nacked, 1);
  let r = await waiting;
  assert.deepEqual(seqsOf(r.body.claimed), [1]);
  assert.equal(r.body.claimed[0].deliveries, 2);
  // nack with a delay: the claim answers once the delay elapsed (the wake timer, no request)
  assert.equal((await nack(c, q, { node: 'b', seqs: [1], delay_ms: 500 })).nacked, 1);
  waiting = claim(c, q, { node: 'c', wait_ms: 10_000 });
  r = await waiting;
  assert.deepEqual(seqsOf(r.body.claimed), [1]);
  assert.ok(r.t1 - r.t0 >= 400 && r.t1 - r.t0 < 2500, `delay: answered after ${r.t1 - r.t0} ms`);
  // c's lease (600 ms) runs out: d gets the job without anyone asking in between
  r = await claim(c, q, { node: 'd', wait_ms: 10_000 });
  assert.deepEqual(seqsOf(r.body.claimed), [1]);
  assert.equal(r.body.claimed[0].deliveries, 4);
  assert.ok(r.t1 - r.t0 >= 300 && r.t1 - r.t0 < 2500, `expiry: answered after ${r.t1 - r.t0} ms`);
});

test('waiting claims are served in arrival order, each as soon as there is a job for it', async () => {
  const q = name();
  await mkQueue(c, q);
  const first = claim(c, q, { node: 'first', max: 1, wait_ms: 10_000 });
  await sleep(100);
  const second = claim(c, q, { node: 'second', max: 1, wait_ms: 10_000 });
  await sleep(100);
  await appendJobs(c, q, [{ data: 'one' }]);
  const r1 = await first;
  assert.deepEqual(seqsOf(r1.body.claimed), [1]);
  const raced = await Promise.race([second.then(() => 'answered'), sleep(300).then(() => 'waiting')]);
  assert.equal(raced, 'waiting', 'the second claim still waits: there was one job');
  await appendJobs(c, q, [{ data: 'two' }]);
  assert.deepEqual(seqsOf((await second).body.claimed), [2]);
});

test('a jitter window serves waiting claims too', async () => {
  const q = name();
  await mkQueue(c, q, { claim_jitter_ms: 100 });
  const waiting = [claim(c, q, { node: 'a', max: 2, wait_ms: 10_000 }), claim(c, q, { node: 'b', max: 2, wait_ms: 10_000 })];
  await sleep(300);
  await appendJobs(c, q, 4);
  const got = (await Promise.all(waiting)).map((r) => r.body.count);
  assert.deepEqual(got, [2, 2]);
});

/** Sends a claim on a raw socket and destroys the socket after `ms`: a client that gave up. */
async function claimAndLeave(q: string, body: Record<string, unknown>, ms: number): Promise<void> {
  const text = JSON.stringify(body);
  const s = net.connect(Number(new URL(srv.url).port), '127.0.0.1');
  s.on('error', () => undefined);
  await new Promise<void>((r) => s.once('connect', () => r()));
  s.write(
    `POST /v0/topics/${q}/claim HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
  await sleep(ms);
  s.destroy();
  await sleep(100); // its cancel reaches the worker
}

test('a waiting claim whose client left takes no job: the next jobs go to live workers', async () => {
  const q = name();
  await mkQueue(c, q, { max_deliveries: 1, dead_letter: name('dlq') });
  for (let i = 0; i < 3; i++) await claimAndLeave(q, { node: 'gone', max: 10, wait_ms: 30_000, lease_ms: 60_000 }, 200);
  await appendJobs(c, q, [{ data: 'important' }]);
  const st = assertOk(await c.get(`/v0/topics/${q}`), 200);
  assert.deepEqual([st.queue.ready, st.queue.in_flight], [1, 0]);
  const got = await claim(c, q, { node: 'live' });
  assert.deepEqual(
    got.body.claimed.map((j: any) => [j.data, j.deliveries]),
    [['important', 1]],
  );
});

test('a claim in a jitter window whose client left takes no job', async () => {
  const q = name();
  await mkQueue(c, q, { claim_jitter_ms: 1500 });
  await appendJobs(c, q, 5);
  await claimAndLeave(q, { node: 'gone', max: 10 }, 200);
  await sleep(1600); // past the window
  const st = assertOk(await c.get(`/v0/topics/${q}`), 200);
  assert.deepEqual([st.queue.ready, st.queue.in_flight], [5, 0]);
});

test('a /work stream closing gives its jobs to a waiting claim', async () => {
  const q = name();
  await mkQueue(c, q);
  await appendJobs(c, q, 1);
  const ctl = new AbortController();
  const res = await fetch(`${srv.url}/v0/topics/${q}/work?node=streamer`, { headers: { accept: 'text/event-stream' }, signal: ctl.signal });
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('event: job')) text += new TextDecoder().decode((await reader.read()).value);
  const waiting = claim(c, q, { node: 'poller', wait_ms: 10_000 });
  await sleep(200);
  ctl.abort();
  const r = await waiting;
  assert.deepEqual(seqsOf(r.body.claimed), [1]);
});

test('a queue deleted while a claim waits answers 404; a bad wait_ms is 400', async () => {
  const q = name();
  await mkQueue(c, q);
  const waiting = c.post(`/v0/topics/${q}/claim`, { node: 'w', wait_ms: 10_000 });
  await sleep(200);
  assert.equal((await c.del(`/v0/topics/${q}`)).status, 200);
  assertError(await waiting, 404, 'topic_not_found');
  const q2 = name();
  await mkQueue(c, q2);
  for (const bad of [-1, 1.5, '100', null])
    assertError(await c.post(`/v0/topics/${q2}/claim`, { node: 'w', wait_ms: bad }), 400, 'invalid_request');
  // over the clamp: accepted (clamped to 30 s, as on diff); a job is there, so it answers at once
  await appendJobs(c, q2, 1);
  assert.equal((await claim(c, q2, { node: 'w', wait_ms: 10 ** 9 })).body.count, 1);
});
