// A dead-letter is visible to the next request (docs/QUEUES.md "Dead-lettering"): once the claim
// that moves a job to the dead-letter topic has answered, the queue's state (count,
// dead_lettered, ready, in_flight) and a diff of the dead-letter topic show the move. Checked
// under concurrent load on a server with SERVICE_WORKERS=2, every dead-letter topic on the other
// worker than its queue (a peer request over the worker boundary) and of class `fsync` (its
// append waits for an fdatasync, which is what the claim used to run ahead of), for many
// queues at once while appenders keep both workers busy. Every sequence must be consistent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertOk, namer } from './util.js';
import { appendJobs, claim, diffAll, mkQueue, nack, qstate, seqsOf, crossWorkerPair } from './queueUtil.js';
import { httpSuite } from '../support/httpSuite.js';

const WORKERS = 2;
const name = namer('dlv');
const { c } = httpSuite({ SERVICE_WORKERS: String(WORKERS) });

/** A queue name and a dead-letter name that hash to different workers. */
function pair(): { q: string; dlq: string } {
  return crossWorkerPair(name('q'), WORKERS);
}

/** One claim-that-dead-letters sequence, checked right after the claim answers. */
async function sequence(): Promise<string[]> {
  const { q, dlq } = pair();
  assertOk(await c.put(`/v0/topics/${dlq}`, { durability: 'fsync' }), 201, `PUT ${dlq}`);
  await mkQueue(c, q, { lease_ms: 60_000, max_deliveries: 1, dead_letter: dlq });
  await appendJobs(c, q, [{ data: { poison: true }, meta: { k: 1 } }]);
  const first = await claim(c, q, { node: 'w', max: 1 });
  assert.deepEqual(seqsOf(first.body.claimed), [1]);
  assert.equal((await nack(c, q, { node: 'w', seqs: [1] })).nacked, 1);
  const moving = await claim(c, q, { node: 'w', max: 1 });
  assert.equal(moving.body.count, 0, 'the claim moves the job instead of returning it');
  // The very next requests: no waiting, no polling.
  const [st, recs] = await Promise.all([qstate(c, q), diffAll(c, dlq, { include_meta: true })]);
  const problems: string[] = [];
  const counters = { count: st.count, ...st.queue };
  const want = { count: 0, ready: 0, in_flight: 0, dead_lettered: 1 };
  if (JSON.stringify(counters) !== JSON.stringify(want))
    problems.push(`${q}: state ${JSON.stringify(counters)}, want ${JSON.stringify(want)}`);
  if (recs.length !== 1 || recs[0].meta?.$dead_letter_src_seq !== 1 || recs[0].meta?.$dead_letter_from !== q)
    problems.push(`${dlq}: holds ${JSON.stringify(recs)}`);
  return problems;
}

/** Appends to a few topics on both workers until `stop` is set. */
async function load(stop: { v: boolean }, i: number): Promise<void> {
  const t = name(`load${i}`);
  const records = Array.from({ length: 500 }, (_, k) => ({ data: { k, pad: 'x'.repeat(2000) } }));
  while (!stop.v) await c.post(`/v0/topics/${t}`, { records, config: { durability: 'fsync', cap_records: 5000 } });
}

test('the claim that dead-letters a job answers after the move: state and dead-letter topic agree at once, under load', async () => {
  const stop = { v: false };
  const loaders = Array.from({ length: 4 }, (_, i) => load(stop, i));
  const problems: string[] = [];
  try {
    for (let round = 0; round < 6; round++) {
      const results = await Promise.all(Array.from({ length: 8 }, () => sequence()));
      for (const p of results) problems.push(...p);
    }
  } finally {
    stop.v = true;
    await Promise.all(loaders);
  }
  assert.deepEqual(problems, [], `inconsistent right after the claim:\n${problems.join('\n')}`);
});
