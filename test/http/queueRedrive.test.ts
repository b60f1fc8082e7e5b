// Redrive: dead-lettered jobs back into their queue (docs/QUEUES.md "Redrive"), through HTTP on a
// real server with SERVICE_WORKERS=2 and every dead-letter topic on the other worker than its
// queue (the two actors talk over the peer port):
// - all of a queue's dead letters come back as fresh jobs at the end of the queue, data, $tag,
//   $node and meta as the job had them (the $dead_letter_* stamps cut off), claimable with
//   deliveries 1; records of another queue sharing the dead-letter topic, and records without
//   stamps, stay; the reply comes after the move: both topics show it at once;
// - by seq (`skipped` names the seqs not moved), by tag match, `max` with `more`, and more than
//   one internal batch (2,500 jobs) in one call;
// - `from` names another dead-letter topic; no dead_letter and no from, from = the queue, bad
//   bodies: 400; an absent from: 404; a full queue (discard: reject): 422 and nothing moved;
// - two redrives at once move each job once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk, namer } from './util.js';
import { appendJobs, claim, diffAll, mkQueue, qstate, crossWorkerPair } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const WORKERS = 2;
const name = namer('rd');
const { c } = httpSuite({ SERVICE_WORKERS: String(WORKERS) });

function pair(): { q: string; dlq: string } {
  return crossWorkerPair(name('q'), WORKERS);
}

async function redrive(q: string, body: Record<string, unknown> = {}): Promise<any> {
  const b = assertOk(await c.post(`/v0/topics/${q}/redrive`, body), 200, `redrive ${q} ${JSON.stringify(body)}`);
  assert.deepEqual(Object.keys(b).sort(), ['from', 'in_flight', 'more', 'performance', 'ready', 'redriven', 'skipped', 'topic']);
  return b;
}

/** Dead-letters every job of q at once (claim all, term all); returns the seqs. */
async function deadLetterAll(q: string, n: number): Promise<void> {
  for (let left = n; left > 0;) {
    const got = await claim(c, q, { node: 'killer', max: 1000 });
    const seqs = got.body.claimed.map((j: any) => j.$seq);
    const t = assertOk(await c.post(`/v0/topics/${q}/term`, { node: 'killer', seqs }), 200);
    assert.equal(t.terminated, seqs.length);
    left -= seqs.length;
  }
}

const JOBS = [
  // eslint-disable-next-line no-loss-of-precision -- a number past 2^53 must come back as the digits sent
  { data: { n: 1, big: 12345678901234567890 }, tag: 'img', node: 'producer', meta: { trace: 'a', z: [1, { y: 2 }] } },
  { data: 'two', tag: 'pdf' },
  { data: null, tag: 'img' },
];

test("all of a queue's dead letters come back as they were; other records stay; visible at once", async () => {
  const { q, dlq } = pair();
  const other = name('other');
  await mkQueue(c, q, { lease_ms: 60_000, max_deliveries: 1, dead_letter: dlq });
  await mkQueue(c, other, { dead_letter: dlq });
  // The first job's data as raw text: a number beyond 2^53 and an exponent must come back as sent.
  assertOk(
    await c.post(
      `/v0/topics/${q}`,
      `{"records":[{"data":{"n":1,"big":12345678901234567890,"e":1E400},"tag":"img","node":"producer","meta":{"trace":"a","z":[1,{"y":2}]}}]}`,
    ),
    200,
  );
  await appendJobs(c, q, JOBS.slice(1));
  await appendJobs(c, other, [{ data: 'not mine' }]);
  await deadLetterAll(q, 3);
  await deadLetterAll(other, 1);
  await appendJobs(c, dlq, [{ data: 'no stamps', meta: { $dead_letter_from: q } }]);
  assert.equal((await qstate(c, q)).count, 0);
  const r = await redrive(q);
  assert.deepEqual(
    { from: r.from, redriven: r.redriven, skipped: r.skipped, more: r.more, ready: r.ready, in_flight: r.in_flight },
    { from: dlq, redriven: 3, skipped: [], more: false, ready: 3, in_flight: 0 },
  );
  // At once: both topics show the move.
  const back = await diffAll(c, q, { include_meta: true });
  assert.deepEqual(
    back.map((x) => x.$seq),
    [4, 5, 6],
    'fresh seqs at the end of the queue',
  );
  const raw = await c.post(`/v0/topics/${q}/diff`, { from_seq: 3, include_tags: true });
  assert.ok(raw.text.includes('"data":{"n":1,"big":12345678901234567890,"e":1E400}'), `data kept verbatim: ${raw.text.slice(0, 300)}`);
  assert.deepEqual(
    back.map((x) => [x.data === null ? null : typeof x.data, x.$tag, x.$node, x.meta]),
    [
      ['object', 'img', 'producer', { trace: 'a', z: [1, { y: 2 }] }],
      ['string', 'pdf', undefined, undefined],
      [null, 'img', undefined, undefined],
    ],
  );
  const left = await diffAll(c, dlq, { include_meta: true });
  assert.deepEqual(
    left.map((x) => x.data),
    ['not mine', 'no stamps'],
  );
  const got = await claim(c, q, { node: 'w', max: 10 });
  assert.deepEqual(
    got.body.claimed.map((j: any) => j.deliveries),
    [1, 1, 1],
    'a redriven job starts its deliveries again',
  );
  assert.equal((await redrive(q)).redriven, 0, 'nothing left to move');
});

