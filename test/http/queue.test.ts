// Queue topics over HTTP: claim, ack, nack and extend against a spawned server (docs/QUEUES.md;
// docs/API.md "Queues", "PUT /v0/topics/:topic" queue fields, "GET /v0/topics/:topic", "Topic
// lifecycle"):
// - every row of the docs/QUEUES.md "Job states" job state table: new → Ready; claim → Leased (lease_id format,
//   deadline = claim time + lease_ms, deliveries from 1); ack by the holder removes the job
//   (counters, diff skips it silently); ack by another node or with a stale lease_id is skipped;
//   nack → Ready (deliveries + 1 on the next claim); nack with delay_ms (in neither ready nor
//   in_flight until it elapses); extend sets (not adds) the deadline, deliveries unchanged;
//   lease expiry (lazy) makes the job claimable and fences the old holder even before anyone
//   reclaims it; reclaimed jobs are served before fresh ones;
// - stale-token fencing when a job is re-delivered to the same node;
// - dead-lettering (max_deliveries + dead_letter: the moved record, its meta stamps, counters,
//   the dead-letter topic created with the default config) and redelivery forever without it;
// - claim_jitter_ms cohorts: one pass per window, jobs dealt in proportion to each claimer's max;
// - the `queue` counters of GET /v0/topics/:q through a scripted sequence, and in ack/nack replies;
// - ack durability: performance.fsync_ms / wal_append_ms on fsync and disk queues;
// - diff and watch on a queue never claim, ack or touch leases.
// Timing: windows, not exact instants; waits are polling loops with deadlines of seconds.
import { test, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { openStream, SseStream } from '../helpers/sse.js';
import { assertFullConfig, assertOk, namer, DEFAULT_CONFIG } from './util.js';
import {
  ack,
  appendJobs,
  assertDeadline,
  BOGUS_LEASE,
  CLOCK_SLACK_MS,
  claim,
  claimWhenReady,
  counters,
  diffAll,
  eventually,
  extend,
  LEASE_RE,
  mkQueue,
  nack,
  qstate,
  seqsOf,
  sleepPast,
} from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('q');
const { srv, c } = httpSuite({ SERVICE_WORKERS: '2', SERVICE_WAL_SYNC_INTERVAL_MS: '50' });

const open: SseStream[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

const LONG = 60_000;
/** Slack for comparing a client-measured elapsed time with a server-side window. */
const CLOCK_MARGIN = 30;

async function queue(config: Record<string, unknown> = {}, label = 'q'): Promise<string> {
  const t = name(label);
  await mkQueue(c, t, config);
  return t;
}

// ---- docs/QUEUES.md "Job states", row by row ---------------------------------------------------------------------

describe('job states (docs/QUEUES.md "Job states")', () => {
  test('(new) → Ready: an appended job is counted in ready and is claimable', async () => {
    const q = await queue();
    const s0 = await qstate(c, q);
    assert.equal(s0.type, 'queue');
    assert.deepEqual(s0.queue, { ready: 0, in_flight: 0, dead_lettered: 0 }, 'a new queue');
    assert.equal(s0.count, 0);
    const seqs = await appendJobs(c, q, 2);
    assert.deepEqual(seqs, [1, 2], 'jobs get seqs like any record');
    const s1 = await qstate(c, q);
    assert.deepEqual(s1.queue, { ready: 2, in_flight: 0, dead_lettered: 0 });
    assert.equal(s1.count, 2);
    assert.equal(s1.head_seq, 2);
    const cl = await claim(c, q, { node: 'w-a', max: 5 });
    assert.deepEqual(seqsOf(cl.body.claimed), [1, 2]);
  });

  test('Ready → Leased: lease_id, deadline = claim time + lease_ms, deliveries 1, the job as stored', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, [
      { data: { k: 1, s: 'x' }, tag: 'tag-1', node: 'producer-1', meta: { m: 1, n: 'two' } },
      { data: 'two' },
      { data: null },
      { data: [1, 2, 3], tag: 'tag-4' },
    ]);
    const cl = await claim(c, q, { node: 'w-a', max: 2 });
    const [j1, j2] = cl.body.claimed;
    assert.equal(cl.body.count, 2);
    assert.equal(cl.body.ready, 2, 'ready after the claim: the two jobs still waiting');
    assert.deepEqual(seqsOf(cl.body.claimed), [1, 2]);
    // the job as appended: data, $tag, $node, meta (QUEUES.md "Requests": claimed)
    assert.deepEqual(j1.data, { k: 1, s: 'x' });
    assert.equal(j1.$tag, 'tag-1', '$tag is returned when set');
    assert.equal(j1.$node, 'producer-1', '$node is returned when set');
    assert.deepEqual(j1.meta, { m: 1, n: 'two' }, 'meta is returned when set');
    assert.equal(j2.data, 'two');
    for (const k of ['$tag', '$node', 'meta']) assert.ok(!(k in j2), `${k} absent on a job without it`);
    for (const j of [j1, j2]) {
      assert.match(j.lease_id, LEASE_RE);
      assert.equal(j.deliveries, 1, 'first delivery');
      assertDeadline(j.deadline, cl.t0, cl.t1, LONG, `seq ${j.$seq}: topic lease_ms`);
      assert.ok(Math.abs(j.$ts - Date.now()) < 60_000, '$ts is the append time in ms');
    }
    assert.notEqual(j1.lease_id, j2.lease_id, 'every lease gets its own id');
    assert.deepEqual(await counters(c, q), { ready: 2, in_flight: 2, dead_lettered: 0 });

    // an explicit lease_ms overrides the topic's
    const cl2 = await claim(c, q, { node: 'w-b', max: 1, lease_ms: 5000 });
    assert.deepEqual(seqsOf(cl2.body.claimed), [3]);
    assert.equal(cl2.body.claimed[0].data, null, 'data null is returned as null');
    assertDeadline(cl2.body.claimed[0].deadline, cl2.t0, cl2.t1, 5000, 'lease_ms 5000');
    assert.equal(cl2.body.ready, 1);
    const cl3 = await claim(c, q, { node: 'w-b', max: 10 });
    assert.deepEqual(seqsOf(cl3.body.claimed), [4]);
    assert.equal(cl3.body.claimed[0].$tag, 'tag-4');
    assert.equal(cl3.body.ready, 0);
    // nothing left: count 0 is not an error
    const empty = await claim(c, q, { node: 'w-c', max: 10 });
    assert.deepEqual(empty.body.claimed, []);
    assert.equal(empty.body.count, 0);
    assert.equal(empty.body.ready, 0);
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 4, dead_lettered: 0 });
  });

  test('Leased → Removed by an ack of the holder: counters drop, diff skips it silently, never claimable again', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 3);
    const cl = await claim(c, q, { node: 'w-a', max: 3 });
    const lid = new Map<number, string>(cl.body.claimed.map((j: any) => [j.$seq, j.lease_id]));

    const a2 = await ack(c, q, { node: 'w-a', seqs: [2], lease_ids: [lid.get(2)] });
    assert.equal(a2.acked, 1);
    assert.deepEqual(a2.skipped, []);
    assert.equal(a2.ready, 0);
    assert.equal(a2.in_flight, 2);
    let st = await qstate(c, q);
    assert.equal(st.count, 2, 'count excludes the acked job');
    assert.equal(st.head_seq, 3);
    assert.deepEqual(st.queue, { ready: 0, in_flight: 2, dead_lettered: 0 });

    // the diff skips the acked job silently: records 1 and 3, no tombstone, the cursor moves past 2
    const all = await c.post(`/v0/topics/${q}/diff`, { from_seq: 0 });
    const d = assertOk(all, 200, 'diff');
    assert.deepEqual(seqsOf(d.records), [1, 3]);
    assert.equal(d.tombstone, null);
    assert.equal(d.next_from_seq, 3);
    assert.equal(d.caught_up, true);
    const d1 = assertOk(await c.post(`/v0/topics/${q}/diff`, { from_seq: 1, limit: 1 }), 200, 'diff from 1 limit 1');
    assert.deepEqual(seqsOf(d1.records), [3], 'the deleted seq 2 is passed over');

    // ack 3 (token "" = no token for this seq) and 1 (without lease_ids)
    const a3 = await ack(c, q, { node: 'w-a', seqs: [3], lease_ids: [''] });
    assert.equal(a3.acked, 1);
    const d2 = assertOk(await c.post(`/v0/topics/${q}/diff`, { from_seq: 1 }), 200, 'diff from 1');
    assert.deepEqual(d2.records, []);
    assert.equal(d2.next_from_seq, 3, 'next_from_seq moves past deleted jobs');
    assert.equal(d2.caught_up, true);
    assert.equal(d2.tombstone, null, 'an ack never yields a tombstone');
    const a1 = await ack(c, q, { node: 'w-a', seqs: [1] });
    assert.deepEqual([a1.acked, a1.skipped, a1.ready, a1.in_flight], [1, [], 0, 0]);
    st = await qstate(c, q);
    assert.equal(st.count, 0);
    assert.equal(st.earliest_seq, 4, 'earliest_seq = head + 1 once every job is acked');
    assert.deepEqual(st.queue, { ready: 0, in_flight: 0, dead_lettered: 0 });

    // idempotent: acking again is a 200 with the seq skipped
    const again = await ack(c, q, { node: 'w-a', seqs: [1, 2, 3] });
    assert.equal(again.acked, 0);
    assert.deepEqual(again.skipped, [1, 2, 3]);
    // never claimable again, by anyone
    const none = await claim(c, q, { node: 'w-b', max: 10 });
    assert.equal(none.body.count, 0);
    assert.deepEqual(await diffAll(c, q), []);
  });

  test('Leased, ack by another node or with a stale lease_id: skipped, and still leased to the holder', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 2);
    const cl = await claim(c, q, { node: 'w-a', max: 1 });
    const [j] = cl.body.claimed;
    assert.equal(j.$seq, 1);

    const byOther = await ack(c, q, { node: 'w-b', seqs: [1] });
    assert.deepEqual([byOther.acked, byOther.skipped], [0, [1]], 'another node cannot ack');
    const byOtherWithToken = await ack(c, q, { node: 'w-b', seqs: [1], lease_ids: [j.lease_id] });
    assert.deepEqual([byOtherWithToken.acked, byOtherWithToken.skipped], [0, [1]], 'the right token does not help another node');
    const stale = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [BOGUS_LEASE] });
    assert.deepEqual([stale.acked, stale.skipped], [0, [1]], 'a lease_id that is not the current one');
    assert.equal(stale.in_flight, 1);
    assert.equal(stale.ready, 1);
    // the same for nack and extend
    const nk = await nack(c, q, { node: 'w-b', seqs: [1] });
    assert.deepEqual([nk.nacked, nk.skipped], [0, [1]], 'another node cannot nack');
    const nk2 = await nack(c, q, { node: 'w-a', seqs: [1], lease_ids: [BOGUS_LEASE] });
    assert.deepEqual([nk2.nacked, nk2.skipped], [0, [1]], 'nack with a stale token');
    const ex = await extend(c, q, { node: 'w-b', seqs: [1], lease_ms: 1000 });
    assert.deepEqual([ex.body.extended, ex.body.skipped, ex.body.deadlines], [0, [1], {}], 'another node cannot extend');
    const ex2 = await extend(c, q, { node: 'w-a', seqs: [1], lease_ms: 1000, lease_ids: [BOGUS_LEASE] });
    assert.deepEqual([ex2.body.extended, ex2.body.skipped], [0, [1]], 'extend with a stale token');
    // seqs that are ready (never claimed) or do not exist are skipped too
    const notHeld = await ack(c, q, { node: 'w-a', seqs: [2, 999_999] });
    assert.deepEqual([notHeld.acked, notHeld.skipped], [0, [2, 999_999]]);

    // still leased to w-a: nobody else can claim it, and w-a acks it
    assert.deepEqual(await counters(c, q), { ready: 1, in_flight: 1, dead_lettered: 0 });
    const other = await claim(c, q, { node: 'w-c', max: 10 });
    assert.deepEqual(seqsOf(other.body.claimed), [2], 'the leased job is not handed out again');
    const ok = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [j.lease_id] });
    assert.deepEqual([ok.acked, ok.skipped, ok.in_flight], [1, [], 1]);
  });

  test('skipped lists seqs in request order; a seq repeated in one request is acted on once', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 4);
    const cl = await claim(c, q, { node: 'w-a', max: 2 }); // 1, 2
    assert.deepEqual(seqsOf(cl.body.claimed), [1, 2]);
    const r = await ack(c, q, { node: 'w-a', seqs: [4, 2, 2, 3, 1] });
    assert.equal(r.acked, 2);
    assert.deepEqual(r.skipped, [4, 2, 3], 'skipped in request order, the repeat skipped');
    assert.equal(r.in_flight, 0);
    assert.equal(r.ready, 2);
    const cl2 = await claim(c, q, { node: 'w-a', max: 2 }); // 3, 4
    const n = await nack(c, q, { node: 'w-a', seqs: [3, 3, 4] });
    assert.equal(n.nacked, 2);
    assert.deepEqual(n.skipped, [3]);
    const cl3 = await claim(c, q, { node: 'w-a', max: 2 });
    assert.deepEqual(seqsOf(cl3.body.claimed), seqsOf(cl2.body.claimed));
    assert.deepEqual(
      cl3.body.claimed.map((j: any) => j.deliveries),
      [2, 2],
      'one nack each, not two',
    );
    const e = await extend(c, q, { node: 'w-a', seqs: [4, 4], lease_ms: 1000 });
    assert.equal(e.body.extended, 1);
    assert.deepEqual(e.body.skipped, [4]);
    assert.deepEqual(Object.keys(e.body.deadlines), ['4']);
  });

  test('Leased → Ready by a nack: claimable by anyone, deliveries 2 on the next claim', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, [{ data: 'only' }]);
    const cl = await claim(c, q, { node: 'w-a' });
    const old = cl.body.claimed[0];
    const n = await nack(c, q, { node: 'w-a', seqs: [1], lease_ids: [old.lease_id] });
    assert.deepEqual([n.nacked, n.skipped, n.ready, n.in_flight], [1, [], 1, 0]);
    assert.deepEqual(await counters(c, q), { ready: 1, in_flight: 0, dead_lettered: 0 });
    const again = await claim(c, q, { node: 'w-b' });
    const j = again.body.claimed[0];
    assert.equal(j?.$seq, 1, 'another node claims the nacked job');
    assert.equal(j.deliveries, 2);
    assert.equal(j.data, 'only');
    assert.notEqual(j.lease_id, old.lease_id, 'a new delivery has a new lease_id');
    // the first holder lost it
    const lateAck = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [old.lease_id] });
    assert.deepEqual([lateAck.acked, lateAck.skipped], [0, [1]]);
    const lateAck2 = await ack(c, q, { node: 'w-a', seqs: [1] });
    assert.deepEqual([lateAck2.acked, lateAck2.skipped], [0, [1]]);
    // a third delivery counts on
    await nack(c, q, { node: 'w-b', seqs: [1] });
    const third = await claim(c, q, { node: 'w-a' });
    assert.equal(third.body.claimed[0].deliveries, 3);
  });

  test('nack with delay_ms: in neither ready nor in_flight until the delay elapses, then claimable', async () => {
    const DELAY = 500;
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 2);
    await claim(c, q, { node: 'w-a', max: 1 }); // seq 1
    const sent = Date.now();
    const n = await nack(c, q, { node: 'w-a', seqs: [1], delay_ms: DELAY });
    assert.equal(n.nacked, 1);
    // the delayed job counts in neither ready (1: seq 2) nor in_flight (0)
    assert.equal(n.ready, 1, 'nack reply: the delayed job is not ready');
    assert.equal(n.in_flight, 0, 'nack reply: the delayed job is not in flight');
    const st = await qstate(c, q);
    if (Date.now() < sent + DELAY - 50) {
      // only meaningful while the delay surely has not elapsed (a very slow machine skips this)
      assert.deepEqual(st.queue, { ready: 1, in_flight: 0, dead_lettered: 0 }, 'during the delay');
      assert.equal(st.count, 2, 'the delayed job is still a live record');
    }
    const early = await claim(c, q, { node: 'w-b', max: 10 });
    const earlySeqs = seqsOf(early.body.claimed);
    if (early.t1 < sent + DELAY - 50) assert.deepEqual(earlySeqs, [2], 'the delayed job is not claimable yet');
    if (earlySeqs.includes(1)) {
      // the machine was too slow to see the delay; the job still came back with deliveries 2
      assert.ok(early.t1 >= sent + DELAY - CLOCK_SLACK_MS, 'not claimable before delay_ms elapsed');
      assert.equal(early.body.claimed[0].deliveries, 2);
      return;
    }
    // afterwards it is ready and claimable, with deliveries 2
    await eventually(
      async () => {
        const k = await counters(c, q);
        return (k.ready === 1 && k.in_flight === 1) || JSON.stringify(k);
      },
      5000,
      'the delayed job to count as ready',
    );
    const later = await claimWhenReady(c, q, { node: 'w-c', max: 10 }, 5000, 'the delayed job');
    assert.ok(later.t1 >= sent + DELAY - CLOCK_SLACK_MS, 'not claimable before delay_ms elapsed');
    assert.deepEqual(seqsOf(later.body.claimed), [1]);
    assert.equal(later.body.claimed[0].deliveries, 2);
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 2, dead_lettered: 0 });
  });

  test('extend sets (not adds) the deadline to now + lease_ms; deliveries unchanged', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 1);
    const cl = await claim(c, q, { node: 'w-a' });
    const j = cl.body.claimed[0];
    assertDeadline(j.deadline, cl.t0, cl.t1, LONG, 'claim');

    // a smaller lease_ms gives an earlier deadline than the claim's
    const e1 = await extend(c, q, { node: 'w-a', seqs: [1], lease_ids: [j.lease_id], lease_ms: 5000 });
    assert.equal(e1.body.extended, 1);
    assert.deepEqual(e1.body.skipped, []);
    const d1 = e1.body.deadlines['1'];
    assertDeadline(d1, e1.t0, e1.t1, 5000, 'extend 5000');
    assert.ok(d1 < j.deadline, 'extend sets the deadline, it does not add to it');
    // a larger one
    const e2 = await extend(c, q, { node: 'w-a', seqs: [1], lease_ms: 120_000 });
    assertDeadline(e2.body.deadlines['1'], e2.t0, e2.t1, 120_000, 'extend 120000');
    // the lease_id survives an extend
    const a = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [BOGUS_LEASE] });
    assert.equal(a.acked, 0);
    // deliveries unchanged: a nack and a reclaim make it 2, not 4
    await nack(c, q, { node: 'w-a', seqs: [1], lease_ids: [j.lease_id] });
    const again = await claim(c, q, { node: 'w-b' });
    assert.equal(again.body.claimed[0].deliveries, 2, 'extends did not count as deliveries');
  });

  test('an extended lease outlives its original deadline', async () => {
    const q = await queue();
    await appendJobs(c, q, 1);
    const cl = await claim(c, q, { node: 'w-a', lease_ms: 2000 });
    const j = cl.body.claimed[0];
    const e = await extend(c, q, { node: 'w-a', seqs: [1], lease_ms: 30_000 });
    assert.ok(Date.now() < j.deadline, 'the extend landed before the original deadline (else this test is void)');
    assert.equal(e.body.extended, 1);
    await sleepPast(j.deadline, 300);
    const other = await claim(c, q, { node: 'w-b', max: 5 });
    assert.equal(other.body.count, 0, 'still leased after the original deadline');
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 1, dead_lettered: 0 });
    const a = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [j.lease_id] });
    assert.equal(a.acked, 1);
  });

  test('lease expiry: claimable again; the old holder cannot ack, nack or extend, even before anyone reclaims', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 2);
    const cl = await claim(c, q, { node: 'w-a', max: 2, lease_ms: 200 });
    assert.equal(cl.body.count, 2);
    for (const j of cl.body.claimed) assertDeadline(j.deadline, cl.t0, cl.t1, 200, `seq ${j.$seq}`);
    const lastDeadline = Math.max(...cl.body.claimed.map((j: any) => j.deadline));
    await sleepPast(lastDeadline, 50);
    // lazy expiry: the next operation sees it; the counters report the jobs ready
    await eventually(
      async () => {
        const k = await counters(c, q);
        return (k.ready === 2 && k.in_flight === 0) || JSON.stringify(k);
      },
      3000,
      'expired leases to count as ready',
    );
    const [j1, j2] = cl.body.claimed;
    const a = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [j1.lease_id] });
    assert.deepEqual([a.acked, a.skipped], [0, [1]], 'ack after expiry (with token)');
    const a2 = await ack(c, q, { node: 'w-a', seqs: [1] });
    assert.deepEqual([a2.acked, a2.skipped], [0, [1]], 'ack after expiry (without token)');
    const n = await nack(c, q, { node: 'w-a', seqs: [2], lease_ids: [j2.lease_id] });
    assert.deepEqual([n.nacked, n.skipped], [0, [2]], 'nack after expiry');
    const e = await extend(c, q, { node: 'w-a', seqs: [1, 2], lease_ms: 60_000 });
    assert.deepEqual([e.body.extended, e.body.skipped, e.body.deadlines], [0, [1, 2], {}], 'an expired lease cannot be extended');
    assert.equal((await qstate(c, q)).count, 2, 'nothing was removed');
    // another node gets both, second delivery
    const b = await claim(c, q, { node: 'w-b', max: 5 });
    assert.deepEqual(seqsOf(b.body.claimed), [1, 2]);
    assert.deepEqual(
      b.body.claimed.map((j: any) => j.deliveries),
      [2, 2],
    );
    assert.equal(
      b.body.claimed.some((j: any) => j.lease_id === j1.lease_id || j.lease_id === j2.lease_id),
      false,
      'new lease ids',
    );
    // and the old holder still cannot touch them
    const late = await ack(c, q, { node: 'w-a', seqs: [1, 2] });
    assert.deepEqual([late.acked, late.skipped, late.in_flight], [0, [1, 2], 2]);
  });

  test('reclaimed jobs are served before fresh ones', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 5);
    const first = await claim(c, q, { node: 'w-a', max: 3, lease_ms: 150 });
    assert.deepEqual(seqsOf(first.body.claimed), [1, 2, 3]);
    await sleepPast(Math.max(...first.body.claimed.map((j: any) => j.deadline)), 50);
    const second = await claim(c, q, { node: 'w-b', max: 3 });
    assert.deepEqual(seqsOf(second.body.claimed), [1, 2, 3], 'the three expired jobs, not the fresh 4 and 5');
    assert.deepEqual(
      second.body.claimed.map((j: any) => j.deliveries),
      [2, 2, 2],
    );
    // a nacked job (reclaim list) also comes before the remaining fresh ones
    await nack(c, q, { node: 'w-b', seqs: [3] });
    const third = await claim(c, q, { node: 'w-c', max: 1 });
    assert.deepEqual(seqsOf(third.body.claimed), [3], 'the nacked job before fresh job 4');
    const fourth = await claim(c, q, { node: 'w-c', max: 5 });
    assert.deepEqual(seqsOf(fourth.body.claimed), [4, 5]);
    assert.deepEqual(
      fourth.body.claimed.map((j: any) => j.deliveries),
      [1, 1],
    );
  });
});

