// Who holds what (docs/QUEUES.md "Leases"): GET /v0/topics/:q/leases on a real server lists the
// queue's live leases ascending by seq: holder node, deliveries, deadline and whether a claim or
// a /work stream took it; pages by from_seq/limit with next_from_seq; filters by node; expired
// and settled leases are gone from it; lease ids are not listed. Errors: 404, 409 not_a_queue,
// 400 for a bad query, 405 for another method.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk, namer, sleep } from './util.js';
import { ack, appendJobs, claim, mkQueue, nack } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('ls');
const { srv, c } = httpSuite();

async function leases(q: string, query = ''): Promise<any> {
  const b = assertOk(await c.get(`/v0/topics/${q}/leases${query}`), 200, `leases ${q}${query}`);
  assert.equal(b.topic, q);
  assert.equal(b.count, b.leases.length);
  for (const l of b.leases) {
    assert.deepEqual(Object.keys(l).sort(), ['$seq', 'deadline', 'deliveries', 'node', 'via']);
    assert.ok(!JSON.stringify(l).includes('lease_'), 'no lease ids');
  }
  return b;
}

test('every live lease: seq, node, deliveries, deadline, via; settled and expired ones are gone', async () => {
  const q = name();
  await mkQueue(c, q, { lease_ms: 60_000 });
  await appendJobs(c, q, 6);
  const a = await claim(c, q, { node: 'alpha', max: 2 });
  const b = await claim(c, q, { node: 'beta', max: 2, lease_ms: 300 });
  // job 1 is nacked and claimed again: its second delivery
  await nack(c, q, { node: 'alpha', seqs: [1] });
  const again = await claim(c, q, { node: 'gamma', max: 1 });
  assert.equal(again.body.claimed[0].$seq, 1);
  let l = await leases(q);
  assert.deepEqual(
    l.leases.map((x: any) => [x.$seq, x.node, x.deliveries, x.via]),
    [
      [1, 'gamma', 2, 'claim'],
      [2, 'alpha', 1, 'claim'],
      [3, 'beta', 1, 'claim'],
      [4, 'beta', 1, 'claim'],
    ],
  );
  assert.equal(l.leases[1].deadline, a.body.claimed[1].deadline);
  assert.equal(l.leases[2].deadline, b.body.claimed[0].deadline);
  assert.equal(l.in_flight, 4);
  assert.equal(l.ready, 2);
  assert.equal(l.delayed, 0);
  assert.equal(l.next_from_seq, undefined);
  await ack(c, q, { node: 'alpha', seqs: [2] });
  await sleep(400); // beta's 300 ms leases run out
  l = await leases(q);
  assert.deepEqual(
    l.leases.map((x: any) => x.$seq),
    [1],
  );
  assert.equal(l.in_flight, 1);
  assert.equal(l.ready, 4);
});

test('pages by from_seq and limit; filters by node; /work leases say so', async () => {
  const q = name();
  await mkQueue(c, q, { lease_ms: 60_000 });
  await appendJobs(c, q, 7);
  await claim(c, q, { node: 'n1', max: 3 });
  await claim(c, q, { node: 'n2', max: 2 });
  const ctl = new AbortController();
  const res = await fetch(`${srv.url}/v0/topics/${q}/work?node=streamer&max=2`, {
    headers: { accept: 'text/event-stream' },
    signal: ctl.signal,
  });
  const reader = res.body!.getReader();
  let text = '';
  while ((text.match(/event: job/g) ?? []).length < 2) text += new TextDecoder().decode((await reader.read()).value);
  try {
    const p1 = await leases(q, '?limit=3');
    assert.deepEqual(
      p1.leases.map((x: any) => x.$seq),
      [1, 2, 3],
    );
    assert.equal(p1.next_from_seq, 3);
    const p2 = await leases(q, `?limit=3&from_seq=${p1.next_from_seq}`);
    assert.deepEqual(
      p2.leases.map((x: any) => x.$seq),
      [4, 5, 6],
    );
    const p3 = await leases(q, `?limit=3&from_seq=${p2.next_from_seq}`);
    assert.deepEqual(
      p3.leases.map((x: any) => [x.$seq, x.node, x.via]),
      [[7, 'streamer', 'work']],
    );
    assert.equal(p3.next_from_seq, undefined);
    const n2 = await leases(q, '?node=n2');
    assert.deepEqual(
      n2.leases.map((x: any) => x.$seq),
      [4, 5],
    );
    assert.equal(n2.in_flight, 7, 'in_flight counts every lease');
    assert.deepEqual((await leases(q, '?node=nobody')).leases, []);
    assert.equal((await leases(q, '?limit=0')).count, 7, 'limit 0 means the default');
  } finally {
    ctl.abort();
  }
  // the stream closed: its leases are released at once
  await sleep(200);
  assert.deepEqual(
    (await leases(q)).leases.map((x: any) => x.$seq),
    [1, 2, 3, 4, 5],
  );
});

test('errors: absent topic 404, log topic 409, bad query 400, POST 405', async () => {
  assertError(await c.get(`/v0/topics/${name('absent')}/leases`), 404, 'topic_not_found');
  const log = name('log');
  assertOk(await c.put(`/v0/topics/${log}`, {}), 201);
  assertError(await c.get(`/v0/topics/${log}/leases`), 409, 'not_a_queue');
  const q = name();
  await mkQueue(c, q);
  for (const bad of ['limit=-1', 'limit=x', 'from_seq=1.5', `node=${'x'.repeat(200)}`])
    assertError(await c.get(`/v0/topics/${q}/leases?${bad}`), 400, 'invalid_request', bad);
  assert.equal((await c.post(`/v0/topics/${q}/leases`, {})).status, 405);
});
