// The client's queue tools against a real server (docs/CLIENT.md "Queue tools"): a blocking
// claim (`wait_ms`) answers when a job arrives; `term` fails a job for good; a worker handler
// that throws UnrecoverableError has its job termed, with the message as its reason, in push
// and poll mode, and a poll worker waits on the server with blocking claims; `redrive` moves
// dead letters back, where a worker handles them; `leases` and `allLeases` page through who holds
// what, in number and bigint mode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import { Spool, UnrecoverableError } from '../../src/client/index.js';
import { until } from '../helpers/until.js';

let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function dlqRecords(dlq: string): Promise<{ data: unknown; meta?: Record<string, unknown> }[]> {
  return (await spool.diff(dlq, { include_meta: true })).records as { data: unknown; meta?: Record<string, unknown> }[];
}

test('a blocking claim answers when a job arrives, and term fails one for good', async () => {
  await spool.putTopic('ct.q', { type: 'queue', dead_letter: 'ct.q.dlq' });
  const t0 = Date.now();
  const waiting = spool.claim('ct.q', { node: 'w', max: 2, wait_ms: 10_000 });
  await sleep(300);
  await spool.append('ct.q', [{ data: { n: 1 } }]);
  const got = await waiting;
  assert.equal(got.count, 1);
  assert.ok(Date.now() - t0 >= 250, 'it waited');
  const job = got.claimed[0]!;
  const r = await spool.term('ct.q', { node: 'w', seqs: [job.$seq], lease_ids: [job.lease_id], reason: 'cannot parse' });
  assert.deepEqual(
    { terminated: r.terminated, released: r.released, skipped: r.skipped, dead_letter: r.dead_letter },
    { terminated: 1, released: 0, skipped: [], dead_letter: 'ct.q.dlq' },
  );
  const recs = await dlqRecords('ct.q.dlq');
  assert.deepEqual(recs[0]!.meta, {
    $dead_letter_from: 'ct.q',
    $dead_letter_deliveries: 1,
    $dead_letter_src_seq: 1,
    $dead_letter_reason: 'cannot parse',
  });
});

for (const mode of ['push', 'poll'] as const) {
  test(`${mode}: a handler throwing UnrecoverableError has its job termed, the others acked`, { timeout: 30_000 }, async () => {
    const q = `ct.unrec.${mode}`;
    await spool.putTopic(q, { type: 'queue', max_deliveries: 5, dead_letter: `${q}.dlq` });
    await spool.append(q, [{ data: 'ok' }, { data: 'poison' }, { data: 'ok too' }]);
    const seen: string[] = [];
    const w = spool.worker(
      q,
      (job) => {
        seen.push(job.data as string);
        if (job.data === 'poison') throw new UnrecoverableError(`poison pill ${'x'.repeat(2000)}`);
      },
      { mode, concurrency: 2, pollIntervalMs: 2000 },
    );
    await until('three jobs settled', () => w.stats.acked + w.stats.terminated === 3);
    await w.stop();
    assert.deepEqual(w.stats, { started: 3, acked: 2, nacked: 0, terminated: 1, lost: 0 });
    assert.equal(seen.filter((d) => d === 'poison').length, 1, 'delivered once: its retries were not spent');
    const recs = await dlqRecords(`${q}.dlq`);
    assert.equal(recs.length, 1);
    assert.equal(recs[0]!.data, 'poison');
    const reason = recs[0]!.meta!.$dead_letter_reason as string;
    assert.ok(reason.startsWith('poison pill xxx') && new TextEncoder().encode(reason).length <= 1024, 'the message, cut to 1024 bytes');
    assert.equal((await spool.getTopic(q)).count, 0);
  });
}

test('an idle poll worker waits on the server (blocking claims), not in a loop of claims', { timeout: 30_000 }, async () => {
  await spool.putTopic('ct.idle', { type: 'queue' });
  const w = spool.worker('ct.idle', () => undefined, { mode: 'poll', pollIntervalMs: 3000 });
  // Long enough for a sleeping poller to back off to its 3 s interval.
  await sleep(4500);
  const t0 = Date.now();
  await spool.append('ct.idle', [{ data: 1 }]);
  await until('the job', () => w.stats.acked === 1);
  assert.ok(Date.now() - t0 < 1000, `handled ${Date.now() - t0} ms after the append: the waiting claim got it`);
  await w.stop();
});

test('redrive moves dead letters back, where a worker handles them', { timeout: 30_000 }, async () => {
  await spool.putTopic('ct.rd', { type: 'queue', dead_letter: 'ct.rd.dlq' });
  await spool.append('ct.rd', [
    { data: 1, tag: 'a' },
    { data: 2, tag: 'b' },
    { data: 3, tag: 'a' },
  ]);
  const got = await spool.claim('ct.rd', { node: 'x', max: 3 });
  await spool.term('ct.rd', { node: 'x', seqs: got.claimed.map((j) => j.$seq) });
  const one = await spool.redrive('ct.rd', { match: ['tag', 'Eq', 'a'], max: 1 });
  assert.deepEqual({ redriven: one.redriven, more: one.more, from: one.from }, { redriven: 1, more: true, from: 'ct.rd.dlq' });
  const rest = await spool.redrive('ct.rd');
  assert.equal(rest.redriven, 2);
  const handled: unknown[] = [];
  const w = spool.worker('ct.rd', (job) => void handled.push(job.data));
  await until('three redriven jobs', () => handled.length === 3);
  await w.stop();
  assert.deepEqual(handled.sort(), [1, 2, 3]);
  assert.equal((await dlqRecords('ct.rd.dlq')).length, 0);
});

test('leases and allLeases page through who holds what, numbers and bigints', async () => {
  await spool.putTopic('ct.ls', { type: 'queue', lease_ms: 60_000 });
  await spool.append(
    'ct.ls',
    Array.from({ length: 5 }, (_, i) => ({ data: i })),
  );
  await spool.claim('ct.ls', { node: 'a', max: 3 });
  await spool.claim('ct.ls', { node: 'b', max: 2 });
  const page = await spool.leases('ct.ls', { limit: 2 });
  assert.deepEqual(
    page.leases.map((l) => [l.$seq, l.node, l.via]),
    [
      [1, 'a', 'claim'],
      [2, 'a', 'claim'],
    ],
  );
  assert.equal(page.next_from_seq, 2);
  const all = [];
  for await (const l of spool.allLeases('ct.ls', { limit: 2 })) all.push(l.$seq);
  assert.deepEqual(all, [1, 2, 3, 4, 5]);
  assert.deepEqual(
    (await spool.leases('ct.ls', { node: 'b' })).leases.map((l) => l.$seq),
    [4, 5],
  );
  const big = new Spool({ url: srv.url, int64: 'bigint' });
  const seqs = [];
  for await (const l of big.allLeases('ct.ls', { limit: 3 })) seqs.push(l.$seq);
  assert.deepEqual(seqs, [1n, 2n, 3n, 4n, 5n]);
});