describe('stale-token fencing', () => {
  test('a job re-delivered to the same node: the old lease_id is refused, the new one acks', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 1);
    const c1 = await claim(c, q, { node: 'w-a', lease_ms: 150 });
    const old = c1.body.claimed[0];
    await sleepPast(old.deadline, 50);
    const c2 = await claimWhenReady(c, q, { node: 'w-a', lease_ms: LONG }, 3000, 'the expired job');
    const cur = c2.body.claimed[0];
    assert.equal(cur.$seq, old.$seq);
    assert.equal(cur.deliveries, 2);
    assert.notEqual(cur.lease_id, old.lease_id, 'a new lease id for the new delivery');
    for (const [route, extra] of [
      ['ack', {}],
      ['nack', {}],
      ['extend', { lease_ms: 1000 }],
    ] as const) {
      const r = await c.post(`/v0/topics/${q}/${route}`, { node: 'w-a', seqs: [cur.$seq], lease_ids: [old.lease_id], ...extra });
      const b = assertOk(r, 200, `${route} with the old lease_id`);
      assert.deepEqual(b.skipped, [cur.$seq], `${route} with the old lease_id is skipped`);
    }
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 1, dead_lettered: 0 }, 'still leased');
    const ok = await ack(c, q, { node: 'w-a', seqs: [cur.$seq], lease_ids: [cur.lease_id] });
    assert.deepEqual([ok.acked, ok.skipped], [1, []]);
  });
});

