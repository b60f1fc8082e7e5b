// Term: fail a job for good (docs/QUEUES.md "Term"), through HTTP on a real server with
// SERVICE_WORKERS=2 and every dead-letter topic on the other worker than its queue:
// - held jobs go to the dead-letter topic at once, whatever max_deliveries says, with data,
//   $tag, $node, their meta and the stamps (from, deliveries, src_seq, and reason when given);
//   the reply comes after the move: the queue's state and a diff of the dead-letter topic show
//   it at once; seqs not held (another node, a stale lease id, named twice, absent) are skipped;
// - a /work stream's lease can be termed too; the stream then gets a replacement;
// - with no dead-letter topic the jobs are released: claimable again at once;
// - a dead-letter topic that refuses (full, discard: reject) makes the term 422 with nothing
//   applied: the holder still holds the jobs and can ack them;
// - 400 for bad bodies (empty seqs, batch_too_large over 1000, a reason over 1024 bytes, bad
//   lease_ids), 404 and 409 as the other queue routes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk, namer } from './util.js';
import { ack, appendJobs, claim, counters, diffAll, mkQueue, qstate, seqsOf, BOGUS_LEASE, crossWorkerPair } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const WORKERS = 2;
const name = namer('term');
const { srv, c } = httpSuite({ SERVICE_WORKERS: String(WORKERS) });

function pair(): { q: string; dlq: string } {
  return crossWorkerPair(name('q'), WORKERS);
}

async function term(q: string, body: Record<string, unknown>): Promise<any> {
  const b = assertOk(await c.post(`/v0/topics/${q}/term`, body), 200, `term ${JSON.stringify(body)}`);
  assert.deepEqual(Object.keys(b).sort(), [
    'dead_letter',
    'in_flight',
    'performance',
    'ready',
    'released',
    'skipped',
    'terminated',
    'topic',
  ]);
  return b;
}

test('held jobs go to the dead-letter topic at once, stamped, without spending their retries', async () => {
  const { q, dlq } = pair();
  await mkQueue(c, q, { lease_ms: 60_000, max_deliveries: 5, dead_letter: dlq });
  await appendJobs(c, q, [
    { data: { n: 1 }, tag: 'a', node: 'producer', meta: { trace: 't1' } },
    { data: { n: 2 } },
    { data: { n: 3 } },
    { data: { n: 4 } },
  ]);
  const mine = await claim(c, q, { node: 'w1', max: 3 });
  await claim(c, q, { node: 'w2', max: 1 });
  const [j1, j2, j3] = mine.body.claimed;
  const r = await term(q, {
    node: 'w1',
    seqs: [1, 2, 4, 3, 2, 99],
    lease_ids: [j1.lease_id, j2.lease_id, '', BOGUS_LEASE, '', ''],
    reason: 'bad input ünïcode',
  });
  assert.equal(r.terminated, 2);
  assert.equal(r.released, 0);
  assert.deepEqual(r.skipped, [4, 3, 2, 99], 'another node, a stale token, named twice, absent');
  assert.equal(r.dead_letter, dlq);
  assert.equal(r.in_flight, 2);
  // At once: no waiting, no polling.
  const st = await qstate(c, q);
  assert.equal(st.count, 2);
  assert.deepEqual(st.queue, { ready: 0, in_flight: 2, dead_lettered: 2 });
  const recs = await diffAll(c, dlq, { include_meta: true });
  assert.deepEqual(
    recs.map((x) => x.data),
    [{ n: 1 }, { n: 2 }],
  );
  assert.equal(recs[0].$tag, 'a');
  assert.equal(recs[0].$node, 'producer');
  assert.deepEqual(Object.keys(recs[0].meta), [
    'trace',
    '$dead_letter_from',
    '$dead_letter_deliveries',
    '$dead_letter_src_seq',
    '$dead_letter_reason',
  ]);
  assert.deepEqual(recs[0].meta, {
    trace: 't1',
    $dead_letter_from: q,
    $dead_letter_deliveries: 1,
    $dead_letter_src_seq: 1,
    $dead_letter_reason: 'bad input ünïcode',
  });
  assert.deepEqual(recs[1].meta, {
    $dead_letter_from: q,
    $dead_letter_deliveries: 1,
    $dead_letter_src_seq: 2,
    $dead_letter_reason: 'bad input ünïcode',
  });
  // the jobs left the queue: a settle of them is skipped; j3 is still w1's
  assert.deepEqual((await ack(c, q, { node: 'w1', seqs: [1, 3], lease_ids: [j1.lease_id, j3.lease_id] })).skipped, [1]);
  // without a reason: three stamps
  const t2 = await term(q, { node: 'w2', seqs: [4] });
  assert.equal(t2.terminated, 1);
  const last = (await diffAll(c, dlq, { include_meta: true })).at(-1);
  assert.deepEqual(last.meta, { $dead_letter_from: q, $dead_letter_deliveries: 1, $dead_letter_src_seq: 4 });
  assert.equal((await counters(c, q)).dead_lettered, 3);
});

