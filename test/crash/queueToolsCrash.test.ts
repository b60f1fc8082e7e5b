// Term and redrive across SIGKILL (docs/QUEUES.md "Term", "Redrive"), on real server processes
// with SERVICE_WORKERS=2 and the dead-letter topic on the other worker than its queue:
// - an answered term survives a SIGKILL right after its 200: the job is in the dead-letter topic
//   once and gone from the queue after the restart (fsync and disk classes);
// - an answered redrive survives a SIGKILL right after its 200: the jobs are back in the queue
//   once and gone from the dead-letter topic;
// - a SIGKILL in the middle of a redrive of 2,000 jobs of 3 KB (about six batches of 1 MiB), at
//   a random moment or right when a batch shows in the queue, ten times: after the restart (and the queue asking the dead-letter topic
//   again for the deletes it may not have seen) every job is in exactly one of the two topics:
//   none lost, none twice. The dead-letter topic is `fsync` and the queue `disk`, so a redrive
//   spends most of its time between a batch's append to the queue and its delete in the
//   dead-letter topic, where a crash leaves copies in both.
// The random seed is printed; rerun a failure with CRASH_SEED=<seed>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRng } from '../../src/core/rng.js';
import { workerOf } from '../../src/core/names.js';
import { client, killServersAfterFile, startServer, tempDir, type Server } from '../helpers/server.js';

killServersAfterFile();

type Api = ReturnType<typeof client>;
const WORKERS = 2;
const ENV = { SERVICE_WORKERS: String(WORKERS) };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pair(prefix: string): { q: string; dlq: string } {
  for (let i = 0; ; i++)
    if (workerOf(`${prefix}.dlq${i}`, WORKERS) !== workerOf(prefix, WORKERS)) return { q: prefix, dlq: `${prefix}.dlq${i}` };
}