// ---- dead-lettering -----------------------------------------------------------------------------

describe('dead-lettering', () => {
  test('max_deliveries 2: the third delivery moves the job to the dead_letter topic with meta stamps', async () => {
    const q = name('dl');
    const dlq = `${q}.dlq`;
    await mkQueue(c, q, { lease_ms: LONG, max_deliveries: 2, dead_letter: dlq });
    assert.equal((await c.get(`/v0/topics/${dlq}`)).status, 404, 'the dead-letter topic is absent at first');
    await appendJobs(c, q, [
      { data: { job: 'rich', n: 1.5 }, tag: 'tag-rich', node: 'producer-1', meta: { trace: 'abc', z: 0, a: [1] } },
      { data: 'bare' },
      { data: 'healthy' },
    ]);
    for (let round = 1; round <= 2; round++) {
      const cl = await claim(c, q, { node: 'w-a', max: 2 });
      assert.deepEqual(seqsOf(cl.body.claimed), [1, 2], `round ${round}`);
      assert.deepEqual(
        cl.body.claimed.map((j: any) => j.deliveries),
        [round, round],
      );
      const n = await nack(c, q, { node: 'w-a', seqs: [1, 2] });
      assert.equal(n.nacked, 2);
    }
    // the next claim does not return them (it would be their third delivery)
    const third = await claim(c, q, { node: 'w-b', max: 10 });
    assert.deepEqual(seqsOf(third.body.claimed), [3], 'only the job below max_deliveries');
    // the move is asynchronous: poll
    await eventually(
      async () => {
        const k = await counters(c, q);
        return k.dead_lettered === 2 || JSON.stringify(k);
      },
      5000,
      'dead_lettered 2',
    );
    const st = await qstate(c, q);
    assert.equal(st.count, 1, 'the moved jobs are deleted from the queue');
    assert.deepEqual(st.queue, { ready: 0, in_flight: 1, dead_lettered: 2 });
    assert.deepEqual(seqsOf(await diffAll(c, q)), [3], 'the queue log no longer holds them');

    // the dead-letter topic was created with the default config and holds both jobs
    const ds = await c.get(`/v0/topics/${dlq}?touch=false`);
    assertOk(ds, 200, 'dead-letter topic state');
    assertFullConfig(ds.body.config, {}, 'dead-letter topic: default config');
    assert.equal(ds.body.type, 'log');
    const recs = await diffAll(c, dlq, { include_tags: true, include_meta: true });
    assert.equal(recs.length, 2, `dead-letter records: ${JSON.stringify(recs)}`);
    const rich = recs.find((r) => r.data && r.data.job === 'rich');
    const bare = recs.find((r) => r.data === 'bare');
    assert.ok(rich && bare, 'both jobs were moved with their data');
    assert.deepEqual(rich.data, { job: 'rich', n: 1.5 });
    assert.equal(rich.$tag, 'tag-rich');
    assert.equal(rich.$node, 'producer-1');
    const stamps = ['$dead_letter_deliveries', '$dead_letter_from', '$dead_letter_src_seq'];
    const richKeys = Object.keys(rich.meta);
    assert.deepEqual(richKeys.slice(0, 3), ['trace', 'z', 'a'], 'the original meta keys first, in order');
    assert.deepEqual(richKeys.slice(3).sort(), stamps, `then the three stamps: ${JSON.stringify(rich.meta)}`);
    assert.equal(rich.meta.$dead_letter_from, q);
    assert.equal(rich.meta.$dead_letter_deliveries, 2);
    assert.equal(rich.meta.$dead_letter_src_seq, 1);
    assert.equal(rich.meta.trace, 'abc');
    assert.equal(rich.meta.z, 0);
    assert.deepEqual(rich.meta.a, [1]);
    // a job without meta gets a meta with just the stamps; no $tag or $node appear
    assert.deepEqual(Object.keys(bare.meta).sort(), stamps);
    assert.deepEqual({ ...bare.meta }, { $dead_letter_from: q, $dead_letter_deliveries: 2, $dead_letter_src_seq: 2 });
    assert.ok(!('$tag' in bare) && !('$node' in bare), 'no $tag / $node on a job that had none');
  });

  test('an existing dead-letter topic is appended to, keeping its config', async () => {
    const q = name('dl2');
    const dlq = `${q}.dead`;
    const put = await c.put(`/v0/topics/${dlq}`, { durability: 'fsync', idempotency_window_ms: 1000 });
    assertOk(put, 201, 'PUT dlq');
    await appendJobs(c, dlq, [{ data: 'pre-existing' }]);
    await mkQueue(c, q, { lease_ms: LONG, max_deliveries: 1, dead_letter: dlq });
    await appendJobs(c, q, [{ data: 'poison' }]);
    const cl = await claim(c, q, { node: 'w-a' });
    assert.equal(cl.body.claimed[0].deliveries, 1);
    await nack(c, q, { node: 'w-a', seqs: [1] });
    const next = await claim(c, q, { node: 'w-a' });
    assert.equal(next.body.count, 0, 'the second delivery would exceed max_deliveries 1');
    await eventually(async () => (await counters(c, q)).dead_lettered === 1, 5000, 'dead_lettered 1');
    const ds = await qstate(c, dlq);
    assert.deepEqual(ds.config, put.body.config, 'the existing config is kept');
    const recs = await diffAll(c, dlq);
    assert.deepEqual(
      recs.map((r) => r.data),
      ['pre-existing', 'poison'],
    );
    assert.equal(recs[1].meta.$dead_letter_deliveries, 1);
    assert.equal(recs[1].meta.$dead_letter_src_seq, 1);
    assert.equal(recs[1].meta.$dead_letter_from, q);
  });

  test('max_deliveries 0 or dead_letter null: a job is redelivered forever', async () => {
    const noMax = name('forever');
    const noMaxDlq = `${noMax}.dlq`;
    await mkQueue(c, noMax, { lease_ms: LONG, max_deliveries: 0, dead_letter: noMaxDlq });
    const noDlq = name('forever');
    await mkQueue(c, noDlq, { lease_ms: LONG, max_deliveries: 2, dead_letter: null });
    for (const q of [noMax, noDlq]) {
      await appendJobs(c, q, [{ data: 'again' }]);
      for (let i = 1; i <= 5; i++) {
        const cl = await claim(c, q, { node: 'w-a' });
        assert.equal(cl.body.claimed[0]?.deliveries, i, `${q}: delivery ${i}`);
        await nack(c, q, { node: 'w-a', seqs: [1] });
      }
      const sixth = await claim(c, q, { node: 'w-b' });
      assert.deepEqual(seqsOf(sixth.body.claimed), [1], `${q}: still delivered after 5 nacks`);
      assert.equal(sixth.body.claimed[0].deliveries, 6);
      assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 1, dead_lettered: 0 });
    }
    assert.equal((await c.get(`/v0/topics/${noMaxDlq}`)).status, 404, 'no dead-letter topic was created');
  });
});

