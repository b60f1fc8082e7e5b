// Flow control of the queue push stream, `GET /v0/topics/:q/work` (docs/QUEUES.md "GET
// /v0/topics/:q/work": "it stops leasing while the connection's socket is backed up, and resumes
// once it drains"; "When the connection closes, every lease delivered on it is released at
// once"; ARCHITECTURE.md "Watch streams" → Flow control, the shared SSE transport with its 1 MiB
// high-water mark; docs/API.md "Work frames"; docs/ARCHITECTURE.md "Queues"):
// - a client that opens /work (max 200) on a queue of 3000 jobs of ~4 KiB and stops reading as
//   soon as the response head is in (raw socket paused: the kernel buffers fill, then the
//   server's), while a second client keeps acking (node only, no lease_ids) every seq in a loop: the
//   stream's socket backs up, the server pauses it, and from then on nothing new is leased even
//   though the acks keep coming: in_flight stays 0, ready stays > 0 and the job count is
//   unchanged; when the client reads again the stream drains, leasing resumes and eventually
//   every job is delivered exactly once and acked (ready 0, count 0);
// - a paused stream that still holds leases (some seqs are never acked): destroying its socket
//   releases them at once (in_flight 0 long before lease_ms), and those jobs are ready again.
// How a pause is observed from outside: acks of everything leased keep running in a loop, so an
// unpaused stream has its leases replaced at once (in_flight > 0, count falling); a paused one
// gets no replacements. "Paused" is declared only after the counters held still across several
// complete ack rounds and at least a second, so a slow machine cannot fake it.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { openWork, WorkStream } from '../helpers/workStream.js';
import { assertOk, namer, sleep } from './util.js';
import { counters, eventually, mkQueue, qstate } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const name = namer('qflow');
const { srv, c } = httpSuite({ SERVICE_WORKERS: '1' });

const open: WorkStream[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

const JOBS = 3000;
const JOB_BYTES = 4096;
const LONG = 120_000; // no lease expires during a test

/** A queue holding JOBS jobs of ~4 KiB (seqs 1..JOBS). */
async function bigQueue(): Promise<string> {
  const q = name('q');
  await mkQueue(c, q, { lease_ms: LONG });
  for (let first = 1; first <= JOBS; first += 500) {
    const records = Array.from({ length: Math.min(500, JOBS - first + 1) }, (_, i) => ({
      data: `${String(first + i).padStart(8, '0')}${'x'.repeat(JOB_BYTES - 8)}`,
    }));
    const r = await c.post(`/v0/topics/${q}`, { records });
    assertOk(r, 200, `append from ${first}`);
  }
  assert.equal((await qstate(c, q)).count, JOBS);
  return q;
}

/**
 * Acks, as `node` and without lease_ids, every seq of 1..JOBS that `keep` accepts, in requests of
 * 1000 seqs, round after round until stopped (seqs not leased to the node are simply skipped).
 */
function ackLoop(q: string, node: string, keep: (seq: number) => boolean = () => true) {
  const chunks: number[][] = [];
  for (let first = 1; first <= JOBS; first += 1000) {
    chunks.push(Array.from({ length: Math.min(1000, JOBS - first + 1) }, (_, i) => first + i).filter(keep));
  }
  const st = { rounds: 0, acked: 0, stopped: false, error: undefined as unknown, done: Promise.resolve() };
  st.done = (async () => {
    try {
      while (!st.stopped) {
        for (const seqs of chunks) {
          const r = await c.post(`/v0/topics/${q}/ack`, { node, seqs });
          const b = assertOk(r, 200, 'ack loop');
          st.acked += b.acked;
        }
        st.rounds++;
      }
    } catch (e) {
      st.error = e;
    }
  })();
  return {
    get rounds() {
      return st.rounds;
    },
    get acked() {
      return st.acked;
    },
    check() {
      if (st.error) throw st.error;
    },
    async stop() {
      st.stopped = true;
      await st.done;
      if (st.error) throw st.error;
    },
  };
}

type Loop = ReturnType<typeof ackLoop>;
type Snap = { count: number; ready: number; in_flight: number; rounds: number; at: number };

async function snap(q: string, loop: Loop): Promise<Snap> {
  const s = await qstate(c, q);
  return { count: s.count, ready: s.queue.ready, in_flight: s.queue.in_flight, rounds: loop.rounds, at: Date.now() };
}

/**
 * Waits until the counters hold still (same count, ready and in_flight, ready > 0) across at least
 * 3 complete ack rounds and 1 s: the stream is paused. Fails if every job got leased instead.
 */
async function waitPaused(q: string, loop: Loop, ms: number, inFlight: (n: number) => boolean): Promise<Snap> {
  const deadline = Date.now() + ms;
  let base = await snap(q, loop);
  for (;;) {
    loop.check();
    await sleep(100);
    const s = await snap(q, loop);
    if (s.ready === 0)
      assert.fail(`the stream never paused: every job was leased (${JSON.stringify(s)}); the kernel buffered ${JOBS} × ${JOB_BYTES} bytes`);
    const still = s.count === base.count && s.ready === base.ready && s.in_flight === base.in_flight && inFlight(s.in_flight);
    if (!still) base = s;
    else if (s.rounds - base.rounds >= 3 && s.at - base.at >= 1000) return s;
    if (Date.now() > deadline)
      assert.fail(`no pause within ${ms} ms (last ${JSON.stringify(s)}, held still since ${JSON.stringify(base)})`);
  }
}

test('a stream whose client stops reading is paused: no new leases while acks keep coming; reading again drains it', async () => {
  const q = await bigQueue();
  const node = 'slow-reader';
  const s = await openWork(srv.url, q, { query: { node, max: '200' } });
  open.push(s);
  assert.equal(s.status, 200, s.text);
  s.pause(); // from here on the client reads nothing
  const loop = ackLoop(q, node);
  try {
    // 1. the socket backs up past the high-water mark and the stream is paused
    const p = await waitPaused(q, loop, 30_000, (n) => n === 0);
    assert.ok(p.ready > 0 && p.count === p.ready, `paused with jobs left: ${JSON.stringify(p)}`);
    const pushed = JOBS - p.count;
    assert.ok(pushed >= 200, `the stream got ${pushed} jobs before it paused`);

    // 2. still paused for another 1.5 s of continuous acking: nothing leased, nothing acked
    const roundsBefore = loop.rounds;
    const ackedBefore = loop.acked;
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      const k = await counters(c, q);
      assert.equal(k.in_flight, 0, 'no new leases while paused');
      assert.equal(k.ready, p.ready, 'ready stays where it was');
      await sleep(100);
    }
    assert.ok(loop.rounds - roundsBefore >= 3, `the acks kept coming (${loop.rounds - roundsBefore} rounds)`);
    assert.equal(loop.acked, ackedBefore, 'the acks were all skipped: nothing was leased');
    assert.equal((await qstate(c, q)).count, p.count);

    // 3. read again: the stream drains, leasing resumes, every job is delivered and acked
    s.resume();
    await eventually(
      async () => {
        loop.check();
        const st = await qstate(c, q);
        return (st.count === 0 && st.queue.ready === 0 && st.queue.in_flight === 0) || JSON.stringify({ count: st.count, ...st.queue });
      },
      30_000,
      'every job acked after the client read again',
      100,
    );
  } finally {
    await loop.stop();
  }
  assert.equal(loop.acked, JOBS, 'each job acked once');
  // every job was pushed exactly once (no lease expired, nothing was nacked)
  await eventually(async () => s.jobFrames().length >= JOBS || `${s.jobFrames().length} job frames`, 10_000, 'all job frames read');
  const seqs = s.jobFrames().map((f) => (f.data as any).$seq as number);
  assert.equal(seqs.length, JOBS, 'no job pushed twice');
  assert.equal(new Set(seqs).size, JOBS);
  assert.deepEqual(
    [...seqs].sort((a, b) => a - b),
    Array.from({ length: JOBS }, (_, i) => i + 1),
  );
  assert.ok(!s.closed, 'the stream stayed open throughout');
});