async function ok(p: Promise<{ status: number; body: any; text: string }>, what: string): Promise<any> {
  const r = await p;
  assert.ok(r.status === 200 || r.status === 201, `${what}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.body;
}

/** Every record's data id in a topic (paged diffs), in order. */
async function ids(c: Api, t: string): Promise<number[]> {
  const out: number[] = [];
  for (let from = 0; ;) {
    const r = await c.post(`/v0/topics/${t}/diff`, { from_seq: from, limit: 1000 });
    if (r.status === 404) return out;
    assert.equal(r.status, 200, r.text);
    out.push(...r.body.records.map((x: any) => x.data.id as number));
    if (r.body.caught_up) return out;
    from = r.body.next_from_seq;
  }
}

async function setup(c: Api, q: string, dlq: string, qClass: string, dlqClass: string, n: number, padBytes = 0): Promise<void> {
  await ok(c.put(`/v0/topics/${dlq}`, { durability: dlqClass }), `PUT ${dlq}`);
  await ok(c.put(`/v0/topics/${q}`, { type: 'queue', durability: qClass, lease_ms: 600_000, dead_letter: dlq }), `PUT ${q}`);
  const pad = 'p'.repeat(padBytes);
  for (let i = 0; i < n; i += 1000)
    await ok(
      c.post(`/v0/topics/${q}`, { records: Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ data: { id: i + k, pad } })) }),
      'append',
    );
}

/** Claims and terms every job of q; returns how many moved. */
async function termAll(c: Api, q: string): Promise<number> {
  let moved = 0;
  for (;;) {
    const got = await ok(c.post(`/v0/topics/${q}/claim`, { node: 'k', max: 1000 }), 'claim');
    if (got.count === 0) return moved;
    const t = await ok(c.post(`/v0/topics/${q}/term`, { node: 'k', seqs: got.claimed.map((j: any) => j.$seq) }), 'term');
    moved += t.terminated;
  }
}

for (const [qClass, dlqClass] of [
  ['fsync', 'fsync'],
  ['disk', 'disk'],
]) {
  test(`an answered term, then an answered redrive, survive SIGKILL (${qClass} queue, ${dlqClass} dead-letter topic)`, async () => {
    const dataDir = tempDir();
    let srv: Server = await startServer({ dataDir, env: ENV });
    let c = client(srv.url);
    const { q, dlq } = pair(`tc.${qClass}`);
    await setup(c, q, dlq, qClass, dlqClass, 6);
    const got = await ok(c.post(`/v0/topics/${q}/claim`, { node: 'w', max: 6 }), 'claim');
    assert.equal(got.count, 6);
    assert.equal((await ok(c.post(`/v0/topics/${q}/term`, { node: 'w', seqs: [1, 2, 3] }), 'term')).terminated, 3);
    assert.equal((await ok(c.post(`/v0/topics/${q}/term`, { node: 'w', seqs: [5], reason: 'last' }), 'term 5')).terminated, 1);
    await srv.kill();
    srv = await startServer({ dataDir, env: ENV });
    c = client(srv.url);
    assert.deepEqual(await ids(c, dlq), [0, 1, 2, 4], 'termed jobs in the dead-letter topic, once');
    assert.deepEqual(await ids(c, q), [3, 5], 'and gone from the queue');
    const st = await ok(c.get(`/v0/topics/${q}?touch=false`), 'state');
    assert.equal(st.queue.dead_lettered, 4);
    // redrive two of them back (dead-letter seqs 2 and 4: ids 1 and 4), then SIGKILL at once
    const r = await ok(c.post(`/v0/topics/${q}/redrive`, { seqs: [2, 4] }), 'redrive');
    assert.equal(r.redriven, 2);
    await srv.kill();
    srv = await startServer({ dataDir, env: ENV });
    c = client(srv.url);
    assert.deepEqual(await ids(c, dlq), [0, 2], 'redriven jobs gone from the dead-letter topic');
    assert.deepEqual(await ids(c, q), [3, 5, 1, 4], 'and back in the queue, once');
    assert.equal(await srv.stop(), 0);
  });
}

test('SIGKILL in the middle of a redrive: every job in exactly one topic after the restart', async (t) => {
  const seed = process.env.CRASH_SEED ?? String(Date.now());
  t.diagnostic(`CRASH_SEED=${seed}`);
  const rng = seededRng(seed);
  const n = 2000;
  const rounds = 10;
  const dataDir = tempDir();
  let srv = await startServer({ dataDir, env: ENV });
  let c = client(srv.url);
  const { q, dlq } = pair('mid');
  await setup(c, q, dlq, 'disk', 'fsync', n, 3000);
  assert.equal(await termAll(c, q), n);
  let hitMiddle = 0;
  for (let round = 0; round < rounds; round++) {
    const before = (await ok(c.get(`/v0/topics/${q}?touch=false`), 'state')).count as number;
    const redriving = c.post(`/v0/topics/${q}/redrive`, {}).catch(() => undefined);
    if (round % 2 === 0) {
      // the moment a batch shows in the queue: its delete in the dead-letter topic is under way
      for (let i = 0; i < 2000; i++) {
        const st = await c.get(`/v0/topics/${q}?touch=false`);
        if (st.status === 200 && st.body.count > before) break;
      }
    } else await sleep(10 + Math.floor(rng.next() * 120));
    await srv.kill();
    await redriving;
    srv = await startServer({ dataDir, env: ENV });
    c = client(srv.url);
    // The queue asks again for the deletes it may not have seen; wait until both add up.
    let inQ: number[] = [];
    let inD: number[] = [];
    for (let i = 0; i < 200; i++) {
      [inQ, inD] = await Promise.all([ids(c, q), ids(c, dlq)]);
      if (inQ.length + inD.length === n) break;
      await sleep(50);
    }
    const all = [...inQ, ...inD].sort((x, y) => x - y);
    const dups = all.filter((v, i) => i > 0 && all[i - 1] === v);
    assert.deepEqual(dups.slice(0, 10), [], `round ${round}: jobs in both topics (${dups.length})`);
    assert.equal(all.length, n, `round ${round}: ${n - all.length} job(s) lost`);
    if (inQ.length > 0 && inD.length > 0) hitMiddle++;
    t.diagnostic(`round ${round}: ${inQ.length} back in the queue, ${inD.length} still dead-lettered`);
    // dead-letter everything again for the next round
    await termAll(c, q);
  }
  t.diagnostic(`${hitMiddle} of ${rounds} kills landed mid-redrive`);
  assert.equal(await srv.stop(), 0);
});