// ---- claim_jitter_ms ----------------------------------------------------------------------------

describe('claim_jitter_ms cohorts', () => {
  const W = 300;

  async function timedClaim(q: string, node: string, max: number) {
    const t0 = Date.now();
    const r = await claim(c, q, { node, max, lease_ms: LONG });
    return { ...r, elapsed: Date.now() - t0 };
  }

  test('claims arriving in one window are served in one pass; each gets its max when there are enough jobs', async () => {
    const q = await queue({ claim_jitter_ms: W });
    await appendJobs(c, q, 30);
    const [a, b] = await Promise.all([timedClaim(q, 'w-a', 10), timedClaim(q, 'w-b', 20)]);
    assert.equal(a.body.count, 10, 'max 10 gets 10');
    assert.equal(b.body.count, 20, 'max 20 gets 20');
    const all = [...seqsOf(a.body.claimed), ...seqsOf(b.body.claimed)];
    assert.equal(new Set(all).size, 30, 'no job handed to both');
    assert.deepEqual(
      [...all].sort((x, y) => x - y),
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    // the first claim to arrive opened the window: it waited about W
    assert.ok(
      Math.max(a.elapsed, b.elapsed) >= W - CLOCK_MARGIN,
      `a claim waits for the window (${a.elapsed} ms, ${b.elapsed} ms; window ${W})`,
    );
    for (const x of [a, b]) assert.ok(x.elapsed < W + 5000, `answered after the window, not much later (${x.elapsed} ms)`);
    assert.deepEqual(await counters(c, q), { ready: 0, in_flight: 30, dead_lettered: 0 });
  });

  test('not enough jobs: dealt round-robin in proportion to max (15 jobs, max 10 and max 20 → about 5 and 10)', async () => {
    const q = await queue({ claim_jitter_ms: W });
    await appendJobs(c, q, 15);
    const [a, b] = await Promise.all([timedClaim(q, 'w-a', 10), timedClaim(q, 'w-b', 20)]);
    assert.equal(a.body.count + b.body.count, 15, `all 15 dealt (${a.body.count} + ${b.body.count})`);
    assert.ok(Math.abs(a.body.count - 5) <= 1, `max 10 gets about 5, got ${a.body.count}`);
    assert.ok(Math.abs(b.body.count - 10) <= 1, `max 20 gets about 10, got ${b.body.count}`);
    assert.equal(new Set([...seqsOf(a.body.claimed), ...seqsOf(b.body.claimed)]).size, 15);
    assert.equal(a.body.ready, 0);
    assert.equal(b.body.ready, 0);
  });

  test('claim_jitter_ms 0: a claim is answered at once', async () => {
    const q = await queue({ claim_jitter_ms: 0 });
    await appendJobs(c, q, 3);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) times.push((await timedClaim(q, 'w-a', 1)).elapsed);
    assert.ok(Math.min(...times) < W - 100, `no coalescing wait with claim_jitter_ms 0 (${times.join(', ')} ms)`);
    // and a jitter queue of the same server does wait, for comparison
    const jq = await queue({ claim_jitter_ms: W });
    await appendJobs(c, jq, 1);
    const j = await timedClaim(jq, 'w-a', 1);
    assert.equal(j.body.count, 1);
    assert.ok(j.elapsed >= W - CLOCK_MARGIN, `a lone claim on a jitter queue waits for the window (${j.elapsed} ms)`);
  });
});