test('destroying a paused stream releases its leases at once', async () => {
  const q = await bigQueue();
  const node = 'gone-reader';
  const s = await openWork(srv.url, q, { query: { node, max: '1000' } });
  open.push(s);
  assert.equal(s.status, 200, s.text);
  s.pause();
  // every 50th job is never acked: the paused stream keeps holding those
  const held = (seq: number) => seq % 50 === 0;
  const loop = ackLoop(q, node, (seq) => !held(seq));
  let p: Snap;
  try {
    p = await waitPaused(q, loop, 30_000, (n) => n > 0);
  } finally {
    await loop.stop();
  }
  const k0 = await counters(c, q);
  assert.equal(k0.in_flight, p.in_flight, 'still paused after the acks stopped');
  assert.ok(
    k0.in_flight > 0 && k0.in_flight < 1000,
    `the paused stream holds ${k0.in_flight} leases (below its max, so only the pause keeps it from leasing more)`,
  );
  const t0 = Date.now();
  await s.close();
  await eventually(async () => (await counters(c, q)).in_flight === 0, 3000, 'in_flight 0 after the socket was destroyed');
  const released = Date.now() - t0;
  const k1 = await counters(c, q);
  assert.equal(k1.ready, k0.ready + k0.in_flight, 'the released jobs are ready again');
  assert.equal((await qstate(c, q)).count, p.count, 'nothing was lost');
  assert.ok(released < LONG, `released after ${released} ms, not at lease expiry`);
  // they are claimable by anyone now
  const cl = await c.post(`/v0/topics/${q}/claim`, { node: 'other', max: 1000 });
  const b = assertOk(cl, 200, 'claim after release');
  assert.equal(b.count, Math.min(1000, k1.ready));
  assert.ok(
    b.claimed.filter((j: any) => held(j.$seq)).length >= k0.in_flight,
    'the released jobs are among them (reclaimed jobs come first)',
  );
});
