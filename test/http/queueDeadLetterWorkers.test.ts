// Dead-letter moves across topic workers (docs/QUEUES.md "Dead-lettering", "Job states"; docs/API.md "PUT /v0/topics/:topic"
// max_deliveries / dead_letter; docs/ARCHITECTURE.md "Queues"; ARCHITECTURE.md placement `fnv1a32(name) % workers`):
// on a server with SERVICE_WORKERS=2, for a queue and dead-letter topic placed on DIFFERENT
// workers (a peer request over the worker boundary) and on the SAME worker:
// - max_deliveries 1: claim + nack, and the next claim moves the job instead of returning it;
//   the dead-letter topic then holds it with data, $tag, $node and the three stamps in front of
//   its meta; the queue's dead_lettered is 1 and its count dropped;
// - a `discard: "reject"`, `cap_records: 1` dead-letter topic that is already full refuses the
//   move: the job stays out of ready and in_flight, is not claimable, not lost (still in the
//   queue's log, count unchanged), dead_lettered stays 0, while the move is retried (backoff 50 ms
//   doubling to 2 s); once the test deletes the blocking record (POST …/delete before_seq) the
//   job arrives within a few seconds with nothing else done.
// Waits are polling loops with deadlines; the hold period only checks that nothing changes.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { workerOf } from '../../src/core/names.js';
import { assertOk, namer, sleep } from './util.js';
import { appendJobs, claim, counters, diffAll, eventually, mkQueue, nack, qstate, seqsOf } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const WORKERS = 2;
const name = namer('dlw');
const { c } = httpSuite({ SERVICE_WORKERS: String(WORKERS) });

/** A fresh queue name and a dead-letter name on a different (or the same) worker. */
function pair(sameWorker: boolean): { q: string; dlq: string } {
  const q = name('q');
  for (let i = 0; i < 1000; i++) {
    const dlq = `${q}.dlq${i}`;
    if ((workerOf(q, WORKERS) === workerOf(dlq, WORKERS)) === sameWorker) {
      if (sameWorker) assert.equal(workerOf(q, WORKERS), workerOf(dlq, WORKERS));
      else assert.notEqual(workerOf(q, WORKERS), workerOf(dlq, WORKERS));
      return { q, dlq };
    }
  }
  throw new Error('no suitable dead-letter name found');
}

const LONG = 60_000;
const STAMPS = ['$dead_letter_from', '$dead_letter_deliveries', '$dead_letter_src_seq'];

const POISON = { data: { task: 'poison', n: 1.5 }, tag: 'tag-p', node: 'producer-1', meta: { trace: 'abc', z: 0 } };

/** Claims job 1 (delivery 1) and nacks it; the next claim is due to move it (max_deliveries 1). */
async function deliverOnceAndNack(q: string): Promise<void> {
  const first = await claim(c, q, { node: 'w-a', max: 1 });
  assert.deepEqual(seqsOf(first.body.claimed), [1]);
  assert.equal(first.body.claimed[0].deliveries, 1);
  const n = await nack(c, q, { node: 'w-a', seqs: [1] });
  assert.equal(n.nacked, 1);
}

/** The moved record: data, $tag, $node as the job had them; the stamps first, then the job's meta. */
function checkMoved(rec: any, q: string): void {
  assert.deepEqual(rec.data, POISON.data);
  assert.equal(rec.$tag, POISON.tag);
  assert.equal(rec.$node, POISON.node);
  assert.deepEqual(Object.keys(rec.meta), ['trace', 'z', ...STAMPS], `meta keys of ${JSON.stringify(rec)}`);
  assert.deepEqual({ ...rec.meta }, { $dead_letter_from: q, $dead_letter_deliveries: 1, $dead_letter_src_seq: 1, trace: 'abc', z: 0 });
}