// ---- counters -----------------------------------------------------------------------------------

describe('counters (docs/API.md "GET /v0/topics/:topic", "Queues")', () => {
  test('a scripted sequence: ready, in_flight, dead_lettered and count stay consistent', async () => {
    const q = await queue({ lease_ms: LONG });
    const st0 = await qstate(c, q);
    assert.deepEqual(Object.keys(st0.queue).sort(), ['dead_lettered', 'in_flight', 'ready']);
    await appendJobs(c, q, 6);
    const expect = async (ready: number, inFlight: number, count: number, what: string) => {
      const s = await qstate(c, q);
      assert.deepEqual(s.queue, { ready, in_flight: inFlight, dead_lettered: 0 }, `${what}: counters`);
      assert.equal(s.count, count, `${what}: count`);
    };
    await expect(6, 0, 6, 'after append');
    const cl = await claim(c, q, { node: 'w-a', max: 3 }); // 1, 2, 3
    assert.equal(cl.body.ready, 3, 'claim reply ready');
    await expect(3, 3, 6, 'after claiming 3');
    const a = await ack(c, q, { node: 'w-a', seqs: [1] });
    assert.deepEqual([a.ready, a.in_flight], [3, 2], 'ack reply counters');
    await expect(3, 2, 5, 'after one ack');
    const n = await nack(c, q, { node: 'w-a', seqs: [2] });
    assert.deepEqual([n.ready, n.in_flight], [4, 1], 'nack reply counters');
    await expect(4, 1, 5, 'after one nack');
    const nd = await nack(c, q, { node: 'w-a', seqs: [3], delay_ms: LONG });
    assert.deepEqual([nd.ready, nd.in_flight], [4, 0], 'a delayed nack: neither ready nor in flight');
    await expect(4, 0, 5, 'after a delayed nack (ready + in_flight = count - 1)');
    const e = await extend(c, q, { node: 'w-a', seqs: [3], lease_ms: 1000 });
    assert.equal(e.body.extended, 0, 'a delayed (nacked) job has no lease to extend');
    const cl2 = await claim(c, q, { node: 'w-b', max: 2 }); // 2 (reclaimed), 4
    assert.deepEqual(seqsOf(cl2.body.claimed), [2, 4]);
    assert.equal(cl2.body.ready, 2);
    await expect(2, 2, 5, 'after the second claim');
    const skipped = await ack(c, q, { node: 'w-a', seqs: [2, 4] });
    assert.deepEqual([skipped.acked, skipped.ready, skipped.in_flight], [0, 2, 2], 'skipped acks change nothing');
    const a2 = await ack(c, q, { node: 'w-b', seqs: [2, 4] });
    assert.deepEqual([a2.acked, a2.ready, a2.in_flight], [2, 2, 0]);
    await expect(2, 0, 3, 'after acking both');
  });

  test('a log topic has no `queue` key; a queue topic reports type "queue"', async () => {
    const log = name('log');
    assertOk(await c.put(`/v0/topics/${log}`, { lease_ms: 1000, max_deliveries: 3 }), 201, 'PUT log with inert queue fields');
    const s = await qstate(c, log);
    assert.equal(s.type, 'log');
    assert.ok(!('queue' in s), `a log topic has no queue key: ${JSON.stringify(s).slice(0, 300)}`);
    const q = await queue();
    const qs = await qstate(c, q);
    assert.equal(qs.type, 'queue');
    assert.deepEqual(qs.config, { ...DEFAULT_CONFIG, type: 'queue' });
  });
});