test('a /work lease can be termed; the stream gets the next job', async () => {
  const { q, dlq } = pair();
  await mkQueue(c, q, { dead_letter: dlq });
  await appendJobs(c, q, 2);
  const ctl = new AbortController();
  const res = await fetch(`${srv.url}/v0/topics/${q}/work?node=s&max=1`, { headers: { accept: 'text/event-stream' }, signal: ctl.signal });
  const reader = res.body!.getReader();
  let text = '';
  const jobs = () => [...text.matchAll(/data: (\{.*\})\n/g)].map((m) => JSON.parse(m[1]!));
  try {
    while (jobs().length < 1) text += new TextDecoder().decode((await reader.read()).value);
    const first = jobs()[0];
    const r = await term(q, { node: 's', seqs: [first.$seq], lease_ids: [first.lease_id] });
    assert.equal(r.terminated, 1);
    while (jobs().length < 2) text += new TextDecoder().decode((await reader.read()).value);
    assert.equal(jobs()[1].$seq, 2);
  } finally {
    ctl.abort();
  }
  assert.deepEqual(
    (await diffAll(c, dlq, { include_meta: true })).map((x) => x.meta.$dead_letter_src_seq),
    [1],
  );
});

test('no dead-letter topic: termed jobs are released, claimable at once', async () => {
  const q = name('nodl');
  await mkQueue(c, q, { lease_ms: 60_000 });
  await appendJobs(c, q, 2);
  await claim(c, q, { node: 'w', max: 2 });
  const r = await term(q, { node: 'w', seqs: [2], reason: 'nowhere to go' });
  assert.deepEqual(
    { terminated: r.terminated, released: r.released, dead_letter: r.dead_letter, ready: r.ready, in_flight: r.in_flight },
    { terminated: 0, released: 1, dead_letter: null, ready: 1, in_flight: 1 },
  );
  const again = await claim(c, q, { node: 'other', max: 5 });
  assert.deepEqual(seqsOf(again.body.claimed), [2]);
  assert.equal(again.body.claimed[0].deliveries, 2);
});

test('a dead-letter topic that refuses: 422 with nothing applied, the holder keeps the jobs', async () => {
  const { q, dlq } = pair();
  assertOk(await c.put(`/v0/topics/${dlq}`, { discard: 'reject', cap_records: 2 }), 201);
  await appendJobs(c, dlq, [{ data: 'blocker' }, { data: 'blocker 2' }]);
  await mkQueue(c, q, { lease_ms: 60_000, dead_letter: dlq });
  await appendJobs(c, q, 2);
  const got = await claim(c, q, { node: 'w', max: 2 });
  const x = await c.post(`/v0/topics/${q}/term`, { node: 'w', seqs: [1, 2] });
  const e = assertError(x, 422, 'topic_full');
  assert.equal(e.topic, dlq, 'the refusal names the dead-letter topic');
  const st = await qstate(c, q);
  assert.equal(st.count, 2);
  assert.deepEqual(st.queue, { ready: 0, in_flight: 2, dead_lettered: 0 });
  assert.deepEqual(
    (await diffAll(c, dlq)).map((r) => r.data),
    ['blocker', 'blocker 2'],
  );
  const a = await ack(c, q, { node: 'w', seqs: [1, 2], lease_ids: got.body.claimed.map((j: any) => j.lease_id) });
  assert.equal(a.acked, 2, "the leases are the holder's as before");
});

test('bad bodies are 400, absent 404, a log topic 409', async () => {
  const q = name('bad');
  await mkQueue(c, q);
  const bad = async (body: unknown, code = 'invalid_request') =>
    assertError(await c.post(`/v0/topics/${q}/term`, body), 400, code, JSON.stringify(body).slice(0, 80));
  await bad({ seqs: [1] });
  await bad({ node: 'w', seqs: [] });
  await bad({ node: 'w', seqs: Array.from({ length: 1001 }, (_, i) => i + 1) }, 'batch_too_large');
  await bad({ node: 'w', seqs: [1], reason: 'x'.repeat(1025) });
  await bad({ node: 'w', seqs: [1], reason: 7 });
  await bad({ node: 'w', seqs: [1], lease_ids: ['nope'] });
  await bad({ node: 'w', seqs: [1, 2], lease_ids: [''] });
  assert.equal((await term(q, { node: 'w', seqs: [1], reason: 'é'.repeat(512) })).skipped.length, 1, '1024 bytes of reason are fine');
  assertError(await c.post(`/v0/topics/${name('absent')}/term`, { node: 'w', seqs: [1] }), 404, 'topic_not_found');
  const log = name('log');
  assertOk(await c.put(`/v0/topics/${log}`, {}), 201);
  assertError(await c.post(`/v0/topics/${log}/term`, { node: 'w', seqs: [1] }), 409, 'not_a_queue');
});