test('by seq, by tag match, max and more', async () => {
  const { q, dlq } = pair();
  await mkQueue(c, q, { lease_ms: 60_000, dead_letter: dlq });
  await appendJobs(c, q, [...JOBS, { data: 4, tag: 'img' }, { data: 5, tag: 'doc' }]);
  await deadLetterAll(q, 5);
  await appendJobs(c, dlq, [{ data: 'foreign' }]); // dlq seq 6
  let r = await redrive(q, { seqs: [2, 6, 4, 99] });
  assert.equal(r.redriven, 2);
  assert.deepEqual(r.skipped, [6, 99], 'a record not from this queue, an absent seq');
  assert.deepEqual(
    (await diffAll(c, q)).map((x) => x.data),
    ['two', 4],
  );
  r = await redrive(q, { match: ['tag', 'Eq', 'img'] });
  assert.equal(r.redriven, 2);
  assert.deepEqual(
    (await diffAll(c, dlq)).map((x) => x.data),
    [5, 'foreign'],
  );
  r = await redrive(q, { match: ['tag', 'Glob', 'zz*'] });
  assert.equal(r.redriven, 0);
  r = await redrive(q, { max: 1 });
  assert.deepEqual([r.redriven, r.more], [1, true]);
  r = await redrive(q, { max: 1 });
  assert.deepEqual([r.redriven, r.more], [0, false]);
});

test("a redrive's counts judge lease expiry first, as the other queue replies do", async () => {
  const { q, dlq } = pair();
  await mkQueue(c, q, { dead_letter: dlq });
  assertOk(await c.put(`/v0/topics/${dlq}`, {}), 201);
  await appendJobs(c, q, [{ data: 1 }, { data: 2 }]);
  assert.equal((await claim(c, q, { node: 'w', max: 1, lease_ms: 100 })).body.claimed.length, 1);
  await new Promise((r) => setTimeout(r, 300)); // the lease expired; no request judged it yet
  const r = await redrive(q, { seqs: [1] });
  assert.deepEqual([r.redriven, r.ready, r.in_flight], [0, 2, 0]);
});

test('2,500 jobs in one call (several batches), and two redrives at once move each job once', async () => {
  const { q, dlq } = pair();
  await mkQueue(c, q, { lease_ms: 60_000, dead_letter: dlq });
  const n = 2500;
  for (let i = 0; i < n; i += 1000)
    await appendJobs(
      c,
      q,
      Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ data: { id: i + k } })),
    );
  await deadLetterAll(q, n);
  const r = await redrive(q);
  assert.equal(r.redriven, n);
  const ids = (await diffAll(c, q)).map((x) => x.data.id);
  assert.equal(new Set(ids).size, n);
  assert.equal((await diffAll(c, dlq)).length, 0);
  // again, dead-letter them all and redrive twice at once, in small steps
  await deadLetterAll(q, n);
  const [a, b] = await Promise.all([redrive(q, { max: 1500 }), redrive(q, { max: 1500 })]);
  assert.equal(a.redriven + b.redriven, n);
  const again = (await diffAll(c, q)).map((x) => x.data.id);
  assert.equal(again.length, n);
  assert.equal(new Set(again).size, n, 'no job twice');
});

test('from, and the refusals', async () => {
  const { q, dlq } = pair();
  await mkQueue(c, q, { lease_ms: 60_000, dead_letter: dlq });
  await appendJobs(c, q, 2);
  await deadLetterAll(q, 2);
  const noDl = name('nodl');
  await mkQueue(c, noDl);
  assertError(await c.post(`/v0/topics/${noDl}/redrive`, {}), 400, 'invalid_request');
  assertError(await c.post(`/v0/topics/${q}/redrive`, { from: q }), 400, 'invalid_request');
  assertError(await c.post(`/v0/topics/${q}/redrive`, { from: name('absent') }), 404, 'topic_not_found');
  for (const bad of [{ seqs: [] }, { seqs: [-1] }, { match: ['tag', 'Glob', 'x'] }, { max: 'x' }, { from: 'bad name' }, { from: 3 }]) {
    assertError(await c.post(`/v0/topics/${q}/redrive`, bad), 400, 'invalid_request', JSON.stringify(bad));
  }
  assertError(await c.post(`/v0/topics/${q}/redrive`, { seqs: Array.from({ length: 10_001 }, (_, i) => i + 1) }), 400, 'batch_too_large');
  // the dead letters of q, moved back by another queue naming q's dead-letter topic: none are its
  const r = await redrive(noDl, { from: dlq });
  assert.equal(r.redriven, 0);
  // a full queue: 422, nothing moved
  const full = name('full');
  await mkQueue(c, full, { dead_letter: dlq, discard: 'reject', cap_records: 1 });
  await appendJobs(c, full, 1);
  await claim(c, full, { node: 'n' });
  assert.equal(assertOk(await c.post(`/v0/topics/${full}/term`, { node: 'n', seqs: [1] }), 200).terminated, 1);
  await appendJobs(c, full, 1); // full again
  const before = await diffAll(c, dlq);
  assertError(await c.post(`/v0/topics/${full}/redrive`, {}), 422, 'topic_full');
  assert.deepEqual((await diffAll(c, dlq)).length, before.length, 'nothing left the dead-letter topic');
  assertError(await c.post(`/v0/topics/${name('absent')}/redrive`, {}), 404, 'topic_not_found');
  // q's own: both come back
  assert.equal((await redrive(q)).redriven, 2);
});