// ---- durability ---------------------------------------------------------------------------------

describe('ack durability (performance block)', () => {
  test('fsync queue: ack reports wal_append_ms and fsync_ms >= 0; disk queue: fsync_ms 0', async () => {
    for (const [cls, config] of [
      ['fsync', { durability: 'fsync' }],
      ['durable', { durable: true }],
      ['disk', { durability: 'disk' }],
    ] as const) {
      const q = await queue(config, cls);
      await appendJobs(c, q, 2);
      await claim(c, q, { node: 'w-a', max: 2 });
      const a = await ack(c, q, { node: 'w-a', seqs: [1, 2] });
      assert.equal(a.acked, 2);
      const p = a.performance;
      assert.equal(typeof p.wal_append_ms, 'number', `${cls}: wal_append_ms on the ack`);
      assert.equal(typeof p.fsync_ms, 'number', `${cls}: fsync_ms on the ack`);
      assert.ok(p.fsync_ms >= 0 && p.wal_append_ms >= 0, `${cls}: non-negative timings`);
      if (cls === 'disk') assert.equal(p.fsync_ms, 0, 'disk: the ack is not fsync-gated');
      assert.deepEqual(await diffAll(c, q), [], `${cls}: acked jobs are gone`);
    }
  });
});

// ---- reads ----------------------------------------------------------------------------------------

