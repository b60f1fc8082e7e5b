// spool.worker() against a real server (docs/CLIENT.md "Workers"): a handler that outlives its
// lease keeps it and acks exactly once; a failure is nacked with backoff and redelivered; a lost
// lease aborts the handler and is never acked over the new holder; a worker process killed
// mid-job has its job redelivered; stop() is graceful; concurrency is a bound, across a /work
// reconnect too; a lease whose extends hang is lost at its deadline; a worker started while the
// server does not answer waits for it; a process that closes its watch while holding an event
// exits at once (the stream's idle timer stops with the close).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { killServersAfterFile, tempDir, type Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import { Spool, SpoolError, type Job } from '../../src/client/index.js';
import { until } from '../helpers/until.js';

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

test(
  'a lease whose extensions the server never answers is lost at its deadline, not after the call times out',
  { timeout: 30_000 },
  async () => {
    const q = 'wk.hung';
    await queue(q, { lease_ms: 300 });
    // Extensions hang (a server that stopped answering): only their 60 s timeout would end them.
    const hung: typeof fetch = async (input, init) => {
      if (String(input).endsWith('/extend'))
        return new Promise<Response>((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
      return fetch(input, init);
    };
    const cut = new Spool({ url: srv.url, fetch: hung });
    let lostAt = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const startedAt = Date.now();
    const w = cut.worker(
      q,
      async (_job, ctx) => {
        ctx.signal.addEventListener('abort', () => (lostAt = Date.now()));
        await held;
      },
      { mode: 'poll', leaseMs: 300 },
    );
    try {
      await until('the handler to see its lease lost', () => lostAt > 0, 5000);
      assert.ok(lostAt - startedAt < 2000, `lost after ${lostAt - startedAt} ms, lease 300 ms`);
    } finally {
      release();
      await w.stop();
    }
    assert.equal(w.stats.lost, 1);
  },
);

test('a worker started while the server does not answer waits for it instead of failing', { timeout: 30_000 }, async () => {
  const q = 'wk.late';
  await queue(q);
  let down = true;
  const flaky: typeof fetch = async (input, init) => {
    if (down) throw new TypeError('fetch failed'); // connection refused
    return fetch(input, init);
  };
  const late = new Spool({ url: srv.url, fetch: flaky, retry: { retries: 0 } });
  const errors: string[] = [];
  const done: number[] = [];
  const w = late.worker(q, async (job) => void done.push(job.$seq), { onError: (e) => errors.push((e as SpoolError).code) });
  let failed: unknown;
  w.done.catch((e: unknown) => (failed = e));
  await sleep(1500);
  assert.equal(failed, undefined, 'done did not reject while the server was away');
  assert.ok(errors.length > 0 && errors.every((c) => c === 'network_error'), errors.join());
  down = false;
  await until('the job done once the server answers', () => done.length === 1);
  await w.stop();
  assert.equal(w.stats.acked, 1);
});

test('push: a reconnect waits for the closed connection handlers, so concurrency holds', { timeout: 30_000 }, async () => {
  const q = 'wk.conc';
  await queue(q, {}, 6);
  // The first /work connection breaks after 700 ms; its two handlers ignore the abort and run on.
  let cuts = 0;
  const breaking: typeof fetch = async (input, init) => {
    if (!String(input).includes('/work') || cuts++ > 0) return fetch(input, init);
    const ctl = new AbortController();
    init?.signal?.addEventListener('abort', () => ctl.abort(init.signal!.reason));
    setTimeout(() => ctl.abort(new TypeError('connection reset')), 700);
    return fetch(input, { ...init, signal: ctl.signal });
  };
  const flaky = new Spool({ url: srv.url, fetch: breaking });
  let running = 0;
  let most = 0;
  let finished = 0;
  const w = flaky.worker(
    q,
    async () => {
      most = Math.max(most, ++running);
      await sleep(1500);
      running--;
      finished++;
    },
    { concurrency: 2, leaseMs: 10_000 },
  );
  try {
    await until('six handlers run', () => finished >= 6, 20_000);
  } finally {
    await w.stop();
  }
  assert.ok(cuts >= 2, 'the worker reconnected');
  assert.equal(most, 2, 'never more than concurrency handlers at once');
});

test('a process that closes its watch while holding an event exits at once', { timeout: 30_000 }, async () => {
  await spool.append('wk.exit', [{ data: 1 }]);
  const script = `
import { Spool } from ${JSON.stringify(CLIENT_JS)};
const w = new Spool({ url: process.argv[2] }).watch({ topics: { 'wk.exit': { from_seq: 0 } } });
const it = w[Symbol.asyncIterator]();
await it.next();
w.close(); // no next() or return() after it: the iterator stays suspended at its event
`;
  const file = path.join(tempDir('spool-exit-'), 'exit.mjs');
  fs.writeFileSync(file, script);
  const t0 = Date.now();
  const child = spawn(process.execPath, [file, srv.url], { stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise((r) => child.once('exit', r));
  assert.equal(code, 0);
  assert.ok(Date.now() - t0 < 8000, `exited after ${Date.now() - t0} ms (the stream's idle timer is 32 s)`);
});