for (const sameWorker of [false, true]) {
  const where = sameWorker ? 'on the same worker' : 'on different workers';

  describe(`queue and dead-letter topic ${where}`, () => {
    test('max_deliveries 1: claim + nack, the next claim moves the job', async () => {
      const { q, dlq } = pair(sameWorker);
      await mkQueue(c, q, { lease_ms: LONG, max_deliveries: 1, dead_letter: dlq });
      await appendJobs(c, q, [POISON, { data: 'healthy' }]);
      await deliverOnceAndNack(q);
      assert.equal((await qstate(c, q)).count, 2);
      const next = await claim(c, q, { node: 'w-b', max: 10 });
      assert.deepEqual(seqsOf(next.body.claimed), [2], 'the poison job is not delivered a second time');
      await eventually(
        async () => {
          const r = await c.get(`/v0/topics/${dlq}?touch=false`);
          if (r.status !== 200) return `dlq ${r.status}`;
          const recs = await diffAll(c, dlq, { include_meta: true });
          return recs.length === 1 || `dlq holds ${recs.length}`;
        },
        10_000,
        'the job in the dead-letter topic',
      );
      const recs = await diffAll(c, dlq, { include_meta: true });
      assert.equal(recs.length, 1);
      checkMoved(recs[0], q);
      await eventually(async () => (await counters(c, q)).dead_lettered === 1, 5000, 'dead_lettered 1');
      const st = await qstate(c, q);
      assert.equal(st.count, 1, 'the moved job left the queue');
      assert.deepEqual(st.queue, { ready: 0, in_flight: 1, dead_lettered: 1 });
      assert.deepEqual(seqsOf(await diffAll(c, q)), [2]);
    });

    test('a full discard:reject dead-letter topic: the move is retried, the job kept, until there is room', async () => {
      const { q, dlq } = pair(sameWorker);
      assertOk(await c.put(`/v0/topics/${dlq}`, { discard: 'reject', cap_records: 1 }), 201, 'PUT dlq');
      await appendJobs(c, dlq, [{ data: 'blocker' }]);
      const full = await c.post(`/v0/topics/${dlq}`, { records: [{ data: 'one more' }] });
      assert.equal(full.status, 422, `the dlq is full: ${full.text}`);
      assert.equal(full.body.error.code, 'topic_full');

      await mkQueue(c, q, { lease_ms: LONG, max_deliveries: 1, dead_letter: dlq });
      await appendJobs(c, q, [POISON]);
      await deliverOnceAndNack(q);
      const next = await claim(c, q, { node: 'w-b', max: 10 });
      assert.equal(next.body.count, 0, 'the claim triggers the move and does not return the job');

      // Hold: for ~1.5 s (covering the 50, 100, 200, 400 and 800 ms retries) nothing changes.
      const holdUntil = Date.now() + 1500;
      let polls = 0;
      while (Date.now() < holdUntil) {
        const st = await qstate(c, q);
        assert.equal(st.count, 1, 'the job is still in the queue');
        assert.deepEqual(st.queue, { ready: 0, in_flight: 0, dead_lettered: 0 }, 'in transit: neither ready nor in flight');
        const cl = await claim(c, q, { node: `w-${polls % 3}`, max: 5 });
        assert.equal(cl.body.count, 0, 'the job is not claimable while its move is retried');
        const d = await qstate(c, dlq);
        assert.equal(d.count, 1, 'the dead-letter topic holds only the blocker');
        polls++;
        await sleep(100);
      }
      assert.ok(polls >= 3, `polled ${polls} times during the hold`);
      const inLog = await diffAll(c, q, { include_meta: true });
      assert.equal(inLog.length, 1, 'the job is not lost');
      assert.deepEqual(inLog[0].data, POISON.data);
      assert.deepEqual(
        (await diffAll(c, dlq)).map((r) => r.data),
        ['blocker'],
      );

      // Make room: delete the blocker. The next retry (at most 2 s away) gets through.
      const del = await c.post(`/v0/topics/${dlq}/delete`, { before_seq: 2 });
      assertOk(del, 200, 'delete the blocker');
      assert.equal(del.body.deleted, 1);
      const t0 = Date.now();
      await eventually(
        async () => (await qstate(c, dlq)).count === 1 && (await diffAll(c, dlq)).length === 1,
        6000,
        'the job in the dead-letter topic after the blocker went',
      );
      const waited = Date.now() - t0;
      const recs = await diffAll(c, dlq, { include_meta: true });
      assert.equal(recs.length, 1);
      assert.equal(recs[0].$seq, 2, 'appended after the deleted blocker');
      checkMoved(recs[0], q);
      await eventually(async () => (await counters(c, q)).dead_lettered === 1, 5000, 'dead_lettered 1');
      const st = await qstate(c, q);
      assert.equal(st.count, 0, 'the job left the queue once it reached the dead-letter topic');
      assert.deepEqual(st.queue, { ready: 0, in_flight: 0, dead_lettered: 1 });
      assert.deepEqual(await diffAll(c, q), []);
      // moved exactly once (no duplicate from the earlier refused attempts)
      await sleep(300);
      assert.equal((await diffAll(c, dlq)).length, 1, 'moved once');
      assert.ok(waited < 6000, `arrived ${waited} ms after the delete`);
    });
  });
}