describe('diff and watch never touch leases', () => {
  test('diff of a queue with leased jobs: every job is there, counters and leases unchanged', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, [{ data: 'a', tag: 't-a' }, { data: 'b', meta: { k: 1 } }, { data: 'c' }]);
    const cl = await claim(c, q, { node: 'w-a', max: 2 });
    const before = await counters(c, q);
    assert.deepEqual(before, { ready: 1, in_flight: 2, dead_lettered: 0 });
    const recs = await diffAll(c, q, { include_tags: true });
    assert.deepEqual(seqsOf(recs), [1, 2, 3]);
    assert.deepEqual(
      recs.map((r) => r.data),
      ['a', 'b', 'c'],
    );
    assert.equal(recs[0].$tag, 't-a');
    assert.deepEqual(recs[1].meta, { k: 1 });
    for (const r of recs) assert.ok(!('lease_id' in r) && !('deliveries' in r) && !('deadline' in r), 'diff records carry no lease fields');
    // a long-poll diff at the head and a diff with a worker's node change nothing either
    assertOk(await c.post(`/v0/topics/${q}/diff`, { from_seq: 3, wait_ms: 100 }), 200, 'long-poll at head');
    assertOk(await c.post(`/v0/topics/${q}/diff`, { from_seq: 0, node: 'w-a' }), 200, 'diff as w-a');
    assert.deepEqual(await counters(c, q), before, 'counters unchanged by diffs');
    // the leases are intact: the holder acks with its lease ids, nobody else got anything
    const other = await claim(c, q, { node: 'w-b', max: 10 });
    assert.deepEqual(seqsOf(other.body.claimed), [3]);
    assert.equal(other.body.claimed[0].deliveries, 1, 'the diff did not count as a delivery');
    const a = await ack(c, q, { node: 'w-a', seqs: seqsOf(cl.body.claimed), lease_ids: cl.body.claimed.map((j: any) => j.lease_id) });
    assert.equal(a.acked, 2);
  });

  test('a watch stream on a queue delivers the jobs log and leaves leases alone', async () => {
    const q = await queue({ lease_ms: LONG });
    await appendJobs(c, q, 3);
    const cl = await claim(c, q, { node: 'w-a', max: 1 });
    const w = assertOk(await c.post('/v0/watch', { topics: { [q]: {} } }), 200, 'POST /v0/watch on a queue');
    const s = await openStream(srv.url, w.wid);
    open.push(s);
    assert.equal(s.status, 200);
    const seen: number[] = [];
    while (seen.length < 3) {
      const f = await s.nextEvent('record', 5000);
      seen.push(...f.data.records.map((r: any) => r.$seq));
    }
    assert.deepEqual(seen, [1, 2, 3]);
    await s.nextEvent('caught-up', 5000);
    assert.deepEqual(await counters(c, q), { ready: 2, in_flight: 1, dead_lettered: 0 }, 'counters unchanged by watch');
    const other = await claim(c, q, { node: 'w-b', max: 10 });
    assert.deepEqual(seqsOf(other.body.claimed), [2, 3]);
    assert.deepEqual(
      other.body.claimed.map((j: any) => j.deliveries),
      [1, 1],
    );
    const a = await ack(c, q, { node: 'w-a', seqs: [1], lease_ids: [cl.body.claimed[0].lease_id] });
    assert.equal(a.acked, 1);
    // an ack deletes silently for watchers too: appending and reading on shows no tombstone
    await appendJobs(c, q, 1);
    const f = await s.nextEvent('record', 5000);
    assert.deepEqual(
      f.data.records.map((r: any) => r.$seq),
      [4],
    );
    assert.equal(
      s.frames.some((x) => x.event === 'tombstone'),
      false,
      'an ack never yields a tombstone',
    );
  });
});
