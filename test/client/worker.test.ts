// spool.worker() against a real server (docs/CLIENT.md "Workers"): a handler that outlives its
// lease keeps it and acks exactly once; a failure is nacked with backoff and redelivered; a lost
// lease aborts the handler and is never acked over the new holder; a worker process killed
// mid-job has its job redelivered; stop() is graceful; concurrency is a bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { killServersAfterFile, tempDir, type Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import { Spool, SpoolError, type Job } from '../../src/client/index.js';

killServersAfterFile();
let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const here = path.dirname(fileURLToPath(import.meta.url));
const CLIENT_JS = path.resolve(here, '../../src/client/index.js');

async function queue(name: string, config: Record<string, unknown> = {}, jobs = 1): Promise<void> {
  await spool.putTopic(name, { type: 'queue', ...config });
  if (jobs)
    await spool.append(
      name,
      Array.from({ length: jobs }, (_, i) => ({ data: { job: i + 1 } })),
    );
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Claims in a loop as another worker would; anything it gets means a lease was not kept. */
function thief(q: string, stopAt: () => boolean): Promise<Job[]> {
  return (async () => {
    const got: Job[] = [];
    while (!stopAt()) {
      got.push(...(await spool.claim(q, { node: 'thief', max: 10, lease_ms: 60_000 })).claimed);
      await sleep(40);
    }
    return got;
  })();
}

for (const mode of ['push', 'poll'] as const) {
  test(`${mode}: a handler running 4 leases long keeps its lease and acks exactly once`, { timeout: 30_000 }, async () => {
    const q = `wk.long.${mode}`;
    await queue(q, { lease_ms: 300 });
    const calls: { seq: number; deliveries: number }[] = [];
    let finished = false;
    const w = spool.worker(
      q,
      async (job) => {
        calls.push({ seq: job.$seq, deliveries: job.deliveries });
        await sleep(1200);
      },
      { mode, leaseMs: 300 },
    );
    const stolen = thief(q, () => finished);
    try {
      await until('the ack', () => w.stats.acked === 1);
    } finally {
      finished = true;
      await w.stop();
    }
    assert.deepEqual(await stolen, [], 'no other worker could claim the job while it ran');
    assert.deepEqual(calls, [{ seq: 1, deliveries: 1 }]);
    assert.deepEqual(w.stats, { started: 1, acked: 1, nacked: 0, terminated: 0, lost: 0 });
    const st = await spool.getTopic(q);
    assert.equal(st.count, 0, 'the job is gone');
    assert.deepEqual(st.queue, { ready: 0, in_flight: 0, dead_lettered: 0 });
  });
}

test('a failing handler is nacked with backoff, redelivered, then acked', { timeout: 30_000 }, async () => {
  const q = 'wk.fail';
  await queue(q);
  const seen: { deliveries: number; at: number }[] = [];
  const errors: string[] = [];
  const w = spool.worker(
    q,
    async (job) => {
      seen.push({ deliveries: job.deliveries, at: Date.now() });
      if (job.deliveries === 1) throw new Error('boom');
    },
    { nackDelayMs: (d) => 400 * d, onError: (e) => errors.push((e as Error).message) },
  );
  try {
    await until('the second delivery to be acked', () => w.stats.acked === 1);
  } finally {
    await w.stop();
  }
  assert.deepEqual(
    seen.map((s) => s.deliveries),
    [1, 2],
  );
  assert.ok(seen[1]!.at - seen[0]!.at >= 380, `redelivered after ${seen[1]!.at - seen[0]!.at} ms (nack delay 400)`);
  assert.deepEqual(errors, ['boom']);
  assert.deepEqual(w.stats, { started: 2, acked: 1, nacked: 1, terminated: 0, lost: 0 });
});

test('a lost lease aborts the handler, and its ack never lands on the new holder', { timeout: 30_000 }, async () => {
  const q = 'wk.lost';
  await queue(q, { lease_ms: 200 });
  // Extensions never reach the server: the lease runs out while the handler is busy.
  const noExtend: typeof fetch = async (input, init) => {
    if (String(input).endsWith('/extend')) throw new TypeError('fetch failed');
    return fetch(input, init);
  };
  const cut = new Spool({ url: srv.url, fetch: noExtend, retry: { retries: 0 } });
  let aborted: unknown;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const w = cut.worker(
    q,
    async (_job, ctx) => {
      ctx.signal.addEventListener('abort', () => (aborted = ctx.signal.reason));
      await held; // ignores the abort on purpose, and finishes late
    },
    { mode: 'poll', leaseMs: 200 },
  );
  let taken;
  try {
    await until('the handler to see its lease lost', () => aborted !== undefined);
    assert.ok(aborted instanceof SpoolError && aborted.code === 'lease_lost', String(aborted));
    taken = await spool.claim(q, { node: 'other', lease_ms: 60_000 });
    assert.equal(taken.claimed[0]?.deliveries, 2, 'delivered again to another worker');
  } finally {
    release();
    await w.stop();
  }
  assert.deepEqual(w.stats, { started: 1, acked: 0, nacked: 0, terminated: 0, lost: 1 });
  const st = await spool.getTopic(q);
  assert.deepEqual(st.queue, { ready: 0, in_flight: 1, dead_lettered: 0 }, "the other worker's lease is intact");
  assert.equal((await spool.ack(q, { node: 'other', seqs: [1], lease_ids: [taken.claimed[0]!.lease_id] })).acked, 1);
});

const CHILD = `
import { Spool } from ${JSON.stringify(CLIENT_JS)};
const [url, queue, mode] = process.argv.slice(2);
const spool = new Spool({ url });
spool.worker(queue, async (job) => {
  process.stdout.write('started ' + job.$seq + ' ' + job.deliveries + '\\n');
  await new Promise(() => {}); // never finishes
}, { mode, leaseMs: 500 });
`;

for (const mode of ['push', 'poll'] as const) {
  test(`${mode}: a worker process killed mid-job has its job delivered again`, { timeout: 30_000 }, async () => {
    const q = `wk.kill.${mode}`;
    await queue(q, { lease_ms: 500 });
    const dir = tempDir('spool-worker-child-');
    const script = path.join(dir, 'child.mjs');
    fs.writeFileSync(script, CHILD);
    const child = spawn(process.execPath, [script, srv.url, q, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      await until(`the child to start the job (output: ${out})`, () => out.includes('started 1 1'));
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    const killedAt = Date.now();
    const got: Job[] = [];
    const w = spool.worker(q, async (job) => void got.push(job), { mode: 'poll', leaseMs: 500, pollIntervalMs: 50 });
    try {
      await until('the job to come back', () => w.stats.acked === 1);
    } finally {
      await w.stop();
    }
    assert.equal(got.length, 1);
    assert.deepEqual([got[0]!.$seq, got[0]!.deliveries], [1, 2], 'the same job, second delivery');
    // push: released when the connection dropped; poll: when the lease ran out
    const waited = Date.now() - killedAt;
    if (mode === 'push') assert.ok(waited < 450, `push: back in ${waited} ms, before the lease would have expired`);
    assert.equal((await spool.getTopic(q)).count, 0);
  });
}

test('stop() is graceful: running handlers finish and are acked, no new job starts, the rest stay ready', { timeout: 30_000 }, async () => {
  const q = 'wk.stop';
  await queue(q, {}, 5);
  let running = 0;
  let maxRunning = 0;
  const started: number[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const w = spool.worker(
    q,
    async (job) => {
      started.push(job.$seq);
      maxRunning = Math.max(maxRunning, ++running);
      await gate;
      running--;
    },
    { concurrency: 2 },
  );
  let stopped: Promise<void> | undefined;
  try {
    await until('two jobs running', () => started.length === 2);
    stopped = w.stop();
    await sleep(200);
    assert.equal(started.length, 2, 'nothing new after stop()');
  } finally {
    release();
    await (stopped ?? w.stop());
  }
  assert.equal(maxRunning, 2, 'concurrency bound');
  assert.deepEqual(w.stats, { started: 2, acked: 2, nacked: 0, terminated: 0, lost: 0 });
  await until('the connection close to release pushed jobs', async () => (await spool.getTopic(q)).queue!.in_flight === 0);
  assert.deepEqual((await spool.getTopic(q)).queue, { ready: 3, in_flight: 0, dead_lettered: 0 });
});

test('a worker on a missing queue fails with topic_not_found; on a log topic with not_a_queue', async () => {
  const w = spool.worker('wk.absent', () => undefined);
  await assert.rejects(w.done, (e: unknown) => e instanceof SpoolError && e.code === 'topic_not_found');
  await spool.putTopic('wk.log', {});
  const l = spool.worker('wk.log', () => undefined, { leaseMs: 1000 });
  await assert.rejects(l.done, (e: unknown) => e instanceof SpoolError && e.code === 'not_a_queue');
  const p = spool.worker('wk.log', () => undefined, { leaseMs: 1000, mode: 'poll' });
  await assert.rejects(p.done, (e: unknown) => e instanceof SpoolError && e.code === 'not_a_queue');
});
