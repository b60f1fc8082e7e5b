// The client's signals and callbacks at their edges (docs/CLIENT.md "Watch", "Workers", "Calls"):
// a signal that is aborted already ends a watch and stops a worker before they ask for anything
// (an `abort` listener alone never hears it); finished watches and workers take their listener off
// a signal they share; `work()` needs no signal, and ending its iteration closes the connection;
// an `onError` that throws neither crashes the process nor leaves the job unsettled; and an ack
// whose answer was lost (the resend finds the job gone) counts as acked, not lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { killServersAfterFile, type Server } from '../helpers/server.js';
import { useSpoolServer } from '../helpers/spoolServer.js';
import { Spool, SpoolError } from '../../src/client/index.js';
import { until } from '../helpers/until.js';

killServersAfterFile();
let srv: Server;
let spool: Spool;
useSpoolServer((s, c) => ((srv = s), (spool = c)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a signal aborted already: watch ends with aborted, a worker stops without taking a job', async () => {
  await spool.putTopic('sig.log');
  await spool.append('sig.log', [{ data: 1 }]);
  await spool.putTopic('sig.q', { type: 'queue' });
  await spool.append('sig.q', [{ data: 'job' }]);
  const gone = AbortSignal.abort();
  await assert.rejects(
    (async () => {
      for await (const _ of spool.watch({ topics: { 'sig.log': { from_seq: 0 } }, signal: gone })) assert.fail('no event after an abort');
    })(),
    (e: unknown) => e instanceof SpoolError && e.code === 'aborted',
  );
  let handled = 0;
  const w = spool.worker('sig.q', async () => void handled++, { signal: gone });
  await w.done;
  assert.equal(handled, 0);
  assert.equal((await spool.getTopic('sig.q', { touch: false })).queue?.ready, 1, 'the job was never taken');
});

test('finished watches and stopped workers leave no listener on a signal they share', async () => {
  await spool.putTopic('sig.many');
  await spool.append('sig.many', [{ data: 1 }]);
  await spool.putTopic('sig.mq', { type: 'queue' });
  const app = new AbortController();
  for (let i = 0; i < 12; i++) {
    for await (const ev of spool.watch({ topics: { 'sig.many': { from_seq: 0 } }, signal: app.signal })) if (ev.type === 'caught-up') break;
    const w = spool.worker('sig.mq', async () => undefined, { signal: app.signal, mode: i % 2 ? 'poll' : 'push' });
    await w.stop();
  }
  assert.equal(getEventListeners(app.signal, 'abort').length, 0);
});

test('work() without a signal streams jobs, and a break closes the connection (its lease released)', async () => {
  await spool.putTopic('sig.wq', { type: 'queue' });
  await spool.append('sig.wq', [{ data: 'a' }]);
  for await (const ev of spool.work('sig.wq', { node: 'n1' })) if (ev.type === 'job') break;
  await until('the lease released', async () => (await spool.getTopic('sig.wq', { touch: false })).queue?.ready === 1);
});

test('an onError that throws: no unhandled rejection, the failed job is still nacked', async () => {
  await spool.putTopic('sig.oq', { type: 'queue' });
  await spool.append('sig.oq', [{ data: 'fails' }]);
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  const quiet = console.error;
  console.error = () => undefined; // the worker prints what the callback threw
  try {
    const w = spool.worker(
      'sig.oq',
      async () => {
        throw new Error('handler failed');
      },
      {
        mode: 'poll',
        nackDelayMs: () => 60_000,
        onError: () => {
          throw new Error('logger exploded');
        },
      },
    );
    await until('the job nacked', () => w.stats.nacked === 1);
    await w.stop();
    await sleep(50);
    assert.deepEqual(unhandled, []);
    assert.equal(w.stats.lost, 0);
  } finally {
    console.error = quiet;
    process.off('unhandledRejection', onUnhandled);
  }
});

test('an ack whose answer was lost: the resend finds the job gone, and it counts as acked', async () => {
  let dropAcks = 1;
  const lossy: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (dropAcks > 0 && String(input).endsWith('/ack')) {
      dropAcks--;
      await res.text();
      throw new TypeError('fetch failed (the answer dropped by the test)');
    }
    return res;
  };
  const client = new Spool({ url: srv.url, fetch: lossy, retry: { baseMs: 10, maxMs: 20 } });
  await client.putTopic('sig.aq', { type: 'queue' });
  await client.append('sig.aq', [{ data: 'only' }]);
  const w = client.worker('sig.aq', async () => undefined, { mode: 'poll' });
  await until('the job settled', () => w.stats.acked + w.stats.lost === 1);
  await w.stop();
  assert.equal(dropAcks, 0, 'an ack answer was dropped');
  assert.deepEqual({ acked: w.stats.acked, lost: w.stats.lost }, { acked: 1, lost: 0 });
  assert.equal((await client.getTopic('sig.aq', { touch: false })).count, 0);
});

test('stop({ timeoutMs }): a handler that returns after its signal aborted acks its job, in push and poll mode alike', async () => {
  for (const mode of ['push', 'poll'] as const) {
    const q = `sig.stop-${mode}`;
    await spool.putTopic(q, { type: 'queue' });
    await spool.append(q, [{ data: 'slow' }]);
    let started = false;
    const w = spool.worker(
      q,
      async (_job, { signal }) => {
        started = true;
        await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      },
      { mode },
    );
    await until('the job started', () => started);
    await w.stop({ timeoutMs: 200 });
    assert.deepEqual({ acked: w.stats.acked, lost: w.stats.lost }, { acked: 1, lost: 0 }, mode);
    assert.equal((await spool.getTopic(q, { touch: false })).count, 0, `${mode}: the job is done`);
  }
});
